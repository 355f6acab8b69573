//! Authentication: which merchant, mode and capability a presented API key gives.

use chrono::{DateTime, Utc};

use crate::account::capability::Action;
use crate::account::service::accounts::Current;
use crate::api_key::model::{ApiKey, ApiKeySecret, KeyNeed, KeyType, Principal, require_key};
use crate::api_key::permission::{self, Access, Permissions, ResourceFamily};
use crate::api_key::ports::ApiKeyStore;
use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{ApiKeyId, MerchantId};
use crate::merchant::model::MerchantStatus;
use crate::merchant::ports::MerchantStore;
use crate::mode::{Mode, Scope};

/// Authenticates a presented key for a route that takes the keys `need` says and a request that
/// `needs` a resource family and an access (`None`: a request only an unrestricted key may
/// make). Everything about the key is decided here, before anything of the request is looked
/// at: a restricted secret key (one with permissions) is refused unless its permissions allow
/// what the request needs (docs/api.md, "Restricted keys"), then a key the route does not take.
///
/// Errors: [`Error::InvalidApiKey`] for a malformed, unknown, revoked or expired key;
/// [`Error::AccountSuspended`] when the key's merchant is suspended;
/// [`Error::PermissionDenied`] naming the missing permission; [`Error::ApiKeyForbidden`] for a
/// publishable key on a secret route or a live key on a test helper; store failures as they are.
pub async fn authenticate(
    store: &dyn ApiKeyStore,
    crypto: &dyn Crypto,
    presented: &ApiKeySecret,
    (need, needs, now): (KeyNeed, Option<(ResourceFamily, Access)>, DateTime<Utc>),
) -> Result<Principal, Error> {
    let (mode, key_type) = presented.classify().ok_or(Error::InvalidApiKey)?;
    let found = store.find_key_by_digest(presented.digest(crypto)).await?.ok_or(Error::InvalidApiKey)?;
    let key = found.key;
    let usable = key.revoked_at.is_none()
        && key.expires_at.is_none_or(|at| at > now)
        && key.mode == mode
        && key.key_type == key_type;
    if !usable {
        return Err(Error::InvalidApiKey);
    }
    if found.merchant.status == MerchantStatus::Suspended {
        return Err(Error::AccountSuspended);
    }
    if key.key_type == KeyType::Secret {
        permission::require(key.permissions.as_ref(), needs)?;
    }
    require_key(key.key_type, key.mode, need)?;
    let record_use = key
        .last_used_at
        .is_none_or(|at| (now - at).num_seconds() >= crate::api_key::model::LAST_USED_PRECISION_SECONDS);
    Ok(Principal {
        record_use,
        permissions: key.permissions,
        scope: Scope::new(key.merchant_id, key.mode),
        key_type: key.key_type,
        key_id: key.id,
        merchant: found.merchant,
        test_clock_offset_seconds: found.test_clock_offset_seconds,
    })
}

/// A merchant's keys (every mode and type, revoked ones included), oldest first. Errors:
/// `NotFound(Merchant)`.
pub async fn list_api_keys(
    merchants: &dyn MerchantStore,
    keys: &dyn ApiKeyStore,
    merchant_id: &MerchantId,
) -> Result<Vec<ApiKey>, Error> {
    merchants.get_merchant(merchant_id).await?;
    keys.list_keys(merchant_id).await
}

/// Creates a key (restricted to `permissions` when given) and returns its record with the
/// plaintext (shown once, never stored). Errors: `NotFound(Merchant)`; `Validation`
/// (`permissions`) for a restricted publishable key.
pub async fn create_api_key(
    store: &dyn ApiKeyStore,
    crypto: &dyn Crypto,
    now: DateTime<Utc>,
    merchant_id: &MerchantId,
    (mode, key_type): (Mode, KeyType),
    permissions: Option<Permissions>,
) -> Result<(ApiKey, ApiKeySecret), Error> {
    if permissions.is_some() && key_type == KeyType::Publishable {
        return Err(Error::validation(
            "permissions",
            "only secret keys are restricted; a publishable key's access is fixed",
        ));
    }
    let secret = ApiKeySecret::generate(crypto, mode, key_type);
    let key = ApiKey {
        id: ApiKeyId::generate(crypto),
        merchant_id: merchant_id.clone(),
        mode,
        key_type,
        digest: secret.digest(crypto),
        display_prefix: secret.display_prefix(),
        created_at: now,
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
        permissions,
    };
    store.insert_key(&key).await?;
    Ok((key, secret))
}

/// Revokes a key (idempotent). Errors: `NotFound(ApiKey)`.
pub async fn revoke_api_key(store: &dyn ApiKeyStore, now: DateTime<Utc>, id: &ApiKeyId) -> Result<(), Error> {
    store.revoke_key(id, now).await
}

/// A merchant's API keys as the dashboard manages them: every read and change is scoped by the
/// merchant and mode (another merchant's key is not found).
pub struct ApiKeys<'a> {
    /// The keys.
    pub store: &'a dyn ApiKeyStore,
    /// Key material and ids.
    pub crypto: &'a dyn Crypto,
    /// The real time (keys are not on the test clock).
    pub clock: &'a dyn Clock,
}

impl ApiKeys<'_> {
    /// The merchant's keys of `mode` (revoked ones included), oldest first.
    pub async fn list(&self, merchant: &MerchantId, mode: Mode) -> Result<Vec<ApiKey>, Error> {
        Ok(self.store.list_keys(merchant).await?.into_iter().filter(|k| k.mode == mode).collect())
    }

    /// A new key of `merchant` in `mode`, restricted to `permissions` when given (the CLI's
    /// `family:access,...` form); its plaintext is shown once. Errors: `Validation`
    /// (`permissions`).
    pub async fn create(
        &self,
        merchant: &MerchantId,
        (mode, key_type): (Mode, KeyType),
        permissions: Option<&str>,
    ) -> Result<(ApiKey, ApiKeySecret), Error> {
        let permissions = permissions.map(Permissions::parse).transpose()?;
        let now = self.clock.system_now();
        create_api_key(self.store, self.crypto, now, merchant, (mode, key_type), permissions).await
    }

    /// A key made by a dashboard member (`current`) in `scope`: their role must manage API keys
    /// in the mode, and their sign-in must be recent (a new key can act for the merchant:
    /// [`Session::recently_authenticated`](crate::account::model::Session::recently_authenticated)).
    /// Errors: `AuthForbidden` (the role, the merchant's two-factor requirement, an unverified
    /// email in live mode) and `NotFound(Merchant)` for a merchant the member is not in, checked
    /// first; `ReauthenticationRequired`; then [`ApiKeys::create`]'s.
    pub async fn create_by(
        &self,
        current: &Current,
        scope: &Scope,
        key_type: KeyType,
        permissions: Option<&str>,
    ) -> Result<(ApiKey, ApiKeySecret), Error> {
        current.require(&scope.merchant_id, scope.mode, Action::ManageApiKeys)?;
        if !current.session.recently_authenticated(self.clock.system_now()) {
            return Err(Error::ReauthenticationRequired);
        }
        self.create(&scope.merchant_id, (scope.mode, key_type), permissions).await
    }

    /// Revokes a key of `merchant` in `mode` (idempotent). Errors: `NotFound(ApiKey)` for any
    /// other key.
    pub async fn revoke(&self, merchant: &MerchantId, mode: Mode, id: &ApiKeyId) -> Result<(), Error> {
        if !self.list(merchant, mode).await?.iter().any(|k| &k.id == id) {
            return Err(Error::NotFound(crate::error::Resource::ApiKey));
        }
        revoke_api_key(self.store, self.clock.system_now(), id).await
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::api_key::model::{ApiKey, KeyLookup, KeyType};
    use crate::api_key::ports::MockApiKeyStore;
    use crate::ids::{ApiKeyId, MerchantId};
    use crate::mode::Mode;
    use crate::testing::SeqCrypto;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap()
    }

    fn record(secret: &ApiKeySecret, crypto: &SeqCrypto) -> ApiKey {
        let (mode, key_type) = secret.classify().unwrap();
        ApiKey {
            id: ApiKeyId::from_trusted("key_1".into()),
            merchant_id: MerchantId::from_trusted("mer_1".into()),
            mode,
            key_type,
            digest: secret.digest(crypto),
            display_prefix: secret.display_prefix(),
            created_at: now(),
            expires_at: None,
            revoked_at: None,
            last_used_at: None,
            permissions: None,
        }
    }

    async fn run(lookup: Option<KeyLookup>, presented: &ApiKeySecret) -> Result<Principal, Error> {
        run_for(lookup, presented, Some((ResourceFamily::Invoices, Access::Read))).await
    }

    async fn run_for(
        lookup: Option<KeyLookup>,
        presented: &ApiKeySecret,
        needs: Option<(ResourceFamily, Access)>,
    ) -> Result<Principal, Error> {
        let crypto = SeqCrypto::default();
        let mut store = MockApiKeyStore::new();
        store.expect_find_key_by_digest().returning(move |_| Ok(lookup.clone()));
        authenticate(&store, &crypto, presented, (KeyNeed::Secret, needs, now())).await
    }

    /// A member's key creation: the role is checked before anything, then a recent sign-in;
    /// only then is the key stored.
    #[tokio::test]
    async fn a_member_makes_a_key_with_the_role_and_a_recent_sign_in() {
        use crate::account::capability::Role;
        use crate::clock::MockClock;
        let merchant = MerchantId::from_trusted("mer_1".into());
        let scope = Scope::new(merchant.clone(), Mode::Test);
        let owner = crate::testing::member(&merchant, Role::Owner);
        let signed_in = owner.session.reauthenticated_at;
        let try_at = |current, at, stored: usize| async move {
            let (crypto, mut clock, mut store) = (SeqCrypto::default(), MockClock::new(), MockApiKeyStore::new());
            clock.expect_system_now().return_const(at);
            store.expect_insert_key().times(stored).returning(|_| Ok(()));
            let keys = ApiKeys { store: &store, crypto: &crypto, clock: &clock };
            keys.create_by(
                &current,
                &Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Test),
                KeyType::Secret,
                None,
            )
            .await
            .map(|(key, _)| key.mode)
        };
        let viewer = crate::testing::member(&merchant, Role::Viewer);
        assert!(matches!(try_at(viewer, signed_in, 0).await, Err(Error::AuthForbidden(_))));
        let late = signed_in + chrono::Duration::minutes(6);
        assert_eq!(try_at(owner.clone(), late, 0).await, Err(Error::ReauthenticationRequired));
        assert_eq!(try_at(owner, signed_in + chrono::Duration::minutes(4), 1).await, Ok(scope.mode));
    }

    #[tokio::test]
    async fn authentication_cases() {
        let crypto = SeqCrypto::default();
        let secret = ApiKeySecret::generate(&crypto, Mode::Test, KeyType::Secret);
        let good = record(&secret, &crypto);
        let merchant = |status| crate::testing::merchant(status, now());
        let active = |key: ApiKey| {
            Some(KeyLookup { key, merchant: merchant(MerchantStatus::Active), test_clock_offset_seconds: 0 })
        };

        let p = run(active(good.clone()), &secret).await.unwrap();
        assert_eq!(p.scope.mode, Mode::Test);
        assert_eq!(p.key_type, KeyType::Secret);
        // A use is recorded when none is, or the last is a minute old or more.
        assert!(p.record_use);
        let recent = ApiKey { last_used_at: Some(now() - chrono::Duration::seconds(59)), ..good.clone() };
        assert!(!run(active(recent), &secret).await.unwrap().record_use);
        let older = ApiKey { last_used_at: Some(now() - chrono::Duration::seconds(60)), ..good.clone() };
        assert!(run(active(older), &secret).await.unwrap().record_use);

        assert_eq!(run(None, &secret).await, Err(Error::InvalidApiKey));
        assert_eq!(run(None, &ApiKeySecret::presented("nope")).await, Err(Error::InvalidApiKey));
        let revoked = ApiKey { revoked_at: Some(now()), ..good.clone() };
        assert_eq!(run(active(revoked), &secret).await, Err(Error::InvalidApiKey));
        let expired = ApiKey { expires_at: Some(now()), ..good.clone() };
        assert_eq!(run(active(expired), &secret).await, Err(Error::InvalidApiKey));
        let suspended = Some(KeyLookup {
            key: good.clone(),
            merchant: merchant(MerchantStatus::Suspended),
            test_clock_offset_seconds: 0,
        });
        assert_eq!(run(suspended, &secret).await, Err(Error::AccountSuspended));

        // A restricted key is refused what its permissions lack, and what needs an
        // unrestricted key; an unrestricted key is not.
        let restricted = ApiKey { permissions: Some(Permissions::parse("invoices:read").unwrap()), ..good.clone() };
        let write = Some((ResourceFamily::Invoices, Access::Write));
        assert!(
            run_for(active(restricted.clone()), &secret, Some((ResourceFamily::Invoices, Access::Read))).await.is_ok()
        );
        assert_eq!(
            run_for(active(restricted.clone()), &secret, write).await,
            Err(Error::PermissionDenied { permission: "invoices:write".into() })
        );
        assert_eq!(
            run_for(active(restricted), &secret, None).await,
            Err(Error::PermissionDenied { permission: "unrestricted".into() })
        );
        assert!(run_for(active(good.clone()), &secret, write).await.is_ok());
        assert!(run_for(active(good), &secret, None).await.is_ok());
    }

    #[tokio::test]
    async fn keys_store_only_the_digest() {
        let crypto = SeqCrypto::default();
        let mut store = MockApiKeyStore::new();
        store.expect_insert_key().times(1).returning(|_| Ok(()));
        let id = MerchantId::from_trusted("mer_1".into());
        let (key, secret) =
            create_api_key(&store, &crypto, Utc::now(), &id, (Mode::Live, KeyType::Publishable), None).await.unwrap();
        assert!(secret.reveal().starts_with("pk_live_"));
        assert_eq!(key.digest, secret.digest(&crypto));
        assert_eq!(key.display_prefix, &secret.reveal()[..12]);
    }

    #[tokio::test]
    async fn the_dashboard_revokes_only_the_merchants_own_keys_of_its_mode() {
        let crypto = SeqCrypto::default();
        let secret = ApiKeySecret::generate(&crypto, Mode::Test, KeyType::Secret);
        let key = record(&secret, &crypto);
        let listed = key.clone();
        let mut store = MockApiKeyStore::new();
        store
            .expect_list_keys()
            .returning(move |m| Ok(if m.as_str() == "mer_1" { vec![listed.clone()] } else { Vec::new() }));
        store.expect_revoke_key().times(1).returning(|_, _| Ok(()));
        let mut clock = crate::clock::MockClock::new();
        clock.expect_system_now().returning(now);
        let keys = ApiKeys { store: &store, crypto: &crypto, clock: &clock };
        let (ours, theirs) = (MerchantId::from_trusted("mer_1".into()), MerchantId::from_trusted("mer_2".into()));
        assert_eq!(
            keys.revoke(&theirs, Mode::Test, &key.id).await,
            Err(Error::NotFound(crate::error::Resource::ApiKey))
        );
        assert_eq!(keys.revoke(&ours, Mode::Live, &key.id).await, Err(Error::NotFound(crate::error::Resource::ApiKey)));
        assert_eq!(keys.revoke(&ours, Mode::Test, &key.id).await, Ok(()));
        let refused = keys.create(&ours, (Mode::Test, KeyType::Secret), Some("invoices:delete")).await;
        assert_eq!(refused.unwrap_err().field(), Some("permissions"));
    }
}
