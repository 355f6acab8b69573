//! The export store: export records, their files (bytes kept in chunks, so a file is written
//! and read a piece at a time), and the records an export reads.

use async_trait::async_trait;

use crate::error::Error;
use crate::export::model::{Export, ExportListFilter, ExportSpec, FinishedFile};
use crate::export::schema::ExportRecord;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::ExportId;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};

/// Where a page of records ends: pass it back to read the next page (opaque to callers).
pub type RecordCursor = String;

/// Which page of an export's records to read: the ones after `after` (from the first when
/// `None`), at most `limit`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordPage {
    /// The cursor of the previous page's last record.
    pub after: Option<RecordCursor>,
    /// How many records at the most.
    pub limit: u32,
}

/// A page of records, with the cursor of its last one (`None` when it is empty).
pub type Records = (Vec<ExportRecord>, Option<RecordCursor>);

/// Exports, their files and their records.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ExportStore: Send + Sync {
    /// Inserts a queued export (and marks `claim` committed in the same transaction). Errors:
    /// `IdempotencyClaimLost`.
    async fn insert_export(&self, export: &Export, claim: Option<IdempotencyClaim>) -> Result<(), Error>;
    /// Errors: `NotFound(Export)` for an unknown or foreign id; `ModeMismatch` for one of the
    /// other mode.
    async fn get_export(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error>;
    /// Exports of `scope`, newest first. Errors: `InvalidCursor`.
    async fn list_exports(
        &self,
        scope: &Scope,
        filter: &ExportListFilter,
        page: &PageRequest,
    ) -> Result<Page<Export>, Error>;
    /// Cancels the export if it is queued or running (its chunks are deleted); answers the
    /// export as it stands after. Errors: as [`ExportStore::get_export`].
    async fn cancel_export(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error>;
    /// Claims the oldest queued export, or a running one whose lease ran out (a worker that
    /// died): marks it running for `lease_seconds`, deletes any chunk a dead worker wrote, and
    /// answers it. Several workers never hold one export at once.
    async fn claim_export(&self, lease_seconds: u32) -> Result<Option<Export>, Error>;
    /// Appends chunk `seq` of a running export's file and extends its lease; answers `false`
    /// (writing nothing) when the export is no longer running (cancelled meanwhile).
    async fn append_chunk(&self, id: &ExportId, seq: u32, bytes: &[u8], lease_seconds: u32) -> Result<bool, Error>;
    /// Marks a running export ready with its counts and times; answers `false` when it is no
    /// longer running.
    async fn finish_export(&self, id: &ExportId, file: &FinishedFile) -> Result<bool, Error>;
    /// Marks a running export failed with `message` (its chunks deleted).
    async fn fail_export(&self, id: &ExportId, message: &str) -> Result<(), Error>;
    /// Chunk `seq` of a ready export's file, or `None` past the last one.
    async fn read_chunk(&self, scope: &Scope, id: &ExportId, seq: u32) -> Result<Option<Vec<u8>>, Error>;
    /// Marks ready exports whose `expires_at` passed on their scope's clock expired and deletes
    /// their chunks (at most `limit`); answers how many.
    async fn expire_exports(&self, limit: u32) -> Result<usize, Error>;
    /// Marks one ready export expired now and deletes its chunks (its expiry passed on the
    /// scope's clock). Errors: as [`ExportStore::get_export`].
    async fn expire_export(&self, scope: &Scope, id: &ExportId) -> Result<(), Error>;
    /// The records of `spec` in `scope` on `page`, in the export's stable order (creation or
    /// detection, then id; a run's items by line), with the cursor of the last one. `invoice_lines` reads the itemized invoices created in the range;
    /// `refund_references` the invoices holding a refund recorded in the range.
    async fn records(&self, scope: &Scope, spec: &ExportSpec, page: RecordPage) -> Result<Records, Error>;
    /// How many rows `spec`'s file holds in `scope` (lines, refunds, items: one per row).
    /// Errors: `NotFound(ReconciliationRun)` when a reconciliation export names a run that is
    /// not of `scope`.
    async fn count_records(&self, scope: &Scope, spec: &ExportSpec) -> Result<u64, Error>;
}

/// How the worker paces the writing of a file: asked before each page after the first, with how
/// long the previous page took to read and write. It may wait before it answers (leaving the
/// machine to the API a while), and answers `false` when the worker is stopping: the export is
/// then left running, and taken up again after its lease.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ExportPace: Send + Sync {
    /// Whether to go on with the next page, after a page that took `busy`.
    async fn next_page(&self, busy: std::time::Duration) -> bool;
}
