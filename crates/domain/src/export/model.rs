//! An export: what a merchant asked to have written out as a CSV file (a type of record, a
//! versioned schema of columns, a time range and the filters of the type's list), and where its
//! file stands (`status`).

use chrono::{DateTime, Duration, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::event::model::EventType;
use crate::ids::{ExportId, PaymentLinkId, ReconciliationRunId, WebhookEndpointId};
use crate::invoice::collection::CollectionState;
use crate::invoice::payment::PaymentStatus;
use crate::merchant::model::Token;
use crate::mode::Scope;
use crate::payment_link::model::{AmountType, Usage};
use crate::reconciliation::run::RunOutcome;
use crate::webhook::model::DeliveryStatus;

/// The longest range an export covers, in days.
pub const MAX_EXPORT_RANGE_DAYS: i64 = 366;
/// The most rows `POST /v1/exports/sync` answers directly.
pub const MAX_SYNC_ROWS: u64 = 10_000;
/// How long a ready file is kept by default, in days (on the merchant's clock): the default of
/// `STABLEPAY_RETENTION_EXPORT_FILES_DAYS` ([`crate::retention::RetentionSettings::export_files_days`]).
#[allow(clippy::as_conversions)] // u32 to i64 is lossless; `From` is not const.
pub const EXPORT_RETENTION_DAYS: i64 = crate::retention::model::DEFAULT_EXPORT_FILES_DAYS as i64;

/// What an export holds, one row per record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExportType {
    /// One row per invoice created in the range.
    Invoices,
    /// One row per line of the itemized invoices created in the range.
    InvoiceLines,
    /// One row per payment record detected in the range.
    Payments,
    /// One row per payment link created in the range.
    PaymentLinks,
    /// One row per refund reference recorded in the range.
    RefundReferences,
    /// One row per unattributed transfer detected in the range.
    UnattributedTransfers,
    /// One row per webhook delivery created in the range.
    WebhookDeliveries,
    /// One row per item of a reconciliation run (`filters.runId`) whose block time is in the
    /// range, and each of its credited payments the chain did not show.
    Reconciliation,
}

impl ExportType {
    /// Every type, in the order the documentation lists them.
    pub const ALL: [ExportType; 8] = [
        ExportType::Invoices,
        ExportType::InvoiceLines,
        ExportType::Payments,
        ExportType::PaymentLinks,
        ExportType::RefundReferences,
        ExportType::WebhookDeliveries,
        ExportType::UnattributedTransfers,
        ExportType::Reconciliation,
    ];

    /// The API's name (`invoices`, `payments` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ExportType::Invoices => "invoices",
            ExportType::InvoiceLines => "invoice_lines",
            ExportType::Payments => "payments",
            ExportType::PaymentLinks => "payment_links",
            ExportType::RefundReferences => "refund_references",
            ExportType::WebhookDeliveries => "webhook_deliveries",
            ExportType::UnattributedTransfers => "unattributed_transfers",
            ExportType::Reconciliation => "reconciliation",
        }
    }

    /// The type named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The schemas of this type, oldest first: a published schema never changes.
    pub fn schemas(self) -> &'static [&'static str] {
        match self {
            ExportType::Invoices => &["invoices.v1"],
            ExportType::InvoiceLines => &["invoice_lines.v1"],
            ExportType::Payments => &["payments.v1"],
            ExportType::PaymentLinks => &["payment_links.v1"],
            ExportType::RefundReferences => &["refund_references.v1"],
            ExportType::WebhookDeliveries => &["webhook_deliveries.v1"],
            ExportType::UnattributedTransfers => &["unattributed_transfers.v1"],
            ExportType::Reconciliation => &["reconciliation.v1"],
        }
    }

    /// The newest schema (what an export gets when it names none).
    pub fn newest_schema(self) -> &'static str {
        self.schemas().last().copied().unwrap_or("")
    }

    /// The filters this type takes (their JSON paths).
    pub fn filters(self) -> &'static [&'static str] {
        match self {
            ExportType::Invoices | ExportType::InvoiceLines => &["filters.collectionState", "filters.paymentLink"],
            ExportType::Payments => &["filters.status"],
            ExportType::PaymentLinks => &["filters.amountType", "filters.usage", "filters.token"],
            ExportType::WebhookDeliveries => &["filters.endpointId", "filters.eventType", "filters.status"],
            ExportType::RefundReferences | ExportType::UnattributedTransfers => &[],
            ExportType::Reconciliation => &["filters.runId", "filters.outcome"],
        }
    }
}

/// Where an export's file stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExportStatus {
    /// Waiting for a worker.
    Queued,
    /// A worker is writing it.
    Running,
    /// Its file can be downloaded until `expiresAt`.
    Ready,
    /// It could not be written (`failureMessage` says why).
    Failed,
    /// Cancelled before it was ready.
    Cancelled,
    /// Its file was deleted after `expiresAt`.
    Expired,
}

impl ExportStatus {
    /// Every status.
    pub const ALL: [ExportStatus; 6] = [
        ExportStatus::Queued,
        ExportStatus::Running,
        ExportStatus::Ready,
        ExportStatus::Failed,
        ExportStatus::Cancelled,
        ExportStatus::Expired,
    ];

    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportStatus::Queued => "queued",
            ExportStatus::Running => "running",
            ExportStatus::Ready => "ready",
            ExportStatus::Failed => "failed",
            ExportStatus::Cancelled => "cancelled",
            ExportStatus::Expired => "expired",
        }
    }

    /// The status named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether it can still be cancelled (queued or running).
    pub fn is_open(self) -> bool {
        matches!(self, ExportStatus::Queued | ExportStatus::Running)
    }
}

/// The filters of an export: the names and values of its type's list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportFilters {
    /// `invoices`: only invoices in this collection state (as `GET /v1/invoices`).
    pub collection_state: Option<CollectionState>,
    /// `invoices`: only invoices created through this payment link.
    pub payment_link: Option<PaymentLinkId>,
    /// `payments`: only payments with this status.
    pub payment_status: Option<PaymentStatus>,
    /// `reconciliation`: the run whose items are exported (required).
    pub run: Option<ReconciliationRunId>,
    /// `reconciliation`: only items with this outcome.
    pub outcome: Option<RunOutcome>,
    /// `payment_links`: only links of this amount type (as `GET /v1/payment-links`).
    pub amount_type: Option<AmountType>,
    /// `payment_links`: only links of this usage.
    pub usage: Option<Usage>,
    /// `payment_links`: only links in this token.
    pub token: Option<Token>,
    /// `webhook_deliveries`: only deliveries to this endpoint (as `GET /v1/webhook-deliveries`).
    pub endpoint: Option<WebhookEndpointId>,
    /// `webhook_deliveries`: only deliveries of events of this type.
    pub event_type: Option<EventType>,
    /// `webhook_deliveries`: only deliveries in this state.
    pub delivery_status: Option<DeliveryStatus>,
}

impl ExportFilters {
    /// The JSON paths of the filters set.
    fn set(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |on: bool, name| {
            if on {
                out.push(name);
            }
        };
        add(self.collection_state.is_some(), "filters.collectionState");
        add(self.payment_link.is_some(), "filters.paymentLink");
        add(self.payment_status.is_some(), "filters.status");
        add(self.run.is_some(), "filters.runId");
        add(self.outcome.is_some(), "filters.outcome");
        add(self.amount_type.is_some(), "filters.amountType");
        add(self.usage.is_some(), "filters.usage");
        add(self.token.is_some(), "filters.token");
        add(self.endpoint.is_some(), "filters.endpointId");
        add(self.event_type.is_some(), "filters.eventType");
        add(self.delivery_status.is_some(), "filters.status");
        out
    }
}

/// What an export covers: its records' type, schema, range (`from` included, `to` excluded)
/// and filters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSpec {
    /// The record type.
    pub export_type: ExportType,
    /// The schema of its columns (`invoices.v1`).
    pub schema: String,
    /// The range's start (included): invoices by creation, payments by detection.
    pub from: DateTime<Utc>,
    /// The range's end (excluded).
    pub to: DateTime<Utc>,
    /// The filters.
    pub filters: ExportFilters,
}

impl ExportSpec {
    /// Checks a request: `from` before `to` (VALIDATION_ERROR on `to`), at most
    /// [`MAX_EXPORT_RANGE_DAYS`] apart (EXPORT_RANGE_TOO_LARGE), a schema of the type
    /// (EXPORT_SCHEMA_UNSUPPORTED; the newest when `None`), and filters of the type
    /// (VALIDATION_ERROR naming the filter).
    pub fn new(
        export_type: ExportType,
        schema: Option<&str>,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
        filters: ExportFilters,
    ) -> Result<Self, Error> {
        let schema = match schema {
            None => export_type.newest_schema().to_owned(),
            Some(s) if export_type.schemas().contains(&s) => s.to_owned(),
            Some(s) => {
                return Err(Error::ExportSchemaUnsupported {
                    message: format!(
                        "{s} is not a schema of {} exports; supported: {}.",
                        export_type.as_str(),
                        export_type.schemas().join(", ")
                    ),
                });
            }
        };
        check_range(from, to)?;
        if let Some(field) = filters.set().into_iter().find(|f| !export_type.filters().contains(f)) {
            return Err(Error::validation(field, format!("is not a filter of {} exports", export_type.as_str())));
        }
        if export_type == ExportType::Reconciliation && filters.run.is_none() {
            return Err(Error::validation("filters.runId", "a reconciliation export names its run"));
        }
        Ok(Self { export_type, schema, from, to, filters })
    }
}

impl ExportSpec {
    /// The file's name: `<type>-<from>-<to>.csv` (dates as `YYYYMMDD`, times kept when the
    /// bounds are not midnight).
    pub fn file_name(&self) -> String {
        let day = |at: DateTime<Utc>| {
            if at.time() == chrono::NaiveTime::MIN {
                at.format("%Y%m%d").to_string()
            } else {
                at.format("%Y%m%dT%H%M%SZ").to_string()
            }
        };
        format!("{}-{}-{}.csv", self.export_type.as_str(), day(self.from), day(self.to))
    }
}

/// `from` before `to`, at most [`MAX_EXPORT_RANGE_DAYS`] apart.
pub fn check_range(from: DateTime<Utc>, to: DateTime<Utc>) -> Result<(), Error> {
    if from >= to {
        return Err(Error::validation("to", "to must be after from"));
    }
    if to - from > Duration::days(MAX_EXPORT_RANGE_DAYS) {
        return Err(Error::ExportRangeTooLarge);
    }
    Ok(())
}

/// An export and where its file stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// `exp_...`.
    pub id: ExportId,
    /// Whose records, in which mode.
    pub scope: Scope,
    /// What it covers.
    pub spec: ExportSpec,
    /// Where its file stands.
    pub status: ExportStatus,
    /// Rows written (set when ready).
    pub row_count: Option<u64>,
    /// The file's size in bytes (set when ready).
    pub byte_size: Option<u64>,
    /// Why it failed.
    pub failure_message: Option<String>,
    /// When it was asked for (the scope's time).
    pub created_at: DateTime<Utc>,
    /// When its file was ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// When its file is deleted ([`EXPORT_RETENTION_DAYS`] after it was ready).
    pub expires_at: Option<DateTime<Utc>>,
}

impl Export {
    /// A new queued export of `spec` in `scope`, asked for at `now` (the scope's time).
    pub fn queued(crypto: &dyn Crypto, scope: &Scope, spec: ExportSpec, now: DateTime<Utc>) -> Self {
        Self {
            id: ExportId::generate(crypto),
            scope: scope.clone(),
            spec,
            status: ExportStatus::Queued,
            row_count: None,
            byte_size: None,
            failure_message: None,
            created_at: now,
            ready_at: None,
            expires_at: None,
        }
    }

    /// The file's name: see [`ExportSpec::file_name`].
    pub fn file_name(&self) -> String {
        self.spec.file_name()
    }

    /// Whether its file is past `expiresAt` at `now`.
    pub fn is_past_expiry(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A written export's file, as it is marked ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinishedFile {
    /// How many records it holds.
    pub rows: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was ready (the scope's time).
    pub ready_at: DateTime<Utc>,
    /// When it is deleted.
    pub expires_at: DateTime<Utc>,
}

/// The filters of a list of exports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportListFilter {
    /// Only exports with this status.
    pub status: Option<ExportStatus>,
    /// Only exports of this type.
    pub export_type: Option<ExportType>,
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_range_is_at_most_366_days_and_a_schema_is_of_its_type() {
        let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let spec = |to, schema, filters| ExportSpec::new(ExportType::Invoices, schema, (from, to), filters);
        let ok = spec(from + Duration::days(366), None, ExportFilters::default()).unwrap();
        assert_eq!(ok.schema, "invoices.v1");
        assert_eq!(
            spec(from + Duration::days(366) + Duration::seconds(1), None, ExportFilters::default()),
            Err(Error::ExportRangeTooLarge)
        );
        assert!(
            matches!(spec(from, None, ExportFilters::default()), Err(Error::Validation { ref field, .. }) if field == "to")
        );
        assert!(matches!(
            spec(from + Duration::days(1), Some("payments.v1"), ExportFilters::default()),
            Err(Error::ExportSchemaUnsupported { .. })
        ));
        let foreign = ExportFilters { payment_status: Some(PaymentStatus::Confirmed), ..Default::default() };
        assert!(
            matches!(spec(from + Duration::days(1), None, foreign), Err(Error::Validation { ref field, .. }) if field == "filters.status")
        );
        let run =
            |filters| ExportSpec::new(ExportType::Reconciliation, None, (from, from + Duration::days(1)), filters);
        assert!(
            matches!(run(ExportFilters::default()), Err(Error::Validation { ref field, .. }) if field == "filters.runId")
        );
        let named =
            ExportFilters { run: Some(ReconciliationRunId::from_trusted("rcr_1".into())), ..Default::default() };
        assert_eq!(run(named).unwrap().schema, "reconciliation.v1");
        let lines = ExportFilters { collection_state: Some(CollectionState::Paid), ..Default::default() };
        assert!(ExportSpec::new(ExportType::InvoiceLines, None, (from, from + Duration::days(1)), lines).is_ok());
    }

    #[test]
    fn a_file_is_named_by_its_type_and_range() {
        let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let spec =
            ExportSpec::new(ExportType::Payments, None, (from, from + Duration::days(31)), ExportFilters::default())
                .unwrap();
        let mut e = Export {
            id: ExportId::from_trusted("exp_1".into()),
            scope: Scope::new(crate::ids::MerchantId::from_trusted("mer_1".into()), crate::Mode::Test),
            spec,
            status: ExportStatus::Ready,
            row_count: None,
            byte_size: None,
            failure_message: None,
            created_at: from,
            ready_at: None,
            expires_at: None,
        };
        assert_eq!(e.file_name(), "payments-20260101-20260201.csv");
        e.spec.to = from + Duration::minutes(90);
        assert_eq!(e.file_name(), "payments-20260101-20260101T013000Z.csv");
    }
}
