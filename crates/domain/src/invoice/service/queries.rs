//! What the invoice use cases answer without changing anything: an invoice, a page of them, a
//! payment, pages of checkout sessions and of payments, and an invoice as the document its customer receives.

use crate::error::Error;
use crate::ids::{InvoiceId, PaymentId};
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::collection::CollectionState;
use crate::invoice::document::InvoiceDocument;
use crate::invoice::model::{InvoiceSearch, MAX_SEARCH_BYTES};
use crate::invoice::payment::{Payment, PaymentStatus};
use crate::invoice::service::invoices::Invoices;
use crate::merchant::model::Merchant;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::url::PublicPages;

impl Invoices<'_> {
    /// An invoice of `scope` with its sessions and payments. Errors: `NotFound(Invoice)`
    /// (another merchant's id, or none); `ModeMismatch` for an invoice of the other mode.
    pub async fn get(&self, scope: &Scope, key: &InvoiceKey) -> Result<InvoiceAggregate, Error> {
        self.store.load_invoice(scope, key).await
    }

    /// The invoices of `scope` with these ids, in the order asked (ids of others are left out).
    pub async fn get_many(&self, scope: &Scope, ids: &[InvoiceId]) -> Result<Vec<InvoiceAggregate>, Error> {
        self.store.load_invoices(scope, ids).await
    }

    /// A page of `scope`'s invoices, newest first, optionally in one collection state. Errors:
    /// `InvalidCursor`.
    pub async fn list(
        &self,
        scope: &Scope,
        state: Option<CollectionState>,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error> {
        self.store.list_invoices(scope, state, page).await
    }

    /// A page of `scope`'s invoices narrowed by `search`, newest first. The text is trimmed
    /// (empty: no text). Errors: `Validation` (`search` over 200 bytes, `created_before` not
    /// after `created_from`); `InvalidCursor`.
    pub async fn search(
        &self,
        scope: &Scope,
        mut search: InvoiceSearch,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error> {
        search.text = search.text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        if let Some(text) = &search.text {
            crate::invoice::validate::check_len("search", text, 1, MAX_SEARCH_BYTES)?;
        }
        if let (Some(from), Some(before)) = (search.created_from, search.created_before)
            && before <= from
        {
            return Err(Error::validation("created_before", "must be after created_from"));
        }
        self.store.search_invoices(scope, &search, page).await
    }

    /// A page of `scope`'s checkout sessions, newest first, optionally in one status. Errors:
    /// `InvalidCursor`.
    pub async fn sessions(
        &self,
        scope: &Scope,
        status: Option<CheckoutStatus>,
        page: &PageRequest,
    ) -> Result<Page<CheckoutSession>, Error> {
        self.store.list_sessions(scope, status, page).await
    }

    /// A page of `scope`'s payments, the most recently detected first, optionally in one
    /// status. Errors: `InvalidCursor`.
    pub async fn payments(
        &self,
        scope: &Scope,
        status: Option<PaymentStatus>,
        page: &PageRequest,
    ) -> Result<Page<Payment>, Error> {
        self.store.list_payments(scope, status, page).await
    }

    /// A payment of `scope`. Errors: `NotFound(Payment)`; `ModeMismatch`.
    pub async fn payment(&self, scope: &Scope, id: &PaymentId) -> Result<Payment, Error> {
        self.store.get_payment(scope, id).await
    }

    /// The invoice as the document its customer receives (the PDF). Errors:
    /// `InvoicePdfUnavailable` for a draft (it has no number yet); as for [`Invoices::get`].
    pub async fn document(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
        pages: &PublicPages,
    ) -> Result<InvoiceDocument, Error> {
        let agg = self.get(scope, key).await?;
        if agg.invoice.number.is_none() {
            return Err(Error::InvoicePdfUnavailable("a draft has no document yet; issue it first".into()));
        }
        Ok(InvoiceDocument::new(agg.invoice.clone(), &agg.payments, merchant, pages))
    }
}
