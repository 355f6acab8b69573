//! The export use cases: ask for an export, read and list them, cancel one, download its file,
//! answer a small one at once, and (the worker) write the files and delete expired ones.

use chrono::Duration;

use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::Error;
use crate::export::csv::{write_header, write_row};
use crate::export::model::{
    Export, ExportListFilter, ExportSpec, ExportStatus, ExportType, FinishedFile, MAX_SYNC_ROWS,
};
use crate::export::ports::{ExportPace, ExportStore, RecordCursor, RecordPage};
use crate::export::schema;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::ExportId;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};

/// Records read per page while a file is written.
pub const RECORDS_PER_PAGE: u32 = 1000;
/// Bytes gathered before they are stored as one chunk of a file.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// How long a worker holds an export between two chunks, in seconds.
pub const EXPORT_LEASE_SECONDS: u32 = 60;

/// Whether a page of `len` records ending at `last` is the last one (a short page, or none).
fn is_last_page(len: usize, last: &Option<RecordCursor>) -> bool {
    len < usize::try_from(RECORDS_PER_PAGE).unwrap_or(usize::MAX) || last.is_none()
}

/// The export use cases.
pub struct Exports<'a> {
    /// Exports, files and records.
    pub store: &'a dyn ExportStore,
    /// Export ids.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// The idempotency key of the request these use cases serve, marked committed with the
    /// export it creates.
    pub claim: Option<IdempotencyClaim>,
    /// Days a file is kept after it was written (the deployment's retention setting).
    pub file_days: u32,
}

/// What a worker's pass did with one export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportRun {
    /// No export was waiting.
    Idle,
    /// The export's file is ready.
    Ready(ExportId),
    /// The export was cancelled while its file was written.
    Cancelled(ExportId),
    /// The export failed.
    Failed(ExportId),
    /// The worker is stopping: the export is left running, and taken up again after its lease.
    Interrupted(ExportId),
}

impl Exports<'_> {
    /// `POST /v1/exports`: a queued export of `spec` (a worker writes its file).
    /// Errors: `NotFound(ReconciliationRun)` for a reconciliation export of a run that is not
    /// the scope's.
    pub async fn create(&self, scope: &Scope, spec: ExportSpec) -> Result<Export, Error> {
        if spec.export_type == ExportType::Reconciliation {
            self.store.count_records(scope, &spec).await?;
        }
        let export = Export::queued(self.crypto, scope, spec, self.clock.now(scope).await?);
        self.store.insert_export(&export, self.claim.clone()).await?;
        Ok(export)
    }

    /// One export as it stands; a ready one past `expiresAt` on its scope's clock is expired
    /// now (its file deleted). Errors: `NotFound(Export)`, `ModeMismatch`.
    pub async fn get(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        let export = self.store.get_export(scope, id).await?;
        if export.status == ExportStatus::Ready && export.is_past_expiry(self.clock.now(scope).await?) {
            self.store.expire_export(scope, id).await?;
            let mut expired = self.store.get_export(scope, id).await?;
            // The worker's expiry pass may hold the row (deleting its file) while this reads it,
            // so it can still read as ready: past its expiry a file is never served, whoever
            // marks it.
            if expired.status == ExportStatus::Ready {
                expired.status = ExportStatus::Expired;
            }
            return Ok(expired);
        }
        Ok(export)
    }

    /// Exports of `scope`, newest first. Errors: `InvalidCursor`.
    pub async fn list(
        &self,
        scope: &Scope,
        filter: &ExportListFilter,
        page: &PageRequest,
    ) -> Result<Page<Export>, Error> {
        self.store.list_exports(scope, filter, page).await
    }

    /// Cancels a queued or running export (cancelling a cancelled one answers it again).
    /// Errors: `ExportNotCancellable` for a ready, failed or expired export; as [`Exports::get`].
    pub async fn cancel(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        let export = self.get(scope, id).await?;
        match export.status {
            ExportStatus::Queued | ExportStatus::Running => {
                let after = self.store.cancel_export(scope, id).await?;
                match after.status {
                    ExportStatus::Cancelled => Ok(after),
                    other => Err(Error::ExportNotCancellable { status: other.as_str() }),
                }
            }
            ExportStatus::Cancelled => Ok(export),
            other => Err(Error::ExportNotCancellable { status: other.as_str() }),
        }
    }

    /// The export whose file can be downloaded now. Errors: `ExportNotReady` (queued, running
    /// or failed), `ExportCancelled`, `ExportExpired`; as [`Exports::get`].
    pub async fn downloadable(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        let export = self.get(scope, id).await?;
        match export.status {
            ExportStatus::Ready => Ok(export),
            ExportStatus::Cancelled => Err(Error::ExportCancelled),
            ExportStatus::Expired => Err(Error::ExportExpired),
            other => Err(Error::ExportNotReady { status: other.as_str() }),
        }
    }

    /// Chunk `seq` of a downloadable export's file (`None` past the last).
    pub async fn chunk(&self, scope: &Scope, id: &ExportId, seq: u32) -> Result<Option<Vec<u8>>, Error> {
        self.store.read_chunk(scope, id, seq).await
    }

    /// `POST /v1/exports/sync`: the CSV of `spec` at once, when it holds at most
    /// [`MAX_SYNC_ROWS`] rows (decided before any row is written). Errors:
    /// `ExportTooLargeForSync`.
    pub async fn sync(&self, scope: &Scope, spec: &ExportSpec) -> Result<(String, u64), Error> {
        let rows = self.store.count_records(scope, spec).await?;
        if rows > MAX_SYNC_ROWS {
            return Err(Error::ExportTooLargeForSync { rows, limit: MAX_SYNC_ROWS });
        }
        let columns = schema::columns(&spec.schema).ok_or_else(|| Error::Internal("unknown schema".into()))?;
        let mut out = String::new();
        write_header(&mut out, columns);
        let mut after = None;
        let mut written = 0;
        loop {
            let (records, last) =
                self.store.records(scope, spec, RecordPage { after, limit: RECORDS_PER_PAGE }).await?;
            for record in &records {
                for cells in schema::rows(spec, record).ok_or_else(|| Error::Internal("record type".into()))? {
                    write_row(&mut out, &cells);
                    written += 1;
                }
            }
            if is_last_page(records.len(), &last) {
                break;
            }
            after = last;
        }
        Ok((out, written))
    }

    /// The worker: claims one waiting export and writes its file, page by page into chunks
    /// (constant memory), stopping when it is cancelled meanwhile; `pace` is asked before every
    /// page (it may pause the writing to leave the machine to the API). A store failure, or
    /// `pace` answering `false` (the worker is stopping), leaves the export running; after its
    /// lease another worker starts it again.
    pub async fn run_one(&self, pace: &dyn ExportPace) -> Result<ExportRun, Error> {
        let Some(export) = self.store.claim_export(EXPORT_LEASE_SECONDS).await? else {
            return Ok(ExportRun::Idle);
        };
        let id = export.id.clone();
        let Some(columns) = schema::columns(&export.spec.schema) else {
            self.store.fail_export(&id, "the export's schema is not supported by this version").await?;
            return Ok(ExportRun::Failed(id));
        };
        let mut out = String::new();
        write_header(&mut out, columns);
        let (mut after, mut rows, mut bytes, mut seq) = (None, 0u64, 0u64, 0u32);
        let mut busy = std::time::Duration::ZERO;
        loop {
            if !pace.next_page(busy).await {
                return Ok(ExportRun::Interrupted(id));
            }
            let started = std::time::Instant::now();
            let (records, last) =
                self.store.records(&export.scope, &export.spec, RecordPage { after, limit: RECORDS_PER_PAGE }).await?;
            for record in &records {
                let Some(found) = schema::rows(&export.spec, record) else {
                    self.store.fail_export(&id, "a record did not match the export's type").await?;
                    return Ok(ExportRun::Failed(id));
                };
                for cells in found {
                    write_row(&mut out, &cells);
                    rows += 1;
                }
            }
            let done = is_last_page(records.len(), &last);
            if out.len() >= CHUNK_BYTES || done {
                bytes += u64::try_from(out.len()).unwrap_or(u64::MAX);
                if !self.store.append_chunk(&id, seq, out.as_bytes(), EXPORT_LEASE_SECONDS).await? {
                    return Ok(ExportRun::Cancelled(id));
                }
                out.clear();
                seq += 1;
            }
            if done {
                break;
            }
            after = last;
            busy = started.elapsed();
        }
        let ready_at = self.clock.now(&export.scope).await?;
        let expires_at = ready_at + Duration::days(i64::from(self.file_days));
        if self.store.finish_export(&id, &FinishedFile { rows, bytes, ready_at, expires_at }).await? {
            Ok(ExportRun::Ready(id))
        } else {
            Ok(ExportRun::Cancelled(id))
        }
    }

    /// The worker: expires ready exports past `expiresAt` (their files deleted), at most
    /// `limit`; answers how many.
    pub async fn expire_due(&self, limit: u32) -> Result<usize, Error> {
        self.store.expire_exports(limit).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use chrono::{DateTime, TimeZone, Utc};

    use super::*;
    use crate::clock::MockClock;
    use crate::export::model::{ExportFilters, ExportType};
    use crate::export::ports::MockExportStore;
    use crate::export::schema::ExportRecord;
    use crate::ids::MerchantId;
    use crate::testing::SeqCrypto;
    use crate::{Mode, Resource};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()
    }

    /// Goes on (or stops) at once.
    struct Pace(bool);

    #[async_trait::async_trait]
    impl ExportPace for Pace {
        async fn next_page(&self, _: std::time::Duration) -> bool {
            self.0
        }
    }

    fn scope() -> Scope {
        Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Test)
    }

    fn clock() -> MockClock {
        let mut c = MockClock::new();
        c.expect_now().returning(|_| Ok(now()));
        c.expect_system_now().returning(now);
        c
    }

    fn export(status: ExportStatus) -> Export {
        let spec =
            ExportSpec::new(ExportType::Invoices, None, (now() - Duration::days(30), now()), ExportFilters::default())
                .unwrap();
        Export {
            id: ExportId::from_trusted("exp_1".into()),
            scope: scope(),
            spec,
            status,
            row_count: None,
            byte_size: None,
            failure_message: None,
            created_at: now(),
            ready_at: None,
            expires_at: (status == ExportStatus::Ready).then(|| now() + Duration::days(1)),
        }
    }

    fn invoice() -> ExportRecord {
        let input = crate::invoice::input::CheckoutInput {
            amount: Some(crate::money::Decimal6::parse("10").unwrap()),
            ..Default::default()
        };
        let merchant = crate::testing::merchant(crate::merchant::MerchantStatus::Active, now());
        let settings = crate::merchant::ChainSettings::default();
        let change = crate::invoice::service::decide_checkout(
            &SeqCrypto::default(),
            &settings,
            &merchant,
            &scope(),
            input,
            now(),
        )
        .unwrap();
        ExportRecord::Invoice(Box::new(change.aggregate.invoice))
    }

    #[tokio::test]
    async fn a_file_is_downloadable_only_when_ready() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        for (status, expected) in [
            (ExportStatus::Queued, Err(Error::ExportNotReady { status: "queued" })),
            (ExportStatus::Running, Err(Error::ExportNotReady { status: "running" })),
            (ExportStatus::Failed, Err(Error::ExportNotReady { status: "failed" })),
            (ExportStatus::Cancelled, Err(Error::ExportCancelled)),
            (ExportStatus::Expired, Err(Error::ExportExpired)),
            (ExportStatus::Ready, Ok(ExportStatus::Ready)),
        ] {
            let mut store = MockExportStore::new();
            store.expect_get_export().returning(move |_, _| Ok(export(status)));
            let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
            let got = exports.downloadable(&scope(), &ExportId::from_trusted("exp_1".into())).await.map(|e| e.status);
            assert_eq!(got, expected, "{status:?}");
        }
    }

    #[tokio::test]
    async fn a_ready_export_past_its_expiry_is_expired_when_read() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        let expired = Arc::new(Mutex::new(false));
        let flag = expired.clone();
        store.expect_get_export().returning(move |_, _| {
            let mut e = export(ExportStatus::Ready);
            e.expires_at = Some(now() - Duration::seconds(1));
            if *flag.lock().unwrap() {
                e.status = ExportStatus::Expired;
            }
            Ok(e)
        });
        let flag = expired.clone();
        store.expect_expire_export().times(1).returning(move |_, _| {
            *flag.lock().unwrap() = true;
            Ok(())
        });
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        let id = ExportId::from_trusted("exp_1".into());
        assert_eq!(exports.downloadable(&scope(), &id).await.map(|e| e.status), Err(Error::ExportExpired));
    }

    /// The worker's expiry pass holds the row while a download asks: the store's expiry of this
    /// one changes nothing yet and the record still reads ready, but the file is not served.
    #[tokio::test]
    async fn an_export_past_its_expiry_is_never_served_while_the_worker_expires_it() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        store.expect_get_export().times(2).returning(|_, _| {
            let mut e = export(ExportStatus::Ready);
            e.expires_at = Some(now() - Duration::seconds(1));
            Ok(e)
        });
        store.expect_expire_export().times(1).returning(|_, _| Ok(()));
        store.expect_read_chunk().never();
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        let id = ExportId::from_trusted("exp_1".into());
        assert_eq!(exports.downloadable(&scope(), &id).await.map(|e| e.status), Err(Error::ExportExpired));
    }

    #[tokio::test]
    async fn cancelling_a_finished_export_is_refused() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        store.expect_get_export().returning(|_, _| Ok(export(ExportStatus::Failed)));
        store.expect_cancel_export().never();
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        let id = ExportId::from_trusted("exp_1".into());
        assert_eq!(exports.cancel(&scope(), &id).await, Err(Error::ExportNotCancellable { status: "failed" }));
        let mut store = MockExportStore::new();
        store.expect_get_export().returning(|_, _| Err(Error::NotFound(Resource::Export)));
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        assert_eq!(exports.cancel(&scope(), &id).await, Err(Error::NotFound(Resource::Export)));
    }

    #[tokio::test]
    async fn a_sync_export_over_the_limit_reads_no_record() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        store.expect_count_records().returning(|_, _| Ok(MAX_SYNC_ROWS + 1));
        store.expect_records().never();
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        let refused = exports.sync(&scope(), &export(ExportStatus::Queued).spec).await;
        assert_eq!(refused, Err(Error::ExportTooLargeForSync { rows: MAX_SYNC_ROWS + 1, limit: MAX_SYNC_ROWS }));
    }

    #[tokio::test]
    async fn the_worker_writes_the_header_and_every_row_then_marks_it_ready() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        store.expect_claim_export().returning(|_| Ok(Some(export(ExportStatus::Running))));
        let pages = Arc::new(Mutex::new(0));
        let page = pages.clone();
        store.expect_records().returning(move |_, _, asked| {
            let mut n = page.lock().unwrap();
            *n += 1;
            assert_eq!((asked.after.is_some(), asked.limit), (*n > 1, RECORDS_PER_PAGE));
            let full = usize::try_from(RECORDS_PER_PAGE).unwrap();
            let rows = if *n == 1 { full } else { 3 };
            Ok(((0..rows).map(|_| invoice()).collect(), Some(n.to_string())))
        });
        let written = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = written.clone();
        store.expect_append_chunk().returning(move |_, _, bytes, _| {
            sink.lock().unwrap().extend_from_slice(bytes);
            Ok(true)
        });
        let finished = Arc::new(Mutex::new(None));
        let done = finished.clone();
        store.expect_finish_export().returning(move |_, file| {
            *done.lock().unwrap() = Some((file.rows, file.bytes, file.ready_at, file.expires_at));
            Ok(true)
        });
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 3 };
        let run = exports.run_one(&Pace(true)).await.unwrap();
        assert_eq!(run, ExportRun::Ready(ExportId::from_trusted("exp_1".into())));
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
        assert!(lines[0].starts_with("id,invoice_number,kind,"), "{}", lines[0]);
        assert_eq!(lines.len(), 1 + 1003);
        let (rows, bytes, ready, expires) = finished.lock().unwrap().unwrap();
        assert_eq!((rows, usize::try_from(bytes).unwrap()), (1003, text.len()));
        // The deployment's setting (3 days here) decides when the file goes.
        assert_eq!(expires - ready, Duration::days(3));
    }

    #[tokio::test]
    async fn the_worker_stops_when_the_export_is_cancelled_or_it_is_stopping() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut store = MockExportStore::new();
        store.expect_claim_export().returning(|_| Ok(Some(export(ExportStatus::Running))));
        store.expect_records().returning(|_, _, _| Ok((vec![invoice()], None)));
        store.expect_append_chunk().returning(|_, _, _, _| Ok(false));
        store.expect_finish_export().never();
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        let id = ExportId::from_trusted("exp_1".into());
        assert_eq!(exports.run_one(&Pace(true)).await.unwrap(), ExportRun::Cancelled(id.clone()));
        let mut store = MockExportStore::new();
        store.expect_claim_export().returning(|_| Ok(Some(export(ExportStatus::Running))));
        store.expect_records().never();
        let exports = Exports { store: &store, crypto: &crypto, clock: &clock, claim: None, file_days: 7 };
        assert_eq!(exports.run_one(&Pace(false)).await.unwrap(), ExportRun::Interrupted(id));
    }
}
