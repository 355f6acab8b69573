//! `GET /metrics` in the Prometheus text format, on its own address (`STABLEPAY_METRICS_BIND`,
//! 127.0.0.1:9464 by default), apart from the public API. The code records through the
//! `metrics` facade (requests by route and status with latency histograms in the HTTP
//! middleware, idempotency conflicts, webhook outcomes by category, the chain follower's lag);
//! a scrape adds the pools' use and the due-work queues (depth and the oldest item's age), read
//! at that moment, the background worker's counters and the relayer's state (balance, today's
//! gas and spend, outcomes).

use std::sync::Arc;

use actix_web::{App, HttpResponse, HttpServer, web};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use stablepay_http::status::WorkerStatus;
use stablepay_postgres::PgStore;

use crate::wiring::Adapters;
use crate::wiring::anyhow_lite::{Result, msg};

/// Latency buckets in seconds: 1 ms to 10 s.
const LATENCY_BUCKETS: [f64; 14] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

static HANDLE: std::sync::OnceLock<PrometheusHandle> = std::sync::OnceLock::new();

/// The process's recorder, installed on first use (before anything records that should be seen:
/// records made before are dropped by the facade's no-op recorder).
pub fn handle() -> Result<PrometheusHandle> {
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_duration_seconds".into()), &LATENCY_BUCKETS)
        .map_err(|e| msg(format!("metrics: {e}")))?
        .install_recorder()
        .map_err(|e| msg(format!("metrics: {e}")))?;
    Ok(HANDLE.get_or_init(|| handle).clone())
}

/// What a scrape reads.
struct Scrape {
    handle: PrometheusHandle,
    /// Each pool of this process, with its name (`worker`, `http-0` ...).
    pools: Vec<(String, PgStore)>,
    worker: Arc<WorkerStatus>,
    /// The use cases, for the relayer's state.
    adapters: Adapters,
}

/// How long a scrape waits for the relayer's state (its balance and fees from the chain).
const RELAYER_PROBE: std::time::Duration = std::time::Duration::from_secs(2);

/// A count or an amount as a gauge's value (gauges are floating point; the value is read from
/// its exact decimal text, never computed in floating point).
fn gauge_value(exact: &str) -> f64 {
    exact.parse().unwrap_or(0.0)
}

/// The relayer's gauges (none when it is off): its balance, today's gas and spend against the
/// day's limit, today's outcomes and what is in flight. Counters of outcomes, sends,
/// replacements and refused broadcasts are recorded by the relayer's loop.
async fn relayer_gauges(adapters: &Adapters) {
    use stablepay_domain::relay::model::pol;
    let status = match tokio::time::timeout(RELAYER_PROBE, adapters.use_cases().relays().status()).await {
        Ok(Ok(Some(status))) => status,
        Ok(Ok(None)) => return,
        Ok(Err(_)) | Err(_) => {
            metrics::gauge!("stablepay_relayer_up").set(0);
            return;
        }
    };
    metrics::gauge!("stablepay_relayer_up").set(u32::from(status.balance_wei.is_some()));
    if let Some(wei) = status.balance_wei {
        metrics::gauge!("stablepay_relayer_balance_pol").set(gauge_value(&pol(wei)));
    }
    let t = &status.today;
    metrics::gauge!("stablepay_relayer_gas_used_today").set(gauge_value(&t.gas.to_string()));
    metrics::gauge!("stablepay_relayer_daily_gas_limit").set(gauge_value(&status.daily_gas_limit.to_string()));
    metrics::gauge!("stablepay_relayer_spent_today_pol").set(gauge_value(&pol(t.spent_wei)));
    let outcomes = [("confirmed", t.confirmed), ("failed", t.failed), ("front_run", t.front_run)];
    for (outcome, n) in outcomes {
        metrics::gauge!("stablepay_relayer_submissions_today", "outcome" => outcome).set(gauge_value(&n.to_string()));
    }
    metrics::gauge!("stablepay_relayer_in_flight").set(gauge_value(&t.in_flight.to_string()));
}

async fn metrics(scrape: web::Data<Scrape>) -> HttpResponse {
    for (name, pool) in &scrape.pools {
        let used = pool.pool_use();
        let gauge = |state: &'static str, n: usize| {
            metrics::gauge!("stablepay_db_pool_connections", "pool" => name.clone(), "state" => state)
                .set(u32::try_from(n).unwrap_or(u32::MAX));
        };
        gauge("open", used.open);
        gauge("idle", used.idle);
        gauge("max", used.max);
        gauge("waiting", used.waiting);
    }
    if let Some((_, store)) = scrape.pools.first() {
        match store.queue_stats().await {
            Ok(queues) => {
                for q in queues {
                    metrics::gauge!("stablepay_queue_depth", "queue" => q.queue.clone())
                        .set(u32::try_from(q.depth).unwrap_or(u32::MAX));
                    metrics::gauge!("stablepay_queue_oldest_age_seconds", "queue" => q.queue).set(q.oldest_age_seconds);
                }
                metrics::gauge!("stablepay_database_up").set(1);
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics: the queues could not be read");
                metrics::gauge!("stablepay_database_up").set(0);
            }
        }
    }
    relayer_gauges(&scrape.adapters).await;
    let mut text = scrape.handle.render();
    text.push_str(&scrape.worker.metrics(chrono::Utc::now()));
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(text)
}

/// Binds the metrics address and serves it (on the current runtime) until stopped through the
/// answered handle; prints
/// `stablepay metrics on http://ADDR` (the address actually bound).
pub fn serve(
    bind: std::net::SocketAddr,
    pools: Vec<(String, PgStore)>,
    worker: Arc<WorkerStatus>,
    adapters: Adapters,
) -> Result<actix_web::dev::ServerHandle> {
    let handle = self::handle()?;
    let listener = std::net::TcpListener::bind(bind)
        .map_err(|e| msg(format!("STABLEPAY_METRICS_BIND: cannot bind {bind}: {e}")))?;
    let local = listener.local_addr().map_err(|e| msg(format!("STABLEPAY_METRICS_BIND: {e}")))?;
    let data = web::Data::new(Scrape { handle, pools, worker, adapters });
    let server = HttpServer::new(move || App::new().app_data(data.clone()).route("/metrics", web::get().to(metrics)))
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)
        .map_err(|e| msg(format!("STABLEPAY_METRICS_BIND: cannot listen on {local}: {e}")))?
        .run();
    let stop = server.handle();
    tokio::spawn(server);
    {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "stablepay metrics on http://{local}");
    }
    tracing::info!(address = %local, "metrics served");
    Ok(stop)
}
