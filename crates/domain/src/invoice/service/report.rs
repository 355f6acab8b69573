//! The collections review: every collectible invoice of a scope, read through the store, judged
//! at the scope's own clock.

use crate::clock::Clock;
use crate::error::Error;
use crate::invoice::ports::InvoiceStore;
use crate::invoice::report::{COLLECTIBLE, OpenInvoice, OpenInvoicesReport};
use crate::mode::Scope;
use crate::money::Amount;
use crate::page::{MAX_PAGE_LIMIT, PageRequest};

/// The collections review over its ports (a read: no lock, no change).
pub struct Collections<'a> {
    /// The invoices.
    pub store: &'a dyn InvoiceStore,
    /// Each scope's time (the test clock in test mode).
    pub clock: &'a dyn Clock,
}

impl Collections<'_> {
    /// Every collectible invoice of `scope`, page by page, with what remains and what is
    /// overdue at the scope's own clock. Errors: the store's.
    pub async fn open_invoices(&self, scope: &Scope) -> Result<OpenInvoicesReport, Error> {
        let as_of = self.clock.now(scope).await?;
        let mut invoices = Vec::new();
        for state in COLLECTIBLE {
            let mut page = PageRequest { limit: MAX_PAGE_LIMIT, starting_after: None };
            loop {
                let found = self.store.list_invoices(scope, Some(state), &page).await?;
                for agg in &found.items {
                    let inv = &agg.invoice;
                    let due_at = inv.fields.content.due_at;
                    let days_overdue = due_at.filter(|due| *due < as_of).map_or(0, |due| (as_of - due).num_days());
                    invoices.push(OpenInvoice {
                        id: inv.id.to_string(),
                        number: inv.number.clone(),
                        state: inv.collection_state,
                        total: inv.totals.total.clone(),
                        remaining: inv.remaining(),
                        due_at,
                        days_overdue,
                    });
                }
                match (found.has_more, found.items.last()) {
                    (true, Some(last)) => page.starting_after = Some(last.invoice.id.to_string()),
                    _ => break,
                }
            }
        }
        invoices.sort_by(|a, b| b.id.cmp(&a.id));
        let mut outstanding = Amount::zero();
        let mut overdue = Amount::zero();
        for i in &invoices {
            outstanding = outstanding.add(&i.remaining);
            if i.due_at.is_some_and(|due| due < as_of) {
                overdue = overdue.add(&i.remaining);
            }
        }
        Ok(OpenInvoicesReport { as_of, invoices, outstanding, overdue })
    }
}
