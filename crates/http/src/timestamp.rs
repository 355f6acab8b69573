//! Timestamps as the API and the pages write them.

use chrono::{DateTime, SecondsFormat, Utc};

/// RFC 3339 in UTC with milliseconds (`2026-11-23T12:00:00.000Z`).
pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}
