use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::*;
use crate::account::ports::{MockAccountStore, MockPasswordHasher, MockTotpSealer};
use crate::clock::MockClock;
use crate::email::ports::MockMailer;
use crate::merchant::model::MerchantStatus;
use crate::merchant::ports::MockMerchantStore;
use crate::testing::SeqCrypto;

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
    let (sealer, mailer, pages) = (MockTotpSealer::new(), MockMailer::new(), PublicPages::new("http://pay.test"));
    let accounts = Accounts {
        store: &store,
        merchants: &merchants,
        hasher: &h,
        sealer: &sealer,
        crypto: &crypto,
        clock: &clock,
        mailer: &mailer,
        pages: &pages,
        settings: AccountSettings::default(),
    };
    assert_eq!(
        accounts.login("nobody@example.com", "correct horse battery", None).await.err(),
        Some(Error::InvalidCredentials)
    );
    assert_eq!(
        accounts.login("ADA@example.com", "wrong horse battery", None).await.err(),
        Some(Error::InvalidCredentials)
    );
    assert_eq!(accounts.login("not an email", "x", None).await.err(), Some(Error::InvalidCredentials));
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
    let (sealer, mailer, pages) = (MockTotpSealer::new(), MockMailer::new(), PublicPages::new("http://pay.test"));
    let accounts = Accounts {
        store: &store,
        merchants: &merchants,
        hasher: &h,
        sealer: &sealer,
        crypto: &crypto,
        clock: &login_clock,
        mailer: &mailer,
        pages: &pages,
        settings: AccountSettings::default(),
    };
    let signed = accounts.login(" Ada@Example.com", "correct horse battery", None).await.unwrap();
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
    let (sealer, mailer, pages) = (MockTotpSealer::new(), MockMailer::new(), PublicPages::new("http://pay.test"));
    let accounts = Accounts {
        store: &store,
        merchants: &merchants,
        hasher: &h,
        sealer: &sealer,
        crypto: &crypto,
        clock: &clock,
        mailer: &mailer,
        pages: &pages,
        settings: AccountSettings::default(),
    };
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
