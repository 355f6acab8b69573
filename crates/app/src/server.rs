//! `serve` and `worker`: the HTTP API and the background worker.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use stablepay_http::body::RequestLimits;
use stablepay_http::status::WorkerStatus;
use tokio::sync::watch;

use crate::config::Config;
use crate::wiring::Adapters;
use crate::wiring::anyhow_lite::{Result, msg};
use crate::worker;

/// Runs the HTTP API (and, unless `with_worker` is false, the worker) until SIGINT/SIGTERM.
pub async fn serve(config: Config, adapters: Adapters, with_worker: bool) -> Result<()> {
    serve_then(config, adapters, with_worker, |_| {}).await
}

/// [`serve`], calling `on_bound` with the public base URL once the address is bound (the
/// sandbox prints it: with port 0 only then is it known).
pub async fn serve_then(
    mut config: Config,
    mut adapters: Adapters,
    with_worker: bool,
    on_bound: impl FnOnce(&str),
) -> Result<()> {
    let listener = std::net::TcpListener::bind(config.bind)
        .map_err(|e| msg(format!("STABLEPAY_BIND: cannot bind {}: {e}", config.bind)))?;
    let local = listener.local_addr().map_err(|e| msg(format!("STABLEPAY_BIND: {e}")))?;
    if !config.public_base_url_explicit {
        config.public_base_url = format!("http://{local}");
    }
    // The worker's emails link to the hosted pages at the address actually bound.
    adapters.public_base_url.clone_from(&config.public_base_url);
    let now = chrono::Utc::now();
    let status =
        Arc::new(if with_worker { WorkerStatus::running(config.worker_interval, now) } else { WorkerStatus::off(now) });
    // The recorder first: the HTTP workers keep the handles they take on their first request.
    if config.metrics_bind.is_some() {
        crate::metrics::handle()?;
    }
    let (running, http_pools) = start_http(&config, &adapters, &status, listener)?;
    // After the API's line: scripts read the API's address from the first line.
    let metrics_server = match config.metrics_bind {
        Some(bind) => {
            let mut pools = vec![("worker".to_owned(), adapters.store.clone())];
            pools.extend(http_pools.into_iter().enumerate().map(|(i, p)| (format!("http-{i}"), p)));
            Some(crate::metrics::serve(bind, pools, status.clone(), adapters.clone())?)
        }
        None => None,
    };
    on_bound(&config.public_base_url);
    spawn_chain_check(&adapters);
    if with_worker {
        announce_email(&config.email);
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let workers = if with_worker { spawn_workers(&config, &adapters, stop_rx, status) } else { Vec::new() };
    shutdown_signal().await;
    let grace = config.shutdown_grace;
    tracing::info!(grace_seconds = grace.as_secs(), "shutting down: no new connections; finishing what is in flight");
    stop_within(grace, running, metrics_server, (stop_tx, workers)).await
}

/// The HTTP server, serving on a task of its own.
struct Running {
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    handle: actix_web::dev::ServerHandle,
    /// The listener of key changes, which the key cache relies on.
    key_listener: tokio::task::JoinHandle<()>,
    /// The checkout signals' `LISTEN` loop and sender.
    checkout_listener: (tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>),
}

/// Starts the HTTP server on `listener`, one state (and pool) per HTTP worker; prints the
/// address it serves on. Answers the server and the HTTP workers' pools (for the metrics).
fn start_http(
    config: &Config,
    adapters: &Adapters,
    status: &Arc<WorkerStatus>,
    listener: std::net::TcpListener,
) -> Result<(Running, Vec<stablepay_postgres::PgStore>)> {
    let local = listener.local_addr().map_err(|e| msg(format!("STABLEPAY_BIND: {e}")))?;
    let (states, http_pools) = adapters.http_states(config, status)?;
    let limits = actix_web::web::Data::new(RequestLimits::new(config.body_timeout, config.body_memory_mib));
    // Cached key lookups are used only while this connection listens for their invalidations.
    let key_listener =
        stablepay_postgres::listen_for_key_changes(config.database_url.clone(), adapters.key_cache.clone());
    // Checkout pages that follow their checkout are signalled through this connection.
    let checkout_listener = (
        stablepay_postgres::listen_for_checkouts(config.database_url.clone(), adapters.checkout_signals.clone()),
        stablepay_postgres::send_checkout_signals(adapters.store.clone(), adapters.checkout_signals.clone()),
    );
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // The factory runs once in each HTTP worker thread: each worker takes its own state.
    let max_connections = connection_cap(config.max_connections);
    let server = HttpServer::new(move || {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % states.len().max(1);
        crate::http_app::build(states[i].clone(), limits.clone())
    })
    .workers(config.http_workers)
    // actix's cap is per worker; the configured one is for the process.
    .max_connections(max_connections.div_ceil(config.http_workers.max(1)))
    // The request head must arrive within 5 s; a body within STABLEPAY_BODY_TIMEOUT_MS.
    .client_request_timeout(Duration::from_secs(5))
    .keep_alive(Duration::from_secs(5))
    // Signals are handled by `serve_then`: the API and the worker stop together, within one grace.
    .disable_signals()
    .shutdown_timeout(config.shutdown_grace.as_secs())
    .listen(listener)
    .map_err(|e| msg(format!("STABLEPAY_BIND: cannot listen on {local}: {e}")))?;
    let addrs = server.addrs();
    let server = server.run();
    let handle = server.handle();
    // Polled from now on: the API serves before anything after (a chain node that does not
    // answer must not hold requests in the listen queue).
    let task = tokio::spawn(server);
    for addr in &addrs {
        // The one line on stdout: tests and scripts read the actual port from it.
        println!("stablepay listening on http://{addr}");
    }
    tracing::info!(addresses = ?addrs, public_base_url = %config.public_base_url, "HTTP API started");
    Ok((Running { task, handle, key_listener, checkout_listener }, http_pools))
}

/// Stops accepting now, tells the worker's loops to stop, and gives requests in flight and the
/// worker's batch `grace` (actix's shutdown timeout) to finish.
async fn stop_within(
    grace: Duration,
    running: Running,
    metrics_server: Option<actix_web::dev::ServerHandle>,
    (stop, workers): (watch::Sender<bool>, Vec<tokio::task::JoinHandle<()>>),
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + grace;
    let stopping = running.handle.stop(true);
    let _ = stop.send(true);
    let finished = tokio::time::timeout_at(deadline, async {
        stopping.await;
        if let Some(m) = &metrics_server {
            m.stop(true).await;
        }
        let served = running.task.await;
        for task in workers {
            let _ = task.await;
        }
        running.key_listener.abort();
        running.checkout_listener.0.abort();
        running.checkout_listener.1.abort();
        served
    })
    .await;
    match finished {
        Ok(Ok(Ok(()))) => {
            tracing::info!("stopped");
            Ok(())
        }
        Ok(Ok(Err(e))) => Err(msg(format!("HTTP server: {e}"))),
        Ok(Err(e)) => Err(msg(format!("HTTP server task: {e}"))),
        Err(_) => {
            // Whatever is still running ends with the process; its claims are leases, which
            // run out, and another worker does the work (nothing is lost).
            tracing::warn!(grace_seconds = grace.as_secs(), "the grace ended with work in flight; exiting anyway");
            Ok(())
        }
    }
}

/// The background loops: due work, the live chain (verification and detection), webhook
/// deliveries, exports, reconciliation runs and the relayer's sender.
fn spawn_workers(
    config: &Config,
    adapters: &Adapters,
    stop: watch::Receiver<bool>,
    status: Arc<WorkerStatus>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let (due, chain, hooks, exports) = (adapters.clone(), adapters.clone(), adapters.clone(), adapters.clone());
    let (runs, relay) = (adapters.clone(), adapters.clone());
    let (interval, poll) = (config.worker_interval, config.chain.poll);
    let (stop_due, stop_chain, stop_exports, stop_hooks) = (stop.clone(), stop.clone(), stop.clone(), stop.clone());
    let (stop_runs, stop_relay) = (stop.clone(), stop);
    let status_chain = status.clone();
    let database_url = config.database_url.clone();
    // New work wakes the idle loops (`NOTIFY stablepay_work`), until the due loop stops.
    let wakes = stablepay_postgres::WorkWakes::default();
    let listener = stablepay_postgres::listen_for_work(database_url.clone(), wakes.clone());
    let (w_due, w_chain, w_exports, w_runs) = (wakes.clone(), wakes.clone(), wakes.clone(), wakes);
    vec![
        tokio::spawn(async move {
            worker::run(due, interval, stop_due, status, w_due).await;
            listener.abort();
        }),
        tokio::spawn(async move { worker::run_chain(chain, poll, stop_chain, status_chain, w_chain).await }),
        tokio::spawn(async move { crate::deliveries::run(hooks, database_url, stop_hooks).await }),
        tokio::spawn(async move { worker::run_exports(exports, interval, stop_exports, w_exports).await }),
        tokio::spawn(async move { worker::run_reconciliations(runs, interval, stop_runs, w_runs).await }),
        tokio::spawn(async move { worker::run_relay(relay, poll, stop_relay).await }),
    ]
}

/// At start, in the background (a node that does not answer takes the RPC timeout, and
/// nothing waits for it): says whether live payments can be verified (the chain id of the
/// endpoints is checked; a mismatch is also what readiness reports).
fn spawn_chain_check(adapters: &Adapters) {
    let adapters = adapters.clone();
    tokio::spawn(async move {
        check_schema(&adapters).await;
        check_chain(&adapters).await
    });
}

/// Says at start-up when the database lacks migrations this binary knows (`serve
/// --no-migrate` against an older schema): requests answer 503 until `stablepay migrate` runs,
/// and the service recovers on its own once it has.
async fn check_schema(adapters: &Adapters) {
    match adapters.store.ping().await {
        Err(stablepay_domain::Error::SchemaBehind { pending }) => tracing::error!(
            pending = pending.len(),
            first = pending.first().map(String::as_str).unwrap_or(""),
            "the database lacks migrations of this release: run `stablepay migrate`; /readyz and every request answer 503 until then"
        ),
        Err(e) => tracing::warn!(error = %e, "the database does not answer yet"),
        Ok(()) => {}
    }
}

async fn check_chain(adapters: &Adapters) {
    use stablepay_domain::chain::ChainHealth;
    use stablepay_domain::ports::Chain;
    match adapters.chain.health().await {
        ChainHealth::Off => tracing::warn!("no chain RPC endpoint configured: live payments wait as detected"),
        ChainHealth::Ok => tracing::info!(chain_id = adapters.chain_settings.chain_id, "chain RPC endpoint ready"),
        ChainHealth::Unreachable(d) => tracing::warn!(detail = %d, "chain RPC endpoints do not answer yet"),
        ChainHealth::WrongChain(d) => tracing::error!(detail = %d, "live payments are not verified"),
    }
}

/// Says where the worker sends customers' emails: an operator who set no SMTP server learns
/// at start-up that they are written as files, not sent.
fn announce_email(email: &crate::config::EmailConfig) {
    match &email.smtp_url {
        Some(url) => tracing::info!(
            smtp = %crate::config::printable("STABLEPAY_SMTP_URL", url),
            "emails to customers are sent through SMTP"
        ),
        None => tracing::warn!(
            folder = %email.folder,
            "no SMTP server configured (STABLEPAY_SMTP_URL): emails to customers are written as .eml files to this folder, not sent"
        ),
    }
}

/// Descriptors kept free for everything but client connections (database pools, files).
const RESERVED_DESCRIPTORS: usize = 256;

/// The process's connection cap: the configured one, lowered (with a warning) when the limit
/// on open files could not hold it, so a flood of connections is queued, not fatal.
fn connection_cap(configured: usize) -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    match limit {
        Some(limit) if configured + RESERVED_DESCRIPTORS > limit => {
            let cap = limit.saturating_sub(RESERVED_DESCRIPTORS).max(1);
            tracing::warn!(
                configured,
                open_files_limit = limit,
                cap,
                "STABLEPAY_MAX_CONNECTIONS lowered to fit the open-files limit"
            );
            cap
        }
        _ => configured,
    }
}

/// Runs only the worker until SIGINT/SIGTERM.
pub async fn run_worker(config: Config, adapters: Adapters) -> Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let status = Arc::new(WorkerStatus::running(config.worker_interval, chrono::Utc::now()));
    let metrics_server = config
        .metrics_bind
        .map(|bind| {
            let pools = vec![("worker".to_owned(), adapters.store.clone())];
            crate::metrics::serve(bind, pools, status.clone(), adapters.clone())
        })
        .transpose()?;
    spawn_chain_check(&adapters);
    announce_email(&config.email);
    // The checkouts the worker changes (expired, credited) are signalled to their pages.
    let signals = stablepay_postgres::send_checkout_signals(adapters.store.clone(), adapters.checkout_signals.clone());
    let tasks = spawn_workers(&config, &adapters, stop_rx, status);
    shutdown_signal().await;
    tracing::info!(grace_seconds = config.shutdown_grace.as_secs(), "shutting down: finishing the current batch");
    let _ = stop_tx.send(true);
    let finished = tokio::time::timeout(config.shutdown_grace, async {
        for task in tasks {
            let _ = task.await;
        }
    })
    .await;
    if let Some(m) = &metrics_server {
        m.stop(true).await;
    }
    signals.abort();
    if finished.is_err() {
        tracing::warn!("the grace ended with work in flight; its leases run out and another worker takes it");
    } else {
        tracing::info!("stopped");
    }
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Applies the pending migrations (`stablepay migrate`, and `serve` unless `--no-migrate`).
pub async fn migrate(config: &Config) -> Result<()> {
    let applied = stablepay_postgres::run_migrations(&config.database_url)
        .await
        .map_err(|e| msg(format!("migrations: {e} (DATABASE_URL)")))?;
    tracing::info!(applied = applied.len(), versions = ?applied, "migrations applied");
    Ok(())
}
