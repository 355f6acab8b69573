//! What internal admin tooling does with the domain crate: it reads through the domain's ports
//! (here [`InvoiceStore`] and [`Clock`]) and applies the domain's own rules (what is still
//! collectible, what a remainder is, when an invoice is overdue at the merchant's clock) rather
//! than querying tables and re-implementing them. Any adapter of the ports works; the
//! `stablepay-admin` binary wires the Postgres one.
//!
//! ```no_run
//! # async fn run() -> Result<(), stablepay_domain::Error> {
//! use stablepay_domain::{Mode, Scope, ids::MerchantId};
//! let store = stablepay_postgres::PgStore::connect("postgres://localhost/stablepay", &Default::default())?;
//! let clock = stablepay_postgres::PgClock::new(store.clone());
//! let scope = Scope::new(MerchantId::from_trusted("mer_...".into()), Mode::Live);
//! let report = stablepay_admin::open_invoices(&store, &clock, &scope).await?;
//! print!("{}", report.render());
//! # Ok(()) }
//! ```

use chrono::{DateTime, Utc};
use stablepay_domain::clock::Clock;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::ports::InvoiceStore;
use stablepay_domain::page::PageRequest;
use stablepay_domain::{Amount, Error, Scope};

/// One invoice still to collect.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenInvoice {
    /// The invoice id (`inv_...`).
    pub id: String,
    /// Its number (`INV-000042`); `None` only for invoices created before numbering at creation.
    pub number: Option<String>,
    /// `open`, `past_due` or `partially_paid`.
    pub state: CollectionState,
    /// The invoice's total.
    pub total: Amount,
    /// What is still to collect ([`Invoice::remaining`](stablepay_domain::invoice::model::Invoice::remaining)).
    pub remaining: Amount,
    /// The collection deadline, if any.
    pub due_at: Option<DateTime<Utc>>,
    /// Whole days past the deadline at the merchant's clock (0 when not overdue).
    pub days_overdue: i64,
}

/// A merchant's open invoices in one mode, with the sums a collections review needs.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenInvoicesReport {
    /// The merchant's time when the report was made (the test clock in test mode).
    pub as_of: DateTime<Utc>,
    /// Every collectible invoice, newest first.
    pub invoices: Vec<OpenInvoice>,
    /// The sum of what remains to collect.
    pub outstanding: Amount,
    /// The part of it that is past its due date.
    pub overdue: Amount,
}

/// The states in which an invoice still has something to collect.
pub const COLLECTIBLE: [CollectionState; 3] =
    [CollectionState::Open, CollectionState::PastDue, CollectionState::PartiallyPaid];

/// Reads every collectible invoice of `scope` through the store port, page by page, and sums
/// what remains and what is overdue at the scope's own clock.
pub async fn open_invoices(
    store: &dyn InvoiceStore,
    clock: &dyn Clock,
    scope: &Scope,
) -> Result<OpenInvoicesReport, Error> {
    let as_of = clock.now(scope).await?;
    let mut invoices = Vec::new();
    for state in COLLECTIBLE {
        let mut page = PageRequest { limit: 100, starting_after: None };
        loop {
            let found = store.list_invoices(scope, Some(state), &page).await?;
            for agg in &found.items {
                let inv = &agg.invoice;
                let days_overdue =
                    inv.fields.content.due_at.filter(|due| *due < as_of).map_or(0, |due| (as_of - due).num_days());
                invoices.push(OpenInvoice {
                    id: inv.id.to_string(),
                    number: inv.number.clone(),
                    state: inv.collection_state,
                    total: inv.totals.total.clone(),
                    remaining: inv.remaining(),
                    due_at: inv.fields.content.due_at,
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

impl OpenInvoicesReport {
    /// A plain-text table with the totals.
    pub fn render(&self) -> String {
        let mut out = format!("open invoices as of {}\n", self.as_of.to_rfc3339());
        out.push_str(
            "number          state           total             remaining         due                   days overdue\n",
        );
        for i in &self.invoices {
            out.push_str(&format!(
                "{:<15} {:<15} {:>17} {:>17} {:<21} {}\n",
                i.number.as_deref().unwrap_or(&i.id),
                i.state.as_str(),
                i.total.to_string(),
                i.remaining.to_string(),
                i.due_at.map(|d| d.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_else(|| "-".into()),
                i.days_overdue
            ));
        }
        out.push_str(&format!("outstanding {}\noverdue     {}\n", self.outstanding, self.overdue));
        out
    }
}
