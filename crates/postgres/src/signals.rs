//! Checkout signals ([`CheckoutSignals`]): after a save that wrote a checkout's session or one
//! of its payments commits, its id is queued in this process's hub; one task per process sends
//! the queue every few milliseconds as `NOTIFY stablepay_checkouts` (the ids comma-separated), and
//! one `LISTEN` connection per process hands each id to that checkout's subscribers, if any.
//!
//! The `NOTIFY` is sent after the change's commit, never inside it: PostgreSQL serializes the
//! commits of transactions that notify, which in a crediting's own transaction more than halved
//! one merchant's creditings per second (docs/benchmarks.md, "One merchant's flash sale"). A
//! process that dies between a commit and its signal loses the signal; the pages that follow
//! read their checkout again every minute anyway.
//!
//! A checkout's subscribers share one `watch` channel of a counter, made with the first and
//! dropped with the last, so a signal costs one map lookup whoever listens, and a subscription
//! sees every signal sent after it was made (the counter moved), not only those sent while it
//! waits. Signals sent while the `LISTEN` connection is down are lost: every subscriber is
//! told to look again when it is back, and meanwhile a wait pauses then answers
//! `Unavailable`, so its caller reads the checkout as a poll would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::ports::{CheckoutSignal, CheckoutSignals, CheckoutSubscription};

use crate::signal_queue::SignalQueue;
use tokio::sync::watch;

/// How long a wait pauses while signals are not being received.
const UNAVAILABLE_PAUSE: Duration = Duration::from_secs(2);

type Channel = Arc<watch::Sender<u64>>;

/// The subscribers of this process, by checkout. Cheap to clone (one hub shared).
#[derive(Clone, Default)]
pub struct CheckoutSignalHub {
    inner: Arc<Hub>,
}

#[derive(Default)]
struct Hub {
    channels: Mutex<HashMap<String, Weak<watch::Sender<u64>>>>,
    listening: AtomicBool,
    /// The checkouts this process's committed saves changed, not yet sent.
    queue: SignalQueue,
}

/// The channel of the signals.
const CHANNEL: &str = "stablepay_checkouts";
/// How long the sender gathers ids before it sends them.
const GATHER: Duration = Duration::from_millis(5);

impl CheckoutSignalHub {
    /// A hub that hears nothing until [`listen_for_checkouts`] runs for it.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Weak<watch::Sender<u64>>>> {
        self.inner.channels.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `store`, queueing here the checkouts its saves change (sent by
    /// [`send_checkout_signals`]).
    pub fn attach(&self, mut store: crate::pool::PgStore) -> crate::pool::PgStore {
        store.signals = Some(self.inner.queue.clone());
        store
    }

    /// Signals checkout `id`'s subscribers (none: nothing to do).
    fn signal(&self, id: &str) {
        let channel = self.lock().get(id).and_then(Weak::upgrade);
        if let Some(channel) = channel {
            channel.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Signals every subscriber: what they missed while the connection was down.
    fn signal_all(&self) {
        let channels: Vec<Channel> = self.lock().values().filter_map(Weak::upgrade).collect();
        for channel in channels {
            channel.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// How many checkouts have subscribers in this process.
    pub fn followed(&self) -> usize {
        self.lock().len()
    }
}

impl CheckoutSignals for CheckoutSignalHub {
    fn subscribe(&self, id: &CheckoutSessionId) -> Box<dyn CheckoutSubscription> {
        let key = id.as_str().to_owned();
        let mut channels = self.lock();
        let channel = match channels.get(&key).and_then(Weak::upgrade) {
            Some(c) => c,
            None => {
                let c: Channel = Arc::new(watch::channel(0).0);
                channels.insert(key.clone(), Arc::downgrade(&c));
                c
            }
        };
        let receiver = channel.subscribe();
        drop(channels);
        Box::new(Subscription { hub: self.clone(), key, channel: Some(channel), receiver })
    }
}

struct Subscription {
    hub: CheckoutSignalHub,
    key: String,
    /// Kept so the channel lives while someone follows it (`None` only while dropping).
    channel: Option<Channel>,
    receiver: watch::Receiver<u64>,
}

#[async_trait::async_trait]
impl CheckoutSubscription for Subscription {
    async fn next(&mut self, limit: Duration) -> CheckoutSignal {
        if !self.hub.inner.listening.load(Ordering::Relaxed) {
            tokio::time::sleep(limit.min(UNAVAILABLE_PAUSE)).await;
            // A signal may still have come (the connection is back): it is read with this one.
            let _ = self.receiver.borrow_and_update();
            return CheckoutSignal::Unavailable;
        }
        match tokio::time::timeout(limit, self.receiver.changed()).await {
            Ok(Ok(())) => {
                self.receiver.borrow_and_update();
                CheckoutSignal::Changed
            }
            Ok(Err(_)) => CheckoutSignal::Unavailable,
            Err(_) => CheckoutSignal::Quiet,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(channel) = self.channel.take() else { return };
        let mut channels = self.hub.lock();
        // The last subscriber of this checkout removes its entry (under the lock a new
        // subscriber would take, so none is lost).
        if Arc::strong_count(&channel) == 1 {
            channels.remove(&self.key);
        }
    }
}

/// Listens for checkout signals for `hub` while it is in use.
pub fn listen_for_checkouts(database_url: String, hub: CheckoutSignalHub) -> tokio::task::JoinHandle<()> {
    struct Checkouts(CheckoutSignalHub);
    impl crate::listen::Listener for Checkouts {
        fn wanted(&self) -> bool {
            Arc::strong_count(&self.0.inner) > 1
        }
        fn listening(&self) {
            self.0.inner.listening.store(true, Ordering::Relaxed);
            self.0.signal_all();
        }
        fn notified(&self, ids: &str) {
            for id in ids.split(',') {
                self.0.signal(id);
            }
        }
        fn lost(&self) {
            self.0.inner.listening.store(false, Ordering::Relaxed);
        }
    }
    crate::listen::listen(
        database_url,
        crate::listen::Channel { name: CHANNEL, what: "checkout-signal", meanwhile: "checkout pages look every 2 s" },
        Checkouts(hub),
    )
}

/// Sends the checkouts this process's saves changed, while `hub` is in use: a `NOTIFY` per
/// payload, a few milliseconds after the first id is queued. A send that fails (the database
/// is away) is dropped: the pages read their checkouts again by themselves.
pub fn send_checkout_signals(store: crate::pool::PgStore, hub: CheckoutSignalHub) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while Arc::strong_count(&hub.inner) > 1 {
            if !hub.inner.queue.wait(Duration::from_secs(1)).await {
                continue;
            }
            tokio::time::sleep(GATHER).await;
            for payload in hub.inner.queue.take_payloads() {
                if let Err(e) = notify(&store, &payload).await {
                    tracing::debug!(error = %e, "checkout signals not sent");
                }
            }
        }
    })
}

async fn notify(store: &crate::pool::PgStore, payload: &str) -> Result<(), stablepay_domain::Error> {
    use diesel::sql_types::Text;
    use diesel_async::RunQueryDsl;
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(CHANNEL)
        .bind::<Text, _>(payload)
        .execute(&mut *store.conn().await?)
        .await
        .map_err(crate::error::db)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> CheckoutSessionId {
        CheckoutSessionId::parse(s).unwrap()
    }

    #[tokio::test]
    async fn a_signal_reaches_the_checkout_s_subscribers_only_and_is_kept_until_read() {
        let hub = CheckoutSignalHub::new();
        hub.inner.listening.store(true, Ordering::Relaxed);
        let mut a1 = hub.subscribe(&id("cs_aaaaaaaaaaaaaaaaaaaaaa"));
        let mut a2 = hub.subscribe(&id("cs_aaaaaaaaaaaaaaaaaaaaaa"));
        let mut b = hub.subscribe(&id("cs_bbbbbbbbbbbbbbbbbbbbbb"));
        assert_eq!(hub.followed(), 2);
        // Sent before anyone waits: still seen.
        hub.signal("cs_aaaaaaaaaaaaaaaaaaaaaa");
        assert_eq!(a1.next(Duration::from_millis(10)).await, CheckoutSignal::Changed);
        assert_eq!(a2.next(Duration::from_millis(10)).await, CheckoutSignal::Changed);
        assert_eq!(b.next(Duration::from_millis(10)).await, CheckoutSignal::Quiet);
        assert_eq!(a1.next(Duration::from_millis(10)).await, CheckoutSignal::Quiet);
        drop((a1, a2));
        assert_eq!(hub.followed(), 1);
        hub.signal("cs_aaaaaaaaaaaaaaaaaaaaaa");
        drop(b);
        assert_eq!(hub.followed(), 0);
    }

    #[tokio::test]
    async fn without_the_listen_connection_a_wait_pauses_and_says_so_and_its_return_signals_everyone() {
        let hub = CheckoutSignalHub::new();
        let mut a = hub.subscribe(&id("cs_aaaaaaaaaaaaaaaaaaaaaa"));
        assert_eq!(a.next(Duration::from_millis(20)).await, CheckoutSignal::Unavailable);
        hub.inner.listening.store(true, Ordering::Relaxed);
        hub.signal_all();
        assert_eq!(a.next(Duration::from_millis(10)).await, CheckoutSignal::Changed);
    }
}
