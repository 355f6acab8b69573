//! The payment-link use cases: the merchant's (create, read, replace the configuration,
//! pause, resume, archive, duplicate, list its invoices), the public ones (show a link, submit
//! it), and the worker's (announce expiries).

pub mod offers;

use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::{Error, Resource};
use crate::event::model::{Event, EventType};
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::{EventId, PaymentLinkId, PublicToken};
use crate::invoice::aggregate::InvoiceChange;
use crate::invoice::input::CheckoutInput;
use crate::invoice::model::{Customer, LinkRef};
use crate::invoice::validate::{check_email, check_len};
use crate::merchant::model::{ChainSettings, Merchant, MerchantStatus};
use crate::merchant::ports::MerchantStore;
use crate::mode::Scope;
use crate::money::Amount;
use crate::page::{Page, PageRequest};
use crate::payment_link::machine::{LinkState, LinkTrigger, refusal, transition};
use crate::payment_link::model::{
    AmountRule, CHECKOUT_MINUTES, Lifecycle, LinkCheckout, LinkConfig, LinkInvoice, PaymentLink, Reservation, Usage,
    link_data,
};
use crate::payment_link::ports::{LinkFilter, LinkQuery, PaymentLinkStore};
use crate::payment_link::validate::{LinkInput, config};

/// Times a use case reloads a link that changed under it before giving up.
const MAX_ATTEMPTS: usize = 8;
/// The longest customer name and reference.
pub const MAX_CUSTOMER_FIELD_BYTES: usize = 200;

/// A public submission.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkSubmission {
    /// The configuration version the page showed.
    pub version: i64,
    /// The amount the customer entered (customer-entered links only).
    pub amount: Option<Amount>,
    /// The customer's email, when the link collects it.
    pub email: Option<String>,
    /// The customer's name, when the link collects it.
    pub name: Option<String>,
    /// The customer's reference, when the link collects it.
    pub customer_reference: Option<String>,
}

/// What a customer's page shows: the link, whom it pays, and the time it is judged at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicLink {
    /// The link.
    pub link: PaymentLink,
    /// The merchant's name, shown on the page.
    pub merchant_name: String,
    /// The merchant's logo, when set.
    pub logo: Option<crate::merchant::logo::Logo>,
    /// The merchant can take payments in the link's mode now (not suspended, and activated for
    /// live mode); otherwise a submission is MODE_UNAVAILABLE.
    pub available: bool,
    /// The link's scope's time, which judges whether it is active or expired.
    pub now: DateTime<Utc>,
}

/// Whether `merchant` can take payments in `scope`'s mode now.
fn takes_payments(merchant: &Merchant, scope: &Scope) -> bool {
    merchant.status == MerchantStatus::Active && merchant.settlement(scope.mode).is_ok()
}

/// The payment link use cases: the merchant's API and the public submission.
pub struct PaymentLinks<'a> {
    /// The links.
    pub store: &'a dyn PaymentLinkStore,
    /// Merchants (whether they can take payments in a mode).
    pub merchants: &'a dyn MerchantStore,
    /// Ids and public tokens.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// The settlement chain and tokens of new checkouts.
    pub chain: &'a ChainSettings,
    /// The idempotency key of the request these use cases serve: every write is marked in
    /// its transaction (`None`: no key, or the worker).
    pub claim: Option<IdempotencyClaim>,
}

impl PaymentLinks<'_> {
    /// Errors: the configuration's field errors, `ActiveMerchantRequired` (live),
    /// `CurrencyMismatch`, `ModeMismatch`.
    pub async fn create(&self, merchant: &Merchant, scope: &Scope, input: LinkInput) -> Result<PaymentLink, Error> {
        let now = self.clock.now(scope).await?;
        let config = config(input, merchant, scope, now)?;
        self.insert_new(scope, config, now).await
    }

    /// A new active link of `config` (new ids, version 1), stored.
    async fn insert_new(&self, scope: &Scope, config: LinkConfig, now: DateTime<Utc>) -> Result<PaymentLink, Error> {
        let link = PaymentLink {
            id: PaymentLinkId::generate(self.crypto),
            public_id: PublicToken::generate(self.crypto),
            scope: scope.clone(),
            config,
            version: 1,
            lifecycle: Lifecycle::Active,
            reservation: None,
            expiry_announced: false,
            created_at: now,
            updated_at: now,
            lock_version: 1,
        };
        self.store.insert_link(&link, self.claim.clone()).await?;
        Ok(link)
    }

    /// The link and the time of its scope (to show its state).
    pub async fn get(&self, scope: &Scope, id: &PaymentLinkId) -> Result<(PaymentLink, DateTime<Utc>), Error> {
        let link = self.store.get_link(scope, id).await?;
        Ok((link, self.clock.now(scope).await?))
    }

    /// Links of `scope` matching `filter`, newest first, and the scope's time. Errors:
    /// `InvalidCursor`.
    pub async fn list(
        &self,
        scope: &Scope,
        filter: &LinkFilter,
        page: &PageRequest,
    ) -> Result<(Page<PaymentLink>, DateTime<Utc>), Error> {
        let now = self.clock.now(scope).await?;
        let asked = LinkQuery { filter: filter.clone(), page: page.clone(), now };
        Ok((self.store.list_links(scope, &asked).await?, now))
    }

    /// [`Self::change`] for an edit that answers nothing: the link saved and the time it was.
    async fn edit(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        edit: impl Fn(&mut PaymentLink, DateTime<Utc>) -> Result<(), Error>,
    ) -> Result<(PaymentLink, DateTime<Utc>), Error> {
        let (link, (), now) = self.change(scope, id, edit).await?;
        Ok((link, now))
    }

    /// Loads the link, lets `change` edit a copy, and saves it at the loaded lock version.
    async fn change<T>(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        change: impl Fn(&mut PaymentLink, DateTime<Utc>) -> Result<T, Error>,
    ) -> Result<(PaymentLink, T, DateTime<Utc>), Error> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.get_link(scope, id).await?;
            let now = self.clock.now(scope).await?;
            let mut next = current.clone();
            let output = change(&mut next, now)?;
            next.updated_at = now;
            next.lock_version = current.lock_version + 1;
            if self.store.update_link(&next, current.lock_version, self.claim.clone()).await? {
                return Ok((next, output, now));
            }
        }
        Err(Error::Internal("the payment link kept changing".into()))
    }

    /// Replaces the whole configuration, at `version` (the current one). Errors:
    /// `PaymentLinkVersionConflict`, the configuration's errors, `LinkInactive` for an archived
    /// link.
    pub async fn update(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        id: &PaymentLinkId,
        version: i64,
        input: LinkInput,
    ) -> Result<(PaymentLink, DateTime<Utc>), Error> {
        self.edit(scope, id, |link, now| {
            if link.version != version {
                return Err(Error::PaymentLinkVersionConflict { provided: version, current: link.version });
            }
            if link.lifecycle == Lifecycle::Archived {
                return Err(Error::LinkInactive);
            }
            let mut config = config(input.clone(), merchant, scope, now)?;
            if link.config.usage == Usage::SingleUse && link.reservation.is_some() && config.usage != link.config.usage
            {
                return Err(Error::validation("usage_type", "cannot change once the single-use link was used"));
            }
            std::mem::swap(&mut link.config, &mut config);
            link.version += 1;
            if link.config.expires_at.is_some_and(|e| e > now) {
                link.expiry_announced = false;
            }
            Ok(())
        })
        .await
    }

    /// `pause`, `resume` or `archive`, as the state machine allows. A link already in the
    /// target state is left as it is. Errors: `LinkInactive` (pause or resume an archived
    /// link), `LinkExpired` (pause or resume an expired link), `LinkAlreadyUsed` (a completed
    /// one).
    pub async fn set_lifecycle(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        target: Lifecycle,
    ) -> Result<(PaymentLink, DateTime<Utc>), Error> {
        let (trigger, shows) = match target {
            Lifecycle::Paused => (LinkTrigger::Pause, LinkState::Paused),
            Lifecycle::Active => (LinkTrigger::Resume, LinkState::Active),
            Lifecycle::Archived => (LinkTrigger::Archive, LinkState::Archived),
        };
        let current = self.store.get_link(scope, id).await?;
        let now = self.clock.now(scope).await?;
        if current.state_at(now) == shows {
            return Ok((current, now));
        }
        self.edit(scope, id, |link, now| {
            let from = link.state_at(now);
            transition(from, trigger).map_err(|_| refusal(from))?;
            link.lifecycle = target;
            Ok(())
        })
        .await
    }

    /// A new active link with the same configuration (an expiry already past is dropped).
    pub async fn duplicate(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        id: &PaymentLinkId,
    ) -> Result<PaymentLink, Error> {
        let original = self.store.get_link(scope, id).await?;
        let now = self.clock.now(scope).await?;
        let mut config = original.config.clone();
        if config.expires_at.is_some_and(|e| e <= now) {
            config.expires_at = None;
        }
        // The merchant's settlement may have changed: the copy must still be creatable.
        merchant.settlement(scope.mode)?;
        self.insert_new(scope, config, now).await
    }

    /// The invoices a link created, newest first. Errors: `NotFound(PaymentLink)`, `InvalidCursor`.
    pub async fn invoices(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        page: &PageRequest,
    ) -> Result<Page<LinkInvoice>, Error> {
        self.store.get_link(scope, id).await?;
        self.store.list_link_invoices(scope, id, page).await
    }

    /// The merchant and mode of the link behind a public page (the public id is the
    /// capability), whatever its state. Errors: `NotFound(PaymentLink)`.
    pub async fn public_scope(&self, public_id: &PublicToken) -> Result<Scope, Error> {
        Ok(self.store.get_public_link(public_id).await?.scope)
    }

    /// The link behind a public page, with its merchant's name and the time of its scope. An
    /// archived link is gone for customers (`NotFound`).
    pub async fn public(&self, public_id: &PublicToken) -> Result<PublicLink, Error> {
        let link = self.store.get_public_link(public_id).await?;
        if link.lifecycle == Lifecycle::Archived {
            return Err(Error::NotFound(Resource::PaymentLink));
        }
        let now = self.clock.now(&link.scope).await?;
        let merchant = self.merchants.get_merchant(&link.scope.merchant_id).await?;
        let available = takes_payments(&merchant, &link.scope);
        Ok(PublicLink { link, merchant_name: merchant.name, logo: merchant.logo, available, now })
    }

    /// The invoice and checkout a submission of `link` creates (before the link's reservation).
    fn checkout_change(
        &self,
        link: &PaymentLink,
        merchant: &Merchant,
        (amount, customer, customer_reference): (Amount, Option<Customer>, Option<&str>),
        now: DateTime<Utc>,
    ) -> Result<InvoiceChange, Error> {
        let mut checkout_input = CheckoutInput {
            amount: Some(amount),
            external_reference: reference(link, customer_reference),
            customer_email: None,
            success_url: link.config.success_url.clone(),
            cancel_url: link.config.cancel_url.clone(),
            metadata: link.config.metadata.clone(),
            expires_in_minutes: Some(i64::from(CHECKOUT_MINUTES)),
        };
        checkout_input.customer_email = customer.as_ref().and_then(|c| c.email.clone());
        let mut change = crate::invoice::service::decide_checkout(
            self.crypto,
            self.chain,
            merchant,
            &link.scope,
            checkout_input,
            now,
        )
        .map_err(|e| match e {
            Error::ActiveMerchantRequired | Error::AccountSuspended => Error::ModeUnavailable,
            other => other,
        })?;
        let invoice = &mut change.aggregate.invoice;
        invoice.fields.content.customer = customer;
        invoice.fields.payment_link =
            Some(LinkRef { id: link.id.clone(), single_use: link.config.usage == Usage::SingleUse });
        Ok(change)
    }

    /// A customer's submission: a new invoice and its checkout. A single-use link is reserved
    /// for it in the same transaction, so concurrent submissions create one checkout.
    pub async fn submit(&self, public_id: &PublicToken, input: LinkSubmission) -> Result<LinkCheckout, Error> {
        for attempt in 0..MAX_ATTEMPTS {
            let link = self.store.get_public_link(public_id).await?;
            let now = self.clock.now(&link.scope).await?;
            match link.state_at(now) {
                LinkState::Archived => return Err(Error::NotFound(Resource::PaymentLink)),
                LinkState::Paused => return Err(Error::LinkInactive),
                LinkState::Expired => return Err(Error::LinkExpired),
                LinkState::Completed => return Err(Error::LinkAlreadyUsed),
                LinkState::Active => {}
            }
            if link.config.active_at.is_some_and(|a| a > now) {
                return Err(Error::LinkInactive);
            }
            if link.reserved_at(now) {
                return Err(Error::LinkReserved);
            }
            if input.version != link.version {
                return Err(Error::ConfigChanged { current: link.version });
            }
            let amount = self.amount(&link, input.amount.as_ref())?;
            let customer = customer_fields(&link, &input)?;
            let merchant = self.merchants.get_merchant(&link.scope.merchant_id).await?;
            if !takes_payments(&merchant, &link.scope) {
                return Err(Error::ModeUnavailable);
            }
            let merchant = merchant.for_attempt(attempt);
            let mut change =
                self.checkout_change(&link, &merchant, (amount, customer, input.customer_reference.as_deref()), now)?;
            let session = change.aggregate.sessions.first().ok_or_else(|| Error::Internal("no checkout".into()))?;
            let created = LinkCheckout {
                invoice_id: change.aggregate.invoice.id.clone(),
                checkout_session_id: session.id.clone(),
                expires_at: session.expires_at,
            };
            let mut next = link.clone();
            if link.config.usage == Usage::SingleUse {
                next.reservation = Some(Reservation {
                    invoice_id: created.invoice_id.clone(),
                    paid: false,
                    any_payment: false,
                    open_until: Some(created.expires_at),
                });
            }
            next.lock_version = link.lock_version + 1;
            change.claim = self.claim.clone();
            // A concurrent change (or a unique-amount checkout that drew an amount another open
            // checkout asks): decided again.
            match self.store.save_link_checkout(&next, link.lock_version, change).await {
                Ok(true) => return Ok(created),
                Ok(false) | Err(Error::InvoiceStateMismatch) => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::LinkReserved)
    }

    fn amount(&self, link: &PaymentLink, given: Option<&Amount>) -> Result<Amount, Error> {
        match &link.config.amount {
            AmountRule::Fixed(amount) => {
                if given.is_some() {
                    return Err(Error::validation("amount", "is set by the link"));
                }
                Ok(amount.clone())
            }
            AmountRule::CustomerEntered { minimum, maximum } => {
                let amount = given.ok_or_else(|| Error::FieldRequired { field: "amount".into() })?;
                let ceiling = crate::money::Decimal6::parse(crate::payment_link::model::MAX_CUSTOMER_AMOUNT)
                    .map_err(|e| Error::Internal(e.to_string()))?;
                let max = maximum.clone().unwrap_or(ceiling);
                if amount < minimum || *amount > max {
                    return Err(Error::AmountOutOfRange { minimum: minimum.to_string(), maximum: max.to_string() });
                }
                Ok(amount.clone())
            }
        }
    }

    /// Announces `payment_link.expired` for every link (of `only`) whose expiry passed.
    /// Answers how many.
    pub async fn announce_expiries(&self, only: Option<&Scope>) -> Result<usize, Error> {
        let mut announced = 0;
        for (scope, id) in self.store.expired_unannounced(only.cloned(), 100).await? {
            let link = match self.store.get_link(&scope, &id).await {
                Ok(l) => l,
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            let now = self.clock.now(&scope).await?;
            if link.expiry_announced || link.state_at(now) != LinkState::Expired {
                continue;
            }
            let event = Event {
                id: EventId::generate(self.crypto),
                scope: scope.clone(),
                event_type: EventType::PaymentLinkExpired,
                created_at: now,
                data: link_data(&link.id, &link.scope, LinkState::Expired),
            };
            let mut next = link.clone();
            next.expiry_announced = true;
            next.lock_version = link.lock_version + 1;
            next.updated_at = now;
            if self.store.announce_expiry(&next, link.lock_version, &event).await? {
                announced += 1;
            }
        }
        Ok(announced)
    }
}

/// The customer fields the link collects: each required one must be given, others refused.
fn customer_fields(link: &PaymentLink, input: &LinkSubmission) -> Result<Option<Customer>, Error> {
    let c = link.config.collect;
    let pick = |field: &str, wanted: bool, value: &Option<String>| -> Result<Option<String>, Error> {
        match (wanted, value) {
            (true, None) => Err(Error::FieldRequired { field: field.into() }),
            (true, Some(v)) if v.trim().is_empty() => Err(Error::FieldRequired { field: field.into() }),
            (false, Some(_)) => Err(Error::validation(field, "is not collected by this link")),
            (_, v) => Ok(v.clone()),
        }
    };
    let email = pick("email", c.email, &input.email)?;
    if let Some(e) = &email {
        check_email("email", e)?;
    }
    let name = pick("name", c.name, &input.name)?;
    if let Some(n) = &name {
        check_len("name", n, 1, MAX_CUSTOMER_FIELD_BYTES)?;
        crate::invoice::validate::check_one_line("name", n)?;
    }
    let reference = pick("customer_reference", c.reference, &input.customer_reference)?;
    if let Some(r) = &reference {
        check_len("customer_reference", r, 1, MAX_CUSTOMER_FIELD_BYTES)?;
        crate::invoice::validate::check_one_line("customer_reference", r)?;
    }
    Ok((email.is_some() || name.is_some()).then(|| Customer { name, email, ..Default::default() }))
}

/// The invoice's external reference: the link's prefix followed by the customer's reference.
fn reference(link: &PaymentLink, customer: Option<&str>) -> Option<String> {
    match (link.config.reference_prefix.as_deref(), customer) {
        (None, None) => None,
        (prefix, customer) => Some(format!("{}{}", prefix.unwrap_or(""), customer.unwrap_or(""))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use chrono::Duration;

    use super::*;
    use crate::Mode;
    use crate::clock::MockClock;
    use crate::ids::{InvoiceId, MerchantId};
    use crate::merchant::model::MerchantStatus;
    use crate::merchant::ports::MockMerchantStore;
    use crate::money::Decimal6;
    use crate::payment_link::model::{Collect, LinkConfig};
    use crate::payment_link::ports::MockPaymentLinkStore;
    use crate::testing::SeqCrypto;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn scope() -> Scope {
        Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Test)
    }

    fn merchant(status: MerchantStatus) -> Merchant {
        crate::testing::merchant(status, now())
    }

    fn link(usage: Usage, amount: AmountRule) -> PaymentLink {
        let base = crate::testing::payment_link(Lifecycle::Active, now());
        PaymentLink { config: LinkConfig { usage, amount, ..base.config }, ..base }
    }

    fn fixed() -> AmountRule {
        AmountRule::Fixed(Decimal6::parse("10").unwrap())
    }

    fn clock() -> MockClock {
        let mut c = MockClock::new();
        c.expect_now().returning(|_| Ok(now()));
        c.expect_system_now().returning(now);
        c
    }

    fn merchants(status: MerchantStatus) -> MockMerchantStore {
        let mut m = MockMerchantStore::new();
        m.expect_get_merchant().returning(move |_| Ok(merchant(status)));
        m
    }

    fn held(until: DateTime<Utc>) -> Reservation {
        Reservation {
            invoice_id: InvoiceId::from_trusted("inv_1".into()),
            paid: false,
            any_payment: false,
            open_until: Some(until),
        }
    }

    #[test]
    fn the_state_shown_follows_precedence() {
        let mut l = link(Usage::SingleUse, fixed());
        assert_eq!(l.state_at(now()), LinkState::Active);
        l.config.expires_at = Some(now());
        assert_eq!(l.state_at(now()), LinkState::Expired, "expired at its expiry");
        l.reservation = Some(Reservation { paid: true, ..held(now()) });
        assert_eq!(l.state_at(now()), LinkState::Completed, "completed wins over expired");
        l.lifecycle = Lifecycle::Archived;
        assert_eq!(l.state_at(now()), LinkState::Archived, "archived wins over everything");

        let r = held(now() + Duration::minutes(5));
        assert!(r.holds(now()) && !r.holds(now() + Duration::minutes(5)), "released when the checkout expires");
        assert!(
            Reservation { any_payment: true, ..held(now()) }.holds(now() + Duration::days(1)),
            "kept after a payment"
        );
        let mut reusable = link(Usage::Reusable, fixed());
        reusable.reservation = Some(held(now() + Duration::minutes(5)));
        assert!(!reusable.reserved_at(now()), "only single-use links are reserved");
    }

    /// Every refusal is decided before anything is written (the store's save is never called).
    #[tokio::test]
    async fn submissions_are_refused_before_any_write() {
        let (crypto, clock, chain) = (SeqCrypto::default(), clock(), ChainSettings::default());
        let cases: Vec<(PaymentLink, LinkSubmission, MerchantStatus, Error)> = vec![
            (
                PaymentLink { lifecycle: Lifecycle::Paused, ..link(Usage::Reusable, fixed()) },
                LinkSubmission { version: 3, ..Default::default() },
                MerchantStatus::Active,
                Error::LinkInactive,
            ),
            (
                PaymentLink {
                    reservation: Some(held(now() + Duration::minutes(1))),
                    ..link(Usage::SingleUse, fixed())
                },
                LinkSubmission { version: 3, ..Default::default() },
                MerchantStatus::Active,
                Error::LinkReserved,
            ),
            (
                link(Usage::Reusable, fixed()),
                LinkSubmission { version: 2, ..Default::default() },
                MerchantStatus::Active,
                Error::ConfigChanged { current: 3 },
            ),
            (
                link(
                    Usage::Reusable,
                    AmountRule::CustomerEntered { minimum: Decimal6::parse("5").unwrap(), maximum: None },
                ),
                LinkSubmission {
                    version: 3,
                    amount: Some(Decimal6::parse("1000000.000001").unwrap()),
                    ..Default::default()
                },
                MerchantStatus::Active,
                Error::AmountOutOfRange { minimum: "5.000000".into(), maximum: "1000000.000000".into() },
            ),
            (
                PaymentLink {
                    config: LinkConfig {
                        collect: Collect { name: true, ..Collect::default() },
                        ..link(Usage::Reusable, fixed()).config
                    },
                    ..link(Usage::Reusable, fixed())
                },
                LinkSubmission { version: 3, ..Default::default() },
                MerchantStatus::Active,
                Error::FieldRequired { field: "name".into() },
            ),
            (
                link(Usage::Reusable, fixed()),
                LinkSubmission { version: 3, ..Default::default() },
                MerchantStatus::Suspended,
                Error::ModeUnavailable,
            ),
        ];
        for (stored, submission, status, expected) in cases {
            let mut store = MockPaymentLinkStore::new();
            store.expect_get_public_link().returning(move |_| Ok(stored.clone()));
            store.expect_save_link_checkout().never();
            let merchants = merchants(status);
            let links = PaymentLinks {
                store: &store,
                merchants: &merchants,
                crypto: &crypto,
                clock: &clock,
                chain: &chain,
                claim: None,
            };
            let public = PublicToken::from_trusted("p".repeat(43));
            assert_eq!(links.submit(&public, submission).await, Err(expected));
        }
    }

    /// A single-use submission that loses the race (the link changed under it) reloads and is
    /// refused as reserved; the winner's save carried the reservation at the read lock version.
    #[tokio::test]
    async fn a_lost_race_reloads_and_sees_the_reservation() {
        let (crypto, clock, chain) = (SeqCrypto::default(), clock(), ChainSettings::default());
        let loads = Arc::new(Mutex::new(vec![
            PaymentLink {
                reservation: Some(held(now() + Duration::minutes(30))),
                lock_version: 6,
                ..link(Usage::SingleUse, fixed())
            },
            link(Usage::SingleUse, fixed()),
        ]));
        let saved = Arc::new(Mutex::new(Vec::new()));
        let mut store = MockPaymentLinkStore::new();
        let source = loads.clone();
        store.expect_get_public_link().returning(move |_| Ok(source.lock().unwrap().pop().unwrap()));
        let sink = saved.clone();
        store.expect_save_link_checkout().times(1).returning(move |l, expected, change| {
            sink.lock().unwrap().push((l.clone(), expected, change.aggregate.invoice.id.clone()));
            Ok(false)
        });
        let merchants = merchants(MerchantStatus::Active);
        let links = PaymentLinks {
            store: &store,
            merchants: &merchants,
            crypto: &crypto,
            clock: &clock,
            chain: &chain,
            claim: None,
        };
        let public = PublicToken::from_trusted("p".repeat(43));
        let answer = links.submit(&public, LinkSubmission { version: 3, ..Default::default() }).await;
        assert_eq!(answer, Err(Error::LinkReserved));
        let saved = saved.lock().unwrap();
        let (l, expected, invoice) = &saved[0];
        assert_eq!(*expected, 5);
        assert_eq!(l.lock_version, 6);
        assert_eq!(l.reservation.as_ref().map(|r| &r.invoice_id), Some(invoice));
    }

    #[tokio::test]
    async fn lifecycle_changes_follow_the_machine() {
        let (crypto, clock, chain) = (SeqCrypto::default(), clock(), ChainSettings::default());
        let expired = PaymentLink { expiry_announced: true, ..link(Usage::Reusable, fixed()) };
        let paused = PaymentLink { lifecycle: Lifecycle::Paused, ..link(Usage::Reusable, fixed()) };
        for (stored, target, expected) in [
            (expired.clone(), Lifecycle::Active, Err(Error::LinkExpired)),
            (expired.clone(), Lifecycle::Paused, Err(Error::LinkExpired)),
            (
                PaymentLink { lifecycle: Lifecycle::Archived, ..paused.clone() },
                Lifecycle::Active,
                Err(Error::LinkInactive),
            ),
            (paused.clone(), Lifecycle::Paused, Ok((LinkState::Paused, 5))),
            (paused.clone(), Lifecycle::Active, Ok((LinkState::Active, 6))),
            (expired, Lifecycle::Archived, Ok((LinkState::Archived, 6))),
        ] {
            let mut store = MockPaymentLinkStore::new();
            store.expect_get_link().returning(move |_, _| Ok(stored.clone()));
            store.expect_update_link().returning(|_, expected, _| Ok(expected == 5));
            let merchants = MockMerchantStore::new();
            let links = PaymentLinks {
                store: &store,
                merchants: &merchants,
                crypto: &crypto,
                clock: &clock,
                chain: &chain,
                claim: None,
            };
            let answer = links.set_lifecycle(&scope(), &PaymentLinkId::from_trusted("plink_1".into()), target).await;
            assert_eq!(answer.map(|(l, now)| (l.state_at(now), l.lock_version)), expected, "{target:?}");
        }
    }

    #[test]
    fn a_member_is_offered_the_link_changes_their_role_and_its_state_allow() {
        use super::offers::{LinkAction as A, offers};
        use crate::account::capability::Role;
        let owner = crate::testing::member(&scope().merchant_id, Role::Owner);
        let offered = |l: &PaymentLink| offers(&owner, &scope(), l, now());
        let active = link(Usage::Reusable, fixed());
        assert_eq!(offered(&active), [A::Edit, A::Pause, A::Archive, A::Duplicate]);
        let paused = PaymentLink { lifecycle: Lifecycle::Paused, ..active.clone() };
        assert_eq!(offered(&paused), [A::Edit, A::Resume, A::Archive, A::Duplicate]);
        let expired = PaymentLink { expiry_announced: true, ..active.clone() };
        assert_eq!(offered(&expired), [A::Edit, A::Archive, A::Duplicate]);
        let archived = PaymentLink { lifecycle: Lifecycle::Archived, ..active.clone() };
        assert_eq!(offered(&archived), [A::Duplicate]);
        // A viewer, and a developer in live mode, are offered nothing.
        let viewer = crate::testing::member(&scope().merchant_id, Role::Viewer);
        assert!(offers(&viewer, &scope(), &active, now()).is_empty());
        let developer = crate::testing::member(&scope().merchant_id, Role::Developer);
        let live = Scope::new(scope().merchant_id, Mode::Live);
        assert!(offers(&developer, &live, &active, now()).is_empty());
        assert_eq!(offers(&developer, &scope(), &active, now()).len(), 4);
        for a in A::ALL {
            assert_eq!(A::parse(a.as_str()), Some(a));
        }
    }
}
