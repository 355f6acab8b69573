//! `cargo xtask bench [chain|webhooks|pdf|exports|mixed|dashboard|flash-sale|checkout-pages|scale] [options]`: the benchmarks of the
//! release binary (docs/benchmarks.md). Without a name: the API phases (`api`), then, unless
//! `--api-only`, webhook delivery (`webhooks`) and live verification (`chain`). `mixed` runs
//! everything at once, also with a hanging receiver and a stalled chain node; `pdf` measures
//! invoice PDFs; `exports` an export of a million invoices beside the API's load; `dashboard` the
//! dashboard's invoice list of a merchant with 100,000 invoices; `flash-sale` one merchant's
//! numbered creations, a reusable link submitted by 2,000 customers at once, and their
//! creditings; `checkout-pages` 10,000 open checkout pages, pushed and then polled; `idle` what the service spends doing nothing; `scale` the
//! API's phases on a fresh database and on one of 10,000,000 invoices. `client` is
//! the load generator they share, `wrk` the cross-check, `replay` the private PostgreSQL
//! cluster and the replay of the API's statements, `receiver` what the webhook receivers share.

mod accounts;
mod api;
mod chain;
mod checkout_pages;
pub(crate) mod client;
mod dashboard;
mod exports;
mod flash_sale;
mod idle;
mod mixed;
mod pdf;
mod receiver;
mod replay;
mod scale;
mod webhooks;
mod wrk;

/// Runs the benchmark `args` name (or all of the API's, webhooks and chain).
pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("chain") => return chain::run(&args[1..]),
        Some("webhooks") => return webhooks::run(&args[1..]),
        Some("pdf") => return pdf::run(&args[1..]),
        Some("exports") => return exports::run(&args[1..]),
        Some("mixed") => return mixed::run(&args[1..]),
        Some("dashboard") => return dashboard::run(&args[1..]),
        Some("flash-sale") => return flash_sale::run(&args[1..]),
        Some("checkout-pages") => return checkout_pages::run(&args[1..]),
        Some("scale") => return scale::run(&args[1..]),
        Some("accounts") => return accounts::run(&args[1..]),
        Some("idle") => return idle::run(&args[1..]),
        _ => {}
    }
    let o = api::options(args)?;
    api::run(&o)?;
    if !o.api_only {
        // The same run measures webhook delivery and live verification too (each prints its
        // own table; `cargo xtask bench webhooks|chain` runs one alone).
        println!();
        println!("## webhook delivery (cargo xtask bench webhooks)");
        webhooks::run(&[])?;
        println!();
        println!("## live verification (cargo xtask bench chain)");
        chain::run(&[])?;
    }
    Ok(())
}
