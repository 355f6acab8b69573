//! Embedded migrations, applied through diesel's harness on an `AsyncConnectionWrapper`.

use diesel::Connection;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use stablepay_domain::Error;

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Lock key that serializes migrations when several replicas start at once.
const MIGRATION_LOCK: i64 = 0x5354_4142_4c45_5041; // "STABLEPA"

/// The versions of every migration this binary knows (`20261128000032` for
/// `2026-11-28-000032_accounts_hardening`), as diesel records them.
pub fn known_versions() -> &'static [String] {
    static VERSIONS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    VERSIONS.get_or_init(|| {
        use diesel::migration::MigrationSource;
        let migrations: Vec<Box<dyn diesel::migration::Migration<diesel::pg::Pg>>> =
            MigrationSource::<diesel::pg::Pg>::migrations(&MIGRATIONS).unwrap_or_default();
        migrations.iter().map(|m| m.name().version().to_string()).collect()
    })
}

/// The migrations this binary knows that `applied` (the database's record) lacks. A newer
/// schema (versions this binary does not know, from the next release) is fine.
pub fn pending(applied: &[String]) -> Vec<&'static str> {
    known_versions().iter().filter(|v| !applied.contains(v)).map(String::as_str).collect()
}

/// Applies every pending migration, then makes sure the months of events ahead exist (see
/// `retention::prepare_months`: every start of a process that migrates does, besides the
/// worker); returns the versions applied. Safe to run from several processes at once (an
/// advisory lock serializes them).
pub async fn run_migrations(database_url: &str) -> Result<Vec<String>, Error> {
    let url = database_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&url).map_err(|e| {
            tracing::warn!(error = %e, "cannot connect to run migrations");
            Error::Unavailable
        })?;
        use diesel::RunQueryDsl;
        diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
            .execute(&mut conn)
            .map_err(crate::error::db)?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map(|versions| versions.iter().map(|v| v.to_string()).collect())
            .map_err(|e| Error::Internal(format!("migration failed: {e}")));
        let _ = diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})")).execute(&mut conn);
        let applied = applied?;
        diesel::sql_query(format!(
            "SELECT stablepay_prepare_months({})",
            stablepay_domain::retention::model::MONTHS_AHEAD
        ))
        .execute(&mut conn)
        .map_err(crate::error::db)?;
        Ok(applied)
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}
