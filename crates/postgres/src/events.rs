//! The outbox: event rows, written in the caller's transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Map, Value};
use stablepay_domain::event::{Event, EventData, EventType};
use stablepay_domain::ids::{EventId, MerchantId};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::ports::EventStore;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::error::db;
use crate::pool::PgStore;
use crate::rows::after_cursor;
use crate::schema::events;

/// Storage encoding of the domain's event data.
pub(crate) fn encode(data: &EventData) -> Value {
    match data {
        EventData::Null => Value::Null,
        EventData::Bool(b) => Value::Bool(*b),
        EventData::Int(i) => Value::from(*i),
        EventData::String(s) => Value::String(s.clone()),
        EventData::List(items) => Value::Array(items.iter().map(encode).collect()),
        EventData::Map(pairs) => {
            Value::Object(pairs.iter().map(|(k, v)| (k.clone(), encode(v))).collect::<Map<_, _>>())
        }
    }
}

pub(crate) fn decode(value: &Value) -> EventData {
    match value {
        Value::Null => EventData::Null,
        Value::Bool(b) => EventData::Bool(*b),
        Value::Number(n) => n.as_i64().map_or_else(|| EventData::String(n.to_string()), EventData::Int),
        Value::String(s) => EventData::String(s.clone()),
        Value::Array(items) => EventData::List(items.iter().map(decode).collect()),
        Value::Object(map) => EventData::Map(map.iter().map(|(k, v)| (k.clone(), decode(v))).collect()),
    }
}

#[derive(Insertable)]
#[diesel(table_name = events)]
pub(crate) struct NewEventRow<'a> {
    pub(crate) id: &'a str,
    pub(crate) merchant_id: &'a str,
    pub(crate) mode: &'a str,
    pub(crate) event_type: &'a str,
    pub(crate) data: Value,
    pub(crate) created_at: DateTime<Utc>,
}

/// Outbox rows of `list`, inserted by the caller inside the transaction of its change.
pub(crate) fn rows(list: &[Event]) -> Vec<NewEventRow<'_>> {
    list.iter()
        .map(|e| NewEventRow {
            id: e.id.as_str(),
            merchant_id: e.scope.merchant_id.as_str(),
            mode: e.scope.mode.as_str(),
            event_type: e.event_type.as_str(),
            data: encode(&e.data),
            created_at: e.created_at,
        })
        .collect()
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg))]
pub(crate) struct EventRow {
    id: String,
    merchant_id: String,
    mode: String,
    event_type: String,
    data: Value,
    created_at: DateTime<Utc>,
}

impl TryFrom<EventRow> for Event {
    type Error = Error;

    fn try_from(row: EventRow) -> Result<Self, Error> {
        let corrupt = || Error::Internal(format!("event {} is corrupt", row.id));
        Ok(Event {
            scope: Scope::new(
                MerchantId::from_trusted(row.merchant_id.clone()),
                Mode::parse(&row.mode).ok_or_else(corrupt)?,
            ),
            event_type: EventType::parse(&row.event_type).ok_or_else(corrupt)?,
            data: decode(&row.data),
            id: EventId::from_trusted(row.id),
            created_at: row.created_at,
        })
    }
}

#[async_trait]
impl EventStore for PgStore {
    async fn list_events(
        &self,
        scope: &Scope,
        event_type: Option<EventType>,
        page: &PageRequest,
    ) -> Result<Page<Event>, Error> {
        let mut conn = self.conn().await?;
        // Synthetic test events (POST /v1/webhooks/test) exist for their deliveries only.
        let mut query = events::table
            .filter(events::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(events::mode.eq(scope.mode.as_str()))
            .filter(events::test.eq(false))
            .select(EventRow::as_select())
            .order(events::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(t) = event_type {
            query = query.filter(events::event_type.eq(t.as_str()));
        }
        after_cursor!(&mut conn, query, page, events::seq, |cursor| [
            events::id.eq(cursor),
            events::merchant_id.eq(scope.merchant_id.as_str()),
            events::mode.eq(scope.mode.as_str())
        ]);
        let mut rows: Vec<EventRow> = query.load(&mut conn).await.map_err(db)?;
        let has_more = rows.len() > usize::try_from(page.limit).unwrap_or(usize::MAX);
        rows.truncate(usize::try_from(page.limit).unwrap_or(usize::MAX));
        let items = rows.into_iter().map(Event::try_from).collect::<Result<_, _>>()?;
        Ok(Page { items, has_more })
    }

    async fn get_event(&self, scope: &Scope, id: &EventId) -> Result<Event, Error> {
        let mut conn = self.conn().await?;
        let row: Option<EventRow> = events::table
            .filter(events::id.eq(id.as_str()))
            .filter(events::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(events::test.eq(false))
            .select(EventRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::Event))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.try_into()
    }

    async fn purge_events(&self, days: u32, limit: u32) -> Result<u64, Error> {
        crate::retention::events(&mut *self.conn().await?, days, limit).await
    }

    async fn prepare_months(&self, ahead: u32) -> Result<u32, Error> {
        crate::retention::prepare_months(&mut *self.conn().await?, ahead).await
    }

    async fn drop_months(&self, days: u32) -> Result<u32, Error> {
        crate::retention::drop_months(&mut *self.conn().await?, days).await
    }
}
