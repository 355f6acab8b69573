//! The relayer's use cases: a customer's signed authorization submitted (everything checked
//! before it is accepted), read back, and sent by the worker (one sender at a time across
//! replicas, replacement with higher fees while a transaction waits, and each outcome
//! settled from the chain); and the relayer's state for readiness and the metrics.

use crate::error::{Error, RelayerUnavailable, Resource};
use crate::ids::{CheckoutSessionId, RelayId};
use crate::invoice::service::{Invoices, PublicViews};
use crate::invoice::wallet::AuthorizationNonce;
use crate::mode::Mode;
use crate::relay::model::{
    Inserted, Rebroadcast, Refusal, Relay, RelayPass, RelaySettings, RelayStatus, RelayerStatus, SENDER_LEASE_SECONDS,
    SentStep, Signature, SignedAuthorization, day_start, gas_limit, outcome_detail, sent_step,
};
use crate::relay::ports::{RelayStore, Relayer};

/// Submissions the sender takes in one pass.
const BATCH: u32 = 20;

/// The relayer's use cases over their ports.
pub struct Relays<'a> {
    /// What a checkout shows (whether it can be paid), and the token's EIP-712 domain.
    pub views: PublicViews<'a>,
    /// The attempts' kept terms, and the report of a mined transaction to its checkout.
    pub invoices: Invoices<'a>,
    /// Submissions, the account's nonce and the sender's lease.
    pub store: &'a dyn RelayStore,
    /// The relayer's account on the chain.
    pub relayer: &'a dyn Relayer,
    /// The operator's limits.
    pub settings: &'a RelaySettings,
}

fn invalid(field: &str, message: &str) -> Error {
    Error::InvalidWalletPaymentAttempt { field: field.into(), message: message.into() }
}

impl Relays<'_> {
    /// Whether wallet payment attempts offer the relayer (the operator set a key).
    pub fn offered(&self) -> bool {
        self.relayer.address().is_some()
    }

    /// The customer of live checkout `session_id` signed the authorization of the attempt whose
    /// nonce is `nonce` with `signature`: the relayer submits it, paying the gas. Checked before
    /// anything is accepted, in this order: the relayer is on; the checkout exists and is live;
    /// an attempt was submitted before (answered as it stands: one submission per attempt);
    /// the checkout can be paid and no other submission of it is being sent; the attempt is this
    /// checkout's, its signature recovers to its wallet; on the chain, the authorization is valid for at least a minute more, unused, the
    /// payer's balance covers it and the exact call succeeds; the relayer can pay its gas and
    /// the day's gas budget holds it. Errors: `RelayerUnavailable` (with why),
    /// `NotFound(CheckoutSession)`, `WalletPaymentsUnavailable` (test mode),
    /// `CheckoutSessionNotPayable`, `RelayInFlight`, `InvalidWalletPaymentAttempt` on `nonce` or
    /// `signature`,
    /// `AuthorizationExpired`, `AuthorizationUsed`, `PayerBalanceInsufficient`,
    /// `AuthorizationRejected`, `Unavailable` (the chain did not answer).
    pub async fn submit(
        &self,
        session_id: &CheckoutSessionId,
        nonce: &AuthorizationNonce,
        signature: &str,
    ) -> Result<Relay, Error> {
        let relayer = self.relayer.address().ok_or(Error::RelayerUnavailable(RelayerUnavailable::Off))?;
        let view = self.views.checkout(session_id).await?;
        let scope = view.session.scope.clone();
        if scope.mode == Mode::Test {
            return Err(Error::WalletPaymentsUnavailable(
                "test checkouts are simulated: use the page's simulate buttons or the test helpers",
            ));
        }
        if let Some(existing) = self.store.relay_for_nonce(&scope, session_id, nonce).await? {
            return Ok(existing);
        }
        if !view.phase.payable() {
            return Err(Error::CheckoutSessionNotPayable);
        }
        // One payment at a time: a second signature (another tab, a double click) would pay twice.
        if let Some(other) = self.store.relay_in_flight(&scope, session_id).await? {
            return Err(Error::RelayInFlight(other.id));
        }
        let terms = self.invoices.store.authorization_terms(&scope, session_id, nonce).await?.ok_or_else(|| {
            invalid("nonce", "no wallet payment attempt of this checkout offered this nonce; ask a new attempt")
        })?;
        if !self.relayer.submits_to(&terms.token_contract) {
            return Err(Error::RelayerUnavailable(RelayerUnavailable::Off));
        }
        let signature = Signature::parse(signature).ok_or_else(|| {
            invalid("signature", "the 65-byte signature (0x followed by 130 hexadecimal digits, r, s, v) is required")
        })?;
        let authorization = SignedAuthorization { terms, signature };
        let domain = match self.views.chain.token_domain(&authorization.terms.token_contract).await {
            Ok(Some(d)) => d,
            Ok(None) | Err(_) => return Err(Error::RelayerUnavailable(RelayerUnavailable::TokenDomain)),
        };
        if self.relayer.signer(&domain, &authorization).as_ref() != Some(&authorization.terms.from) {
            return Err(invalid(
                "signature",
                "the signature is not the paying wallet's signature of this authorization",
            ));
        }
        let preflight = self.relayer.preflight(&authorization).await?;
        if let Some(refusal) = Refusal::of(&authorization.terms, &preflight) {
            return Err(refusal.into_error(&authorization.terms));
        }
        let gas = gas_limit(preflight.call.unwrap_or_default());
        let fees = self.relayer.fees().await?.capped(self.settings.max_fee_per_gas);
        if self.relayer.balance().await? < fees.worst_cost(gas) {
            return Err(Error::RelayerUnavailable(RelayerUnavailable::Unfunded));
        }
        let now = self.views.clock.system_now();
        let relay = Relay::queued(self.views.crypto, (scope, session_id.clone()), (authorization, relayer), gas, now);
        match self.store.insert_relay(&relay, (day_start(now), self.settings.daily_gas_limit)).await? {
            Inserted::New => Ok(relay),
            Inserted::Existing(existing) => Ok(*existing),
            Inserted::OverBudget => Err(Error::RelayerUnavailable(RelayerUnavailable::DailyGasLimit)),
        }
    }

    /// Submission `id` of checkout `session_id`, as its customer follows it. Errors:
    /// `NotFound(CheckoutSession)`, `NotFound(RelayedAuthorization)`.
    pub async fn get(&self, session_id: &CheckoutSessionId, id: &RelayId) -> Result<Relay, Error> {
        let view = self.views.checkout(session_id).await?;
        if view.session.scope.mode == Mode::Test {
            return Err(Error::NotFound(Resource::RelayedAuthorization));
        }
        self.store.get_relay(&view.session.scope, session_id, id).await
    }

    /// The relayer's state (`None` when it is off): its balance and fees as the chain says them
    /// (unknown when it does not answer), and today's use. Errors: `Unavailable` when the
    /// store does not answer.
    pub async fn status(&self) -> Result<Option<RelayerStatus>, Error> {
        let Some(address) = self.relayer.address() else { return Ok(None) };
        let today = self.store.usage(&address, day_start(self.views.clock.system_now())).await?;
        let balance_wei = self.relayer.balance().await.ok();
        let fees = self.relayer.fees().await.ok().map(|f| f.capped(self.settings.max_fee_per_gas));
        Ok(Some(RelayerStatus { address, balance_wei, fees, today, daily_gas_limit: self.settings.daily_gas_limit }))
    }

    /// One pass of the sender, as `holder` (a worker): nothing while nothing waits, nor unless
    /// it holds the sender's lease (one worker of all replicas sends at a time); then every transaction in flight is
    /// followed (mined: its outcome settled and a confirmed payment reported to its checkout;
    /// waiting: replaced with higher fees after `bump_after`), and queued submissions are
    /// checked once more (their checkout still payable, the chain's checks) and sent, each with
    /// the next nonce. Errors: `Unavailable` (the chain
    /// or the store did not answer: the next pass goes on where this one stopped).
    pub async fn send_pass(&self, holder: &str) -> Result<RelayPass, Error> {
        let mut pass = RelayPass::default();
        let Some(relayer) = self.relayer.address() else { return Ok(pass) };
        if !self.store.has_work(&relayer).await? {
            return Ok(pass);
        }
        let Some(mut next) = self.store.take_lease(&relayer, holder, SENDER_LEASE_SECONDS).await? else {
            return Ok(pass);
        };
        pass.sender = true;
        let mined = self.relayer.mined_nonce().await?;
        for relay in self.store.in_flight(&relayer, 100).await? {
            self.follow(relay, holder, mined, &mut pass).await?;
        }
        let queued = self.store.queued(&relayer, BATCH).await?;
        pass.more = queued.len() >= usize::try_from(BATCH).unwrap_or(usize::MAX);
        for relay in queued {
            match self.send_first(relay, holder, (next, next.max(mined)), &mut pass).await? {
                First::Sent(used) => next = used + 1,
                First::Settled => {}
                // The lease or the nonce moved under this worker: another one sends now.
                First::LeaseLost => break,
            }
        }
        Ok(pass)
    }

    /// Follows a submission whose transaction may still be mined.
    async fn follow(&self, mut relay: Relay, holder: &str, mined: u64, pass: &mut RelayPass) -> Result<(), Error> {
        // Read before the receipts: a use the relay's own version made shows as its receipt.
        let (mut used, mut chain_time) = self.relayer.authorization_used(&relay.authorization).await?;
        let mut receipt = None;
        for t in relay.transactions.iter().rev() {
            if let Some(r) = self.relayer.receipt(&t.hash).await? {
                receipt = Some(r);
                break;
            }
        }
        // A version that reverted may have been mined after that read: why it reverted (used by
        // another, expired) is read again, as of a block no earlier than its own.
        if receipt.as_ref().is_some_and(|r| !r.succeeded) {
            (used, chain_time) = self.relayer.authorization_used(&relay.authorization).await?;
        }
        let now = self.views.clock.system_now();
        match sent_step(&relay, receipt, (mined, used, chain_time), (now, self.settings.bump_after)) {
            SentStep::Mined(status, receipt) => {
                let hash = receipt.hash.clone();
                relay.status = status;
                relay.detail = Some(outcome_detail(status).to_owned());
                relay.receipt = Some(receipt);
                if self.store.record_outcome(&relay, holder).await? {
                    pass.settled.push(status);
                }
                // The transfer pays its checkout by its nonce whoever reports it; the report
                // only lets the checkout show it at once (the follower finds it otherwise).
                if status == RelayStatus::Confirmed
                    && self.invoices.submit_payment(&relay.session_id, &hash).await.is_err()
                {
                    pass.reports_failed += 1;
                }
            }
            SentStep::Requeue => {
                relay.status = RelayStatus::Queued;
                relay.tx_nonce = None;
                relay.detail = Some("the relayer's nonce was taken by another transaction: sent again".into());
                self.store.record_outcome(&relay, holder).await?;
            }
            SentStep::Waiting(known, bump) => {
                if let Some(status) = known.filter(|s| *s != relay.status) {
                    relay.status = status;
                    relay.detail = Some(outcome_detail(status).to_owned());
                    if self.store.record_outcome(&relay, holder).await? {
                        pass.settled.push(status);
                    }
                }
                if bump {
                    self.bump(&relay, holder, pass).await?;
                }
            }
        }
        Ok(())
    }

    /// Broadcasts `relay`'s transaction again, replaced with higher fees where the cap leaves
    /// room (same nonce: whichever version is mined, the nonce is used once).
    async fn bump(&self, relay: &Relay, holder: &str, pass: &mut RelayPass) -> Result<(), Error> {
        let (Some(latest), Some(nonce)) = (relay.latest(), relay.tx_nonce) else { return Ok(()) };
        let suggested = self.relayer.fees().await?;
        let now = self.views.clock.system_now();
        let replacement = match latest.fees.bumped(&suggested, self.settings.max_fee_per_gas) {
            Some(fees) => Some(self.relayer.sign(&relay.authorization, (nonce, relay.gas_limit), &fees, now)?),
            None => None,
        };
        let again = Rebroadcast { at: now, replacement };
        if !self.store.record_broadcast(&relay.id, holder, &again).await? {
            return Ok(());
        }
        if again.replacement.is_some() {
            pass.bumped += 1;
        }
        if self.relayer.broadcast(again.replacement.as_ref().unwrap_or(latest)).await.is_err() {
            pass.broadcast_failures += 1;
        }
        Ok(())
    }

    /// Checks queued `relay` once more and sends it with nonce `nonce` (the store's next being
    /// `expected`).
    async fn send_first(
        &self,
        mut relay: Relay,
        holder: &str,
        (expected, nonce): (u64, u64),
        pass: &mut RelayPass,
    ) -> Result<First, Error> {
        // Paid (by another transfer), expired or closed meanwhile: sending would move the
        // customer's money for nothing.
        if !self.views.checkout(&relay.session_id).await?.phase.payable() {
            relay.status = RelayStatus::Cancelled;
            relay.detail = Some("its checkout was paid, expired or closed before it was sent: nothing was sent".into());
            if self.store.record_outcome(&relay, holder).await? {
                pass.settled.push(RelayStatus::Cancelled);
            }
            return Ok(First::Settled);
        }
        let preflight = self.relayer.preflight(&relay.authorization).await?;
        if let Some(refusal) = Refusal::of(&relay.authorization.terms, &preflight) {
            let (status, detail) = refusal.outcome();
            relay.status = status;
            relay.detail = Some(detail);
            if self.store.record_outcome(&relay, holder).await? {
                pass.settled.push(status);
            }
            return Ok(First::Settled);
        }
        let fees = self.relayer.fees().await?.capped(self.settings.max_fee_per_gas);
        let now = self.views.clock.system_now();
        let transaction = self.relayer.sign(&relay.authorization, (nonce, relay.gas_limit), &fees, now)?;
        if !self.store.record_first(&relay.id, holder, (expected, nonce), &transaction).await? {
            return Ok(First::LeaseLost);
        }
        pass.sent += 1;
        if self.relayer.broadcast(&transaction).await.is_err() {
            pass.broadcast_failures += 1;
        }
        Ok(First::Sent(nonce))
    }
}

/// What became of a queued submission the sender took.
enum First {
    /// Sent with this nonce.
    Sent(u64),
    /// Refused on the last look: its outcome is saved.
    Settled,
    /// Not written: the lease or the account's next nonce moved.
    LeaseLost,
}

#[cfg(test)]
mod tests;
