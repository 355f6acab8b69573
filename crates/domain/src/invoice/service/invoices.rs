//! The invoice use cases over their ports: [`Invoices`], and the decision other features use to
//! create an invoice with its checkout.

use chrono::{DateTime, Utc};

use crate::api_key::model::TEST_HELPERS_ONLY;
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceKey, PublicRef};
use crate::invoice::input::{
    AmountOnlyInput, CheckoutInput, CloseAction, OpenedCheckout, RefundInput, TestPaymentInput,
};
use crate::invoice::service::credit::{self, Settled};
use crate::invoice::service::decide;
use crate::invoice::service::due;

use crate::chain::evidence::Claims;
use crate::chain::model::{CandidateQuery, Candidates, Naming, Observation, UnattributedTransfer};
use crate::chain::ports::Chain;
use crate::clock::{Clock, MAX_TEST_CLOCK_ADVANCE_SECONDS};
use crate::crypto::Crypto;
use crate::error::Error;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::{CheckoutSessionId, InvoiceId, PaymentId, RefundReferenceId};
use crate::invoice::aggregate::{Decision, InvoiceChange};
use crate::invoice::model::{Acting, Actor};
use crate::invoice::payment::{Evidence, Payment, TxHash};
use crate::invoice::ports::InvoiceStore;
use crate::invoice::validate::{self, DraftInput};
use crate::invoice::wallet::AuthorizationTerms;
use crate::merchant::model::{ChainSettings, Merchant, POLYGON_CHAIN_ID, WalletAddress};
use crate::mode::{Mode, Scope};
use crate::schedule::model::DUE_WORK_SCHEDULE;

/// How many times a use case reloads and retries after a concurrent change.
const MAX_ATTEMPTS: usize = 8;

/// How many invoices one claim of due work takes.
const DUE_BATCH: u32 = 100;

/// What a run of due work did.
#[derive(Debug, Default, PartialEq)]
pub struct DueReport {
    /// Invoices that changed.
    pub changed: usize,
    /// Invoices whose work failed; each was backed off and is retried later.
    pub failed: Vec<DueFailure>,
}

/// One invoice whose due work failed.
#[derive(Debug, PartialEq)]
pub struct DueFailure {
    /// The invoice's merchant and mode.
    pub scope: Scope,
    /// The invoice whose due work failed.
    pub invoice: InvoiceId,
    /// What failed.
    pub error: Error,
    /// Failures in a row, this one included.
    pub failures: u32,
}

/// A new amount-only invoice with its checkout (what `POST /v1/checkout-sessions` creates), for
/// other use cases that create one (payment links).
pub fn decide_checkout(
    crypto: &dyn Crypto,
    chain: &ChainSettings,
    merchant: &Merchant,
    scope: &Scope,
    input: CheckoutInput,
    now: DateTime<Utc>,
) -> Result<InvoiceChange, Error> {
    decide::checkout((crypto, chain), merchant, scope, input, now)
}

/// The invoice use cases: checkouts, invoices, payments, refunds and the time-based transitions,
/// over the ports they need. Each call loads what it decides on, decides in pure functions, and
/// saves the change with its events atomically (retrying when the invoice changed meanwhile).
pub struct Invoices<'a> {
    /// Invoices with their sessions and payments, and their events.
    pub store: &'a dyn InvoiceStore,
    /// Ids, tokens and hashes.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time (the test clock in test mode).
    pub clock: &'a dyn Clock,
    /// The chain, for verifying live transfers.
    pub chain: &'a dyn Chain,
    /// The settlement chain and token contracts new checkouts expect.
    pub settings: &'a ChainSettings,
    /// The idempotency key of the request these use cases serve: every change they save is
    /// marked in its transaction (`None`: no key).
    pub claim: Option<IdempotencyClaim>,
    /// Who acts: an API key, or a dashboard member named in the activity of their changes.
    pub acting: Acting,
}

impl<'a> Invoices<'a> {
    /// The use cases over these ports, for an API key without an idempotency key (fields may be
    /// added; tooling builds them with this).
    pub fn new(
        store: &'a dyn InvoiceStore,
        crypto: &'a dyn Crypto,
        clock: &'a dyn Clock,
        (chain, settings): (&'a dyn Chain, &'a ChainSettings),
    ) -> Self {
        Self { store, crypto, clock, chain, settings, claim: None, acting: Acting::Api }
    }
}

impl Invoices<'_> {
    fn ctx(&self) -> (&dyn Crypto, &ChainSettings) {
        (self.crypto, self.settings)
    }

    /// Saves `change` under the request's idempotency claim.
    async fn save(&self, mut change: InvoiceChange) -> Result<InvoiceAggregate, Error> {
        change.claim = self.claim.clone();
        self.store.save_invoice(change).await
    }

    /// Load, decide, save; decided again on a concurrent change. Answers the saved (or, when
    /// the decision changes nothing, the loaded) aggregate and the decision's output.
    async fn mutate<T>(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        decide: impl Fn(&InvoiceAggregate, DateTime<Utc>) -> Result<Decision<T>, Error>,
    ) -> Result<(InvoiceAggregate, T), Error> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.load_invoice(scope, key).await?;
            let now = self.clock.now(scope).await?;
            let Decision { change, output } = decide(&current, now)?;
            let Some(mut change) = change else { return Ok((current, output)) };
            let known = current.invoice.activity.len().min(change.aggregate.invoice.activity.len());
            self.acting.attribute(&mut change.aggregate.invoice.activity[known..]);
            match self.save(change).await {
                Err(Error::InvoiceStateMismatch) => continue,
                Err(e) => return Err(e),
                Ok(saved) => return Ok((saved, output)),
            }
        }
        Err(Error::InvoiceStateMismatch)
    }

    /// `POST /v1/checkout-sessions`: an amount-only invoice, payable at once, and its checkout.
    pub async fn create_checkout(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: CheckoutInput,
    ) -> Result<InvoiceAggregate, Error> {
        self.create(scope, |now, attempt| {
            decide::checkout(self.ctx(), &merchant.for_attempt(attempt), scope, input.clone(), now)
        })
        .await
    }

    /// Decides and saves a creation; decided again when the store refuses it for a concurrent
    /// creation (an invoice number, or a unique amount another open checkout drew meanwhile).
    /// `decide` is told which attempt it is (a checkout asks its plain amount once offsets kept
    /// being taken: [`Merchant::for_attempt`]).
    async fn create(
        &self,
        scope: &Scope,
        decide: impl Fn(DateTime<Utc>, usize) -> Result<InvoiceChange, Error>,
    ) -> Result<InvoiceAggregate, Error> {
        for attempt in 0..MAX_ATTEMPTS {
            let now = self.clock.now(scope).await?;
            let mut change = decide(now, attempt)?;
            self.acting.attribute(&mut change.aggregate.invoice.activity);
            match self.save(change).await {
                Err(Error::InvoiceStateMismatch) => continue,
                other => return other,
            }
        }
        Err(Error::InvoiceStateMismatch)
    }

    /// `POST /v1/invoices`, itemized form: a draft (version 1), or issued at once.
    pub async fn create_invoice(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: DraftInput,
        issue: bool,
        send: bool,
    ) -> Result<InvoiceAggregate, Error> {
        self.create(scope, |now, attempt| {
            let merchant = merchant.for_attempt(attempt);
            decide::itemized(self.ctx(), &merchant, scope, input.clone(), (issue, send), now)
        })
        .await
    }

    /// `POST /v1/invoices`, legacy amount-only form: payable at once.
    pub async fn create_amount_only(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: AmountOnlyInput,
    ) -> Result<InvoiceAggregate, Error> {
        self.create_checkout(merchant, scope, input.into()).await
    }

    /// `PATCH /v1/invoices/{id}`: full replacement of a draft's fields at `version`.
    pub async fn update_draft(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
        version: i64,
        input: DraftInput,
    ) -> Result<InvoiceAggregate, Error> {
        let settlement = merchant.settlement(scope.mode)?;
        let built = validate::build_fields(input, settlement.token)?;
        let (saved, ()) = self
            .mutate(scope, key, |agg, now| {
                decide::check_due(&built.0, now)?;
                decide::update(agg, version, &built, now)
            })
            .await?;
        Ok(saved)
    }

    /// `POST /v1/invoices/{id}/issue` (its checkout asks a unique amount when `merchant` has
    /// them on).
    pub async fn issue(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
        (version, send): (i64, bool),
    ) -> Result<InvoiceAggregate, Error> {
        let unique = merchant.settlement(scope.mode).is_ok_and(|s| s.unique_amounts);
        let (saved, ()) =
            self.mutate(scope, key, |agg, now| decide::issue(self.ctx(), agg, (version, send, unique), now)).await?;
        Ok(saved)
    }

    /// `POST /v1/invoices/{id}/checkout-sessions`: a checkout for the collectible remainder,
    /// reusing an active one for the same remainder.
    pub async fn open_checkout(&self, scope: &Scope, key: &InvoiceKey) -> Result<OpenedCheckout, Error> {
        let (aggregate, (session_id, reused)) =
            self.mutate(scope, key, |agg, now| decide::open_checkout(self.ctx(), agg, now)).await?;
        Ok(OpenedCheckout { aggregate, session_id, reused })
    }

    /// Void, void-remaining or mark-uncollectible, with a reason. Payment records stay.
    pub async fn close(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        action: CloseAction,
        reason: &str,
    ) -> Result<InvoiceAggregate, Error> {
        let reason = decide::check_reason(reason)?;
        let (saved, ()) =
            self.mutate(scope, key, |agg, now| decide::close(self.crypto, agg, action, &reason, now)).await?;
        Ok(saved)
    }

    /// `POST /v1/invoices/{id}/refund-references`: records a refund made elsewhere.
    pub async fn record_refund(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        input: RefundInput,
    ) -> Result<(InvoiceAggregate, RefundReferenceId), Error> {
        let reason = decide::check_reason(&input.reason)?;
        if input.amount.is_zero() {
            return Err(Error::invalid_amount("amount", "must be greater than zero"));
        }
        if input.chain_id != POLYGON_CHAIN_ID {
            return Err(Error::InvalidDepositNetwork {
                field: "chain_id".into(),
                message: format!("must be {POLYGON_CHAIN_ID} (Polygon)"),
            });
        }
        let id = RefundReferenceId::generate(self.crypto);
        let (saved, ()) =
            self.mutate(scope, key, |agg, now| decide::refund(self.crypto, agg, &input, (&id, &reason), now)).await?;
        Ok((saved, id))
    }

    /// `POST /v1/invoices/{id}/duplicate`: a new draft with the same commercial fields.
    pub async fn duplicate(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
    ) -> Result<InvoiceAggregate, Error> {
        let source = self.store.load_invoice(scope, key).await?.invoice;
        let now = self.clock.now(scope).await?;
        let mut change = decide::duplicate(self.crypto, merchant, scope, &source, now)?;
        self.acting.attribute(&mut change.aggregate.invoice.activity);
        self.save(change).await
    }

    /// Test helper: simulate a transfer to a checkout and run it through verification and
    /// crediting, exactly as a live payment would go (as a final transfer). The session must be
    /// payable when the transfer is credited (checked in the same decision, so concurrent
    /// simulations cannot pay an already completed session). Returns the payment and its
    /// invoice.
    pub async fn pay_test(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        input: TestPaymentInput,
    ) -> Result<(Payment, InvoiceAggregate), Error> {
        if scope.mode != Mode::Test {
            return Err(Error::ApiKeyForbidden(TEST_HELPERS_ONLY));
        }
        if input.amount.as_ref().is_some_and(|a| a.is_zero()) {
            return Err(Error::invalid_amount("amount", "must be greater than zero"));
        }
        let tx = input.transaction_hash.clone().unwrap_or_else(|| TxHash::generate(self.crypto));
        let key = InvoiceKey::Session(session_id.clone());
        let decide = |duplicate: bool| {
            let (tx, input) = (&tx, &input);
            move |agg: &InvoiceAggregate, now: DateTime<Utc>| {
                let transfer = (input.amount.as_ref(), input.succeed, duplicate);
                credit::simulated(self.crypto, agg, (session_id, tx), transfer, now)
            }
        };
        let (saved, id) = match self.mutate(scope, &key, decide(false)).await {
            Err(Error::DuplicateTransaction) => self.mutate(scope, &key, decide(true)).await?,
            other => other?,
        };
        let payment = saved.payment(&id).cloned().ok_or_else(|| Error::Internal("payment not saved".into()))?;
        Ok((payment, saved))
    }

    /// A customer reports the hash of a transfer to a live checkout (the unguessable session id
    /// is the capability, as for the hosted page): recorded as `detected` and verified by the
    /// worker. The same hash on the same session answers the same payment.
    /// Errors: `NotFound(CheckoutSession)`; `CheckoutSessionNotPayable` for an expired or
    /// completed session; `FeatureUnavailable` in test mode (simulate transfers instead).
    pub async fn submit_payment(&self, session_id: &CheckoutSessionId, tx: &TxHash) -> Result<Payment, Error> {
        let public = self.store.load_public(&PublicRef::Session(session_id.clone())).await?;
        let scope = public.invoice.scope.clone();
        if scope.mode == Mode::Test {
            return Err(Error::FeatureUnavailable(
                "reporting transactions in test mode: simulate transfers with the test helpers",
            ));
        }
        self.report(&scope, (session_id, tx, None), (credit::Origin::Submitted, Actor::Api)).await
    }

    /// The customer connected wallet `payer` on the hosted page of live checkout `session_id`
    /// (the wallet payment attempt): evidence that its transfers are for that checkout. A
    /// binding never restricts who may pay: every wallet bound stays bound, so one bound by
    /// someone else never turns the customer's own transfer away. The attempt's authorization
    /// `terms`, when it offers one, are kept with the binding (at most
    /// [`MAX_AUTHORIZATIONS`](crate::invoice::wallet::MAX_AUTHORIZATIONS) per checkout): a
    /// transfer carrying its nonce pays this checkout, and a signature posted for the relayer is
    /// checked against them. Answers whether they were kept (else the attempt offers the plain
    /// transfer only). Errors: `NotFound(CheckoutSession)`.
    pub async fn bind_payer(
        &self,
        session_id: &CheckoutSessionId,
        payer: &WalletAddress,
        terms: Option<&AuthorizationTerms>,
    ) -> Result<bool, Error> {
        let public = self.store.load_public(&PublicRef::Session(session_id.clone())).await?;
        let scope = public.invoice.scope.clone();
        // Compared with block times: the real time, whatever a test clock says.
        self.store.bind_wallet(&scope, session_id, payer, terms.cloned(), self.clock.system_now()).await
    }

    /// The chain follower saw log `log_index` of transfer `tx` pay the wallet of checkout
    /// `session_id` and `evidence` names that checkout: recorded as `detected` for verification,
    /// claiming that log alone (never refused: it is money seen arriving).
    pub async fn record_detected(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        (tx, log_index, evidence): (&TxHash, u64, Evidence),
    ) -> Result<Payment, Error> {
        let how = (credit::Origin::Detected, Actor::System);
        self.report(scope, (session_id, tx, Some((log_index, evidence))), how).await
    }

    async fn report(
        &self,
        scope: &Scope,
        claim: credit::Claim<'_>,
        how: (credit::Origin, Actor),
    ) -> Result<Payment, Error> {
        let key = InvoiceKey::Session(claim.0.clone());
        let reported = |agg: &InvoiceAggregate, now| credit::reported(self.crypto, agg, claim, how, now);
        let (saved, id) = self.mutate(scope, &key, reported).await?;
        saved.payment(&id).cloned().ok_or_else(|| Error::Internal("payment not saved".into()))
    }

    /// A person attributes the recorded transfer `record` to checkout `session_id` of `scope`,
    /// saying `why`: checked as any verification is (the checkout's token and wallet, the
    /// checkout open at the transfer's block time, an amount in range) and credited at once,
    /// with the ordinary events and the author in the invoice's activity. Errors:
    /// `NotFound(CheckoutSession)`, `ModeMismatch`; `TransferDoesNotPay`;
    /// `TransferAlreadyAttributed` when the transfer was credited meanwhile.
    pub async fn attribute_recorded(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        (record, why): (&UnattributedTransfer, &str),
    ) -> Result<Payment, Error> {
        let key = InvoiceKey::Session(session_id.clone());
        let decide = |agg: &InvoiceAggregate, now| {
            credit::attributed(self.crypto, agg, (session_id, record, why), (false, Actor::Api), now)
        };
        let (saved, id) = match self.mutate(scope, &key, decide).await {
            Err(Error::DuplicateTransaction) => return Err(Error::TransferAlreadyAttributed),
            other => other?,
        };
        saved.payment(&id).cloned().ok_or_else(|| Error::Internal("payment not saved".into()))
    }

    /// Verifies an in-flight payment against the chain and records what it found: still
    /// waiting, validating (not final yet), back to detected (reorganised), credited, failed
    /// or duplicate. Errors from the chain (`Unavailable`, `FeatureUnavailable`) are returned
    /// untouched: the payment stays as it is and the caller retries later.
    pub async fn verify_payment(&self, scope: &Scope, id: &PaymentId, tx: &TxHash) -> Result<Settled, Error> {
        let observation = self.chain.observe(scope, tx).await?;
        let (open, reported) = self.claims(scope, id, &observation).await?;
        let key = InvoiceKey::Payment(id.clone());
        let wait = credit::NotFoundAfter(self.settings.not_found_after);
        let skew = self.settings.clock_skew;
        let claims =
            open.as_ref().map(|open| Claims { open: &open.named, any_open: open.any_open, reported: &reported, skew });
        let decide = |duplicate: bool| {
            let seen = credit::Seen { observation: &observation, duplicate, claims, skew };
            move |agg: &InvoiceAggregate, now: DateTime<Utc>| credit::verified(self.crypto, agg, id, seen, (now, wait))
        };
        let (_, settled) = match self.mutate(scope, &key, decide(false)).await {
            Err(Error::DuplicateTransaction) => self.mutate(scope, &key, decide(true)).await?,
            other => other?,
        };
        Ok(settled)
    }

    /// For a reported live hash seen in a block: the checkouts taking transfers into its
    /// payment's wallet at that block's time that each of its logs there may name, and the
    /// checkouts the hash was reported for (the evidence a report is weighed against). `None`
    /// for a payment the follower or a person attributed (it claims its log alone) and for what
    /// was not seen.
    async fn claims(
        &self,
        scope: &Scope,
        id: &PaymentId,
        observation: &Observation,
    ) -> Result<(Option<Candidates>, Vec<CheckoutSessionId>), Error> {
        let Observation::Included(tx) = observation else { return Ok((None, Vec::new())) };
        if scope.mode != Mode::Live {
            return Ok((None, Vec::new()));
        }
        let payment = self.store.get_payment(scope, id).await?;
        if payment.claimed_log.is_some() {
            return Ok((None, Vec::new()));
        }
        let (wallet, token) = (&payment.settlement_wallet, &payment.token_contract);
        let reported = self.store.reported_checkouts(&payment.transaction_hash, wallet, token).await?;
        let mut open = Candidates::default();
        for t in tx.transfers.iter().filter(|t| t.to == *wallet && t.token_contract == *token) {
            let naming = Naming {
                amount: t.amount.clone(),
                from: Some(t.from.clone()),
                reported: reported.clone(),
                authorization: t.authorization,
            };
            let (at, early) = (tx.block_time, self.settings.clock_skew);
            let asked = CandidateQuery { wallet: wallet.clone(), token_contract: token.clone(), at, early, naming };
            open.merge(self.store.open_checkouts(&asked).await?);
        }
        Ok((Some(open), reported))
    }

    /// Runs the time-based transitions of one invoice that are due at its scope's time.
    /// Idempotent: a second run finds nothing to do. Answers whether anything changed.
    pub async fn process_due(&self, scope: &Scope, id: &InvoiceId) -> Result<bool, Error> {
        let (_, changed) =
            self.mutate(scope, &InvoiceKey::Id(id.clone()), |agg, now| due::due(self.crypto, agg, now)).await?;
        Ok(changed)
    }

    /// Claims and runs due work until none is left (or `max_rounds` batches). `only` limits it
    /// to one scope (the test clock). An invoice whose work fails is backed off and reported,
    /// and the run goes on with the others; only an unreachable store stops it.
    pub async fn run_due(&self, only: Option<&Scope>, max_rounds: usize) -> Result<DueReport, Error> {
        self.run_due_until(only, max_rounds, &|| false).await
    }

    /// [`Invoices::run_due`], stopping between two invoices once `stop` says so: the leases of
    /// the claimed invoices not yet done are given back, so another worker takes them at once.
    pub async fn run_due_until(
        &self,
        only: Option<&Scope>,
        max_rounds: usize,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<DueReport, Error> {
        let mut report = DueReport::default();
        for _ in 0..max_rounds {
            if stop() {
                break;
            }
            let batch = self.store.claim_due(only.cloned(), DUE_BATCH, 30).await?;
            let mut changed = 0;
            for (i, (scope, id)) in batch.iter().enumerate() {
                if stop() {
                    self.store.release_due(&batch[i..]).await?;
                    report.changed += changed;
                    return Ok(report);
                }
                match self.process_due(scope, id).await {
                    Ok(true) => changed += 1,
                    Ok(false) | Err(Error::NotFound(_)) => {}
                    Err(Error::Unavailable) => return Err(Error::Unavailable),
                    Err(e) => {
                        let failures = self.store.defer_due(scope, id, &e.to_string(), DUE_WORK_SCHEDULE).await?;
                        report.failed.push(DueFailure {
                            scope: scope.clone(),
                            invoice: id.clone(),
                            error: e,
                            failures,
                        });
                    }
                }
            }
            report.changed += changed;
            // A short batch is the last; a batch where nothing changed would only repeat.
            if batch.len() < usize::try_from(DUE_BATCH).unwrap_or(100) || changed == 0 {
                break;
            }
        }
        Ok(report)
    }

    /// Test helper: moves the merchant's test clock forward and runs what became due.
    /// Returns the new offset in seconds and what ran.
    pub async fn advance_test_clock(&self, scope: &Scope, seconds: i64) -> Result<(i64, DueReport), Error> {
        if scope.mode != Mode::Test {
            return Err(Error::ApiKeyForbidden(TEST_HELPERS_ONLY));
        }
        if !(1..=MAX_TEST_CLOCK_ADVANCE_SECONDS).contains(&seconds) {
            return Err(Error::validation("seconds", "must be an integer from 1 to 316224000"));
        }
        let offset = self.store.advance_test_clock(&scope.merchant_id, seconds).await?;
        let report = self.run_due(Some(scope), 1000).await?;
        Ok((offset, report))
    }

    /// Test helper: sets the merchant's test clock back to the real time, so a long-lived test
    /// account does not drift further ahead with every run. Nothing is undone: transitions that
    /// ran stay, and objects created while the clock was ahead keep their (later) timestamps and
    /// deadlines, which the real time reaches in due course.
    pub async fn reset_test_clock(&self, scope: &Scope) -> Result<(), Error> {
        if scope.mode != Mode::Test {
            return Err(Error::ApiKeyForbidden(TEST_HELPERS_ONLY));
        }
        self.store.reset_test_clock(&scope.merchant_id).await
    }
}

#[cfg(test)]
mod tests;
