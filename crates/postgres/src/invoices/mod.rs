//! Invoice aggregates: invoices, checkout sessions and payments, saved atomically with their
//! events and (when asked) the next invoice number. `rows` holds the row types, `read` the
//! queries, `write` the atomic save (with `create_statement`, the one-statement creation of an
//! invoice with its checkout, and `change_statements`, the fixed statements of every other
//! save), `due` the time-based work, `lists` the dashboard's pages of sessions and payments.

mod attribution;
pub(crate) mod change_statements;
mod create_statement;
mod due;
mod lists;
mod read;
pub(crate) mod rows;
pub(crate) mod write;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rows::PaymentRow;
use stablepay_domain::chain::{CandidateQuery, Candidates};
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, MerchantId, PaymentId};
use stablepay_domain::invoice::aggregate::{InvoiceAggregate, InvoiceChange, InvoiceKey, PublicRef};
use stablepay_domain::invoice::checkout::{Binding, CheckoutSession, CheckoutStatus};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::model::InvoiceSearch;
use stablepay_domain::invoice::payment::{Payment, PaymentStatus, TxHash};
use stablepay_domain::invoice::ports::InvoiceStore;
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::schedule::model::DueSchedule;
use stablepay_domain::{Error, Resource, Scope};

use crate::error::db;
use crate::pool::PgStore;
use crate::schema::payments;

#[async_trait]
impl InvoiceStore for PgStore {
    async fn open_checkouts(&self, asked: &CandidateQuery) -> Result<Candidates, Error> {
        let mut conn = self.conn().await?;
        attribution::open_checkouts(&mut conn, asked).await
    }

    async fn reported_checkouts(
        &self,
        tx: &TxHash,
        wallet: &WalletAddress,
        token_contract: &WalletAddress,
    ) -> Result<Vec<CheckoutSessionId>, Error> {
        attribution::reported_checkouts(&mut *self.conn().await?, tx, wallet, token_contract).await
    }

    async fn bind_wallet(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        wallet: &WalletAddress,
        terms: Option<stablepay_domain::invoice::wallet::AuthorizationTerms>,
        at: DateTime<Utc>,
    ) -> Result<bool, Error> {
        attribution::bind_wallet(&mut *self.conn().await?, scope, session_id, (wallet, terms, at)).await
    }

    async fn authorization_terms(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        nonce: &stablepay_domain::invoice::wallet::AuthorizationNonce,
    ) -> Result<Option<stablepay_domain::invoice::wallet::AuthorizationTerms>, Error> {
        attribution::authorization_terms(&mut *self.conn().await?, scope, session_id, nonce).await
    }

    async fn bindings(&self, scope: &Scope, session_id: &CheckoutSessionId) -> Result<Vec<Binding>, Error> {
        attribution::bindings(&mut *self.conn().await?, scope, session_id).await
    }

    async fn load_invoice(&self, scope: &Scope, key: &InvoiceKey) -> Result<InvoiceAggregate, Error> {
        let mut conn = self.conn().await?;
        let row = match key {
            InvoiceKey::Id(id) => return read::load_by_id(&mut conn, scope, id).await,
            InvoiceKey::Number(number) => read::find_by_number(&mut conn, scope, number).await?,
            InvoiceKey::Session(session) => read::find_by_session(&mut conn, scope, session).await?,
            InvoiceKey::Payment(payment) => read::find_by_payment(&mut conn, scope, payment).await?,
        };
        read::one(&mut conn, row).await
    }

    async fn load_public(&self, reference: &PublicRef) -> Result<InvoiceAggregate, Error> {
        read::load_public(&mut *self.conn().await?, reference).await
    }

    async fn load_invoices(&self, scope: &Scope, ids: &[InvoiceId]) -> Result<Vec<InvoiceAggregate>, Error> {
        read::by_ids(&mut *self.conn().await?, scope, ids).await
    }

    async fn list_invoices(
        &self,
        scope: &Scope,
        state: Option<CollectionState>,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error> {
        read::list(&mut *self.conn().await?, scope, state, page).await
    }

    async fn search_invoices(
        &self,
        scope: &Scope,
        search: &InvoiceSearch,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error> {
        read::search(&mut *self.conn().await?, scope, search, page).await
    }

    async fn list_sessions(
        &self,
        scope: &Scope,
        status: Option<CheckoutStatus>,
        page: &PageRequest,
    ) -> Result<Page<CheckoutSession>, Error> {
        lists::sessions(&mut *self.conn().await?, scope, status, page).await
    }

    async fn list_payments(
        &self,
        scope: &Scope,
        status: Option<PaymentStatus>,
        page: &PageRequest,
    ) -> Result<Page<Payment>, Error> {
        lists::payments(&mut *self.conn().await?, scope, status, page).await
    }

    async fn save_invoice(&self, change: InvoiceChange) -> Result<InvoiceAggregate, Error> {
        let followed = self.signals.as_ref().map(|_| write::followed_changes(&change)).unwrap_or_default();
        let saved = write::save(&mut *self.conn().await?, change).await?;
        if let Some(signals) = &self.signals {
            signals.changed(followed);
        }
        Ok(saved)
    }

    async fn payments_of_transaction(&self, scope: &Scope, tx: &TxHash) -> Result<Vec<Payment>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<PaymentRow> = payments::table
            .filter(payments::transaction_hash.eq(tx.as_str()))
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(payments::mode.eq(scope.mode.as_str()))
            .order((payments::detected_at.asc(), payments::id.asc()))
            .select(PaymentRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(PaymentRow::into_domain).collect()
    }

    async fn get_payment(&self, scope: &Scope, id: &PaymentId) -> Result<Payment, Error> {
        let mut conn = self.conn().await?;
        let row: Option<PaymentRow> = payments::table
            .filter(payments::id.eq(id.as_str()))
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .select(PaymentRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::Payment))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.into_domain()
    }

    async fn claim_due(
        &self,
        only: Option<Scope>,
        limit: u32,
        lease_seconds: u32,
    ) -> Result<Vec<(Scope, InvoiceId)>, Error> {
        due::claim(&mut *self.conn().await?, only, limit, lease_seconds).await
    }

    async fn claim_payments(
        &self,
        limit: u32,
        lease_ms: u32,
        final_block: Option<u64>,
    ) -> Result<Vec<(Scope, PaymentId, TxHash)>, Error> {
        due::claim_payments(&mut *self.conn().await?, limit, lease_ms, final_block).await
    }

    async fn defer_payment(&self, scope: &Scope, id: &PaymentId, seconds: u32, diagnostic: &str) -> Result<(), Error> {
        due::defer_payment(&mut *self.conn().await?, scope, id, seconds, diagnostic).await
    }

    async fn release_due(&self, items: &[(Scope, InvoiceId)]) -> Result<(), Error> {
        due::release(&mut *self.conn().await?, items).await
    }

    async fn defer_due(&self, scope: &Scope, id: &InvoiceId, error: &str, schedule: DueSchedule) -> Result<u32, Error> {
        due::defer(&mut *self.conn().await?, scope, id, error, schedule).await
    }

    async fn advance_test_clock(&self, merchant: &MerchantId, seconds: i64) -> Result<i64, Error> {
        due::advance_test_clock((self, &mut *self.conn().await?), merchant, seconds).await
    }

    async fn reset_test_clock(&self, merchant: &MerchantId) -> Result<(), Error> {
        due::reset_test_clock((self, &mut *self.conn().await?), merchant).await
    }
}
