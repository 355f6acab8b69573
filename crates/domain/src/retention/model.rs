//! What is kept, and for how long.

/// Days an event (with its webhook deliveries and their attempts) is kept, by default.
pub const DEFAULT_EVENTS_DAYS: u32 = 90;
/// Days a finished email of the outbox (sent, failed or skipped) is kept, by default.
pub const DEFAULT_EMAILS_DAYS: u32 = 90;
/// Days an export's file (and so a monthly statement's) can be downloaded after it was written,
/// by default; then it is deleted and the export answers EXPORT_EXPIRED.
pub const DEFAULT_EXPORT_FILES_DAYS: u32 = 7;
/// The most days a retention setting takes (ten years).
pub const MAX_RETENTION_DAYS: u32 = 3660;
/// The most records of one kind one purge removes: a pass holds few locks for little time, so
/// purging never blocks requests; the worker's next pass goes on.
pub const PURGE_BATCH: u32 = 1000;
/// Months after the current one that are kept ready to hold events: an event is never refused
/// for want of its month, even when the worker has not run for this long.
pub const MONTHS_AHEAD: u32 = 3;

/// How long one deployment keeps what it may purge. `0` keeps it forever. Idempotency keys are
/// kept for the spec's 24-hour window, always.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionSettings {
    /// Days an event is kept at least, with its webhook deliveries and their attempts
    /// (`STABLEPAY_RETENTION_EVENTS_DAYS`). Events go a month at a time: with the month they
    /// were stored in, once it ended this many days ago (so at most a month longer). A
    /// test-mode event whose merchant's test clock runs ahead goes as soon as that clock says
    /// it is this old.
    pub events_days: u32,
    /// Days a finished email is kept (`STABLEPAY_RETENTION_EMAILS_DAYS`); queued emails stay.
    pub emails_days: u32,
    /// Days an export's file is kept after it was written (`STABLEPAY_RETENTION_EXPORT_FILES_DAYS`,
    /// at least 1: a file is never kept forever). The export's `expiresAt` says when; the
    /// export record itself stays, `expired`.
    pub export_files_days: u32,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            events_days: DEFAULT_EVENTS_DAYS,
            emails_days: DEFAULT_EMAILS_DAYS,
            export_files_days: DEFAULT_EXPORT_FILES_DAYS,
        }
    }
}

/// What one purge removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Events aged by a test clock, each with its deliveries and attempts (the others go
    /// with their month: [`Months`]).
    pub events: u64,
    /// Finished emails.
    pub emails: u64,
    /// Idempotency keys past their window.
    pub idempotency_keys: u64,
}

/// What one pass over the months of events did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Months {
    /// Months made ready ahead.
    pub prepared: u32,
    /// Whole months of events removed, each with its deliveries and attempts.
    pub dropped: u32,
}

impl Purged {
    /// Whether a batch of any kind was full (more may be waiting).
    pub fn full(&self, batch: u32) -> bool {
        let batch = u64::from(batch);
        self.events >= batch || self.emails >= batch || self.idempotency_keys >= batch
    }
}
