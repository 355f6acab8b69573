//! PostgreSQL failover under load: a pg_auto_failover formation of the test's own (a monitor and
//! two data nodes with a synchronous standby, from tools/failover/formation.sh), the service
//! given every node in `DATABASE_URL` with `target_session_attrs=read-write`. The primary is
//! killed hard (its keeper and its postmaster with SIGKILL, as a machine that dies) while
//! clients create checkouts, pay them in test mode and receive their webhooks; pg_auto_failover
//! promotes the secondary. Then the old primary comes back as a secondary and the new primary is
//! killed in turn. No process of the service is restarted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;

use crate::receiver::Receiver;
use crate::support::{BIN, TestApp, fresh_db};

/// `STABLEPAY_DB_TIMEOUT_MS` of the service under test.
const DB_TIMEOUT: Duration = Duration::from_secs(2);
/// `STABLEPAY_IDEMPOTENCY_LEASE_SECONDS` of the service under test.
const LEASE: Duration = Duration::from_secs(10);

/// A pg_auto_failover formation on private ports; stopped and removed when dropped.
struct Formation {
    dir: PathBuf,
    port: u16,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/failover/formation.sh")
}

/// Three consecutive free ports (monitor, node1, node2).
fn free_ports() -> u16 {
    loop {
        let base = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if base < 60000 && (1..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
}

impl Formation {
    async fn start() -> Self {
        let port = free_ports();
        let dir = std::env::temp_dir().join(format!("stablepay-formation-{port}-{}", std::process::id()));
        let formation = Self { dir, port };
        let out = formation.run(&["start", &port.to_string()]).await;
        assert!(out.contains("target_session_attrs=read-write"), "the formation's URI: {out}");
        formation
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = Command::new(script())
            .arg(args[0])
            .arg(&self.dir)
            .args(&args[1..])
            .output()
            .await
            .expect("tools/failover/formation.sh");
        assert!(
            out.status.success(),
            "formation.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The URL the service is given: every data node, the writable one wanted.
    fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
            self.port + 1,
            self.port + 2
        )
    }

    /// The node (`node1` or `node2`) the monitor has as primary.
    async fn primary(&self) -> String {
        let dir = self.run(&["primary"]).await;
        dir.trim().rsplit('/').next().unwrap_or_default().to_owned()
    }

    /// Waits until `node` is the writable primary and the other is a secondary (or, with
    /// `alone`, until `node` accepts writes without its standby); returns the state seen.
    async fn wait_for(&self, node: &str, alone: bool, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let state = self.run(&["state"]).await;
            // A row's columns: name, node, host:port, TLI: LSN, connection, reported, assigned.
            let row = |name: &str| -> Vec<String> {
                let line = state.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or("");
                line.split('|').map(|c| c.trim().to_owned()).collect()
            };
            let (me, other) = (row(node), row(if node == "node1" { "node2" } else { "node1" }));
            let is =
                |r: &[String], reported: &str, assigned: &str| r.len() == 7 && r[5] == reported && r[6] == assigned;
            // `wait_primary` is not `primary`: the monitor fails over only from `primary`, once
            // the standby has caught up and is synchronous again.
            let ready = if alone {
                me.len() == 7
                    && me[4].starts_with("read-write")
                    && ["wait_primary", "primary"].contains(&me[5].as_str())
            } else {
                is(&me, "primary", "primary") && is(&other, "secondary", "secondary")
            };
            if ready {
                return state;
            }
            assert!(start.elapsed() < limit, "{node} not promoted in {limit:?}:\n{state}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Formation {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script()).arg("stop").arg(&self.dir).output();
    }
}

async fn cli_json(url: &str, args: &[&str]) -> Value {
    let out = Command::new(BIN).args(args).env("DATABASE_URL", url).output().await.unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One keyed request and what it answered.
#[derive(Clone, Debug)]
struct Answer {
    /// `cs` (a checkout) or `pay` (its test payment).
    kind: &'static str,
    key: String,
    status: u16,
    id: Option<String>,
    took: Duration,
    at: Instant,
}

/// A client: creates a checkout, then pays it, each under its own Idempotency-Key, until
/// told to stop; keeps every answer.
async fn client(app: (reqwest::Client, String), key: String, c: usize, running: Arc<AtomicBool>) -> Vec<Answer> {
    let (http, base) = app;
    let mut answers = Vec::new();
    let mut n = 0;
    while running.load(Ordering::Relaxed) {
        n += 1;
        let idem = format!("c{c}-{n}");
        let body = json!({ "amount": "2.00", "externalReference": idem });
        let a = keyed(&http, &format!("{base}/v1/checkout-sessions"), &key, ("cs", &idem), body).await;
        let session = a.id.clone();
        answers.push(a);
        if let Some(cs) = session {
            let path = format!("{base}/v1/test-helpers/checkout-sessions/{cs}/payments");
            answers.push(keyed(&http, &path, &key, ("pay", &format!("{idem}-pay")), json!({})).await);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    answers
}

async fn keyed(http: &reqwest::Client, url: &str, key: &str, what: (&'static str, &str), body: Value) -> Answer {
    let start = Instant::now();
    let res = http.post(url).bearer_auth(key).header("Idempotency-Key", what.1).json(&body).send().await;
    let (status, body) = match res {
        Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap_or_default()),
        Err(e) => panic!("the service dropped a request: {e}"),
    };
    if status == 503 {
        assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");
    }
    let id = id_of(&body);
    Answer { kind: what.0, key: what.1.to_owned(), status, id, took: start.elapsed(), at: Instant::now() }
}

/// The id of a checkout (`id`) or of a payment (`data.id`, its envelope).
fn id_of(body: &Value) -> Option<String> {
    body["id"].as_str().or(body["data"]["id"].as_str()).map(str::to_owned)
}

/// Kills the primary, waits for the other node's promotion, and returns how long after the
/// promotion the service answered a creation again.
async fn fail_over(formation: &Formation, app: &TestApp, key: &str) -> Duration {
    let old = formation.primary().await;
    let new = if old == "node1" { "node2" } else { "node1" };
    formation.run(&["kill", &old]).await;
    formation.wait_for(new, true, Duration::from_secs(60)).await;
    let promoted = Instant::now();
    loop {
        let r = app.post(key, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await;
        if r.status == 201 {
            return promoted.elapsed();
        }
        assert_eq!(r.status, 503, "{:?}", r.body);
        assert!(promoted.elapsed() < Duration::from_secs(30), "no answer within 30 s of the promotion");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn failovers_lose_no_acknowledged_write_and_duplicate_nothing() {
    let formation = Formation::start().await;
    let url = formation.url();
    let out = Command::new(BIN).arg("migrate").env("DATABASE_URL", &url).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (db, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let sync: String = db.query_one("SHOW synchronous_standby_names", &[]).await.unwrap().get(0);
    assert!(sync.starts_with("ANY 1"), "the standby is synchronous: {sync}");
    drop(db);
    let merchant = cli_json(&url, &["merchant", "create", "--name", "Shop", "--json"]).await;
    let id = merchant["id"].as_str().unwrap();
    let key =
        cli_json(&url, &["key", "create", "--merchant", id, "--mode", "test", "--type", "secret", "--json"]).await;
    let key = key["key"].as_str().unwrap().to_owned();
    let env = [
        ("DATABASE_URL", url.clone()),
        ("STABLEPAY_DB_TIMEOUT_MS", DB_TIMEOUT.as_millis().to_string()),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1s,1s,2s,5s".to_owned()),
        // A claim whose own commit's answer was lost in the failover is held for its lease.
        ("STABLEPAY_IDEMPOTENCY_LEASE_SECONDS", LEASE.as_secs().to_string()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let receiver = Receiver::start().await;
    app.post(&key, "/v1/webhook-endpoints", json!({ "url": receiver.url("/hooks") })).await.ok(201);

    let running = Arc::new(AtomicBool::new(true));
    let clients: Vec<_> = (0..4)
        .map(|c| tokio::spawn(client((app.http.clone(), app.base.clone()), key.clone(), c, running.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let first = fail_over(&formation, &app, &key).await;
    // The old primary comes back as a secondary; then the new primary dies in turn.
    let back = formation.primary().await;
    let old = if back == "node1" { "node2" } else { "node1" };
    formation.run(&["revive", old]).await;
    formation.wait_for(&back, false, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = fail_over(&formation, &app, &key).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.store(false, Ordering::Relaxed);
    let mut answers = Vec::new();
    for c in clients {
        answers.extend(c.await.unwrap());
    }
    eprintln!("answered again {first:?} and {second:?} after the promotions");
    check_answers(&answers);
    check_nothing_lost(&app, &url, &key, &answers).await;
    check_events_delivered(&app, &key, &receiver).await;
}

/// Every answer was a success or a retryable 503, none hung past the database timeout, and the
/// outages were seen.
fn check_answers(answers: &[Answer]) {
    let odd: Vec<_> = answers.iter().filter(|a| !(200..300).contains(&a.status) && a.status != 503).collect();
    assert!(odd.is_empty(), "answers other than 2xx and 503: {:?}", &odd[..odd.len().min(3)]);
    let slow: Vec<_> = answers.iter().filter(|a| a.took > DB_TIMEOUT * 2 + Duration::from_secs(1)).collect();
    assert!(
        slow.is_empty(),
        "{} requests hung past the database timeout: {:?}",
        slow.len(),
        &slow[..slow.len().min(3)]
    );
    let unavailable = answers.iter().filter(|a| a.status == 503).count();
    let longest = answers.iter().map(|a| a.took).max().unwrap_or_default();
    eprintln!("{} answers, {unavailable} of them 503, the longest {longest:?}", answers.len());
    assert!(unavailable > 0, "the outages were not seen");
    let last = answers.iter().map(|a| a.at).max().unwrap();
    let late = answers.iter().filter(|a| a.status < 300 && last.duration_since(a.at) < Duration::from_millis(500));
    assert!(late.count() > 0, "no success at the end");
    let created = answers.iter().filter(|a| a.kind == "cs" && a.status == 201).count();
    assert!(created > 40, "too little load to say anything: {created} checkouts");
}

/// Every acknowledged write is on the last primary; every key, retried now, replays its one
/// result (an acknowledged one the same id; one that got 503 its own, once).
async fn check_nothing_lost(app: &TestApp, url: &str, key: &str, answers: &[Answer]) {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    for a in answers {
        let path = match a.kind {
            "cs" => "/v1/checkout-sessions".to_owned(),
            _ => {
                let cs = answers.iter().find(|c| c.kind == "cs" && a.key == format!("{}-pay", c.key));
                let cs = cs.and_then(|c| c.id.clone()).unwrap();
                format!("/v1/test-helpers/checkout-sessions/{cs}/payments")
            }
        };
        let body = if a.kind == "cs" { json!({ "amount": "2.00", "externalReference": a.key }) } else { json!({}) };
        let again = retried(app, key, &path, &a.key, body).await;
        assert_eq!(again.status, 201, "{} retried: {:?}", a.key, again.body);
        let id = id_of(&again.body).unwrap();
        if let Some(acknowledged) = &a.id {
            assert_eq!(&id, acknowledged, "{} replayed another result", a.key);
        }
        if let Some(seen) = ids.insert(a.key.clone(), id.clone()) {
            assert_eq!(seen, id, "{} answered two results", a.key);
        }
    }
    let (db, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let rows = db
        .query("SELECT external_reference, count(*) FROM checkout_sessions WHERE external_reference IS NOT NULL GROUP BY 1 HAVING count(*) > 1", &[])
        .await
        .unwrap();
    assert!(rows.is_empty(), "{} references made two checkouts", rows.len());
    let stored: BTreeSet<String> = db
        .query("SELECT id::text FROM checkout_sessions UNION ALL SELECT id::text FROM payments", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let acknowledged: Vec<&Answer> = answers.iter().filter(|a| a.status < 300).collect();
    for a in &acknowledged {
        let id = a.id.as_deref().unwrap();
        assert!(stored.contains(id), "acknowledged {id} ({}) is lost", a.key);
    }
    for (k, id) in ids.iter().filter(|(k, _)| k.ends_with("-pay")) {
        let cs = &ids[k.trim_end_matches("-pay")];
        let session = app.get(key, &format!("/v1/checkout-sessions/{cs}")).await.ok(200).clone();
        assert_eq!(session["status"], "completed", "{cs} after payment {id}");
    }
}

/// The request under `idem` again, as the spec tells a client: while the key answers 409
/// `in_progress`, wait its Retry-After. A failed attempt's key is released as soon as the
/// database answers again; a claim whose own commit's answer was lost in the failover (the
/// request answered 503 without knowing it held the key) is taken over after its lease.
async fn retried(app: &TestApp, key: &str, path: &str, idem: &str, body: Value) -> crate::support::Response {
    let start = Instant::now();
    loop {
        let r = app.post_idem(key, path, idem, body.clone()).await;
        if r.status != 409 || r.body["error"]["details"]["reason"] != "in_progress" {
            return r;
        }
        assert!(start.elapsed() < LEASE + Duration::from_secs(5), "{idem} still in progress after the lease");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Every event the service recorded reaches the receiver at least once.
async fn check_events_delivered(app: &TestApp, key: &str, receiver: &Receiver) {
    let mut events = BTreeSet::new();
    let mut path = "/v1/events?limit=100".to_owned();
    loop {
        let page = app.get(key, &path).await.ok(200).clone();
        let items = page["items"].as_array().unwrap();
        events.extend(items.iter().map(|e| e["id"].as_str().unwrap().to_owned()));
        match page["nextCursor"].as_str() {
            Some(cursor) if page["hasMore"] == true => path = format!("/v1/events?limit=100&startingAfter={cursor}"),
            _ => break,
        }
    }
    let start = Instant::now();
    loop {
        let got: BTreeSet<String> =
            receiver.received().iter().filter_map(|r| r.json()["id"].as_str().map(str::to_owned)).collect();
        let missing = events.difference(&got).count();
        if missing == 0 {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(90), "{missing} of {} events never delivered", events.len());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
