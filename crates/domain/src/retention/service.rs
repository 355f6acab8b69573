//! The purge the worker runs each pass: one bounded batch of each kind; and, less often, the
//! months of events: the next ones made ready, the old ones dropped whole.

use crate::email::ports::EmailStore;
use crate::error::Error;
use crate::event::ports::EventStore;
use crate::idempotency::ports::IdempotencyStore;
use crate::retention::model::{MONTHS_AHEAD, Months, Purged, RetentionSettings};

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
    /// left alone), oldest first: finished emails, idempotency keys, and the events a test
    /// clock aged ahead of their month ([`Retention::rotate_months`] removes the others).
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

    /// Makes the next [`MONTHS_AHEAD`] months of events ready (always: events are recorded
    /// whatever is kept), then drops each whole month past the events' retention (unless
    /// events are kept forever): no event is deleted row by row for growing old in real time,
    /// so the largest tables are never purged a row at a time.
    pub async fn rotate_months(&self) -> Result<Months, Error> {
        let prepared = self.events.prepare_months(MONTHS_AHEAD).await?;
        let dropped = match self.settings.events_days {
            0 => 0,
            days => self.events.drop_months(days).await?,
        };
        Ok(Months { prepared, dropped })
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

    #[tokio::test]
    async fn months_ahead_are_always_prepared_and_old_ones_dropped_by_the_events_setting() {
        let (emails, keys) = (MockEmailStore::new(), MockIdempotencyStore::new());
        let mut events = MockEventStore::new();
        events.expect_prepare_months().withf(|ahead| *ahead == MONTHS_AHEAD).times(2).returning(|_| Ok(1));
        events.expect_drop_months().withf(|days| *days == 30).times(1).returning(|_| Ok(2));
        let settings = RetentionSettings { events_days: 30, emails_days: 90, export_files_days: 7 };
        let retention = Retention { events: &events, emails: &emails, idempotency: &keys, settings };
        assert_eq!(retention.rotate_months().await.unwrap(), Months { prepared: 1, dropped: 2 });
        // Events kept forever: the months ahead are still made, none is dropped.
        let settings = RetentionSettings { events_days: 0, ..settings };
        let retention = Retention { events: &events, emails: &emails, idempotency: &keys, settings };
        assert_eq!(retention.rotate_months().await.unwrap(), Months { prepared: 1, dropped: 0 });
    }
}
