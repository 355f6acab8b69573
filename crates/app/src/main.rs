//! `stablepay`: the service binary and its operator CLI.

mod config;
mod contract_check;
mod crypto;
mod deliveries;
mod dev;
mod http_app;
mod jobs;
mod metrics;
mod operator;
mod server;
mod users;
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
    Openapi {
        /// Print the API reference generated from it (docs/api-reference.md) instead.
        #[arg(long)]
        reference: bool,
    },
    /// Manage API keys.
    Key {
        #[command(subcommand)]
        command: operator::KeyCommand,
    },
    /// Manage the people who sign in to the dashboard.
    User {
        #[command(subcommand)]
        command: users::UserCommand,
    },
    /// Check the configuration (environment and file): every variable the binary knows with the
    /// value it takes (secrets only as set or not); an invalid value or an unknown STABLEPAY_*
    /// variable fails with status 2.
    Config {
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run a short end-to-end scenario against a deployment with a secret test key, one line per
    /// check (create, pay in two parts, events, idempotency replay and conflict, void, errors,
    /// expiry on the test clock). Exit status 0 when every check passes.
    ContractCheck {
        /// The deployment's base URL, e.g. http://127.0.0.1:8080.
        #[arg(long, value_name = "URL")]
        base_url: String,
        /// A secret test key (sk_test_...); also STABLEPAY_CONTRACT_KEY.
        #[arg(long, value_name = "KEY", env = "STABLEPAY_CONTRACT_KEY")]
        key: String,
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
    // Talks to a deployment over HTTP only: no configuration, no database.
    if let Command::ContractCheck { base_url, key } = &cli.command {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return ExitCode::FAILURE;
        };
        let passed = runtime.block_on(contract_check::run(base_url, key));
        return if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let config = match Config::load(cli.config.as_deref(), |name| std::env::var(name).ok()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("stablepay: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
    let unknown = config::unknown_variables(names.iter().map(String::as_str));
    if let Command::Config { json } = cli.command {
        return config_report(json, &unknown);
    }
    for name in &unknown {
        tracing::warn!(variable = %name, "unknown STABLEPAY_ variable ignored (see `stablepay config`)");
    }
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
    if let Command::Openapi { reference } = command {
        let doc = stablepay_rest::api::document();
        let text = if reference {
            Ok(stablepay_rest::openapi::api_reference::markdown(&doc))
        } else {
            serde_json::to_string_pretty(&doc).map(|t| format!("{t}\n"))
        };
        return match text {
            Ok(text) => {
                // A closed pipe (`stablepay openapi | head -1`) ends the output quietly.
                use std::io::Write;
                let _ = std::io::stdout().write_all(text.as_bytes());
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
            let migrated = if no_migrate { Ok(()) } else { server::migrate(&config).await };
            match migrated {
                Ok(()) => server::serve(config, adapters, !no_worker).await,
                Err(e) => Err(e),
            }
        }
        Command::Worker => server::run_worker(config, adapters).await,
        Command::Migrate => server::migrate(&config).await,
        Command::Dev => dev::run(config, adapters).await,
        Command::Merchant { command } => return operator::merchant(command, &adapters).await,
        Command::Key { command } => return operator::key(command, &adapters).await,
        Command::User { command } => return users::user(command, &adapters).await,
        Command::Openapi { .. } | Command::ContractCheck { .. } | Command::Config { .. } => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stablepay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `stablepay config`: every known variable with the value it takes here.
fn config_report(json: bool, unknown: &[String]) -> ExitCode {
    use std::io::Write;
    let mut rows = Vec::new();
    for v in config::VARIABLES {
        let set = std::env::var(v.name).ok();
        let shown = match (&set, v.shown) {
            (Some(_), config::Shown::Hidden) => "(set)".to_owned(),
            (Some(value), _) => config::printable(v.name, value),
            (None, _) if v.default.is_empty() => "(unset)".to_owned(),
            (None, _) => format!("{} (default)", v.default),
        };
        rows.push((v, set.is_some(), shown));
    }
    let text = if json {
        let variables: Vec<serde_json::Value> = rows
            .iter()
            .map(|(v, set, shown)| {
                serde_json::json!({ "name": v.name, "set": set, "value": shown, "secret": v.secret(),
                                    "production": v.production, "about": v.about })
            })
            .collect();
        format!("{}\n", serde_json::json!({ "variables": variables, "unknown": unknown }))
    } else {
        let mut out = String::new();
        for (v, _, shown) in &rows {
            out.push_str(&format!("{:<34} {}\n", v.name, shown));
        }
        for name in unknown {
            out.push_str(&format!("{name:<34} UNKNOWN: not a setting of this binary\n"));
        }
        out
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    if unknown.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) }
}
