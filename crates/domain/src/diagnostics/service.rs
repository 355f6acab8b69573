//! The diagnostics use cases: a checkout's (or a payment's) diagnosis.

use chrono::{DateTime, Duration, Utc};

use crate::api_key::model::ApiKey;
use crate::api_key::ports::ApiKeyStore;
use crate::chain::model::UnattributedTransfer;
use crate::chain::model::{ChainHealth, Observation};
use crate::chain::ports::{Chain, FollowerStore};
use crate::clock::Clock;
use crate::diagnostics::model::{
    ChainState, Check, CheckName, CheckOutcome, CheckoutDiagnosis, Finality, KEY_IDLE_DAYS, MerchantReadiness,
    ReadinessEntry, ReadinessStatus, TransferDiagnosis, WorkerFacts, is_verified,
};
use crate::email::model::{EMAIL_FAILURE_WINDOW_DAYS, EmailCounts};
use crate::email::ports::EmailStore;
use crate::error::Error;
use crate::ids::{CheckoutSessionId, PaymentId};
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use crate::invoice::checkout::CheckoutSession;
use crate::invoice::payment::{FailureReason, Payment, PaymentStatus};
use crate::invoice::ports::InvoiceStore;
use crate::invoice::public::CheckoutPhase;
use crate::merchant::model::Merchant;
use crate::mode::{Mode, Scope};
use crate::page::PageRequest;
use crate::webhook::model::{EndpointState, IncidentStatus};
use crate::webhook::ports::WebhookStore;

/// The diagnostics use cases.
pub struct Diagnostics<'a> {
    /// Invoices, their checkouts and payments.
    pub invoices: &'a dyn InvoiceStore,
    /// Transfers recorded as unattributed (held ones name their candidate checkouts).
    pub follower: &'a dyn FollowerStore,
    /// The chain (live mode).
    pub chain: &'a dyn Chain,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
}

impl Diagnostics<'_> {
    /// `GET /v1/checkout-sessions/{id}/diagnostics`. Errors: `NotFound(CheckoutSession)`,
    /// `ModeMismatch`.
    pub async fn checkout(&self, scope: &Scope, id: &CheckoutSessionId) -> Result<CheckoutDiagnosis, Error> {
        let agg = self.invoices.load_invoice(scope, &InvoiceKey::Session(id.clone())).await?;
        self.diagnose(scope, &agg, id, None).await
    }

    /// `GET /v1/payments/{id}/diagnostics`: its checkout's diagnosis with this transfer alone.
    /// Errors: `NotFound(Payment)`, `ModeMismatch`.
    pub async fn payment(&self, scope: &Scope, id: &PaymentId) -> Result<CheckoutDiagnosis, Error> {
        let agg = self.invoices.load_invoice(scope, &InvoiceKey::Payment(id.clone())).await?;
        let session = agg
            .payments
            .iter()
            .find(|p| &p.id == id)
            .map(|p| p.checkout_session_id.clone())
            .ok_or(Error::NotFound(crate::error::Resource::Payment))?;
        self.diagnose(scope, &agg, &session, Some(id)).await
    }

    async fn diagnose(
        &self,
        scope: &Scope,
        agg: &InvoiceAggregate,
        id: &CheckoutSessionId,
        only: Option<&PaymentId>,
    ) -> Result<CheckoutDiagnosis, Error> {
        let session = agg.session(id).cloned().ok_or(Error::NotFound(crate::error::Resource::CheckoutSession))?;
        let now = self.clock.now(scope).await?;
        let chain = self.chain_state(scope.mode).await;
        let latest = agg.latest_payment_of(id);
        let phase = CheckoutPhase::of(&session, latest, now);
        let mut transfers = Vec::new();
        for p in agg.payments.iter().filter(|p| &p.checkout_session_id == id && only.is_none_or(|o| &p.id == o)) {
            let mut found = checks(&session, p);
            self.show_what_was_paid(scope, p, &mut found).await;
            transfers.push(TransferDiagnosis { payment: p.clone(), checks: found, finality: finality(p, &chain) });
        }
        let remaining = agg.invoice.remaining();
        let elsewhere = self.elsewhere(scope, &session, phase, latest).await?;
        let next_step = next_step(
            &session,
            phase,
            (&remaining, agg.invoice.collection_state.is_collectible()),
            (latest, &elsewhere),
            &chain,
            now,
        );
        let bindings = self.invoices.bindings(scope, id).await?;
        Ok(CheckoutDiagnosis {
            session,
            bindings,
            phase,
            invoice_remaining: remaining,
            transfers,
            chain,
            next_step,
            as_of: now,
        })
    }

    /// Where the money the checkout's customer may have sent went, for what the next step says:
    /// the transfers held that name the checkout, and for a report refused because other
    /// evidence named another checkout, the merchant's payment that took it (never shown on
    /// public routes).
    async fn elsewhere(
        &self,
        scope: &Scope,
        session: &CheckoutSession,
        phase: CheckoutPhase,
        latest: Option<&Payment>,
    ) -> Result<Elsewhere, Error> {
        let mut found = Elsewhere::default();
        if scope.mode != Mode::Live {
            return Ok(found);
        }
        match (phase, latest) {
            (CheckoutPhase::Held, Some(p)) => {
                found.held = self.follower.unattributed_about(scope, None, Some(p.transaction_hash.clone())).await?;
            }
            (CheckoutPhase::Failed, Some(p))
                if matches!(
                    p.failure_reason,
                    Some(FailureReason::AttributedToAnotherCheckout | FailureReason::WrongPayer)
                ) =>
            {
                let credited = self.invoices.payments_of_transaction(scope, &p.transaction_hash).await?;
                found.took = credited.into_iter().find(|c| c.status.is_credited() && c.id != p.id);
            }
            _ => {}
        }
        if found.held.is_empty() {
            found.held = self.follower.unattributed_about(scope, Some(session.id.clone()), None).await?;
        }
        Ok(found)
    }

    /// A transfer refused for its recipient or its token: the payment records what the checkout
    /// expected, so what the transfer paid (its recipients, its token contracts) is read from the
    /// chain again; when the chain cannot tell now, the check says so.
    async fn show_what_was_paid(&self, scope: &Scope, p: &Payment, checks: &mut [Check]) {
        let name = match (scope.mode, p.failure_reason) {
            (Mode::Live, Some(FailureReason::WrongRecipient)) => CheckName::Recipient,
            (Mode::Live, Some(FailureReason::WrongTokenContract)) => CheckName::Token,
            _ => return,
        };
        let Some(check) = checks.iter_mut().find(|c| c.name == name) else { return };
        let seen = match self.chain.observe(scope, &p.transaction_hash).await {
            Ok(Observation::Included(tx)) => tx.transfers,
            _ => {
                check.found = None;
                check.note = Some("what the transfer paid cannot be read from the chain now".into());
                return;
            }
        };
        let mut found: Vec<String> = seen
            .iter()
            .filter(|t| match name {
                CheckName::Recipient => t.token_contract == p.token_contract,
                _ => t.to == p.settlement_wallet,
            })
            .map(|t| if name == CheckName::Recipient { t.to.to_string() } else { t.token_contract.to_string() })
            .collect();
        found.dedup();
        check.found = Some(if found.is_empty() {
            "no transfer of the checkout's token to its wallet".to_owned()
        } else {
            found.join(", ")
        });
    }

    async fn chain_state(&self, mode: Mode) -> ChainState {
        if mode == Mode::Test {
            return ChainState { simulated: true, health: ChainHealth::Ok, final_block: None };
        }
        let health = self.chain.health().await;
        let final_block = if health == ChainHealth::Ok { self.chain.final_head().await.ok() } else { None };
        ChainState { simulated: false, health, final_block }
    }
}

/// A merchant's readiness in `scope`'s mode: live activation and wallet, the chain, webhook
/// endpoints and their open incidents, emails, keys, and the worker (as the adapter knows it).
pub struct MerchantChecks<'a> {
    /// The chain (live mode).
    pub chain: &'a dyn Chain,
    /// Webhook endpoints and incidents.
    pub webhooks: &'a dyn WebhookStore,
    /// The email outbox.
    pub emails: &'a dyn EmailStore,
    /// API keys.
    pub keys: &'a dyn ApiKeyStore,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// How far the service's clock may run ahead of the chain's (`ChainSettings::clock_skew`).
    pub clock_skew_allowed: Duration,
}

impl MerchantChecks<'_> {
    /// `GET /v1/diagnostics`: every entry with its stable code and status, the worst first in
    /// `status`.
    pub async fn readiness(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        worker: WorkerFacts,
    ) -> Result<MerchantReadiness, Error> {
        let now = self.clock.now(scope).await?;
        let mut entries = vec![activation(merchant, scope.mode), self.chain_entry(scope.mode).await];
        entries.extend(self.webhook_entries(scope).await?);
        let since = now - Duration::days(EMAIL_FAILURE_WINDOW_DAYS);
        entries.push(email_entry(self.emails.email_counts(scope, since).await?));
        let keys = self.keys.list_keys(&merchant.id).await?;
        entries.push(key_entry(&keys, scope.mode, self.clock.system_now()));
        entries.push(ReadinessEntry { code: "worker", status: worker.status, message: worker.message, count: None });
        let status = entries.iter().map(|e| e.status).max().unwrap_or(ReadinessStatus::Ok);
        Ok(MerchantReadiness { status, entries, as_of: now })
    }

    async fn chain_entry(&self, mode: Mode) -> ReadinessEntry {
        let entry = |status, message: String| ReadinessEntry { code: "chain", status, message, count: None };
        if mode == Mode::Test {
            return entry(ReadinessStatus::Ok, "test mode: transfers are simulated, no chain is asked".into());
        }
        match self.chain.health().await {
            ChainHealth::Ok => match self.chain.head().await {
                Ok((_, mined)) => {
                    let skew = (self.clock.system_now() - mined).num_seconds();
                    let allowed = self.clock_skew_allowed.num_seconds();
                    let words = format!(
                        "the service's clock is {skew} s ahead of the chain's newest block (allowed: {allowed} s)"
                    );
                    if skew.abs() > allowed {
                        entry(
                            ReadinessStatus::Warning,
                            format!(
                                "the chain endpoints answer on Polygon, but {words}: transfers near a checkout's creation may be refused"
                            ),
                        )
                    } else {
                        entry(ReadinessStatus::Ok, format!("the chain endpoints answer on Polygon; {words}"))
                    }
                }
                Err(_) => entry(ReadinessStatus::Ok, "the chain endpoints answer on Polygon".into()),
            },
            ChainHealth::Off => entry(
                ReadinessStatus::Error,
                "no chain endpoint is configured: live payments are recorded but not verified".into(),
            ),
            ChainHealth::Unreachable(why) => {
                entry(ReadinessStatus::Error, format!("the chain cannot be reached ({why}); verification waits"))
            }
            ChainHealth::WrongChain(why) => {
                entry(ReadinessStatus::Error, format!("the chain endpoints serve another chain ({why})"))
            }
        }
    }

    async fn webhook_entries(&self, scope: &Scope) -> Result<[ReadinessEntry; 2], Error> {
        let page = PageRequest { limit: 100, starting_after: None };
        let endpoints = self.webhooks.list_endpoints(scope, &page).await?.items;
        let enabled = endpoints.iter().filter(|e| e.state == EndpointState::Enabled).count();
        let disabled = endpoints.len() - enabled;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let endpoints_entry = match (enabled, disabled) {
            (0, 0) => (ReadinessStatus::Warning, "no webhook endpoint: events are only in GET /v1/events".to_owned()),
            (0, d) => (ReadinessStatus::Warning, format!("{d} webhook endpoints, all disabled: no event is delivered")),
            (e, 0) => (ReadinessStatus::Ok, format!("{e} webhook endpoints enabled")),
            (e, d) => (ReadinessStatus::Warning, format!("{e} webhook endpoints enabled, {d} disabled")),
        };
        let mut open = Vec::new();
        for endpoint in &endpoints {
            let incidents = self.webhooks.list_incidents(scope, &endpoint.id, &page).await?.items;
            open.extend(incidents.into_iter().filter(|i| i.status == IncidentStatus::Open));
        }
        let mut categories: Vec<&str> = open.iter().filter_map(|i| i.last_error_category.map(|c| c.as_str())).collect();
        categories.sort_unstable();
        categories.dedup();
        let incidents_entry = if open.is_empty() {
            (ReadinessStatus::Ok, "no open webhook incident".to_owned())
        } else {
            let why = if categories.is_empty() {
                String::new()
            } else {
                format!(" (last failures: {})", categories.join(", "))
            };
            (ReadinessStatus::Error, format!("{} open webhook incidents: deliveries are failing{why}", open.len()))
        };
        Ok([
            ReadinessEntry {
                code: "webhook_endpoints",
                status: endpoints_entry.0,
                message: endpoints_entry.1,
                count: Some(count(enabled)),
            },
            ReadinessEntry {
                code: "webhook_incidents",
                status: incidents_entry.0,
                message: incidents_entry.1,
                count: Some(count(open.len())),
            },
        ])
    }
}

fn activation(merchant: &Merchant, mode: Mode) -> ReadinessEntry {
    let (status, message) = match (&merchant.live, mode) {
        (Some(l), _) => (ReadinessStatus::Ok, format!("live mode is active: {} to {}", l.token.symbol(), l.wallet)),
        (None, Mode::Test) => {
            (ReadinessStatus::Warning, "test mode works; live mode is not activated yet (ask the operator)".to_owned())
        }
        (None, Mode::Live) => (
            ReadinessStatus::Error,
            "live mode is not activated: live checkouts are refused with ACTIVE_MERCHANT_REQUIRED".to_owned(),
        ),
    };
    ReadinessEntry { code: "live_activation", status, message, count: None }
}

fn email_entry(c: EmailCounts) -> ReadinessEntry {
    let (status, message) = if c.failed_recently > 0 {
        (
            ReadinessStatus::Warning,
            format!(
                "{} emails were given up in the last {EMAIL_FAILURE_WINDOW_DAYS} days (see each invoice's activity)",
                c.failed_recently
            ),
        )
    } else if c.retrying > 0 {
        (ReadinessStatus::Warning, format!("{} emails are being retried after failed attempts", c.retrying))
    } else {
        (ReadinessStatus::Ok, format!("{} emails waiting to be sent, none failing", c.queued))
    };
    ReadinessEntry { code: "emails", status, message, count: Some(c.failed_recently + c.retrying) }
}

fn key_entry(keys: &[ApiKey], mode: Mode, now: DateTime<Utc>) -> ReadinessEntry {
    let live: Vec<&ApiKey> = keys
        .iter()
        .filter(|k| k.mode == mode && k.revoked_at.is_none() && k.expires_at.is_none_or(|at| at > now))
        .collect();
    let never = live.iter().filter(|k| k.last_used_at.is_none() && now - k.created_at > Duration::days(1)).count();
    let idle =
        live.iter().filter(|k| k.last_used_at.is_some_and(|at| now - at > Duration::days(KEY_IDLE_DAYS))).count();
    let count = u64::try_from(never + idle).unwrap_or(u64::MAX);
    let (status, message) = match (never, idle) {
        (0, 0) => (ReadinessStatus::Ok, format!("{} active keys, all in use", live.len())),
        (n, i) => (
            ReadinessStatus::Warning,
            format!("{n} keys never used and {i} unused for {KEY_IDLE_DAYS} days: revoke the ones nobody needs"),
        ),
    };
    ReadinessEntry { code: "api_keys", status, message, count: Some(count) }
}

/// The checks of `payment` against `session`, in verification's order.
pub fn checks(session: &CheckoutSession, payment: &Payment) -> Vec<Check> {
    let failed_at = payment
        .failure_reason
        .map(CheckName::of_failure)
        .or_else(|| (payment.status == PaymentStatus::Duplicate).then_some(CheckName::Duplicate));
    let verified = is_verified(payment.status);
    let mut past_failure = false;
    CheckName::ALL
        .into_iter()
        .map(|name| {
            let (expected, found) = values(name, session, payment);
            // The payer restricts nothing any more (a bound wallet is evidence): only payments
            // that failed on it before say so.
            let outcome = if Some(name) == failed_at {
                past_failure = true;
                CheckOutcome::Failed
            } else if past_failure || name == CheckName::Payer {
                CheckOutcome::Skipped
            } else if failed_at.is_some() || verified || (name == CheckName::Hash && payment.block.is_some()) {
                CheckOutcome::Passed
            } else {
                CheckOutcome::Pending
            };
            let (outcome, note) = amount_note(name, outcome, payment);
            Check { name, outcome, expected, found, note }
        })
        .collect()
}

/// The amount check of a credited transfer says by how much it missed.
fn amount_note(name: CheckName, outcome: CheckOutcome, p: &Payment) -> (CheckOutcome, Option<String>) {
    if name != CheckName::Amount {
        return (outcome, None);
    }
    match p.status {
        PaymentStatus::Underpaid => (
            CheckOutcome::Failed,
            Some(format!(
                "credited, {} short of what was due",
                p.amount_expected.saturating_sub(&p.amount_received).to_trimmed(2)
            )),
        ),
        PaymentStatus::Overpaid => (
            CheckOutcome::Passed,
            Some(format!(
                "credited, {} more than was due",
                p.amount_received.saturating_sub(&p.amount_expected).to_trimmed(2)
            )),
        ),
        _ => (outcome, None),
    }
}

/// What the checkout asked and what the transfer had, for one check.
fn values(name: CheckName, s: &CheckoutSession, p: &Payment) -> (Option<String>, Option<String>) {
    match name {
        CheckName::Hash => (None, Some(p.transaction_hash.as_str().to_owned())),
        CheckName::Chain => (Some(s.chain_id.to_string()), Some(p.chain_id.to_string())),
        CheckName::Token => (Some(s.token_contract.to_string()), Some(p.token_contract.to_string())),
        CheckName::Recipient => (Some(s.settlement_wallet.to_string()), Some(p.settlement_wallet.to_string())),
        CheckName::Payer => (None, p.payer_address.clone()),
        CheckName::Amount => (Some(p.amount_expected.to_string()), Some(p.amount_received.to_string())),
        CheckName::Expiry => (
            Some(format!("between {} and {}", stamp(s.created_at), stamp(s.expires_at))),
            Some(match p.block_time {
                Some(mined) => format!("mined {}", stamp(mined)),
                None => format!("not mined yet (reported {})", stamp(p.detected_at)),
            }),
        ),
        CheckName::Duplicate => (Some("credited once".into()), None),
    }
}

fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Where `p`'s block stands.
fn finality(p: &Payment, chain: &ChainState) -> Finality {
    if chain.simulated {
        return Finality::Final;
    }
    match (&p.block, chain.final_block) {
        (None, _) => Finality::NotMined,
        (Some(b), Some(head)) if head >= b.number => Finality::Final,
        (Some(b), Some(head)) => Finality::Waiting(b.number - head),
        // A transfer is credited only once its block is final.
        (Some(_), None) if is_verified(p.status) => Finality::Final,
        (Some(_), None) => Finality::Unknown,
    }
}

/// Where a checkout's customer's money may have gone (live mode).
#[derive(Debug, Default)]
struct Elsewhere {
    /// Open unattributed transfers naming the checkout among their candidates, or holding the
    /// checkout's latest reported transfer.
    held: Vec<UnattributedTransfer>,
    /// The merchant's payment credited with the transfer the checkout's report named.
    took: Option<Payment>,
}

impl Elsewhere {
    /// The next step these facts call for, when they call for one.
    fn words(&self, s: &CheckoutSession, phase: CheckoutPhase) -> Option<String> {
        if let Some(p) = &self.took {
            return Some(format!(
                "The reported transfer {} was credited to checkout {} (invoice {}, payment {}): evidence stronger than the report ({}) named that checkout. If it was this customer's, record a refund there and ask for a new payment here; otherwise the customer can pay this checkout until {}.",
                p.transaction_hash.as_str(),
                p.checkout_session_id,
                p.invoice_id,
                p.id,
                p.evidence.map_or("its exact amount", |e| e.as_str()),
                stamp(s.expires_at)
            ));
        }
        let held = self.held.first()?;
        let others: Vec<String> = held.candidates.iter().filter(|c| **c != s.id).map(ToString::to_string).collect();
        let with = if others.is_empty() { String::new() } else { format!(" (also claimed for {})", others.join(", ")) };
        let opening = match phase {
            CheckoutPhase::Pay => "Nothing credited yet, but a",
            _ => "A",
        };
        Some(format!(
            "{opening} transfer of {} {} in transaction {} is held for you to decide{with}: unattributed transfer {}, reason {}. Attribute it with POST /v1/unattributed-transfers/{}/attribute once you know whose it is; nothing is credited meanwhile.",
            held.logged.transfer.amount.to_trimmed(2),
            held.token.symbol(),
            held.logged.tx_hash.as_str(),
            held.id,
            held.reason.as_str(),
            held.id,
        ))
    }
}

/// What to do next, in words a support agent can read to the customer.
fn next_step(
    s: &CheckoutSession,
    phase: CheckoutPhase,
    (remaining, collectible): (&crate::money::Amount, bool),
    (latest, elsewhere): (Option<&Payment>, &Elsewhere),
    chain: &ChainState,
    now: DateTime<Utc>,
) -> String {
    if let Some(words) = elsewhere.words(s, phase) {
        return words;
    }
    let token = s.currency.symbol();
    let again = if collectible && !remaining.is_zero() {
        format!("the remaining {} {token} can be paid on a new checkout", remaining.to_trimmed(2))
    } else {
        "nothing more is due".to_owned()
    };
    match phase {
        CheckoutPhase::Paid => "Paid in full: nothing to do.".to_owned(),
        CheckoutPhase::Pay => format!(
            "Nothing received yet. The customer can send {} {token} to {} on Polygon until {}.",
            s.amount_due.to_trimmed(2),
            s.settlement_wallet,
            stamp(s.expires_at)
        ),
        CheckoutPhase::Validating => match (&chain.health, latest.and_then(|p| p.block.as_ref())) {
            (ChainHealth::Ok, Some(b)) => match chain.final_block {
                Some(head) if head < b.number => format!(
                    "A transfer is being verified: its block {} is {} blocks from final. It is credited when final; nothing to do.",
                    b.number,
                    b.number - head
                ),
                _ => "A transfer is being verified; it is credited when its block is final. Nothing to do.".to_owned(),
            },
            (ChainHealth::Ok, None) => {
                "A transfer was reported and is not in a block yet; it is checked again until it is mined (or found missing). Nothing to do.".to_owned()
            }
            (ChainHealth::Off, _) => {
                "A transfer is waiting: this deployment has no chain endpoint configured, so live payments are not verified (the operator must set STABLEPAY_CHAIN_RPC_URLS).".to_owned()
            }
            (ChainHealth::Unreachable(why) | ChainHealth::WrongChain(why), _) => {
                format!("A transfer is waiting: the chain cannot be used now ({why}); verification resumes when it can.")
            }
        },
        CheckoutPhase::Underpaid => format!("The transfer was credited but fell short; {again}."),
        CheckoutPhase::Held => format!(
            "The transfer reported for this checkout is held: other evidence names another checkout as well. It is listed in GET /v1/unattributed-transfers with reason disputed and its candidate checkouts; decide with POST /v1/unattributed-transfers/{{id}}/attribute. The customer can still pay until {}.",
            stamp(s.expires_at)
        ),
        CheckoutPhase::Failed => {
            let why = latest.and_then(|p| p.failure_reason).map_or("it was a duplicate", |r| r.as_str());
            format!("The last transfer could not be accepted ({why}); the customer can pay again on this checkout until {}.", stamp(s.expires_at))
        }
        CheckoutPhase::Expired if s.expired(now) => format!("The checkout expired at {}; {again}.", stamp(s.expires_at)),
        CheckoutPhase::Expired => format!("The checkout expired; {again}."),
        CheckoutPhase::Cancelled => "The invoice was closed: nothing can be paid on this checkout.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::api_key::model::KeyType;
    use crate::ids::{ApiKeyId, MerchantId};

    fn key(mode: Mode, created_days_ago: i64, used_days_ago: Option<i64>, revoked: bool) -> ApiKey {
        let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
        ApiKey {
            id: ApiKeyId::from_trusted("key_1".into()),
            merchant_id: MerchantId::from_trusted("mer_1".into()),
            mode,
            key_type: KeyType::Secret,
            digest: [0; 32],
            display_prefix: "sk_test_x".into(),
            created_at: now - Duration::days(created_days_ago),
            expires_at: None,
            revoked_at: revoked.then_some(now),
            last_used_at: used_days_ago.map(|d| now - Duration::days(d)),
            permissions: None,
        }
    }

    #[test]
    fn keys_never_used_or_idle_for_90_days_are_reported_in_their_mode() {
        let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
        let keys = [
            key(Mode::Test, 0, None, false),       // new: not yet reported
            key(Mode::Test, 5, None, false),       // never used
            key(Mode::Test, 200, Some(91), false), // idle
            key(Mode::Test, 200, Some(3), false),  // in use
            key(Mode::Test, 200, None, true),      // revoked: not counted
            key(Mode::Live, 5, None, false),       // the other mode
        ];
        let entry = key_entry(&keys, Mode::Test, now);
        assert_eq!((entry.status, entry.count), (ReadinessStatus::Warning, Some(2)));
        assert!(entry.message.starts_with("1 keys never used and 1 unused for 90 days"), "{}", entry.message);
        let fine = key_entry(&keys[3..4], Mode::Test, now);
        assert_eq!((fine.status, fine.count), (ReadinessStatus::Ok, Some(0)));
    }

    #[test]
    fn failed_emails_weigh_more_than_retried_ones() {
        let e = email_entry(EmailCounts { queued: 3, retrying: 1, failed_recently: 2 });
        assert_eq!((e.status, e.count), (ReadinessStatus::Warning, Some(3)));
        assert!(e.message.starts_with("2 emails were given up"));
        let ok = email_entry(EmailCounts { queued: 3, retrying: 0, failed_recently: 0 });
        assert_eq!(ok.status, ReadinessStatus::Ok);
    }
}
