//! Query plans at scale. PostgreSQL's own `auto_explain` logs the plan, with the rows each node
//! really read, of every statement the service sends while a merchant runs every example of the
//! API reference (each documented operation, the dashboard's included, with the worker's passes
//! behind them). The tables hold thousands of other merchants' rows, copied in SQL from a
//! template merchant that ran the same examples first (tools/scale/clone.sql). It runs twice:
//!
//! 1. on empty statistics (never analyzed, autovacuum off) with every prepared statement on its
//!    generic plan, as in a new deployment's first hours or on a table that grew faster than
//!    autovacuum followed (the case the flash-sale benchmark found);
//! 2. analyzed, with PostgreSQL's own choice between custom and generic plans.
//!
//! Each time, no plan may scan a large table sequentially, and no scan of a large table may read
//! more than a few hundred rows: the merchant owns fewer than that, so a scan that reads more is
//! reading other merchants' rows. The statements run inside the database's own functions and
//! triggers (the webhook fan-out, the months of events) are checked too, and a partitioned
//! table's months count as tables of their own.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::receiver::Receiver;
use crate::reference::run_every_example;
use crate::support::{BIN, PrivateCluster, TestApp, fresh_db};

/// Copies of the template merchant.
const COPIES: i32 = 2_000;
/// A table with at least this many rows is large.
const LARGE: i64 = 10_000;
/// The most rows one scan node may read (returned or filtered out, over all its loops).
const MOST_READ: u64 = 500;
/// The application name of the test's own connections, whose statements are not checked.
const OWN: &str = "plan-check";

async fn sql(url: &str, statement: &str) -> Vec<tokio_postgres::Row> {
    let db = stablepay_test_db::connect(&format!("{url}?application_name={OWN}")).await;
    db.simple_query("SET statement_timeout = 0").await.unwrap();
    db.query(statement, &[]).await.unwrap_or_else(|e| panic!("{statement}: {e}"))
}

/// The plans the log holds after byte `from`, of statements sent by anything but the test
/// itself: (query text, plan) pairs.
fn plans(log: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix('\t') {
            if let Some((_, body)) = entries.last_mut() {
                body.push_str(rest);
                body.push('\n');
            }
        } else {
            entries.push((line.to_owned(), String::new()));
        }
    }
    for (head, body) in entries {
        // `%m [%p] %a: LOG:  duration: ... ms  plan:`
        if !head.ends_with("plan:") || head.contains(&format!("] {OWN}: ")) {
            continue;
        }
        let plan: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("a plan that is not JSON ({e}): {body}"));
        out.push((plan["Query Text"].as_str().unwrap_or_default().to_owned(), plan["Plan"].clone()));
    }
    out
}

/// What is wrong with `node` and the nodes below it, on the large tables.
fn faults(node: &Value, large: &BTreeMap<String, i64>, out: &mut Vec<String>) {
    // PostgreSQL 15 writes row counts as integers (per loop).
    let number = |k: &str| node[k].as_u64().unwrap_or(0);
    if let Some(table) = node["Relation Name"].as_str().filter(|t| large.contains_key(*t)) {
        let kind = node["Node Type"].as_str().unwrap_or_default();
        let read = (number("Actual Rows") + number("Rows Removed by Filter") + number("Rows Removed by Index Recheck"))
            * number("Actual Loops").max(1);
        if kind == "Seq Scan" {
            out.push(format!("a sequential scan of {table} ({} rows)", large[table]));
        } else if read > MOST_READ {
            let index = node["Index Name"].as_str().unwrap_or("-");
            out.push(format!("{kind} of {table} on {index} read {read} rows"));
        }
    }
    for child in node["Plans"].as_array().into_iter().flatten() {
        faults(child, large, out);
    }
}

/// Every fault of the plans logged since byte `from`, with its statement; and how many
/// distinct statements were checked.
fn check(log_path: &std::path::Path, from: usize, large: &BTreeMap<String, i64>) -> (Vec<String>, usize) {
    let log = std::fs::read(log_path).unwrap();
    let log = String::from_utf8_lossy(&log[from..]);
    let mut statements = BTreeMap::new();
    for (query, plan) in plans(&log) {
        let mut found = Vec::new();
        faults(&plan, large, &mut found);
        let entry: &mut Vec<String> = statements.entry(query).or_default();
        entry.extend(found);
    }
    let faults = statements
        .iter()
        .filter(|(_, f)| !f.is_empty())
        .map(|(q, f)| format!("{}\n    {}", f.join("; "), q.split_whitespace().collect::<Vec<_>>().join(" ")))
        .collect();
    (faults, statements.len())
}

fn log_len(cluster: &PrivateCluster) -> usize {
    std::fs::metadata(cluster.log()).map_or(0, |m| usize::try_from(m.len()).unwrap())
}

/// Waits until the template's webhooks, emails and exports are settled, so its copies leave
/// the worker nothing to do.
async fn settled(url: &str) {
    let busy =
        "SELECT (SELECT count(*) FROM webhook_deliveries WHERE status IN ('pending', 'delivering', 'retry_scheduled'))
                + (SELECT count(*) FROM emails WHERE status = 'queued')
                + (SELECT count(*) FROM exports WHERE status IN ('queued', 'running'))";
    for _ in 0..300 {
        if sql(url, busy).await[0].get::<_, i64>(0) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the template's work did not settle within 30 s");
}

/// More of a shop's everyday records for the template: checkouts paid in full and in part,
/// itemized invoices emailed to their customers.
async fn volume(app: &TestApp, key: &str, receiver: &Receiver) {
    app.post(key, "/v1/webhook-endpoints", json!({ "url": receiver.url("/plans") })).await.ok(201);
    for i in 0..8 {
        let cs = app.post(key, "/v1/checkout-sessions", json!({ "amount": "10.00" })).await.ok(201).clone();
        let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
        let amount = if i % 4 == 0 { "4.00" } else { "10.00" };
        app.post(key, &pay, json!({ "amount": amount })).await.ok(201);
    }
    let body = json!({ "lines": [{ "description": "Tea", "quantity": "2", "unitAmount": "4.50" }],
                       "customer": { "email": "ada@example.com" }, "issue": true });
    for _ in 0..4 {
        let inv = app.post(key, "/v1/invoices", body.clone()).await.ok(201)["id"].as_str().unwrap().to_owned();
        app.post(key, &format!("/v1/invoices/{inv}/send"), json!({})).await.ok(202);
    }
}

/// Runs every example as a new merchant and answers the faults found in the plans logged.
async fn phase(app: &TestApp, cluster: &PrivateCluster, name: &str, large: &BTreeMap<String, i64>) -> Vec<String> {
    let from = log_len(cluster);
    let m = app.merchant(name);
    let (refused, _) = run_every_example(app, &m, &format!("{}@example.com", name.to_lowercase())).await;
    assert!(refused.is_empty(), "examples refused as input:\n{}", refused.join("\n"));
    // The worker's passes over what the examples left (deliveries, emails, exports).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (faults, statements) = check(&cluster.log(), from, large);
    eprintln!("{name}: {statements} distinct statements checked, {} with a fault", faults.len());
    assert!(statements > 100, "only {statements} statements were logged");
    faults
}

#[tokio::test]
async fn no_statement_scans_a_large_table_or_reads_other_merchants_rows() {
    let cluster = PrivateCluster::start_with(&[
        "shared_preload_libraries=auto_explain",
        "auto_explain.log_min_duration=0",
        "auto_explain.log_format=json",
        "auto_explain.log_analyze=on",
        "auto_explain.log_timing=off",
        "auto_explain.log_nested_statements=on",
        "autovacuum=off",
        "\"log_line_prefix=%m [%p] %a: \"",
    ])
    .await;
    let url = cluster.url("postgres");
    sql(&url, "ALTER SYSTEM SET plan_cache_mode = force_generic_plan").await;
    sql(&url, "SELECT pg_reload_conf()").await;
    let out = Command::new(BIN).arg("migrate").env("DATABASE_URL", &url).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = crate::emails::tempdir::Dir::new("stablepay-plans-emails");
    let env = [
        ("DATABASE_URL", url.clone()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
        ("STABLEPAY_EMAIL_DIR", dir.0.to_string_lossy().into_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1s".to_owned()),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
    ];
    let mut app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let template = app.merchant("Template");
    let (refused, _) = run_every_example(&app, &template, "template@example.com").await;
    assert!(refused.is_empty(), "examples refused as input:\n{}", refused.join("\n"));
    let receiver = Receiver::start().await;
    volume(&app, &template.sk_test, &receiver).await;
    settled(&url).await;
    let clone = include_str!("../../../../tools/scale/clone.sql");
    let db = stablepay_test_db::connect(&format!("{url}?application_name={OWN}")).await;
    db.batch_execute(clone).await.unwrap();
    db.execute("SELECT pg_temp.clone_merchant($1, 1, $2)", &[&template.id, &COPIES]).await.unwrap();
    let mut large = BTreeMap::new();
    let tables = ["invoices", "checkout_sessions", "payments", "events", "webhook_deliveries", "webhook_attempts"];
    for t in tables.into_iter().chain(["emails", "payment_links", "idempotency_keys"]) {
        let rows: i64 = db.query_one(&format!("SELECT count(*) FROM {t}"), &[]).await.unwrap().get(0);
        eprintln!("{t}: {rows} rows");
        if rows >= LARGE {
            large.insert(t.to_owned(), rows);
        }
        // A partitioned table's plans name its partitions (its months).
        let parts = db
            .query("SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = $1::text::regclass", &[&t])
            .await
            .unwrap();
        for part in parts {
            let name: String = part.get(0);
            let rows: i64 = db.query_one(&format!("SELECT count(*) FROM {name}"), &[]).await.unwrap().get(0);
            if rows >= LARGE {
                large.insert(name, rows);
            }
        }
    }
    eprintln!("large tables: {large:?}");
    assert!(large.contains_key("invoices") && large.contains_key("events"), "{large:?}");

    let generic = phase(&app, &cluster, "Generic", &large).await;
    for statement in ["ANALYZE", "ALTER SYSTEM RESET plan_cache_mode", "SELECT pg_reload_conf()"] {
        db.batch_execute(statement).await.unwrap();
    }
    app.kill_and_restart(&env).await;
    let analyzed = phase(&app, &cluster, "Analyzed", &large).await;
    assert!(
        generic.is_empty() && analyzed.is_empty(),
        "on empty statistics, generic plans:\n{}\n\nanalyzed:\n{}",
        generic.join("\n"),
        analyzed.join("\n")
    );
}
