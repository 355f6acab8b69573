//! A short-lived cache of authenticated keys in front of [`ApiKeyStore`], so most requests skip
//! the key lookup. Whatever changes what a lookup answers (a revoked key, a merchant suspended,
//! activated or unsuspended, a test clock moved) is announced with `NOTIFY` on
//! [`KEYS_CHANNEL`]; every process listens and drops the merchant's entries at once, and the
//! process that made the change drops them before it answers (its next request reads the
//! change rather than racing the notification). While the
//! listening connection is down the cache is not used (a change could be missed), it is emptied
//! whenever the connection is made again, and an entry lives [`KEY_CACHE_SECONDS`] at most.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use stablepay_domain::Error;
use stablepay_domain::api_key::{ApiKey, KeyLookup};
use stablepay_domain::ids::{ApiKeyId, MerchantId};
use stablepay_domain::ports::ApiKeyStore;

use crate::pool::PgStore;

/// The channel of key and merchant changes (the payload is the merchant id).
pub const KEYS_CHANNEL: &str = "stablepay_keys";

/// The longest an entry is used.
pub const KEY_CACHE_SECONDS: u64 = 30;

/// The cache: digests to lookups, shared by a process's HTTP workers.
#[derive(Default)]
pub struct KeyCache {
    entries: RwLock<HashMap<[u8; 32], (KeyLookup, Instant)>>,
    /// The listening connection is up: invalidations arrive.
    listening: AtomicBool,
    /// Bumped by every invalidation: a lookup read from the database before one is not cached
    /// after it (it may be what the invalidation was about).
    generation: AtomicU64,
}

impl KeyCache {
    fn get(&self, digest: &[u8; 32]) -> Option<KeyLookup> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        let entries = self.entries.read().ok()?;
        let (lookup, at) = entries.get(digest)?;
        (at.elapsed() < Duration::from_secs(KEY_CACHE_SECONDS)).then(|| lookup.clone())
    }

    /// The generation a lookup read now belongs to.
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches `lookup`, read from the database in `generation`, unless an invalidation came
    /// since (then it may be stale: the next request reads it again).
    fn put(&self, digest: [u8; 32], lookup: KeyLookup, generation: u64) {
        if let Ok(mut entries) = self.entries.write() {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            // Bounded: an old entry is worth nothing; start again rather than grow.
            if entries.len() >= 100_000 {
                entries.clear();
            }
            entries.insert(digest, (lookup, Instant::now()));
        }
    }

    /// Drops every entry of `merchant` (all entries for an empty or unknown payload).
    pub fn invalidate(&self, merchant: &str) {
        if let Ok(mut entries) = self.entries.write() {
            self.generation.fetch_add(1, Ordering::AcqRel);
            if merchant.is_empty() {
                entries.clear();
            } else {
                entries.retain(|_, (lookup, _)| lookup.merchant.id.as_str() != merchant);
            }
        }
    }

    /// Drops the entry of key `id` (a revocation in this process: its answer must not wait for
    /// the notification to come back).
    fn forget_key(&self, id: &ApiKeyId) {
        if let Ok(mut entries) = self.entries.write() {
            self.generation.fetch_add(1, Ordering::AcqRel);
            entries.retain(|_, (lookup, _)| &lookup.key.id != id);
        }
    }

    fn touch(&self, id: &ApiKeyId, at: DateTime<Utc>) {
        if let Ok(mut entries) = self.entries.write() {
            for (lookup, _) in entries.values_mut().filter(|(l, _)| &l.key.id == id) {
                lookup.key.last_used_at = Some(at);
            }
        }
    }

    fn set_listening(&self, up: bool) {
        if up {
            self.invalidate("");
        }
        self.listening.store(up, Ordering::Release);
    }
}

/// The store with the cache in front of its key lookups.
#[derive(Clone)]
pub struct CachedKeyStore {
    inner: PgStore,
    cache: Arc<KeyCache>,
}

impl CachedKeyStore {
    /// `inner` behind `cache` (one cache per process, fed by [`listen_for_key_changes`]).
    pub fn new(inner: PgStore, cache: Arc<KeyCache>) -> Self {
        Self { inner, cache }
    }
}

#[async_trait]
impl ApiKeyStore for CachedKeyStore {
    async fn insert_key(&self, key: &ApiKey) -> Result<(), Error> {
        self.inner.insert_key(key).await
    }

    async fn find_key_by_digest(&self, digest: [u8; 32]) -> Result<Option<KeyLookup>, Error> {
        if let Some(hit) = self.cache.get(&digest) {
            return Ok(Some(hit));
        }
        let generation = self.cache.generation();
        let found = self.inner.find_key_by_digest(digest).await?;
        if let Some(lookup) = &found {
            self.cache.put(digest, lookup.clone(), generation);
        }
        Ok(found)
    }

    async fn revoke_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error> {
        let revoked = self.inner.revoke_key(id, at).await;
        // Other processes learn it from the notification; this one at once.
        self.cache.forget_key(id);
        revoked
    }

    async fn record_key_use(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error> {
        self.cache.touch(id, at);
        self.inner.record_key_use(id, at).await
    }

    async fn list_keys(&self, merchant_id: &MerchantId) -> Result<Vec<ApiKey>, Error> {
        self.inner.list_keys(merchant_id).await
    }
}

/// Announces that what a key lookup of `merchant` answers changed (after the change committed)
/// to every process, and drops the merchant's entries from `store`'s own process's cache at
/// once (the next request here reads the change, not the notification's race).
pub(crate) async fn announce(store: &PgStore, conn: &mut AsyncPgConnection, merchant: &str) -> Result<(), Error> {
    use diesel_async::RunQueryDsl;
    let sent = diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<diesel::sql_types::Text, _>(KEYS_CHANNEL)
        .bind::<diesel::sql_types::Text, _>(merchant)
        .execute(conn)
        .await
        .map(|_| ())
        .map_err(crate::error::db);
    if let Some(cache) = &store.key_cache {
        cache.forget(merchant);
    }
    sent
}

impl crate::pool::ForgetKeys for KeyCache {
    fn forget(&self, merchant: &str) {
        self.invalidate(merchant);
    }
}

impl PgStore {
    /// The same store, dropping from `cache` (this process's) what its changes announce.
    pub fn with_key_cache(mut self, cache: Arc<KeyCache>) -> Self {
        self.key_cache = Some(cache);
        self
    }
}

/// Listens on [`KEYS_CHANNEL`] for as long as `cache` has other owners, dropping entries as
/// changes are announced, and reconnecting (with the cache off meanwhile) when it must.
pub fn listen_for_key_changes(database_url: String, cache: Arc<KeyCache>) -> tokio::task::JoinHandle<()> {
    struct Keys(Arc<KeyCache>);
    impl crate::listen::Listener for Keys {
        fn wanted(&self) -> bool {
            Arc::strong_count(&self.0) > 1
        }
        fn listening(&self) {
            self.0.set_listening(true);
        }
        fn notified(&self, merchant: &str) {
            self.0.invalidate(merchant);
        }
        fn lost(&self) {
            self.0.set_listening(false);
        }
    }
    let channel =
        crate::listen::Channel { name: KEYS_CHANNEL, what: "key-change", meanwhile: "keys are looked up every time" };
    crate::listen::listen(database_url, channel, Keys(cache))
}

#[cfg(test)]
mod tests {
    use stablepay_domain::Mode;
    use stablepay_domain::api_key::KeyType;
    use stablepay_domain::merchant::MerchantStatus;

    use super::*;

    fn lookup() -> KeyLookup {
        let now = Utc::now();
        let merchant = stablepay_domain::testing::merchant(MerchantStatus::Active, now);
        let key = ApiKey {
            id: ApiKeyId::from_trusted("key_1".into()),
            merchant_id: merchant.id.clone(),
            mode: Mode::Test,
            key_type: KeyType::Secret,
            digest: [7; 32],
            display_prefix: "sk_test_abcd".into(),
            created_at: now,
            expires_at: None,
            revoked_at: None,
            last_used_at: None,
            permissions: None,
        };
        KeyLookup { key, merchant, test_clock_offset_seconds: 0 }
    }

    #[test]
    fn a_lookup_read_before_an_invalidation_is_not_cached_after_it() {
        let cache = KeyCache::default();
        cache.set_listening(true);
        // A request misses, reads the key (still valid), and meanwhile the key is revoked.
        let generation = cache.generation();
        cache.invalidate("mer_1");
        cache.put([7; 32], lookup(), generation);
        assert_eq!(cache.get(&[7; 32]), None, "a stale lookup was cached after its invalidation");
        // Read after the invalidation, it is cached.
        cache.put([7; 32], lookup(), cache.generation());
        assert!(cache.get(&[7; 32]).is_some());
        cache.invalidate("mer_1");
        assert_eq!(cache.get(&[7; 32]), None);
    }

    #[test]
    fn a_key_revoked_in_this_process_leaves_the_cache_at_once() {
        let cache = KeyCache::default();
        cache.set_listening(true);
        let generation = cache.generation();
        cache.put([7; 32], lookup(), generation);
        assert!(cache.get(&[7; 32]).is_some());
        cache.forget_key(&ApiKeyId::from_trusted("key_2".into()));
        assert!(cache.get(&[7; 32]).is_some(), "another key's revocation keeps it");
        cache.forget_key(&ApiKeyId::from_trusted("key_1".into()));
        assert_eq!(cache.get(&[7; 32]), None);
        // A lookup read before the revocation is not cached after it.
        cache.put([7; 32], lookup(), generation);
        assert_eq!(cache.get(&[7; 32]), None);
    }
}
