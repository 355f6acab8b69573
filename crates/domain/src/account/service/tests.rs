use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::*;
use crate::account::capability::Role;
use crate::account::model::{Membership, Session, User};
use crate::account::ports::{MockAccountStore, MockPasswordHasher, MockTotpSealer};
use crate::clock::MockClock;
use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{MerchantId, UserId};
use crate::merchant::model::MerchantStatus;
use crate::merchant::ports::MockMerchantStore;
use crate::testing::SeqCrypto;
use crate::url::PublicPages;

/// Budgets in memory, by the domain's GCRA rule at a fixed instant.
#[derive(Default)]
struct Budgets(Mutex<std::collections::HashMap<String, i64>>);

#[async_trait::async_trait]
impl crate::ratelimit::ports::RateLimiter for Budgets {
    async fn check(
        &self,
        policy: &crate::ratelimit::model::Policy,
        key: &str,
    ) -> Result<crate::ratelimit::model::Verdict, Error> {
        let mut map = self.0.lock().unwrap();
        let k = format!("{}|{key}", policy.name);
        let (verdict, tat) = crate::ratelimit::model::gcra(policy, 0, map.get(&k).copied());
        map.insert(k, tat);
        Ok(verdict)
    }
    async fn refund(&self, policy: &crate::ratelimit::model::Policy, key: &str) -> Result<(), Error> {
        let mut map = self.0.lock().unwrap();
        let k = format!("{}|{key}", policy.name);
        match crate::ratelimit::model::gcra_refund(policy, 0, map.get(&k).copied()) {
            Some(tat) => map.insert(k, tat),
            None => map.remove(&k),
        };
        Ok(())
    }
}

/// The ports most tests take as they are: no two-factor sealing, the pages, the chain's
/// settings and fresh budgets.
struct Fixed {
    sealer: MockTotpSealer,
    pages: PublicPages,
    chain: crate::merchant::model::ChainSettings,
    limiter: Budgets,
}

impl Default for Fixed {
    fn default() -> Self {
        Self {
            sealer: MockTotpSealer::new(),
            pages: PublicPages::new("http://pay.test"),
            chain: crate::merchant::model::ChainSettings::default(),
            limiter: Budgets::default(),
        }
    }
}

impl Fixed {
    /// The account use cases over `store` and `merchants`, hashing with `hasher`, at `clock`.
    fn accounts<'a>(
        &'a self,
        (store, merchants): (&'a MockAccountStore, &'a MockMerchantStore),
        hasher: &'a MockPasswordHasher,
        crypto: &'a SeqCrypto,
        clock: &'a MockClock,
    ) -> Accounts<'a> {
        Accounts {
            store,
            merchants,
            hasher,
            sealer: &self.sealer,
            crypto,
            clock,
            limiter: &self.limiter,
            pages: &self.pages,
            chain: &self.chain,
            settings: AccountSettings::default(),
        }
    }
}

fn secrets<'a>(password: &'a str, otp: Option<&'a str>) -> Secrets<'a> {
    Secrets { password, otp, client: Some("203.0.113.9") }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

fn clock(now: &'static str) -> MockClock {
    let mut c = MockClock::new();
    c.expect_system_now().returning(move || at(now));
    c
}

/// A hasher whose hash of `p` is `hash:p`, counting its checks.
fn hasher(checks: Arc<Mutex<Vec<Option<String>>>>) -> MockPasswordHasher {
    let mut h = MockPasswordHasher::new();
    h.expect_hash().returning(|p| Ok(format!("hash:{p}")));
    h.expect_verify().returning(move |p, hash| {
        checks.lock().unwrap().push(hash.map(str::to_owned));
        hash == Some(format!("hash:{p}").as_str())
    });
    h
}

fn user() -> User {
    User {
        id: UserId::from_trusted("usr_1".into()),
        email: "ada@example.com".into(),
        name: "Ada".into(),
        password_hash: "hash:correct horse battery".into(),
        email_verified_at: None,
        two_factor_since: None,
        created_at: at("2026-11-01T00:00:00Z"),
    }
}

#[tokio::test]
async fn an_unknown_email_and_a_wrong_password_get_the_same_answer_after_one_check_each() {
    let checks = Arc::new(Mutex::new(Vec::new()));
    let mut store = MockAccountStore::new();
    store.expect_user_by_email().returning(|e| Ok((e == "ada@example.com").then(user)));
    store.expect_insert_session().never();
    let (h, crypto, clock, merchants) =
        (hasher(checks.clone()), SeqCrypto::default(), clock("2026-11-02T00:00:00Z"), MockMerchantStore::new());
    let fixed = Fixed::default();
    let accounts = fixed.accounts((&store, &merchants), &h, &crypto, &clock);
    assert_eq!(
        accounts.login("nobody@example.com", secrets("correct horse battery", None)).await.err(),
        Some(Error::InvalidCredentials)
    );
    assert_eq!(
        accounts.login("ADA@example.com", secrets("wrong horse battery", None)).await.err(),
        Some(Error::InvalidCredentials)
    );
    assert_eq!(accounts.login("not an email", secrets("x", None)).await.err(), Some(Error::InvalidCredentials));
    assert_eq!(*checks.lock().unwrap(), vec![None, Some("hash:correct horse battery".into()), None]);
}

#[tokio::test]
async fn a_login_stores_only_the_tokens_digest_and_the_session_ends_when_idle() {
    let checks = Arc::new(Mutex::new(Vec::new()));
    let sessions = Arc::new(Mutex::new(Vec::<Session>::new()));
    let mut store = MockAccountStore::new();
    store.expect_user_by_email().returning(|_| Ok(Some(user())));
    store.expect_memberships().returning(|_| Ok(Vec::new()));
    let s = sessions.clone();
    store.expect_insert_session().returning(move |session, _| {
        s.lock().unwrap().push(session.clone());
        Ok(())
    });
    let (h, crypto, merchants) = (hasher(checks), SeqCrypto::default(), MockMerchantStore::new());
    let login_clock = clock("2026-11-02T00:00:00Z");
    let fixed = Fixed::default();
    let accounts = fixed.accounts((&store, &merchants), &h, &crypto, &login_clock);
    let signed = accounts.login(" Ada@Example.com", secrets("correct horse battery", None)).await.unwrap();
    let stored = sessions.lock().unwrap()[0].clone();
    assert_eq!(stored.token_digest, crypto.sha256(signed.token.as_str().as_bytes()));
    assert_ne!(stored.csrf_token, signed.token.as_str());

    // Thirteen hours later the session has ended, and is deleted.
    let mut store = MockAccountStore::new();
    let found = stored.clone();
    store.expect_session_by_digest().returning(move |_| Ok(Some((found.clone(), user()))));
    store.expect_delete_session().times(1).returning(|_| Ok(()));
    store.expect_touch_session().never();
    let late = clock("2026-11-02T13:00:00Z");
    let accounts = Accounts { store: &store, clock: &late, ..accounts };
    assert_eq!(accounts.current(signed.token.as_str()).await.err(), Some(Error::AuthRequired));
    assert_eq!(accounts.current("not a token").await.err(), Some(Error::AuthRequired));
}

#[tokio::test]
async fn the_operator_creates_a_user_of_an_existing_merchant_with_a_checked_password() {
    let checks = Arc::new(Mutex::new(Vec::new()));
    let mut store = MockAccountStore::new();
    let inserted = Arc::new(Mutex::new(Vec::new()));
    let i = inserted.clone();
    store.expect_insert_user().returning(move |u, m, _| {
        i.lock().unwrap().push((u.clone(), m.clone()));
        Ok(())
    });
    let mut merchants = MockMerchantStore::new();
    merchants.expect_get_merchant().returning(|id| {
        if id.as_str() == "mer_1" {
            Ok(crate::testing::merchant(MerchantStatus::Active, at("2026-11-01T00:00:00Z")))
        } else {
            Err(Error::NotFound(crate::error::Resource::Merchant))
        }
    });
    let (h, crypto, clock) = (hasher(checks), SeqCrypto::default(), clock("2026-11-02T00:00:00Z"));
    let fixed = Fixed::default();
    let accounts = fixed.accounts((&store, &merchants), &h, &crypto, &clock);
    let mer = MerchantId::from_trusted("mer_1".into());
    let refused = accounts.create_user(("ada@example.com", "Ada", "short"), &mer, Role::Owner).await;
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "password"));
    let refused = accounts.create_user(("ada", "Ada", "correct horse battery"), &mer, Role::Owner).await;
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "email"));
    let refused = accounts.create_user(("ada@example.com", "A\nB", "correct horse battery"), &mer, Role::Owner).await;
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "name"));
    let other = MerchantId::from_trusted("mer_2".into());
    let refused = accounts.create_user(("ada@example.com", "Ada", "correct horse battery"), &other, Role::Owner).await;
    assert_eq!(refused.err(), Some(Error::NotFound(crate::error::Resource::Merchant)));
    assert!(inserted.lock().unwrap().is_empty());

    let user =
        accounts.create_user(("Ada@Example.com", " Ada ", "correct horse battery"), &mer, Role::Owner).await.unwrap();
    assert_eq!((user.email.as_str(), user.name.as_str()), ("ada@example.com", "Ada"));
    assert_eq!(user.password_hash, "hash:correct horse battery");
    let (_, membership) = inserted.lock().unwrap()[0].clone();
    assert_eq!((membership.role, membership.merchant_id), (Role::Owner, mer));
}

fn membership(merchant: &str, role: Role, requires_two_factor: bool) -> Membership {
    Membership {
        user_id: UserId::from_trusted("usr_1".into()),
        merchant_id: MerchantId::from_trusted(merchant.into()),
        role,
        requires_two_factor,
        webhook_alerts: false,
        created_at: at("2026-11-01T00:00:00Z"),
    }
}

fn current(user: User, memberships: Vec<Membership>) -> Current {
    let session = Session {
        id: crate::ids::SessionId::from_trusted("ses_1".into()),
        user_id: user.id.clone(),
        token_digest: [0; 32],
        csrf_token: "c".into(),
        created_at: at("2026-11-01T00:00:00Z"),
        last_seen_at: at("2026-11-01T00:00:00Z"),
        reauthenticated_at: at("2026-11-01T00:00:00Z"),
    };
    Current { session, user, memberships }
}

#[test]
fn every_action_needs_a_membership_the_merchants_second_factor_a_verified_email_for_live_and_the_role() {
    use crate::account::capability::Action;
    use crate::mode::Mode;
    let (shop, strict) = (MerchantId::from_trusted("mer_1".into()), MerchantId::from_trusted("mer_2".into()));
    let c = current(user(), vec![membership("mer_1", Role::Developer, false), membership("mer_2", Role::Owner, true)]);
    assert!(c.require(&shop, Mode::Test, Action::ManageInvoices).is_ok());
    let live = c.require(&shop, Mode::Live, Action::ManageApiKeys);
    assert!(matches!(live, Err(Error::AuthForbidden(ref m)) if m.contains("verify")), "{live:?}");
    let strict_refusal = c.require(&strict, Mode::Test, Action::Read);
    assert!(matches!(strict_refusal, Err(Error::AuthForbidden(ref m)) if m.contains("two-factor")));
    assert_eq!(c.two_factor_required_by(), vec![&strict]);
    let other = MerchantId::from_trusted("mer_3".into());
    assert_eq!(
        c.require(&other, Mode::Test, Action::Read).err(),
        Some(Error::NotFound(crate::error::Resource::Merchant))
    );

    let verified = User {
        email_verified_at: Some(at("2026-11-01T00:00:00Z")),
        two_factor_since: Some(at("2026-11-01T00:00:00Z")),
        ..user()
    };
    let c =
        current(verified, vec![membership("mer_1", Role::Developer, false), membership("mer_2", Role::Owner, true)]);
    assert!(c.require(&shop, Mode::Live, Action::ManageApiKeys).is_ok());
    assert!(matches!(c.require(&shop, Mode::Live, Action::ManageInvoices), Err(Error::AuthForbidden(_))), "the role");
    assert!(c.require(&strict, Mode::Live, Action::ManageSecurity).is_ok());
}

#[tokio::test]
async fn a_two_factor_login_needs_a_code_not_used_before() {
    use crate::account::ports::TwoFactorRecord;
    use crate::account::totp::{SealedTotp, TotpSecret, code_at, step_of};
    let checks = Arc::new(Mutex::new(Vec::new()));
    let crypto = SeqCrypto::default();
    let secret = TotpSecret::from_bytes(vec![7; 20]);
    let now = at("2026-11-02T00:00:00Z");
    let code = code_at(&crypto, &secret, step_of(now));
    let enrolled = User { two_factor_since: Some(at("2026-11-01T00:00:00Z")), ..user() };
    let mut store = MockAccountStore::new();
    store.expect_user_by_email().returning(move |_| Ok(Some(enrolled.clone())));
    store.expect_memberships().returning(|_| Ok(Vec::new()));
    store
        .expect_two_factor()
        .returning(|_| Ok(TwoFactorRecord { secret: Some(SealedTotp(vec![7; 20])), pending: None, last_step: None }));
    let taken = Arc::new(Mutex::new(Vec::<i64>::new()));
    let t = taken.clone();
    store.expect_use_totp_step().returning(move |_, step| {
        let mut taken = t.lock().unwrap();
        let fresh = !taken.contains(&step);
        taken.push(step);
        Ok(fresh)
    });
    store.expect_insert_session().times(1).returning(|_, _| Ok(()));
    let mut sealer = MockTotpSealer::new();
    sealer.expect_open_totp().returning(|s| Ok(TotpSecret::from_bytes(s.0.clone())));
    let (h, clock, merchants) = (hasher(checks), clock("2026-11-02T00:00:00Z"), MockMerchantStore::new());
    let fixed = Fixed::default();
    let accounts = Accounts { sealer: &sealer, ..fixed.accounts((&store, &merchants), &h, &crypto, &clock) };
    let password = "correct horse battery";
    assert_eq!(
        accounts.login("ada@example.com", secrets(password, None)).await.err(),
        Some(Error::SecondFactor { missing: true })
    );
    assert_eq!(
        accounts.login("ada@example.com", secrets(password, Some("000000"))).await.err(),
        Some(Error::SecondFactor { missing: false })
    );
    assert!(accounts.login("ada@example.com", secrets(password, Some(&code))).await.is_ok());
    assert_eq!(
        accounts.login("ada@example.com", secrets(password, Some(&code))).await.err(),
        Some(Error::SecondFactor { missing: false }),
        "once"
    );
    // A wrong password never reaches the code.
    assert_eq!(
        accounts.login("ada@example.com", secrets("wrong horse battery", Some(&code))).await.err(),
        Some(Error::InvalidCredentials)
    );
}

#[tokio::test]
async fn sign_up_is_open_only_when_the_operator_says_so_and_an_existing_email_gets_a_notice() {
    use crate::account::link::{LinkPurpose, SignupMode};
    use crate::account::service::links::Signup;
    let checks = Arc::new(Mutex::new(Vec::new()));
    let links = Arc::new(Mutex::new(Vec::new()));
    let mut store = MockAccountStore::new();
    store.expect_user_by_email().returning(|e| Ok((e == "ada@example.com").then(user)));
    let l = links.clone();
    store.expect_insert_link().returning(move |link, _| {
        l.lock().unwrap().push(link.purpose);
        Ok(())
    });
    store.expect_insert_signup().returning(|_, user, membership, link| {
        assert_eq!(
            (user.email_verified_at, membership.role, link.purpose),
            (None, Role::Owner, LinkPurpose::VerifyEmail)
        );
        Ok(())
    });
    let (h, crypto, clock, merchants) =
        (hasher(checks), SeqCrypto::default(), clock("2026-11-02T00:00:00Z"), MockMerchantStore::new());
    let fixed = Fixed::default();
    let mut accounts = fixed.accounts((&store, &merchants), &h, &crypto, &clock);
    let s = Signup { email: "eve@example.com", password: "correct horse battery", name: "Eve", business_name: "Eve's" };
    assert!(matches!(accounts.signup(s).await, Err(Error::FeatureUnavailable(_))), "invite is the default");
    accounts.settings.signup = SignupMode::Open;
    let bad = Signup { business_name: " ", ..s };
    assert!(matches!(accounts.signup(bad).await, Err(Error::Validation { ref field, .. }) if field == "business_name"));
    accounts.signup(s).await.unwrap();
    accounts.signup(Signup { email: "Ada@Example.com", ..s }).await.unwrap();
    assert_eq!(*links.lock().unwrap(), vec![LinkPurpose::SignupExisting]);
}

#[tokio::test]
async fn every_secret_check_shares_the_account_quota_and_the_sixth_failure_is_refused() {
    let checks = Arc::new(Mutex::new(Vec::new()));
    let mut store = MockAccountStore::new();
    store.expect_user_by_email().returning(|e| Ok((e == "ada@example.com").then(user)));
    store.expect_insert_session().never();
    store.expect_mark_reauthenticated().never();
    store.expect_set_password().never();
    let (h, crypto, clock, merchants) =
        (hasher(checks.clone()), SeqCrypto::default(), clock("2026-11-02T00:00:00Z"), MockMerchantStore::new());
    let fixed = Fixed::default();
    let accounts = fixed.accounts((&store, &merchants), &h, &crypto, &clock);
    // Two wrong logins, then three wrong current passwords behind a session (another address,
    // no address at all): five failures of one account.
    for _ in 0..2 {
        let refused = accounts.login("ada@example.com", secrets("wrong horse battery", None)).await;
        assert_eq!(refused.err(), Some(Error::InvalidCredentials));
    }
    let mut me = current(user(), Vec::new());
    for _ in 0..3 {
        let c = crate::account::service::sign_in::Confirmation { password: "wrong horse battery", otp: None };
        let refused = accounts.change_password(&mut me, c, "a brand new long password").await;
        assert_eq!(refused.err(), Some(Error::InvalidCredentials));
    }
    // The sixth attempt is refused before any check, the right password included, wherever
    // it comes from.
    let before = checks.lock().unwrap().len();
    let refused = accounts.reauthenticate(&mut me, "correct horse battery", None).await;
    assert!(matches!(refused, Err(Error::RateLimited(t)) if t.policy == "dashboard-login-account"));
    let other_address = Secrets { password: "correct horse battery", otp: None, client: Some("198.51.100.7") };
    let refused = accounts.login(" ADA@example.com", other_address).await;
    assert!(matches!(refused, Err(Error::RateLimited(t)) if t.retry_after_seconds >= 1));
    assert_eq!(checks.lock().unwrap().len(), before, "no password was checked past the quota");
}

#[tokio::test]
async fn what_can_take_the_account_over_needs_a_sign_in_from_the_last_five_minutes() {
    let store = MockAccountStore::new();
    let (h, crypto, merchants) = (hasher(Arc::default()), SeqCrypto::default(), MockMerchantStore::new());
    let fixed = Fixed::default();
    // The session signed in at midnight; six minutes later.
    let late = clock("2026-11-01T00:06:00Z");
    let accounts = fixed.accounts((&store, &merchants), &h, &crypto, &late);
    let me = current(user(), Vec::new());
    assert_eq!(accounts.start_two_factor(&me).await.err(), Some(Error::ReauthenticationRequired));
    let mut again = me.clone();
    assert_eq!(accounts.confirm_two_factor(&mut again, "123456").await.err(), Some(Error::ReauthenticationRequired));
    let early = clock("2026-11-01T00:04:00Z");
    let accounts = Accounts { clock: &early, ..accounts };
    assert_eq!(accounts.require_recent(&me), Ok(()));
}

/// A page's offers are the domain's rule: `Allowed` answers exactly what `Current::require`
/// lets through, for every role, mode and action, with the two-factor requirement and the
/// unverified email refusing what they refuse, and nothing in another merchant.
#[test]
fn a_pages_offers_are_what_the_capability_rule_lets_through() {
    use crate::account::capability::Action;
    use crate::account::service::accounts::Allowed;
    use crate::mode::Mode;
    let (ours, theirs) = (MerchantId::from_trusted("mer_1".into()), MerchantId::from_trusted("mer_2".into()));
    for role in Role::ALL {
        let plain = crate::testing::member(&ours, role);
        let mut unverified = plain.clone();
        unverified.user.email_verified_at = None;
        let mut unenrolled = plain.clone();
        unenrolled.memberships[0].requires_two_factor = true;
        for current in [plain, unverified, unenrolled] {
            let allowed = Allowed::of(&current, &ours);
            let elsewhere = Allowed::of(&current, &theirs);
            for mode in [Mode::Test, Mode::Live] {
                for action in Action::ALL {
                    let rule = current.require(&ours, mode, action).is_ok();
                    assert_eq!(allowed.allows(mode, action), rule, "{role:?} {mode:?} {action:?}");
                    assert!(!elsewhere.allows(mode, action));
                }
            }
        }
    }
    let viewer = Allowed::of(&crate::testing::member(&ours, Role::Viewer), &ours);
    assert!(viewer.allows(Mode::Live, Action::Read) && !viewer.allows(Mode::Live, Action::ManageInvoices));
}
