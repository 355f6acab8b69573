//! The schedule use case: how long a worker loop rests.

use chrono::Duration;

use crate::clock::Clock;
use crate::schedule::model::{WorkKind, rest};
use crate::schedule::ports::DueTimes;

/// The schedule of the worker's loops.
pub struct Schedule<'a> {
    /// When work comes due.
    pub times: &'a dyn DueTimes,
    /// The real time.
    pub clock: &'a dyn Clock,
}

impl Schedule<'_> {
    /// How long a loop of `kind` whose last pass found nothing to do rests before its next
    /// pass ([`rest`]); `interval` when the store does not answer (the next pass says why).
    pub async fn rest(&self, kind: WorkKind, interval: Duration) -> Duration {
        match self.times.next_due(kind).await {
            Ok(next) => rest(self.clock.system_now(), next, interval),
            Err(_) => interval,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::clock::MockClock;
    use crate::error::Error;
    use crate::schedule::ports::MockDueTimes;

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn a_loop_rests_until_the_stores_next_due_time_or_its_interval_when_the_store_fails() {
        let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let mut clock = MockClock::new();
        clock.expect_system_now().return_const(now);
        let mut times = MockDueTimes::new();
        times
            .expect_next_due()
            .withf(|k| *k == WorkKind::Exports)
            .returning(move |_| Ok(Some(now + Duration::seconds(20))));
        times.expect_next_due().withf(|k| *k == WorkKind::Due).returning(|_| Err(Error::Unavailable));
        let schedule = Schedule { times: &times, clock: &clock };
        let second = Duration::seconds(1);
        assert_eq!(run(schedule.rest(WorkKind::Exports, second)), Duration::seconds(20));
        assert_eq!(run(schedule.rest(WorkKind::Due, second)), second);
    }
}
