//! The checkouts a process's committed saves changed, waiting to be sent to every process's
//! pages (`signals::send_checkout_signals`). The store queues; one task takes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A `NOTIFY` payload must stay under 8,000 bytes.
pub(crate) const PAYLOAD_BYTES: usize = 7_000;

/// The queue. Cheap to clone (one queue shared).
#[derive(Clone, Default)]
pub(crate) struct SignalQueue {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    ids: Mutex<Vec<String>>,
    /// Wakes the sender when the queue gets its first id.
    wake: tokio::sync::Notify,
}

impl SignalQueue {
    /// Queues checkouts a committed save changed.
    pub(crate) fn changed(&self, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        let mut queued = self.inner.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let first = queued.is_empty();
        queued.extend(ids);
        drop(queued);
        if first {
            self.inner.wake.notify_one();
        }
    }

    /// Waits at most `limit` for a first id; whether one came.
    pub(crate) async fn wait(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.inner.wake.notified()).await.is_ok()
    }

    /// The queued ids, each once, as payloads of at most `PAYLOAD_BYTES` (comma-separated).
    pub(crate) fn take_payloads(&self) -> Vec<String> {
        let mut ids = std::mem::take(&mut *self.inner.ids.lock().unwrap_or_else(PoisonError::into_inner));
        ids.sort_unstable();
        ids.dedup();
        let mut payloads: Vec<String> = Vec::new();
        for id in ids {
            match payloads.last_mut() {
                Some(p) if p.len() + 1 + id.len() <= PAYLOAD_BYTES => {
                    p.push(',');
                    p.push_str(&id);
                }
                _ => payloads.push(id),
            }
        }
        payloads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_ids_are_sent_once_each_in_payloads_under_the_limit() {
        let queue = SignalQueue::default();
        queue.changed(Vec::new());
        assert!(queue.take_payloads().is_empty());
        let ids: Vec<String> = (0..1000).map(|i| format!("cs_{i:022}")).collect();
        queue.changed(ids.clone());
        queue.changed(ids[..10].to_vec());
        let payloads = queue.take_payloads();
        assert!(payloads.len() > 1 && payloads.iter().all(|p| p.len() <= PAYLOAD_BYTES));
        let sent: Vec<&str> = payloads.iter().flat_map(|p| p.split(',')).collect();
        assert_eq!(sent, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(queue.take_payloads().is_empty());
    }
}
