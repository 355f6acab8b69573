//! Test support: a fresh database per test (`stablepay-test-db`: copied from a template migrated
//! once), the real `stablepay` binary serving it on a random port, and small HTTP and CLI
//! helpers.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_stablepay");

pub use stablepay_test_db::TestDb;

/// A fresh database for one test; the template is migrated by the binary itself.
pub async fn fresh_db() -> TestDb {
    TestDb::new(|url| async move {
        let out =
            Command::new(BIN).arg("migrate").env("DATABASE_URL", &url).output().await.map_err(|e| e.to_string())?;
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    })
    .await
}

/// A running `stablepay serve` on its own database.
pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub db: TestDb,
    child: Child,
    pub stderr_path: std::path::PathBuf,
}

/// A merchant with one key of each kind.
#[derive(Clone, Debug)]
pub struct Merchant {
    pub id: String,
    pub sk_test: String,
    pub pk_test: String,
    pub sk_live: String,
    pub pk_live: String,
}

pub struct Response {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts an error envelope with this status and code; returns `details.field`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) -> Option<String> {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.body["success"], false, "body: {}", self.body);
        assert_eq!(self.body["error"]["code"], code, "body: {}", self.body);
        assert!(self.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        let rid = self.body["meta"]["requestId"].as_str().expect("meta.requestId");
        assert_eq!(self.header("x-request-id"), Some(rid));
        self.body["error"]["details"]["field"].as_str().map(str::to_owned)
    }

    /// Asserts a success envelope with this status; returns `data`.
    #[track_caller]
    pub fn ok(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.body["success"], true, "body: {}", self.body);
        let rid = self.body["meta"]["requestId"].as_str().expect("meta.requestId");
        assert_eq!(self.header("x-request-id"), Some(rid));
        &self.body["data"]
    }
}

/// The tests' HTTP client (30 s timeout).
pub fn http_client() -> reqwest::Client {
    // reqwest's TLS (rustls) needs a crypto provider; the service uses ring, so do the tests.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// A client sending from `ip` (a loopback address: the service sees it as the TCP peer).
pub fn client_from(ip: &str) -> reqwest::Client {
    let _ = http_client(); // installs the TLS provider reqwest needs
    reqwest::Client::builder()
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(fresh_db().await, &[], &[]).await
    }

    pub async fn spawn_with(db: TestDb, env: &[(&str, String)], args: &[&str]) -> Self {
        let stderr_path = std::env::temp_dir().join(format!("{}.stderr", db.name));
        let (base, child) = Self::start(&db, &stderr_path, env, args).await;
        Self { base, http: http_client(), db, child, stderr_path }
    }

    /// The key the test apps seal webhook signing secrets with.
    pub const SECRET_KEY: &'static str = "dGVzdCBrZXkgb2YgMzIgYnl0ZXMgZm9yIHRlc3RzISE=";

    async fn start(
        db: &TestDb,
        stderr_path: &std::path::Path,
        env: &[(&str, String)],
        args: &[&str],
    ) -> (String, Child) {
        let stderr = std::fs::OpenOptions::new().create(true).append(true).open(stderr_path).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .args(args)
            .env("DATABASE_URL", db.url())
            .env("STABLEPAY_BIND", "127.0.0.1:0")
            .env("STABLEPAY_DB_POOL_SIZE", "4")
            .env("STABLEPAY_SECRET_KEY", Self::SECRET_KEY)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn stablepay");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("stablepay did not start in time")
            .unwrap()
            .unwrap_or_else(|| {
                panic!("stablepay exited: {}", std::fs::read_to_string(stderr_path).unwrap_or_default())
            });
        let base = line.trim().strip_prefix("stablepay listening on ").expect("listening line").to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (base, child)
    }

    /// Another process serving the same database (its own port): answers its base URL and the
    /// process, killed when dropped.
    pub async fn sibling(&self, env: &[(&str, String)]) -> (String, Child) {
        Self::start(&self.db, &self.stderr_path, env, &[]).await
    }

    /// Kills the process at once (SIGKILL: no shutdown, nothing flushed) and starts a new one
    /// on the same database.
    pub async fn kill_and_restart(&mut self, env: &[(&str, String)]) {
        self.child.kill().await.unwrap();
        let (base, child) = Self::start(&self.db, &self.stderr_path, env, &[]).await;
        self.base = base;
        self.child = child;
    }

    /// Runs the CLI against this app's database; returns (success, stdout JSON or Null).
    pub fn cli(&self, args: &[&str]) -> (bool, Value) {
        let out = std::process::Command::new(BIN).args(args).env("DATABASE_URL", self.db.url()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        (out.status.success(), serde_json::from_str(text.trim()).unwrap_or(Value::Null))
    }

    pub fn cli_ok(&self, args: &[&str]) -> Value {
        let (ok, value) = self.cli(args);
        assert!(ok, "{args:?} failed: {value}");
        value
    }

    pub fn create_key(&self, merchant: &str, mode: &str, kind: &str) -> String {
        let v = self.cli_ok(&["key", "create", "--merchant", merchant, "--mode", mode, "--type", kind, "--json"]);
        v["key"].as_str().unwrap().to_owned()
    }

    pub fn merchant(&self, name: &str) -> Merchant {
        let id =
            self.cli_ok(&["merchant", "create", "--name", name, "--website", "https://shop.example", "--json"])["id"]
                .as_str()
                .unwrap()
                .to_owned();
        Merchant {
            sk_test: self.create_key(&id, "test", "secret"),
            pk_test: self.create_key(&id, "test", "publishable"),
            sk_live: self.create_key(&id, "live", "secret"),
            pk_live: self.create_key(&id, "live", "publishable"),
            id,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Response {
        let res = req.send().await.expect("request");
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.bytes().await.unwrap();
        let body =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        Response { status, headers, body }
    }

    pub async fn get(&self, key: &str, path: &str) -> Response {
        self.send(self.http.get(self.url(path)).bearer_auth(key)).await
    }

    pub async fn post(&self, key: &str, path: &str, body: Value) -> Response {
        self.send(self.http.post(self.url(path)).bearer_auth(key).json(&body)).await
    }

    pub async fn post_idem(&self, key: &str, path: &str, idem: &str, body: Value) -> Response {
        self.send(self.http.post(self.url(path)).bearer_auth(key).header("Idempotency-Key", idem).json(&body)).await
    }

    pub async fn patch(&self, key: &str, path: &str, body: Value) -> Response {
        self.send(self.http.patch(self.url(path)).bearer_auth(key).json(&body)).await
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Response {
        let mut req = self.http.request(method, self.url(path));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        self.send(req).await
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// The server's resident memory, in MiB.
    pub fn rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb: u64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        kb / 1024
    }

    /// How many files (sockets included) the server holds open.
    pub fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid())).unwrap().count()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.stderr_path);
    }
}

/// Counts the values of `field` in `items`.
pub fn count_by(items: &[Value], field: &str) -> HashMap<String, usize> {
    let mut map = HashMap::new();
    for item in items {
        *map.entry(item[field].as_str().unwrap_or_default().to_owned()).or_default() += 1;
    }
    map
}

/// A TCP proxy in front of PostgreSQL that a test can cut and restore, to see the service
/// answer 503 while the database is away and recover by itself when it returns.
pub struct Proxy {
    pub port: u16,
    target: String,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    pub async fn start(target: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut p = Self { port, target: target.to_owned(), task: None };
        p.task = Some(tokio::spawn(Self::serve(listener, p.target.clone())));
        p
    }

    async fn serve(listener: tokio::net::TcpListener, target: String) {
        let mut conns = tokio::task::JoinSet::new();
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            conns.spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }

    /// Drops the listener and every open connection (the JoinSet aborts them).
    pub fn cut(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn restore(&mut self) {
        let listener = loop {
            match tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(l) => break l,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        self.task = Some(tokio::spawn(Self::serve(listener, self.target.clone())));
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}
