//! The payment-link store: links, their reservations (read from the reserved invoice as it
//! stands), the invoices created through them, and expiry announcements (with their events).

use std::collections::HashMap;

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use stablepay_domain::event::Event;
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::{InvoiceId, MerchantId, PaymentLinkId, PublicToken};
use stablepay_domain::invoice::aggregate::InvoiceChange;
use stablepay_domain::invoice::model::Metadata;
use stablepay_domain::merchant::Token;
use stablepay_domain::money::Decimal6;
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::{
    AmountRule, Collect, Lifecycle, LinkConfig, LinkInvoice, PaymentLink, Reservation, Usage,
};
use stablepay_domain::payment_link::ports::{LinkQuery, PaymentLinkStore};
use stablepay_domain::url::HttpUrl;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::error::TxError;
use crate::error::db;
use crate::idempotency::mark_committed;
use crate::invoices::write::write_all;
use crate::pool::PgStore;
use crate::rows::{after_cursor, corrupt, mode, page_of};
use crate::schema::{payment_link_invoices as pli, payment_links as l};

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = l, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub(crate) struct LinkRow {
    id: String,
    public_id: String,
    merchant_id: String,
    mode: String,
    title: String,
    description: Option<String>,
    amount_type: String,
    amount: Option<BigDecimal>,
    minimum_amount: Option<BigDecimal>,
    maximum_amount: Option<BigDecimal>,
    currency: String,
    usage_type: String,
    active_at: Option<DateTime<Utc>>,
    expires_at: Option<DateTime<Utc>>,
    collect_email: bool,
    collect_name: bool,
    collect_reference: bool,
    reference_prefix: Option<String>,
    success_url: Option<String>,
    cancel_url: Option<String>,
    success_message: Option<String>,
    metadata: Option<Value>,
    version: i64,
    lifecycle: String,
    reserved_invoice_id: Option<String>,
    expiry_announced: bool,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    lock_version: i64,
}

fn money(d: &Decimal6) -> BigDecimal {
    d.as_bigdecimal().clone()
}

fn amount_of(b: Option<BigDecimal>, what: &str) -> Result<Option<Decimal6>, Error> {
    b.map(|v| crate::codec::numeric(v).map_err(|_| corrupt(what))).transpose()
}

impl LinkRow {
    fn from_domain(link: &PaymentLink) -> Result<Self, Error> {
        let c = &link.config;
        let (amount, minimum, maximum) = match &c.amount {
            AmountRule::Fixed(a) => (Some(money(a)), None, None),
            AmountRule::CustomerEntered { minimum, maximum } => {
                (None, Some(money(minimum)), maximum.as_ref().map(money))
            }
        };
        let metadata = c
            .metadata
            .as_ref()
            .map(|m| serde_json::from_str::<Value>(m.as_str()).map_err(|_| corrupt("link metadata")))
            .transpose()?;
        Ok(Self {
            id: link.id.to_string(),
            public_id: link.public_id.as_str().to_owned(),
            merchant_id: link.scope.merchant_id.to_string(),
            mode: link.scope.mode.as_str().to_owned(),
            title: c.title.clone(),
            description: c.description.clone(),
            amount_type: c.amount.type_str().to_owned(),
            amount,
            minimum_amount: minimum,
            maximum_amount: maximum,
            currency: c.currency.symbol().to_owned(),
            usage_type: c.usage.as_str().to_owned(),
            active_at: c.active_at,
            expires_at: c.expires_at,
            collect_email: c.collect.email,
            collect_name: c.collect.name,
            collect_reference: c.collect.reference,
            reference_prefix: c.reference_prefix.clone(),
            success_url: c.success_url.as_ref().map(ToString::to_string),
            cancel_url: c.cancel_url.as_ref().map(ToString::to_string),
            success_message: c.success_message.clone(),
            metadata,
            version: link.version,
            lifecycle: link.lifecycle.as_str().to_owned(),
            reserved_invoice_id: link.reservation.as_ref().map(|r| r.invoice_id.to_string()),
            expiry_announced: link.expiry_announced,
            created_at: link.created_at,
            updated_at: link.updated_at,
            lock_version: link.lock_version,
        })
    }

    fn into_domain(self, reservation: Option<Reservation>) -> Result<PaymentLink, Error> {
        let url = |u: Option<String>| u.map(|t| HttpUrl::parse(&t).map_err(|_| corrupt("link url"))).transpose();
        let amount = match self.amount_type.as_str() {
            "fixed" => AmountRule::Fixed(amount_of(self.amount, "link amount")?.ok_or_else(|| corrupt("link amount"))?),
            _ => AmountRule::CustomerEntered {
                minimum: amount_of(self.minimum_amount, "link minimum")?.ok_or_else(|| corrupt("link minimum"))?,
                maximum: amount_of(self.maximum_amount, "link maximum")?,
            },
        };
        Ok(PaymentLink {
            id: PaymentLinkId::from_trusted(self.id),
            public_id: PublicToken::from_trusted(self.public_id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            config: LinkConfig {
                title: self.title,
                description: self.description,
                amount,
                currency: Token::parse(&self.currency).ok_or_else(|| corrupt("link currency"))?,
                usage: Usage::parse(&self.usage_type).ok_or_else(|| corrupt("link usage"))?,
                active_at: self.active_at,
                expires_at: self.expires_at,
                collect: Collect {
                    email: self.collect_email,
                    name: self.collect_name,
                    reference: self.collect_reference,
                },
                reference_prefix: self.reference_prefix,
                success_url: url(self.success_url)?,
                cancel_url: url(self.cancel_url)?,
                success_message: self.success_message,
                metadata: self.metadata.map(|m| Metadata::from_json_object_text(m.to_string())),
            },
            version: self.version,
            lifecycle: Lifecycle::parse(&self.lifecycle).ok_or_else(|| corrupt("link lifecycle"))?,
            reservation,
            expiry_announced: self.expiry_announced,
            created_at: self.created_at,
            updated_at: self.updated_at,
            lock_version: self.lock_version,
        })
    }
}

#[derive(QueryableByName)]
struct ReservationRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Bool)]
    paid: bool,
    #[diesel(sql_type = Bool)]
    any_payment: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    open_until: Option<DateTime<Utc>>,
}

/// What a keyed write of `link` answers again after a crash.
fn link_committed(link: &PaymentLink) -> Committed {
    Committed { link: Some(link.id.to_string()), ..Committed::default() }
}

/// The reserved invoices as they stand: paid in full, any payment credited, the latest expiry
/// of a pending checkout.
const RESERVATIONS: &str = "SELECT i.id, i.collection_state = 'paid' AS paid, i.customer_amount_paid > 0 AS any_payment, \
    (SELECT max(s.expires_at) FROM checkout_sessions s WHERE s.invoice_id = i.id AND s.status = 'pending') AS open_until \
    FROM invoices i WHERE i.id = ANY($1)";

pub(crate) async fn with_reservations(
    conn: &mut AsyncPgConnection,
    rows: Vec<LinkRow>,
) -> Result<Vec<PaymentLink>, Error> {
    let ids: Vec<String> = rows.iter().filter_map(|r| r.reserved_invoice_id.clone()).collect();
    let mut found: HashMap<String, Reservation> = HashMap::new();
    if !ids.is_empty() {
        let reserved: Vec<ReservationRow> = diesel::sql_query(RESERVATIONS)
            .bind::<diesel::sql_types::Array<Text>, _>(&ids)
            .load(conn)
            .await
            .map_err(db)?;
        for r in reserved {
            found.insert(
                r.id.clone(),
                Reservation {
                    invoice_id: InvoiceId::from_trusted(r.id),
                    paid: r.paid,
                    any_payment: r.any_payment,
                    open_until: r.open_until,
                },
            );
        }
    }
    rows.into_iter()
        .map(|r| {
            let reservation = r.reserved_invoice_id.as_ref().and_then(|id| found.remove(id));
            r.into_domain(reservation)
        })
        .collect()
}

/// The state filters, judged at the database's time (SQL over the link's row).
/// The condition of links showing `state` at `now` (the scope's time).
fn state_condition(
    state: LinkState,
    now: DateTime<Utc>,
) -> diesel::expression::SqlLiteral<Bool, impl diesel::query_builder::QueryFragment<diesel::pg::Pg> + Send> {
    // The reserved invoice is read by its key, row by row (a scalar subquery, never a join over
    // the invoices); a link with no reservation is not completed (never NULL, so `NOT` holds).
    const COMPLETED: &str = "(payment_links.usage_type = 'single_use' AND (SELECT i.collection_state FROM invoices i \
        WHERE i.id = payment_links.reserved_invoice_id) IS NOT DISTINCT FROM 'paid')";
    let head = match state {
        LinkState::Archived => "payment_links.lifecycle = 'archived' AND ".to_owned(),
        LinkState::Completed => format!("payment_links.lifecycle <> 'archived' AND {COMPLETED} AND "),
        LinkState::Expired => format!("payment_links.lifecycle <> 'archived' AND NOT {COMPLETED} AND "),
        LinkState::Paused => format!("payment_links.lifecycle = 'paused' AND NOT {COMPLETED} AND NOT "),
        LinkState::Active => format!("payment_links.lifecycle = 'active' AND NOT {COMPLETED} AND NOT "),
    };
    // Then whether it expired at `now` (archived and completed links: always true, their state
    // wins; the time is bound all the same, so that every state has one statement shape).
    let (expired, tail) = match state {
        LinkState::Archived | LinkState::Completed => ("(true OR ", "::timestamptz IS NULL)"),
        _ => ("(payment_links.expiry_announced OR COALESCE(payment_links.expires_at <= ", ", false))"),
    };
    diesel::dsl::sql::<Bool>(&format!("{head}{expired}")).bind::<Timestamptz, _>(now).sql(tail)
}

/// Links whose expiry passed at their scope's time (a test-mode link's merchant may have moved
/// its test clock), unless archived or completed (their state wins over the expiry). The reserved
/// invoice is read by its key per candidate link.
const EXPIRED_UNANNOUNCED: &str = "SELECT l.merchant_id, l.mode, l.id FROM payment_links l \
    JOIN scope_clocks c ON c.merchant_id = l.merchant_id AND c.mode = l.mode \
    WHERE NOT l.expiry_announced AND l.lifecycle <> 'archived' AND l.expires_at IS NOT NULL \
    AND NOT (l.usage_type = 'single_use' AND (SELECT i.collection_state FROM invoices i \
        WHERE i.id = l.reserved_invoice_id) IS NOT DISTINCT FROM 'paid') \
    AND l.expires_at <= c.now \
    AND ($1::text IS NULL OR (l.merchant_id = $1 AND l.mode = $2)) \
    ORDER BY l.expires_at LIMIT $3";

impl PgStore {
    /// The link `query` finds, with its reservation. Errors: `NotFound(PaymentLink)`, and
    /// `ModeMismatch` when `mode` is given and the link is of the other mode.
    async fn one_link(
        &self,
        query: l::BoxedQuery<'_, diesel::pg::Pg>,
        mode: Option<Mode>,
    ) -> Result<PaymentLink, Error> {
        let mut conn = self.conn().await?;
        let row: Option<LinkRow> = query.select(LinkRow::as_select()).first(&mut conn).await.optional().map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::PaymentLink))?;
        if mode.is_some_and(|m| row.mode != m.as_str()) {
            return Err(Error::ModeMismatch);
        }
        with_reservations(&mut conn, vec![row]).await?.pop().ok_or_else(|| corrupt("link"))
    }
}

#[async_trait]
impl PaymentLinkStore for PgStore {
    async fn insert_link(&self, link: &PaymentLink, claim: Option<IdempotencyClaim>) -> Result<(), Error> {
        let row = LinkRow::from_domain(link)?;
        let mut conn = self.conn().await?;
        let Some(claim) = claim else {
            diesel::insert_into(l::table).values(&row).execute(&mut conn).await.map_err(db)?;
            return Ok(());
        };
        conn.transaction::<_, TxError, _>(async |conn| {
            diesel::insert_into(l::table).values(&row).execute(conn).await?;
            mark_committed(conn, &claim, &link_committed(link)).await
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn get_link(&self, scope: &Scope, id: &PaymentLinkId) -> Result<PaymentLink, Error> {
        let query = l::table.filter(l::id.eq(id.as_str())).filter(l::merchant_id.eq(scope.merchant_id.as_str()));
        self.one_link(query.into_boxed(), Some(scope.mode)).await
    }

    async fn get_public_link(&self, public_id: &PublicToken) -> Result<PaymentLink, Error> {
        self.one_link(l::table.filter(l::public_id.eq(public_id.as_str())).into_boxed(), None).await
    }

    async fn list_links(&self, scope: &Scope, asked: &LinkQuery) -> Result<Page<PaymentLink>, Error> {
        let LinkQuery { filter, page, now } = asked;
        let now = *now;
        let mut conn = self.conn().await?;
        let mut query = l::table
            .filter(l::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(l::mode.eq(scope.mode.as_str()))
            .select(LinkRow::as_select())
            .order(l::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(state_condition(state, now));
        }
        if let Some(t) = &filter.amount_type {
            query = query.filter(l::amount_type.eq(t.as_str()));
        }
        if let Some(a) = &filter.amount {
            query = query.filter(l::amount.eq(money(a)));
        }
        if let Some(u) = filter.usage {
            query = query.filter(l::usage_type.eq(u.as_str()));
        }
        if let Some(c) = filter.currency {
            query = query.filter(l::currency.eq(c.symbol()));
        }
        if let Some(text) = &filter.text {
            // LIKE's wildcards in the words are matched literally.
            let escaped: String = text
                .chars()
                .flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] })
                .collect();
            let pattern = format!("%{escaped}%");
            query = query.filter(l::title.ilike(pattern.clone()).or(l::description.ilike(pattern)));
        }
        if let Some(after) = filter.created_after {
            query = query.filter(l::created_at.ge(after));
        }
        if let Some(before) = filter.created_before {
            query = query.filter(l::created_at.lt(before));
        }
        after_cursor!(&mut conn, query, page, l::seq, |cursor| [
            l::id.eq(cursor),
            l::merchant_id.eq(scope.merchant_id.as_str()),
            l::mode.eq(scope.mode.as_str())
        ]);
        let rows: Vec<LinkRow> = query.load(&mut conn).await.map_err(db)?;
        let rows = page_of(rows, page, Ok)?;
        Ok(Page { items: with_reservations(&mut conn, rows.items).await?, has_more: rows.has_more })
    }

    async fn update_link(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        claim: Option<IdempotencyClaim>,
    ) -> Result<bool, Error> {
        let row = LinkRow::from_domain(link)?;
        let mut conn = self.conn().await?;
        let update = async |conn: &mut AsyncPgConnection| {
            diesel::update(
                l::table
                    .filter(l::id.eq(&row.id))
                    .filter(l::merchant_id.eq(&row.merchant_id))
                    .filter(l::mode.eq(&row.mode))
                    .filter(l::lock_version.eq(expected_lock_version)),
            )
            .set(&row)
            .execute(conn)
            .await
        };
        let Some(claim) = claim else {
            return Ok(update(&mut conn).await.map_err(db)? == 1);
        };
        conn.transaction::<_, TxError, _>(async |conn| {
            if update(conn).await? == 0 {
                return Ok(false);
            }
            mark_committed(conn, &claim, &link_committed(link)).await?;
            Ok(true)
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn save_link_checkout(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        mut change: InvoiceChange,
    ) -> Result<bool, Error> {
        let row = LinkRow::from_domain(link)?;
        let single_use = link.config.usage == Usage::SingleUse;
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                if single_use {
                    // The reservation: only while the link is as the decision saw it.
                    let reserved = diesel::update(
                        l::table
                            .filter(l::id.eq(&row.id))
                            .filter(l::merchant_id.eq(&row.merchant_id))
                            .filter(l::lock_version.eq(expected_lock_version)),
                    )
                    .set((l::reserved_invoice_id.eq(&row.reserved_invoice_id), l::lock_version.eq(row.lock_version)))
                    .execute(conn)
                    .await?;
                    if reserved == 0 {
                        return Err(TxError::Domain(Error::LinkReserved));
                    }
                }
                write_all(conn, &mut change).await?;
                let invoice = &change.aggregate.invoice;
                diesel::insert_into(pli::table)
                    .values((
                        pli::invoice_id.eq(invoice.id.as_str()),
                        pli::link_id.eq(&row.id),
                        pli::merchant_id.eq(&row.merchant_id),
                        pli::mode.eq(&row.mode),
                        pli::created_at.eq(invoice.created_at),
                    ))
                    .execute(conn)
                    .await?;
                Ok(())
            })
            .await;
        match result {
            Ok(()) => Ok(true),
            Err(TxError::Domain(Error::LinkReserved)) => Ok(false),
            Err(e) => Err(e.into_domain()),
        }
    }

    async fn list_link_invoices(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        page: &PageRequest,
    ) -> Result<Page<LinkInvoice>, Error> {
        let mut conn = self.conn().await?;
        let mut query = pli::table
            .filter(pli::link_id.eq(id.as_str().to_owned()))
            .filter(pli::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(pli::mode.eq(scope.mode.as_str()))
            .select((pli::invoice_id, pli::created_at))
            .order(pli::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        after_cursor!(&mut conn, query, page, pli::seq, |cursor| [
            pli::invoice_id.eq(cursor),
            pli::link_id.eq(id.as_str()),
            pli::merchant_id.eq(scope.merchant_id.as_str())
        ]);
        let rows: Vec<(String, DateTime<Utc>)> = query.load(&mut conn).await.map_err(db)?;
        page_of(rows, page, |(invoice, created_at)| {
            Ok(LinkInvoice { invoice_id: InvoiceId::from_trusted(invoice), created_at })
        })
    }

    async fn expired_unannounced(&self, only: Option<Scope>, limit: u32) -> Result<Vec<(Scope, PaymentLinkId)>, Error> {
        let (merchant, mode_text) = match &only {
            Some(s) => (Some(s.merchant_id.to_string()), Some(s.mode.as_str().to_owned())),
            None => (None, None),
        };
        let rows: Vec<crate::rows::ScopedRow> = diesel::sql_query(EXPIRED_UNANNOUNCED)
            .bind::<Nullable<Text>, _>(merchant)
            .bind::<Nullable<Text>, _>(mode_text)
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(100))
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(|r| Ok((r.scope()?, PaymentLinkId::from_trusted(r.id)))).collect()
    }

    async fn announce_expiry(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        event: &Event,
    ) -> Result<bool, Error> {
        let row = LinkRow::from_domain(link)?;
        let events = crate::events::rows(std::slice::from_ref(event));
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let updated = diesel::update(
                l::table
                    .filter(l::id.eq(&row.id))
                    .filter(l::merchant_id.eq(&row.merchant_id))
                    .filter(l::lock_version.eq(expected_lock_version)),
            )
            .set((l::expiry_announced.eq(true), l::lock_version.eq(row.lock_version), l::updated_at.eq(row.updated_at)))
            .execute(conn)
            .await?;
            if updated == 1 {
                diesel::insert_into(crate::schema::events::table).values(&events).execute(conn).await?;
            }
            Ok(updated == 1)
        })
        .await
        .map_err(db)
    }
}
