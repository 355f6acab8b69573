//! Recording a finished attempt: one statement with fixed SQL (prepared once per connection),
//! sent pipelined for a batch of attempts inside one transaction.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Bool, Int4, Jsonb, Nullable, Text, Timestamptz};
use serde_json::Value;
use stablepay_domain::Error;
use stablepay_domain::webhook::model::{ErrorCategory, INCIDENT_AFTER_FAILURES};
use stablepay_domain::webhook::ports::AttemptRecord;

use super::rows::headers_json;

/// One attempt's record: the delivery's new state (only while the worker's claim holds), the
/// attempt, the endpoint's run of failures, and its incident (resolved by a delivered attempt,
/// opened or extended by the run's failures from the threshold on).
pub(crate) struct RecordAttempt {
    delivery_id: String,
    claim: String,
    status: String,
    next_attempt_at: Option<DateTime<Utc>>,
    delivered_at: Option<DateTime<Utc>>,
    number: i32,
    started_at: DateTime<Utc>,
    duration_ms: i32,
    status_code: Option<i32>,
    error_category: Option<String>,
    error_message: Option<String>,
    response_excerpt: Option<String>,
    request_headers: Value,
    delivered: bool,
    /// Whether the failure counts toward the endpoint's run (a disabled endpoint's does not).
    counts: bool,
    threshold: i32,
    incident_id: String,
    now: DateTime<Utc>,
}

impl RecordAttempt {
    pub(crate) fn of(r: &AttemptRecord) -> Result<Self, Error> {
        let (a, sent) = (&r.attempt, &r.attempt.outcome);
        let int = |n: u32| i32::try_from(n).map_err(|_| Error::Internal("attempt number out of range".into()));
        Ok(Self {
            delivery_id: r.delivery_id.to_string(),
            claim: r.claim.clone(),
            status: r.conclusion.status.as_str().to_owned(),
            next_attempt_at: r.conclusion.next_attempt_at,
            delivered_at: r.conclusion.delivered_at,
            number: int(a.number)?,
            started_at: a.started_at,
            duration_ms: int(sent.duration_ms)?,
            status_code: sent.status_code.map(i32::from),
            error_category: sent.error_category.map(|c| c.as_str().to_owned()),
            error_message: sent.error_message.clone(),
            response_excerpt: sent.response_excerpt.clone(),
            request_headers: headers_json(&sent.request_headers),
            delivered: a.delivered(),
            counts: sent.error_category.is_some_and(|c| c != ErrorCategory::EndpointDisabled),
            threshold: int(INCIDENT_AFTER_FAILURES)?,
            incident_id: r.new_incident_id.to_string(),
            now: r.conclusion.delivered_at.unwrap_or(a.started_at),
        })
    }
}

/// The static identity of the statement's shape.
pub(crate) struct RecordAttemptId;

impl QueryId for RecordAttempt {
    type QueryId = RecordAttemptId;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl QueryFragment<Pg> for RecordAttempt {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH d AS (UPDATE webhook_deliveries SET status = ");
        out.push_bind_param::<Text, _>(&self.status)?;
        out.push_sql(", next_attempt_at = ");
        out.push_bind_param::<Nullable<Timestamptz>, _>(&self.next_attempt_at)?;
        out.push_sql(", delivered_at = COALESCE(");
        out.push_bind_param::<Nullable<Timestamptz>, _>(&self.delivered_at)?;
        out.push_sql(", delivered_at), claim = NULL, lease_until = NULL, updated_at = now() WHERE id = ");
        out.push_bind_param::<Text, _>(&self.delivery_id)?;
        out.push_sql(" AND claim = ");
        out.push_bind_param::<Text, _>(&self.claim)?;
        out.push_sql(
            " AND status = 'delivering' RETURNING endpoint_id, merchant_id, mode, event_stored_at), \
             att AS (INSERT INTO webhook_attempts (delivery_id, number, started_at, duration_ms, status_code, \
             error_category, error_message, response_excerpt, request_headers, event_stored_at) SELECT ",
        );
        out.push_bind_param::<Text, _>(&self.delivery_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Int4, _>(&self.number)?;
        out.push_sql(", ");
        out.push_bind_param::<Timestamptz, _>(&self.started_at)?;
        out.push_sql(", ");
        out.push_bind_param::<Int4, _>(&self.duration_ms)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<Int4>, _>(&self.status_code)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<Text>, _>(&self.error_category)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<Text>, _>(&self.error_message)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<Text>, _>(&self.response_excerpt)?;
        out.push_sql(", ");
        out.push_bind_param::<Jsonb, _>(&self.request_headers)?;
        // A delivered attempt writes the endpoint only when it ends a run of failures.
        out.push_sql(
            ", d.event_stored_at FROM d ON CONFLICT (delivery_id, number, event_stored_at) DO NOTHING), \
             ep AS (UPDATE webhook_endpoints w SET consecutive_failures = CASE WHEN ",
        );
        out.push_bind_param::<Bool, _>(&self.delivered)?;
        out.push_sql(" THEN 0 WHEN ");
        out.push_bind_param::<Bool, _>(&self.counts)?;
        out.push_sql(" THEN w.consecutive_failures + 1 ELSE w.consecutive_failures END FROM d WHERE w.id = d.endpoint_id AND (NOT ");
        out.push_bind_param::<Bool, _>(&self.delivered)?;
        out.push_sql(
            " OR w.consecutive_failures <> 0) RETURNING w.id, w.consecutive_failures), \
             resolved AS (UPDATE webhook_incidents inc SET status = 'resolved', resolved_at = ",
        );
        out.push_bind_param::<Timestamptz, _>(&self.now)?;
        out.push_sql(" FROM ep WHERE ");
        out.push_bind_param::<Bool, _>(&self.delivered)?;
        out.push_sql(
            " AND inc.endpoint_id = ep.id AND inc.status = 'open' RETURNING inc.id) \
             INSERT INTO webhook_incidents (id, merchant_id, mode, endpoint_id, status, opened_at, failed_attempts, \
             last_error_category, last_delivery_id) SELECT ",
        );
        out.push_bind_param::<Text, _>(&self.incident_id)?;
        out.push_sql(", d.merchant_id, d.mode, ep.id, 'open', ");
        out.push_bind_param::<Timestamptz, _>(&self.now)?;
        out.push_sql(", ep.consecutive_failures, ");
        out.push_bind_param::<Nullable<Text>, _>(&self.error_category)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&self.delivery_id)?;
        out.push_sql(" FROM d, ep WHERE ");
        out.push_bind_param::<Bool, _>(&self.counts)?;
        out.push_sql(" AND ep.consecutive_failures >= ");
        out.push_bind_param::<Int4, _>(&self.threshold)?;
        out.push_sql(
            " ON CONFLICT (endpoint_id) WHERE status = 'open' DO UPDATE SET failed_attempts = \
             EXCLUDED.failed_attempts, last_error_category = EXCLUDED.last_error_category, \
             last_delivery_id = EXCLUDED.last_delivery_id",
        );
        Ok(())
    }
}
