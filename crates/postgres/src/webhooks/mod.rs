//! The webhook store: endpoints (secrets sealed by the domain's `SecretBox`, stored as bytes),
//! deliveries (fanned out from the events outbox by the `events_fan_out` trigger, see
//! `migrations/`), attempts and incidents; the worker's claims and records. Inserting a
//! delivery notifies `stablepay_webhooks` at commit, which wakes the workers.

pub(crate) mod rows;
mod statements;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Integer;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use rows::{AttemptRow, DeliveryRow, EndpointRow, IncidentRow, NewDeliveryRow};
use stablepay_domain::event::Event;
use stablepay_domain::ids::{WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::webhook::model::{Attempt, WebhookDelivery, WebhookEndpoint, WebhookIncident};
use stablepay_domain::webhook::ports::{AttemptRecord, ClaimedDelivery, DeliveryFilter, WebhookStore};
use stablepay_domain::{Error, Resource, Scope};
use statements::RecordAttempt;

use crate::error::db;
use crate::events::EventRow;
use crate::pool::PgStore;
use crate::rows::{after_cursor, page_of};
use crate::schema::{
    events, webhook_attempts as a, webhook_deliveries as d, webhook_endpoints as e, webhook_incidents as i,
};

/// The channel deliveries are announced on.
pub const CHANNEL: &str = "stablepay_webhooks";

async fn notify(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_notify('stablepay_webhooks', '')").execute(conn).await.map(|_| ())
}

impl PgStore {
    /// Latest attempts of `deliveries`, by delivery id.
    async fn latest_attempts(
        conn: &mut AsyncPgConnection,
        deliveries: &[String],
    ) -> Result<std::collections::HashMap<String, Attempt>, Error> {
        let rows: Vec<AttemptRow> = a::table
            .filter(a::delivery_id.eq_any(deliveries))
            .order((a::delivery_id, a::number.desc()))
            .distinct_on(a::delivery_id)
            .select(AttemptRow::as_select())
            .load(conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(|r| Ok((r.delivery_id.clone(), r.into_domain()?))).collect()
    }

    async fn deliveries_with_latest(
        conn: &mut AsyncPgConnection,
        rows: Vec<DeliveryRow>,
    ) -> Result<Vec<WebhookDelivery>, Error> {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut latest = Self::latest_attempts(conn, &ids).await?;
        rows.into_iter()
            .map(|r| {
                let attempt = latest.remove(&r.id);
                r.into_domain(attempt)
            })
            .collect()
    }
}

#[async_trait]
impl WebhookStore for PgStore {
    async fn count_endpoints(&self, scope: &Scope) -> Result<usize, Error> {
        let n: i64 = e::table
            .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(e::mode.eq(scope.mode.as_str()))
            .filter(e::archived_at.is_null())
            .count()
            .get_result(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn insert_endpoint(&self, endpoint: &WebhookEndpoint) -> Result<(), Error> {
        let row = EndpointRow::from_domain(endpoint);
        diesel::insert_into(e::table).values(&row).execute(&mut *self.conn().await?).await.map_err(db)?;
        Ok(())
    }

    async fn get_endpoint(&self, scope: &Scope, id: &WebhookEndpointId) -> Result<WebhookEndpoint, Error> {
        let row: Option<EndpointRow> = e::table
            .filter(e::id.eq(id.as_str()))
            .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(e::archived_at.is_null())
            .select(EndpointRow::as_select())
            .first(&mut *self.conn().await?)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::WebhookEndpoint))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.into_domain()
    }

    async fn list_endpoints(&self, scope: &Scope, page: &PageRequest) -> Result<Page<WebhookEndpoint>, Error> {
        let mut conn = self.conn().await?;
        let mut query = e::table
            .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(e::mode.eq(scope.mode.as_str()))
            .filter(e::archived_at.is_null())
            .select(EndpointRow::as_select())
            .order(e::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        after_cursor!(&mut conn, query, page, e::seq, |cursor| [
            e::id.eq(cursor),
            e::merchant_id.eq(scope.merchant_id.as_str()),
            e::mode.eq(scope.mode.as_str()),
            e::archived_at.is_null()
        ]);
        let rows: Vec<EndpointRow> = query.load(&mut conn).await.map_err(db)?;
        page_of(rows, page, EndpointRow::into_domain)
    }

    async fn update_endpoint(&self, endpoint: &WebhookEndpoint, expected_lock_version: i64) -> Result<bool, Error> {
        let row = EndpointRow::from_domain(endpoint);
        let updated = diesel::update(
            e::table
                .filter(e::id.eq(&row.id))
                .filter(e::merchant_id.eq(&row.merchant_id))
                .filter(e::mode.eq(&row.mode))
                .filter(e::archived_at.is_null())
                .filter(e::lock_version.eq(expected_lock_version)),
        )
        .set((
            e::url.eq(&row.url),
            e::description.eq(&row.description),
            e::event_types.eq(&row.event_types),
            e::state.eq(&row.state),
            e::alert_on_incident_opened.eq(row.alert_on_incident_opened),
            e::alert_on_incident_resolved.eq(row.alert_on_incident_resolved),
            e::secret.eq(&row.secret),
            e::previous_secret.eq(&row.previous_secret),
            e::previous_secret_until.eq(row.previous_secret_until),
            e::updated_at.eq(row.updated_at),
            e::lock_version.eq(row.lock_version),
        ))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(db)?;
        Ok(updated == 1)
    }

    async fn archive_endpoint(&self, scope: &Scope, id: &WebhookEndpointId, now: DateTime<Utc>) -> Result<(), Error> {
        self.get_endpoint(scope, id).await?;
        diesel::update(
            e::table
                .filter(e::id.eq(id.as_str()))
                .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
                .filter(e::mode.eq(scope.mode.as_str())),
        )
        .set((e::archived_at.eq(now), e::updated_at.eq(now), e::lock_version.eq(e::lock_version + 1)))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn insert_delivery(&self, delivery: &WebhookDelivery) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let inserted = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // The delivery is kept in its event's month.
                let stored: Option<DateTime<Utc>> = events::table
                    .filter(events::id.eq(delivery.event_id.as_str()))
                    .filter(events::merchant_id.eq(delivery.scope.merchant_id.as_str()))
                    .select(events::stored_at)
                    .first(conn)
                    .await
                    .optional()?;
                let Some(stored) = stored else { return Ok(false) };
                let row = NewDeliveryRow::from_domain(delivery, stored);
                diesel::insert_into(d::table).values(&row).execute(conn).await?;
                notify(conn).await.map(|()| true)
            })
            .await
            .map_err(db)?;
        if inserted { Ok(()) } else { Err(Error::NotFound(Resource::Event)) }
    }

    async fn insert_test_event(&self, event: &Event, deliveries: &[WebhookDelivery]) -> Result<(), Error> {
        let event_rows = crate::events::rows(std::slice::from_ref(event));
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let stored: DateTime<Utc> = diesel::insert_into(events::table)
                .values((&event_rows[0], events::test.eq(true)))
                .returning(events::stored_at)
                .get_result(conn)
                .await?;
            let rows: Vec<NewDeliveryRow> = deliveries.iter().map(|d| NewDeliveryRow::from_domain(d, stored)).collect();
            if !rows.is_empty() {
                diesel::insert_into(d::table).values(&rows).execute(conn).await?;
                notify(conn).await?;
            }
            Ok(())
        })
        .await
        .map_err(db)
    }

    async fn list_deliveries(
        &self,
        scope: &Scope,
        filter: &DeliveryFilter,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, Error> {
        let mut conn = self.conn().await?;
        let mut query = d::table
            .filter(d::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(d::mode.eq(scope.mode.as_str()))
            .select(DeliveryRow::as_select())
            .order(d::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(endpoint) = &filter.endpoint {
            query = query.filter(d::endpoint_id.eq(endpoint.as_str().to_owned()));
        }
        if let Some(event) = &filter.event {
            query = query.filter(d::event_id.eq(event.as_str().to_owned()));
        }
        if let Some(t) = filter.event_type {
            query = query.filter(d::event_type.eq(t.as_str()));
        }
        if let Some(status) = filter.status {
            query = query.filter(d::status.eq(status.as_str()));
        }
        after_cursor!(&mut conn, query, page, d::seq, |cursor| [
            d::id.eq(cursor),
            d::merchant_id.eq(scope.merchant_id.as_str()),
            d::mode.eq(scope.mode.as_str())
        ]);
        let mut rows: Vec<DeliveryRow> = query.load(&mut conn).await.map_err(db)?;
        let limit = usize::try_from(page.limit).unwrap_or(100);
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let items = Self::deliveries_with_latest(&mut conn, rows).await?;
        Ok(Page { items, has_more })
    }

    async fn get_delivery(
        &self,
        scope: &Scope,
        id: &WebhookDeliveryId,
    ) -> Result<(WebhookDelivery, Vec<Attempt>), Error> {
        let mut conn = self.conn().await?;
        let row: Option<DeliveryRow> = d::table
            .filter(d::id.eq(id.as_str()))
            .filter(d::merchant_id.eq(scope.merchant_id.as_str()))
            .select(DeliveryRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::WebhookDelivery))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        let attempts: Vec<AttemptRow> = a::table
            .filter(a::delivery_id.eq(id.as_str()))
            .order(a::number.asc())
            .select(AttemptRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        let attempts = attempts.into_iter().map(AttemptRow::into_domain).collect::<Result<Vec<_>, _>>()?;
        let delivery = row.into_domain(attempts.last().cloned())?;
        Ok((delivery, attempts))
    }

    async fn list_incidents(
        &self,
        scope: &Scope,
        endpoint: &WebhookEndpointId,
        page: &PageRequest,
    ) -> Result<Page<WebhookIncident>, Error> {
        let mut conn = self.conn().await?;
        let mut query = i::table
            .filter(i::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(i::mode.eq(scope.mode.as_str()))
            .filter(i::endpoint_id.eq(endpoint.as_str().to_owned()))
            .select(IncidentRow::as_select())
            .order(i::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        after_cursor!(&mut conn, query, page, i::seq, |cursor| [
            i::id.eq(cursor),
            i::merchant_id.eq(scope.merchant_id.as_str()),
            i::endpoint_id.eq(endpoint.as_str())
        ]);
        let rows: Vec<IncidentRow> = query.load(&mut conn).await.map_err(db)?;
        page_of(rows, page, IncidentRow::into_domain)
    }

    async fn get_incident(&self, scope: &Scope, id: &WebhookIncidentId) -> Result<WebhookIncident, Error> {
        let row: Option<IncidentRow> = i::table
            .filter(i::id.eq(id.as_str()))
            .filter(i::merchant_id.eq(scope.merchant_id.as_str()))
            .select(IncidentRow::as_select())
            .first(&mut *self.conn().await?)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::WebhookIncident))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.into_domain()
    }

    async fn claim_deliveries(&self, limit: u32, lease_ms: u32) -> Result<Vec<ClaimedDelivery>, Error> {
        let mut conn = self.conn().await?;
        let claimed: Vec<DeliveryRow> = diesel::sql_query(CLAIM)
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .bind::<Integer, _>(i32::try_from(lease_ms).unwrap_or(i32::MAX))
            .load(&mut conn)
            .await
            .map_err(db)?;
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let endpoint_ids: Vec<&str> = claimed.iter().map(|r| r.endpoint_id.as_str()).collect();
        let event_ids: Vec<&str> = claimed.iter().map(|r| r.event_id.as_str()).collect();
        // Archived endpoints are left out: their deliveries fail as endpoint_disabled.
        let endpoints: Vec<EndpointRow> = e::table
            .filter(e::id.eq_any(&endpoint_ids))
            .filter(e::archived_at.is_null())
            .select(EndpointRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        let found: Vec<EventRow> = events::table
            .filter(events::id.eq_any(&event_ids))
            .select(EventRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        let endpoints: std::collections::HashMap<String, WebhookEndpoint> =
            endpoints.into_iter().map(|r| Ok((r.id.clone(), r.into_domain()?))).collect::<Result<_, Error>>()?;
        let found: std::collections::HashMap<String, Event> = found
            .into_iter()
            .map(|r| {
                let event = Event::try_from(r)?;
                Ok((event.id.to_string(), event))
            })
            .collect::<Result<_, Error>>()?;
        claimed
            .into_iter()
            .map(|row| {
                let event = found
                    .get(&row.event_id)
                    .cloned()
                    .ok_or_else(|| Error::Internal("delivery without event".into()))?;
                let endpoint = endpoints.get(&row.endpoint_id).cloned();
                let claim = row.claim.clone().unwrap_or_default();
                Ok(ClaimedDelivery { delivery: row.into_domain(None)?, claim, endpoint, event })
            })
            .collect()
    }

    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), Error> {
        if records.is_empty() {
            return Ok(());
        }
        let statements: Vec<RecordAttempt> = records.iter().map(RecordAttempt::of).collect::<Result<_, _>>()?;
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let c: &AsyncPgConnection = conn;
            let writes = statements.iter().map(|s| s.execute(&mut &*c));
            futures_util::future::try_join_all(writes).await?;
            Ok(())
        })
        .await
        .map_err(db)
    }
}

/// Due deliveries, and deliveries whose worker's lease ran out (the same attempt again).
const CLAIM: &str = r#"
WITH due AS (
    (SELECT id FROM webhook_deliveries
     WHERE status IN ('pending', 'retry_scheduled') AND next_attempt_at <= now()
     ORDER BY next_attempt_at LIMIT $1)
    UNION ALL
    (SELECT id FROM webhook_deliveries
     WHERE status = 'delivering' AND lease_until < now()
     ORDER BY lease_until LIMIT $1)
), locked AS (
    SELECT w.id FROM webhook_deliveries w JOIN due ON due.id = w.id
    WHERE (w.status IN ('pending', 'retry_scheduled') AND w.next_attempt_at <= now())
       OR (w.status = 'delivering' AND w.lease_until < now())
    LIMIT $1
    FOR UPDATE OF w SKIP LOCKED
)
UPDATE webhook_deliveries w SET
    attempt_count = CASE WHEN w.status = 'delivering' THEN w.attempt_count ELSE w.attempt_count + 1 END,
    status = 'delivering',
    claim = gen_random_uuid()::text,
    lease_until = now() + make_interval(secs => $2 / 1000.0),
    updated_at = now()
FROM locked WHERE w.id = locked.id
RETURNING w.id, w.merchant_id, w.mode, w.endpoint_id, w.event_id, w.event_type, w.status, w.attempt_count,
    w.next_attempt_at, w.claim, w.test, w.replay_of, w.created_at, w.updated_at, w.delivered_at
"#;

/// Wakes `wake` whenever deliveries are inserted (the `stablepay_webhooks` notification),
/// from a connection of its own that is opened again after a loss (waking once then, since
/// notifications may have been missed); `listening` says whether it is up. Runs until `wake`
/// has no other owner.
pub fn listen_for_deliveries(
    database_url: String,
    wake: std::sync::Arc<tokio::sync::Notify>,
    listening: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    use std::sync::atomic::Ordering;
    struct Deliveries(std::sync::Arc<tokio::sync::Notify>, std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl crate::listen::Listener for Deliveries {
        fn wanted(&self) -> bool {
            std::sync::Arc::strong_count(&self.0) > 1
        }
        fn listening(&self) {
            self.1.store(true, Ordering::Relaxed);
            self.0.notify_one();
        }
        fn notified(&self, _: &str) {
            self.0.notify_one();
        }
        fn lost(&self) {
            self.1.store(false, Ordering::Relaxed);
        }
    }
    let channel = crate::listen::Channel { name: CHANNEL, what: "webhook notification", meanwhile: "polling" };
    crate::listen::listen(database_url, channel, Deliveries(wake, listening))
}
