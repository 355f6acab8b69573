//! The clock port and the one rule of test-mode time.
//!
//! Live mode always reads the real time. Test mode reads the real time plus the merchant's
//! test-clock offset, which the merchant moves forward with a test helper (never back). The
//! total offset is capped at [`MAX_TEST_CLOCK_OFFSET_SECONDS`] (100 years), so every time the
//! service computes stays far inside the range of its timestamps.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use crate::error::Error;
use crate::mode::{Mode, Scope};

/// The largest total offset of a test clock: 100 years of 365.25 days.
pub const MAX_TEST_CLOCK_OFFSET_SECONDS: i64 = 36_525 * 86_400;

/// The largest single advance of a test clock: 10 years of 366 days.
pub const MAX_TEST_CLOCK_ADVANCE_SECONDS: i64 = 10 * 366 * 86_400;

/// The time. It can differ per merchant and mode: test mode has a clock the merchant can move
/// forward (test helpers); live mode always reads the real time.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Clock: Send + Sync {
    /// The current time for `scope`. Errors: `Unavailable` when the offset cannot be read.
    async fn now(&self, scope: &Scope) -> Result<DateTime<Utc>, Error>;
    /// The real time, for things that belong to no merchant.
    fn system_now(&self) -> DateTime<Utc>;
}

/// The time of `mode` at the real time `real` for a merchant whose test clock is
/// `offset_seconds` ahead. Errors: `Internal` when the offset is outside
/// `0..=MAX_TEST_CLOCK_OFFSET_SECONDS` (the store never keeps such an offset).
pub fn time_in_mode(real: DateTime<Utc>, mode: Mode, offset_seconds: i64) -> Result<DateTime<Utc>, Error> {
    match mode {
        Mode::Live => Ok(real),
        Mode::Test => {
            if !(0..=MAX_TEST_CLOCK_OFFSET_SECONDS).contains(&offset_seconds) {
                return Err(Error::Internal(format!("test clock offset {offset_seconds} s is out of range")));
            }
            Duration::try_seconds(offset_seconds)
                .and_then(|d| real.checked_add_signed(d))
                .ok_or_else(|| Error::Internal("test clock time out of range".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_time_is_real_time_plus_a_bounded_offset() {
        let real = Utc::now();
        assert_eq!(time_in_mode(real, Mode::Live, 500), Ok(real));
        assert_eq!(time_in_mode(real, Mode::Test, 60), Ok(real + Duration::seconds(60)));
        assert!(time_in_mode(real, Mode::Test, MAX_TEST_CLOCK_OFFSET_SECONDS).is_ok());
        assert!(time_in_mode(real, Mode::Test, MAX_TEST_CLOCK_OFFSET_SECONDS + 1).is_err());
        assert!(time_in_mode(real, Mode::Test, -1).is_err());
        assert!(time_in_mode(real, Mode::Test, i64::MAX).is_err());
    }
}
