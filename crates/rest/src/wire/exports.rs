//! Exports: what `POST /v1/exports` (and `/v1/exports/sync`) takes, and the export object.

use serde::{Deserialize, Serialize};
use stablepay_domain::Error as DomainError;
use stablepay_domain::event::EventType;
use stablepay_domain::export::{Export, ExportFilters, ExportSpec, ExportType};
use stablepay_domain::ids::{PaymentLinkId, ReconciliationRunId, WebhookEndpointId};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::payment::PaymentStatus;
use stablepay_domain::merchant::Token;
use stablepay_domain::payment_link::model::{AmountType, Usage};
use stablepay_domain::reconciliation::RunOutcome;
use stablepay_domain::webhook::model::DeliveryStatus;
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{ListOut, envelope};
use crate::wire::fields;

/// The filters of an export: the names and values of its type's list.
#[derive(Deserialize, Serialize, ToSchema, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportFiltersIo {
    /// `invoices`: as `GET /v1/invoices?collectionState=`.
    pub collection_state: Option<String>,
    /// `invoices`: only invoices created through this payment link (`plink_...`).
    pub payment_link: Option<String>,
    /// `payments`: only payments with this status; `webhook_deliveries`: only deliveries in
    /// this state.
    pub status: Option<String>,
    /// `reconciliation` (required): the run whose items are exported (`rcr_...`).
    pub run_id: Option<String>,
    /// `reconciliation`: only items with this outcome.
    pub outcome: Option<String>,
    /// `payment_links`: `fixed` or `customer_entered`, as `GET /v1/payment-links?amountType=`.
    pub amount_type: Option<String>,
    /// `payment_links`: `single_use` or `reusable`.
    pub usage: Option<String>,
    /// `payment_links`: `USDC` or `USDT`.
    pub token: Option<String>,
    /// `webhook_deliveries`: only deliveries to this endpoint (`we_...`), as
    /// `GET /v1/webhook-deliveries?endpointId=`.
    pub endpoint_id: Option<String>,
    /// `webhook_deliveries`: only deliveries of events of this type.
    pub event_type: Option<String>,
}

/// Reads an optional filter with `parse`; VALIDATION_ERROR `filters.<name>` with `message`.
fn filter<T>(
    value: Option<String>,
    name: &str,
    message: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    value
        .map(|v| {
            parse(&v)
                .ok_or_else(|| ApiError::validation(format!("filters.{name}"), format!("filters.{name} {message}.")))
        })
        .transpose()
}

impl ExportFiltersIo {
    /// The domain's filters of an export of `export_type` (`status` is a payment's or a
    /// delivery's by the type). Errors: VALIDATION_ERROR naming the filter.
    fn into_domain(self, export_type: ExportType) -> Result<ExportFilters, ApiError> {
        let deliveries = export_type == ExportType::WebhookDeliveries;
        let (payment_status, delivery_status) = if deliveries {
            let message = "must be pending, delivering, delivered, retry_scheduled or failed";
            (None, filter(self.status, "status", message, DeliveryStatus::parse)?)
        } else {
            (filter(self.status, "status", "is not a payment status", PaymentStatus::parse)?, None)
        };
        Ok(ExportFilters {
            collection_state: filter(
                self.collection_state,
                "collectionState",
                "is not a collection state",
                CollectionState::parse,
            )?,
            payment_link: filter(self.payment_link, "paymentLink", "must be a payment link id", PaymentLinkId::parse)?,
            payment_status,
            run: filter(self.run_id, "runId", "must be a reconciliation run id", ReconciliationRunId::parse)?,
            outcome: filter(
                self.outcome,
                "outcome",
                "must be matched, onchain_not_credited or credited_not_onchain",
                RunOutcome::parse,
            )?,
            amount_type: filter(
                self.amount_type,
                "amountType",
                "must be fixed or customer_entered",
                AmountType::parse,
            )?,
            usage: filter(self.usage, "usage", "must be single_use or reusable", Usage::parse)?,
            token: filter(self.token, "token", "must be USDC or USDT", Token::parse)?,
            endpoint: filter(
                self.endpoint_id,
                "endpointId",
                "must be a webhook endpoint id",
                WebhookEndpointId::parse,
            )?,
            event_type: filter(self.event_type, "eventType", "is not an event type", EventType::parse)?,
            delivery_status,
        })
    }
}

/// The body of `POST /v1/exports` and `POST /v1/exports/sync`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportIn {
    /// `invoices`, `invoice_lines`, `payments`, `payment_links`, `refund_references`,
    /// `webhook_deliveries`, `unattributed_transfers` or `reconciliation`.
    #[serde(rename = "type")]
    #[schema(example = "invoices")]
    pub export_type: String,
    /// A schema of the type (`invoices.v1`); the newest when omitted.
    pub schema: Option<String>,
    /// RFC 3339; the range's start, included (invoices by creation, payments by detection).
    #[schema(example = "2026-11-01T00:00:00Z")]
    pub from: String,
    /// RFC 3339; the range's end, excluded; at most 366 days after `from`.
    #[schema(example = "2026-12-01T00:00:00Z")]
    pub to: String,
    /// The type's list filters.
    pub filters: Option<ExportFiltersIo>,
}

impl ExportIn {
    /// The domain's export spec. Errors: VALIDATION_ERROR naming the field, and the spec's
    /// own (EXPORT_RANGE_TOO_LARGE, EXPORT_SCHEMA_UNSUPPORTED).
    pub fn into_spec(self) -> Result<ExportSpec, ApiError> {
        let names = ExportType::ALL.map(ExportType::as_str).join(", ");
        let export_type = ExportType::parse(&self.export_type)
            .ok_or_else(|| ApiError::validation("type", format!("type must be one of {names}.")))?;
        let from = fields::date_time("from", &Some(self.from))?
            .ok_or_else(|| ApiError::validation("from", "from is required (RFC 3339)."))?;
        let to = fields::date_time("to", &Some(self.to))?
            .ok_or_else(|| ApiError::validation("to", "to is required (RFC 3339)."))?;
        let filters = self.filters.unwrap_or_default().into_domain(export_type)?;
        ExportSpec::new(export_type, self.schema.as_deref(), (from, to), filters).map_err(|e| match e {
            DomainError::Validation { field, message } if field.starts_with("filters.") => {
                let field = stablepay_http::error::json_path(&field);
                ApiError::validation(field.clone(), format!("{field} {message}."))
            }
            other => other.into(),
        })
    }
}

/// An export of a merchant's records as a CSV file.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportOut {
    /// `exp_...`.
    pub id: String,
    /// Always `export`.
    #[schema(example = "export")]
    pub object: String,
    /// `test` or `live`.
    pub mode: String,
    /// `invoices`, `invoice_lines`, `payments`, `payment_links`, `refund_references`,
    /// `webhook_deliveries`, `unattributed_transfers` or `reconciliation`.
    #[serde(rename = "type")]
    pub export_type: String,
    /// The schema of its columns (docs/exports.md).
    pub schema: String,
    pub from: String,
    pub to: String,
    pub filters: ExportFiltersIo,
    /// `queued`, `running`, `ready`, `failed`, `cancelled` or `expired`.
    pub status: String,
    /// Rows of the file (header excluded), once ready.
    pub row_count: Option<u64>,
    /// Bytes of the file, once ready.
    pub byte_size: Option<u64>,
    /// Why it failed.
    pub failure_message: Option<String>,
    pub created_at: String,
    pub ready_at: Option<String>,
    /// When the file is deleted (7 days after it was ready by default, the deployment's
    /// `STABLEPAY_RETENTION_EXPORT_FILES_DAYS`; on the merchant's clock).
    pub expires_at: Option<String>,
}

impl From<&Export> for ExportOut {
    fn from(e: &Export) -> Self {
        let f = &e.spec.filters;
        Self {
            id: e.id.to_string(),
            object: "export".into(),
            mode: e.scope.mode.as_str().into(),
            export_type: e.spec.export_type.as_str().into(),
            schema: e.spec.schema.clone(),
            from: timestamp(e.spec.from),
            to: timestamp(e.spec.to),
            filters: ExportFiltersIo {
                collection_state: f.collection_state.map(|s| s.as_str().to_owned()),
                payment_link: f.payment_link.as_ref().map(ToString::to_string),
                status: f
                    .payment_status
                    .map(|s| s.as_str().to_owned())
                    .or_else(|| f.delivery_status.map(|s| s.as_str().to_owned())),
                run_id: f.run.as_ref().map(ToString::to_string),
                outcome: f.outcome.map(|o| o.as_str().to_owned()),
                amount_type: f.amount_type.map(|t| t.as_str().to_owned()),
                usage: f.usage.map(|u| u.as_str().to_owned()),
                token: f.token.map(|t| t.symbol().to_owned()),
                endpoint_id: f.endpoint.as_ref().map(ToString::to_string),
                event_type: f.event_type.map(|t| t.as_str().to_owned()),
            },
            status: e.status.as_str().into(),
            row_count: e.row_count,
            byte_size: e.byte_size,
            failure_message: e.failure_message.clone(),
            created_at: timestamp(e.created_at),
            ready_at: e.ready_at.map(timestamp),
            expires_at: e.expires_at.map(timestamp),
        }
    }
}

envelope!(/// An export.
    ExportEnvelope, ExportOut);
envelope!(/// A page of exports.
    ExportListEnvelope, ListOut<ExportOut>);
