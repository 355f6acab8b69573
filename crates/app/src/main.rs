//! `stablepay`: the service binary and its operator CLI.

mod config;
mod crypto;
mod deliveries;
mod dev;
mod jobs;
mod operator;
mod server;
mod wiring;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::wiring::Adapters;

/// jemalloc, with a background thread returning freed memory to the operating system within
/// about a second (`.cargo/config.toml` sets its configuration), so a burst of large requests
/// does not leave the process holding it (glibc's allocator kept it: docs/benchmarks.md).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "stablepay", version, about = "Non-custodial stablecoin checkout and invoicing API")]
struct Cli {
    /// Optional TOML configuration file (also STABLEPAY_CONFIG); environment variables win.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API and the background worker in one process.
    Serve {
        /// API only (for replicas that leave background work to `stablepay worker`).
        #[arg(long)]
        no_worker: bool,
        /// Do not apply pending migrations at start.
        #[arg(long)]
        no_migrate: bool,
    },
    /// Run only the background worker.
    Worker,
    /// Apply pending database migrations.
    Migrate,
    /// Sandbox: migrate, create a demo merchant with test keys (once), print them, and serve.
    Dev,
    /// Manage merchants.
    Merchant {
        #[command(subcommand)]
        command: operator::MerchantCommand,
    },
    /// Print the OpenAPI document served at /v1/openapi.json.
    Openapi,
    /// Manage API keys.
    Key {
        #[command(subcommand)]
        command: operator::KeyCommand,
    },
}

/// Logs on stderr: text, or one JSON object per line with `STABLEPAY_LOG_FORMAT=json` (with
/// the current span's fields, such as the request id). `RUST_LOG` filters (default `info`).
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false);
    match std::env::var("STABLEPAY_LOG_FORMAT").as_deref() {
        Ok("json") => builder.json().with_current_span(true).with_span_list(false).init(),
        Ok("text") | Err(_) => builder.init(),
        Ok(other) => {
            builder.init();
            tracing::warn!(value = other, "STABLEPAY_LOG_FORMAT must be text or json; logging text");
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let config = match Config::load(cli.config.as_deref(), |name| std::env::var(name).ok()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("stablepay: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stablepay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli.command, config))
}

async fn run(command: Command, mut config: Config) -> ExitCode {
    if let Command::Openapi = command {
        let doc = stablepay_http::openapi::with_webhooks(&stablepay_http::openapi_document());
        return match serde_json::to_string_pretty(&doc) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("stablepay: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Command::Dev = command
        && let Err(e) = dev::prepare(&mut config)
    {
        eprintln!("stablepay: {e}");
        return ExitCode::FAILURE;
    }
    let adapters = match Adapters::new(&config) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("stablepay: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Serve { no_worker, no_migrate } => {
            let migrated = if no_migrate { Ok(()) } else { migrate(&config).await };
            match migrated {
                Ok(()) => server::serve(config, adapters, !no_worker).await,
                Err(e) => Err(e),
            }
        }
        Command::Worker => server::run_worker(config, adapters).await,
        Command::Migrate => migrate(&config).await,
        Command::Dev => dev::run(config, adapters).await,
        Command::Merchant { command } => return operator::merchant(command, &adapters).await,
        Command::Key { command } => return operator::key(command, &adapters).await,
        Command::Openapi => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stablepay: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn migrate(config: &Config) -> wiring::anyhow_lite::Result<()> {
    let applied = stablepay_postgres::run_migrations(&config.database_url)
        .await
        .map_err(|e| wiring::anyhow_lite::msg(format!("migrations: {e} (DATABASE_URL)")))?;
    tracing::info!(applied = applied.len(), versions = ?applied, "migrations applied");
    Ok(())
}
