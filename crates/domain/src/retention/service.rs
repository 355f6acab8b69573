//! The purge the worker runs each pass: one bounded batch of each kind.

use crate::email::ports::EmailStore;
use crate::error::Error;
use crate::event::ports::EventStore;
use crate::idempotency::ports::IdempotencyStore;
use crate::retention::model::{Purged, RetentionSettings};

/// The retention use case.
pub struct Retention<'a> {
    /// Events, with their deliveries and attempts.
    pub events: &'a dyn EventStore,
    /// The email outbox.
    pub emails: &'a dyn EmailStore,
    /// Idempotency keys.
    pub idempotency: &'a dyn IdempotencyStore,
    /// How long each kind is kept.
    pub settings: RetentionSettings,
}

impl Retention<'_> {
    /// Removes at most `limit` records of each kind past its retention (a kind kept forever is
    /// left alone), oldest first.
    pub async fn purge(&self, limit: u32) -> Result<Purged, Error> {
        let mut purged = Purged::default();
        if self.settings.events_days > 0 {
            purged.events = self.events.purge_events(self.settings.events_days, limit).await?;
        }
        if self.settings.emails_days > 0 {
            purged.emails = self.emails.purge_emails(self.settings.emails_days, limit).await?;
        }
        purged.idempotency_keys = self.idempotency.purge_expired(limit).await?;
        Ok(purged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::email::ports::MockEmailStore;
    use crate::event::ports::MockEventStore;
    use crate::idempotency::ports::MockIdempotencyStore;

    #[tokio::test]
    async fn each_kind_is_purged_by_its_own_setting_and_zero_keeps_it() {
        let mut events = MockEventStore::new();
        events.expect_purge_events().withf(|days, limit| *days == 90 && *limit == 1000).returning(|_, _| Ok(1000));
        let mut emails = MockEmailStore::new();
        emails.expect_purge_emails().never();
        let mut keys = MockIdempotencyStore::new();
        keys.expect_purge_expired().withf(|limit| *limit == 1000).returning(|_| Ok(3));
        let settings = RetentionSettings { events_days: 90, emails_days: 0, export_files_days: 7 };
        let retention = Retention { events: &events, emails: &emails, idempotency: &keys, settings };
        let purged = retention.purge(1000).await.unwrap();
        assert_eq!(purged, Purged { events: 1000, emails: 0, idempotency_keys: 3 });
        assert!(purged.full(1000), "a full batch of events: more may be waiting");
        assert!(!Purged { events: 999, emails: 0, idempotency_keys: 0 }.full(1000));
    }
}
