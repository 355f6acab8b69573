//! `stablepay-admin open-invoices --merchant mer_... [--mode test|live]`: the open-invoices
//! report of one merchant, read from the service's database (`DATABASE_URL`) through the
//! domain's ports and the Postgres adapter.

use std::process::ExitCode;

use stablepay_domain::ids::MerchantId;
use stablepay_domain::{Mode, Scope};

const USAGE: &str = "usage: stablepay-admin open-invoices --merchant <mer_...> [--mode test|live]  (DATABASE_URL)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if args.first().map(String::as_str) != Some("open-invoices") {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let Some(merchant) = value("--merchant").and_then(|m| MerchantId::parse(&m)) else {
        eprintln!("stablepay-admin: --merchant must be a merchant id (mer_...)\n{USAGE}");
        return ExitCode::from(2);
    };
    let mode = match value("--mode").as_deref().map(Mode::parse) {
        None => Mode::Live,
        Some(Some(mode)) => mode,
        Some(None) => {
            eprintln!("stablepay-admin: --mode must be test or live\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("stablepay-admin: DATABASE_URL is not set");
        return ExitCode::from(2);
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async move {
        let settings = stablepay_postgres::PoolSettings { max_size: 2, ..Default::default() };
        let store = match stablepay_postgres::PgStore::connect(&url, &settings) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stablepay-admin: {e}");
                return ExitCode::FAILURE;
            }
        };
        let clock = stablepay_postgres::PgClock::new(store.clone());
        match stablepay_admin::open_invoices(&store, &clock, &Scope::new(merchant, mode)).await {
            Ok(report) => {
                use std::io::Write;
                let _ = std::io::stdout().write_all(stablepay_admin::render(&report).as_bytes());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("stablepay-admin: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
