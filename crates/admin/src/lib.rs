//! What internal admin tooling does with the domain crate: it calls the domain's use cases
//! (here the collections review, [`Collections`], over [`InvoiceStore`] and [`Clock`]), whose
//! rules (what is still collectible, what a remainder is, when an invoice is overdue at the
//! merchant's clock) are the service's own, rather than querying tables and re-implementing
//! them; and it renders what they answer. Any adapter of the ports works; the
//! `stablepay-admin` binary wires the Postgres one.
//!
//! ```no_run
//! # async fn run() -> Result<(), stablepay_domain::Error> {
//! use stablepay_domain::{Mode, Scope, ids::MerchantId};
//! let store = stablepay_postgres::PgStore::connect("postgres://localhost/stablepay", &Default::default())?;
//! let clock = stablepay_postgres::PgClock::new(store.clone());
//! let scope = Scope::new(MerchantId::from_trusted("mer_...".into()), Mode::Live);
//! let report = stablepay_admin::open_invoices(&store, &clock, &scope).await?;
//! print!("{}", stablepay_admin::render(&report));
//! # Ok(()) }
//! ```

use stablepay_domain::clock::Clock;
use stablepay_domain::invoice::ports::InvoiceStore;
use stablepay_domain::invoice::service::Collections;
use stablepay_domain::{Error, Scope};

pub use stablepay_domain::invoice::report::{COLLECTIBLE, OpenInvoice, OpenInvoicesReport};

/// Reads every collectible invoice of `scope` through the store port, with what remains and
/// what is overdue at the scope's own clock (the domain's collections review).
pub async fn open_invoices(
    store: &dyn InvoiceStore,
    clock: &dyn Clock,
    scope: &Scope,
) -> Result<OpenInvoicesReport, Error> {
    Collections { store, clock }.open_invoices(scope).await
}

/// The report as a plain-text table with the totals.
pub fn render(report: &OpenInvoicesReport) -> String {
    let mut out = format!("open invoices as of {}\n", report.as_of.to_rfc3339());
    out.push_str(
        "number          state           total             remaining         due                   days overdue\n",
    );
    for i in &report.invoices {
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
    out.push_str(&format!("outstanding {}\noverdue     {}\n", report.outstanding, report.overdue));
    out
}
