//! What reconciliation reads from the books.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::mode::Scope;
use crate::reconciliation::model::{Discrepancy, TokenSummary};

/// The figures of a period, read from the store.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ReconciliationStore: Send + Sync {
    /// The figures of `scope` for `[from, to)` per token that had any (see [`TokenSummary`]
    /// for what each counts; the collectible states and the credited payment statuses are the
    /// domain's `is_collectible` and `is_credited`).
    async fn token_summaries(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<TokenSummary>, Error>;
    /// The discrepancies of `scope` in `[from, to)`, oldest first, at most `limit`: unattributed
    /// transfers, overpaid and underpaid payments, and payments still unverified at
    /// `unverified_before` (detected before it).
    async fn discrepancies(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        unverified_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Discrepancy>, Error>;
}
