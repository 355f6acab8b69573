//! Reconciliation (secret key): what the merchant's books say about a period.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get};
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;

use crate::auth::SecretKey;
use crate::query::QueryParams;
use crate::wire::reconciliation::ReconciliationOut;

/// A period's figures per token (invoiced, collected, overpaid, refunded, outstanding, overdue,
/// unattributed) and its discrepancies.
#[utoipa::path(
    tag = "reconciliation",
    params(
        ("from" = String, Query, description = "RFC 3339; the period's start (included)", example = "2026-11-01T00:00:00Z"),
        ("to" = String, Query, description = "RFC 3339; the period's end (excluded); at most 366 days after from", example = "2026-12-01T00:00:00Z"),
    ),
    responses((status = 200, description = "The period's reconciliation", body = crate::wire::reconciliation::ReconciliationEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/reconciliation")]
pub async fn reconciliation(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["from", "to"])?;
    let bound = |name: &str| {
        crate::wire::fields::date_time(name, &params.get(name).map(str::to_owned))?
            .ok_or_else(|| ApiError::validation(name, format!("{name} is required (RFC 3339).")))
    };
    let (from, to) = (bound("from")?, bound("to")?);
    let r = c.reconciliations().summary(c.scope(), from, to).await?;
    ok(StatusCode::OK, &ReconciliationOut::new(&r, c.scope().mode.as_str()))
}
