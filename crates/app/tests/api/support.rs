//! Test support: a fresh database per test (`stablepay-test-db`: copied from a template migrated
//! once), the real `stablepay` binary serving it on a random port, and small HTTP and CLI
//! helpers.

use std::collections::HashMap;
use std::future::Future;
use std::process::Stdio;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_stablepay");

pub use stablepay_test_db::TestDb;

/// Wakes the idle worker loops of every process serving `db` (the notification the service
/// sends when it creates work): a test that edits rows in the database directly, standing in for
/// time passing, calls it after, as the due time the worker already knew would have woken it.
pub async fn wake_the_worker(db: &TestDb) {
    db.query("SELECT pg_notify('stablepay_work', 'test')").await;
}

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
    /// Where its `/metrics` is served (its own port).
    pub metrics: String,
    pub http: reqwest::Client,
    pub db: TestDb,
    /// The database the process serves: `db`'s, or the `DATABASE_URL` the test gave it (the CLI
    /// helpers use the same).
    pub database_url: String,
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
        let (base, metrics, child) = Self::start_full(&db, &stderr_path, env, args).await;
        let database_url = env.iter().find(|(k, _)| *k == "DATABASE_URL").map_or_else(|| db.url(), |(_, v)| v.clone());
        Self { base, metrics, http: http_client(), db, database_url, child, stderr_path }
    }

    /// The key the test apps seal webhook signing secrets with.
    pub const SECRET_KEY: &'static str = "dGVzdCBrZXkgb2YgMzIgYnl0ZXMgZm9yIHRlc3RzISE=";

    async fn start(
        db: &TestDb,
        stderr_path: &std::path::Path,
        env: &[(&str, String)],
        args: &[&str],
    ) -> (String, Child) {
        let (base, _, child) = Self::start_full(db, stderr_path, env, args).await;
        (base, child)
    }

    async fn start_full(
        db: &TestDb,
        stderr_path: &std::path::Path,
        env: &[(&str, String)],
        args: &[&str],
    ) -> (String, String, Child) {
        let stderr = std::fs::OpenOptions::new().create(true).append(true).open(stderr_path).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .args(args)
            .env("DATABASE_URL", db.url())
            .env("STABLEPAY_BIND", "127.0.0.1:0")
            .env("STABLEPAY_DB_POOL_SIZE", "4")
            .env("STABLEPAY_SECRET_KEY", Self::SECRET_KEY)
            .env("STABLEPAY_METRICS_BIND", "127.0.0.1:0")
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
        // The metrics address follows (unless the test turned metrics off).
        let mut metrics = String::new();
        if !env.iter().any(|(k, v)| *k == "STABLEPAY_METRICS_BIND" && v == "off") {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("no metrics line")
                .unwrap()
                .unwrap_or_default();
            metrics = line.trim().strip_prefix("stablepay metrics on ").expect("metrics line").to_owned();
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (base, metrics, child)
    }

    /// Another process serving the same database (its own port): answers its base URL and the
    /// process, killed when dropped.
    pub async fn sibling(&self, env: &[(&str, String)]) -> (String, Child) {
        Self::start(&self.db, &self.stderr_path, env, &[]).await
    }

    /// [`TestApp::sibling`] with arguments to `serve` (e.g. `--no-worker`).
    pub async fn sibling_with_args(&self, env: &[(&str, String)], args: &[&str]) -> (String, Child) {
        Self::start(&self.db, &self.stderr_path, env, args).await
    }

    /// Kills the process at once (SIGKILL: no shutdown, nothing flushed) and starts a new one
    /// on the same database.
    pub async fn kill_and_restart(&mut self, env: &[(&str, String)]) {
        self.child.kill().await.unwrap();
        let (base, metrics, child) = Self::start_full(&self.db, &self.stderr_path, env, &[]).await;
        self.base = base;
        self.metrics = metrics;
        self.child = child;
    }

    /// Sends the process SIGTERM (the orchestrator's stop).
    pub async fn terminate(&self) {
        let pid = self.child.id().expect("running").to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().await.unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit (at most `limit`); its exit status.
    pub async fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(limit, self.child.wait()).await.expect("the process did not exit in time").unwrap()
    }

    /// Runs the CLI against this app's database; returns (success, stdout JSON or Null).
    pub fn cli(&self, args: &[&str]) -> (bool, Value) {
        let out = std::process::Command::new(BIN).args(args).env("DATABASE_URL", &self.database_url).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        (out.status.success(), serde_json::from_str(text.trim()).unwrap_or(Value::Null))
    }

    /// Runs the CLI with `input` on its standard input; returns (success, stdout JSON or Null,
    /// stderr).
    pub fn cli_with_input(&self, args: &[&str], input: &str) -> (bool, Value, String) {
        use std::io::Write;
        let mut child = std::process::Command::new(BIN)
            .args(args)
            .env("DATABASE_URL", &self.database_url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
        (out.status.success(), value, String::from_utf8_lossy(&out.stderr).into_owned())
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

    /// A restricted secret key of `merchant` in `mode` with `permissions` (comma-separated).
    pub fn restricted_key(&self, merchant: &str, mode: &str, permissions: &str) -> String {
        let args = ["key", "create", "--merchant", merchant, "--mode", mode, "--type", "secret"];
        let v = self.cli_ok(&[&args[..], &["--permissions", permissions, "--json"]].concat());
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

    /// Activates live mode for `m` with a checksummed settlement wallet, in `token`.
    pub fn activate(&self, m: &Merchant, token: &str) -> Value {
        let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
        self.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", wallet, "--token", token, "--json"])
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

    /// `GET path` with `key` once another process's change (the CLI's suspension or revocation)
    /// has reached this server through the database's notification: the first answer with
    /// `status`, waiting up to 5 s (then the answer as it is).
    pub async fn get_until(&self, key: &str, path: &str, status: u16) -> Response {
        for _ in 0..50 {
            let r = self.get(key, path).await;
            if r.status == status {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.get(key, path).await
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
    /// The proxy's own runtime: a test's runtime runs one thread, which the test's synchronous
    /// steps (the CLI) block; the service must reach the chain meanwhile, as it would in life.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Proxy {
    pub async fn start(target: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the proxy's runtime");
        let listener =
            runtime.spawn(async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() }).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut p = Self { port, target: target.to_owned(), task: None, runtime: Some(runtime) };
        p.task = Some(p.spawn(Self::serve(listener, p.target.clone())));
        p
    }

    fn spawn(&self, f: impl Future<Output = ()> + Send + 'static) -> tokio::task::JoinHandle<()> {
        self.runtime.as_ref().expect("the proxy's runtime").spawn(f)
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

    /// Forwards to `target` from now on (open connections are dropped).
    pub async fn retarget(&mut self, target: &str) {
        self.cut();
        self.target = target.to_owned();
        self.restore().await;
    }

    /// Listens again on the same port.
    pub async fn restore(&mut self) {
        let port = self.port;
        let listener = self
            .spawn_value(async move {
                loop {
                    match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                        Ok(l) => break l,
                        Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
            })
            .await;
        self.task = Some(self.spawn(Self::serve(listener, self.target.clone())));
    }

    async fn spawn_value<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        self.runtime.as_ref().expect("the proxy's runtime").spawn(f).await.unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A PostgreSQL cluster of the test's own (the system's binaries, a temporary data directory,
/// a free port, trust auth), which the test may stop and start; removed when dropped. Never the
/// machine's shared cluster.
pub struct PrivateCluster {
    pub port: u16,
    dir: std::path::PathBuf,
    bin: std::path::PathBuf,
    /// Server settings (`name=value`) given to every start.
    settings: Vec<String>,
}

impl PrivateCluster {
    fn bin_dir() -> std::path::PathBuf {
        let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL binaries under /usr/lib/postgresql")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .collect();
        dirs.sort();
        dirs.pop().expect("initdb under /usr/lib/postgresql/*/bin")
    }

    fn is_root() -> bool {
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
    }

    /// initdb and postgres refuse to run as root: as root, run them as the postgres user.
    fn as_postgres(&self, program: &str) -> Command {
        let mut cmd = if Self::is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bin.join(program));
            c
        } else {
            Command::new(self.bin.join(program))
        };
        cmd.current_dir("/tmp");
        cmd
    }

    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// [`PrivateCluster::start`] with server settings of the test's own (`name=value`, as
    /// `postgres -c` takes them).
    pub async fn start_with(settings: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("stablepay-pg-{port}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let settings = settings.iter().map(|s| (*s).to_owned()).collect();
        let cluster = Self { port, dir, bin: Self::bin_dir(), settings };
        if Self::is_root() {
            let ok = Command::new("chown").args(["-R", "postgres"]).arg(&cluster.dir).status().await.unwrap();
            assert!(ok.success());
        }
        let out = cluster
            .as_postgres("initdb")
            .args(["-U", "postgres", "--auth=trust", "--no-sync", "-D"])
            .arg(cluster.dir.join("data"))
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        cluster.start_again().await;
        cluster
    }

    /// Starts the (stopped) cluster and waits until it accepts connections.
    pub async fn start_again(&self) {
        let mut options = format!("-p {} -k /tmp -h 127.0.0.1 -c fsync=off", self.port);
        for setting in &self.settings {
            options.push_str(&format!(" -c {setting}"));
        }
        let out = self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-o", &options, "-l"])
            .arg(self.dir.join("log"))
            .args(["-w", "start"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops it at once (`-m fast`: connections are cut, nothing waits for clients).
    pub async fn stop(&mut self) {
        let out = self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "fast", "-w", "stop"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// The server's log file.
    pub fn log(&self) -> std::path::PathBuf {
        self.dir.join("log")
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let mut cmd = if Self::is_root() {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bin.join("pg_ctl"));
            c
        } else {
            std::process::Command::new(self.bin.join("pg_ctl"))
        };
        let _ = cmd.current_dir("/tmp").arg("-D").arg(self.dir.join("data")).args(["-m", "immediate", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A real PNG image of `width` x `height` (an opaque blue and orange split), as a merchant's
/// logo would be.
pub fn png_image(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    let pixels: Vec<u8> = (0..height)
        .flat_map(|_| (0..width).flat_map(move |x| if x < width / 2 { [29, 78, 216] } else { [234, 88, 12] }))
        .collect();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    out
}

impl TestApp {
    /// Sets `merchant`'s logo to `png` through the operator CLI; answers the logo's digest.
    pub fn set_logo(&self, merchant: &str, png: &[u8]) -> String {
        let file = std::env::temp_dir().join(format!("logo-{merchant}-{}.png", std::process::id()));
        std::fs::write(&file, png).unwrap();
        let out = self.cli_ok(&["merchant", "logo", merchant, "--file", file.to_str().unwrap(), "--json"]);
        let _ = std::fs::remove_file(&file);
        out["logo"]["digest"].as_str().unwrap().to_owned()
    }
}
