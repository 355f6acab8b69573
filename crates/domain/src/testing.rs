//! Deterministic port implementations for unit tests (also for other crates' tests through
//! the `mocks` feature).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::crypto::Crypto;

/// Fills random buffers from a counter and "hashes" by folding bytes: deterministic, distinct
/// per call, and never to be used outside tests.
#[derive(Default)]
pub struct SeqCrypto {
    counter: AtomicU64,
}

impl Crypto for SeqCrypto {
    fn fill_random(&self, buf: &mut [u8]) {
        let n = self.counter.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let bytes = n.to_be_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = bytes[i % 8].wrapping_add(u8::try_from(i % 251).unwrap_or(0));
        }
    }

    fn sha256(&self, data: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in data.iter().enumerate() {
            out[i % 32] = out[i % 32].wrapping_mul(31).wrapping_add(*b);
        }
        out
    }

    fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> [u8; 32] {
        let mut keyed = key.to_vec();
        keyed.push(0x36);
        keyed.extend_from_slice(data);
        self.sha256(&keyed)
    }

    fn hmac_sha1(&self, key: &[u8], data: &[u8]) -> [u8; 20] {
        // FNV-1a over everything, once per output byte: each byte depends on every input byte.
        let mut out = [0u8; 20];
        let mut acc: u32 = 0x811c_9dc5;
        for (i, o) in out.iter_mut().enumerate() {
            for b in data.iter().chain(key).chain(std::iter::once(&u8::try_from(i).unwrap_or(0))) {
                acc = (acc ^ u32::from(*b)).wrapping_mul(0x0100_0193);
            }
            *o = acc.to_be_bytes()[1];
        }
        out
    }
}

/// A merchant `mer_1` named "Shop" with `status`, test-mode ready (no live settlement, no fee).
pub fn merchant(
    status: crate::merchant::model::MerchantStatus,
    created_at: chrono::DateTime<chrono::Utc>,
) -> crate::merchant::model::Merchant {
    crate::merchant::model::Merchant {
        id: crate::ids::MerchantId::from_trusted("mer_1".into()),
        name: "Shop".into(),
        website_origin: None,
        status,
        live: None,
        fee_basis_points: 0,
        invoice_prefix: "INV".into(),
        created_at,
        profile: Default::default(),
        logo: None,
    }
}

/// A reusable test-mode payment link `plink_1` of merchant `mer_1` selling "Seat" for 10 USDC,
/// in `lifecycle`, at version 3, created at `created_at`, never used.
pub fn payment_link(
    lifecycle: crate::payment_link::model::Lifecycle,
    created_at: chrono::DateTime<chrono::Utc>,
) -> crate::payment_link::model::PaymentLink {
    use crate::payment_link::model::{AmountRule, Collect, LinkConfig, PaymentLink, Usage};
    PaymentLink {
        id: crate::ids::PaymentLinkId::from_trusted("plink_1".into()),
        public_id: crate::ids::PublicToken::from_trusted("p".repeat(43)),
        scope: crate::mode::Scope::new(crate::ids::MerchantId::from_trusted("mer_1".into()), crate::mode::Mode::Test),
        config: LinkConfig {
            title: "Seat".into(),
            description: None,
            amount: AmountRule::Fixed(
                crate::money::Decimal6::parse("10").unwrap_or_else(|_| crate::money::Decimal6::zero()),
            ),
            currency: crate::merchant::model::Token::Usdc,
            usage: Usage::Reusable,
            active_at: None,
            expires_at: None,
            collect: Collect::default(),
            reference_prefix: None,
            success_url: None,
            cancel_url: None,
            success_message: None,
            metadata: None,
        },
        version: 3,
        lifecycle,
        reservation: None,
        expiry_announced: false,
        created_at,
        updated_at: created_at,
        lock_version: 5,
    }
}

/// Every use case over ports that are mocks expecting no call, with default settings: for tests
/// of a driving adapter's plumbing, where no use case runs.
pub fn idle_use_cases() -> crate::use_cases::UseCases {
    crate::use_cases::UseCases::new(idle_ports(), crate::use_cases::Settings::default())
}

/// Every port a mock expecting no call: a driving adapter's test replaces the ports its use
/// cases read with mocks expecting what they should be asked.
pub fn idle_ports() -> crate::use_cases::Ports {
    use std::sync::Arc;

    use crate::ports::*;
    crate::use_cases::Ports {
        merchants: Arc::new(MockMerchantStore::new()),
        keys: Arc::new(MockApiKeyStore::new()),
        invoices: Arc::new(MockInvoiceStore::new()),
        renderer: Arc::new(MockInvoiceRenderer::new()),
        signals: Arc::new(MockCheckoutSignals::new()),
        chain: Arc::new(MockChain::new()),
        follower: Arc::new(MockFollowerStore::new()),
        links: Arc::new(MockPaymentLinkStore::new()),
        webhooks: Arc::new(MockWebhookStore::new()),
        secrets: Arc::new(MockSecretBox::new()),
        emails: Arc::new(MockEmailStore::new()),
        mailer: Arc::new(MockMailer::new()),
        events: Arc::new(MockEventStore::new()),
        idempotency: Arc::new(MockIdempotencyStore::new()),
        limiter: Arc::new(MockRateLimiter::new()),
        health: Arc::new(MockHealth::new()),
        telemetry: Arc::new(MockTelemetryStore::new()),
        exports: Arc::new(MockExportStore::new()),
        reconciliation: Arc::new(MockReconciliationStore::new()),
        reconciliation_runs: Arc::new(MockReconciliationRunStore::new()),
        statements: Arc::new(MockStatementStore::new()),
        relays: Arc::new(MockRelayStore::new()),
        relayer: Arc::new(MockRelayer::new()),
        accounts: Arc::new(MockAccountStore::new()),
        passwords: Arc::new(MockPasswordHasher::new()),
        totp_sealer: Arc::new(MockTotpSealer::new()),
        clock: Arc::new(MockClock::new()),
        due_times: Arc::new(MockDueTimes::new()),
        crypto: Arc::new(SeqCrypto::default()),
    }
}

/// A signed-in member of `merchant` with `role`: email verified, no second factor (the
/// merchant does not require one).
pub fn member(
    merchant: &crate::ids::MerchantId,
    role: crate::account::capability::Role,
) -> crate::account::service::Current {
    use crate::account::model::{Membership, Session, User};
    use crate::ids::{SessionId, UserId};
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let user = User {
        id: UserId::from_trusted("usr_1".into()),
        email: "ada@example.com".into(),
        name: "Ada".into(),
        password_hash: "hash".into(),
        email_verified_at: Some(at),
        two_factor_since: None,
        created_at: at,
    };
    let session = Session {
        id: SessionId::from_trusted("ses_1".into()),
        user_id: user.id.clone(),
        token_digest: [0; 32],
        csrf_token: "csrf".into(),
        created_at: at,
        last_seen_at: at,
        reauthenticated_at: at,
    };
    let membership = Membership::new(&user.id, merchant, role, at);
    crate::account::service::Current { session, user, memberships: vec![membership] }
}

/// An open amount-only test-mode invoice of `amount` of merchant `mer_1` (one pending checkout,
/// no customer email, numbered `INV-000001`), built by the real decision. Errors: the
/// decision's, for an amount it refuses.
pub fn open_invoice(amount: &str) -> Result<crate::invoice::aggregate::InvoiceAggregate, crate::error::Error> {
    use crate::invoice::input::CheckoutInput;
    use crate::merchant::model::{ChainSettings, MerchantStatus};
    use crate::mode::{Mode, Scope};
    let now = chrono::Utc::now();
    let m = merchant(MerchantStatus::Active, now);
    let input = CheckoutInput { amount: crate::money::Decimal6::parse(amount).ok(), ..Default::default() };
    let scope = Scope::new(m.id.clone(), Mode::Test);
    let mut change = crate::invoice::service::decide::checkout(
        (&SeqCrypto::default(), &ChainSettings::default()),
        &m,
        &scope,
        input,
        now,
    )?;
    change.finalize(Some(1));
    Ok(change.aggregate)
}
