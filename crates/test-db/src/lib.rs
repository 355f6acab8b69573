//! A fresh PostgreSQL database per test, copied from a template migrated once.
//!
//! The template's name follows the content of `migrations/`, so a changed migration makes a
//! new template; building it is serialized by an advisory lock, so parallel test binaries
//! share it. The caller says how to migrate (the app's tests run the binary, the store's tests
//! call the store), which keeps this crate free of the schema.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The server's URL (its database is only used to create and drop others).
pub fn admin_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `admin_url` with its database name replaced.
pub fn db_url(name: &str) -> String {
    let base = admin_url();
    let cut = base.rfind('/').unwrap();
    format!("{}/{}", &base[..cut], name)
}

/// A client of database `url` (its connection runs on a spawned task).
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect to PostgreSQL");
    tokio::spawn(conn);
    client
}

fn migrations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations")
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

/// The template's name: a hash (FNV-1a) of the migrations' names and contents.
fn template_name() -> String {
    let dir = migrations_dir();
    let mut entries = walk(&dir);
    entries.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in entries {
        let name = path.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        for b in name.bytes().chain(std::fs::read(&path).unwrap()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("stablepay_tpl_{hash:016x}")
}

async fn ensure_template<F, Fut>(client: &tokio_postgres::Client, migrate: F) -> String
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let name = template_name();
    client.execute("SELECT pg_advisory_lock(7355608)", &[]).await.unwrap();
    let exists = client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]).await.unwrap().is_some();
    if !exists {
        let building = format!("{name}_building");
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)")).await.unwrap();
        client.batch_execute(&format!("CREATE DATABASE {building}")).await.unwrap();
        if let Err(e) = migrate(db_url(&building)).await {
            client.execute("SELECT pg_advisory_unlock(7355608)", &[]).await.unwrap();
            panic!("migrating the template failed: {e}");
        }
        client.batch_execute(&format!("ALTER DATABASE {building} RENAME TO {name}")).await.unwrap();
    }
    client.execute("SELECT pg_advisory_unlock(7355608)", &[]).await.unwrap();
    name
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh database for one test, dropped when the value is dropped.
pub struct TestDb {
    pub name: String,
}

impl TestDb {
    /// Copies the template (migrating it first with `migrate`, given its URL, when this
    /// content of `migrations/` has none yet).
    pub async fn new<F, Fut>(migrate: F) -> Self
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let client = connect(&admin_url()).await;
        let template = ensure_template(&client, migrate).await;
        let name = format!(
            "stablepay_t_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
        );
        client.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}")).await.unwrap();
        Self { name }
    }

    pub fn url(&self) -> String {
        db_url(&self.name)
    }

    /// Runs SQL against this database (for assertions on what was stored).
    pub async fn query(&self, sql: &str) -> Vec<tokio_postgres::Row> {
        connect(&self.url()).await.query(sql, &[]).await.unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let client = connect(&admin_url()).await;
                let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
            });
        })
        .join();
    }
}
