//! Opening the database: pragmas, pool, embedded migrations.

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::StoreError;

/// The schema, embedded in the binary: version, description, SQL.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (2, "steps", include_str!("../migrations/0002_steps.sql")),
    (3, "channels", include_str!("../migrations/0003_channels.sql")),
    (4, "session runner", include_str!("../migrations/0004_session_runner.sql")),
    (5, "responses", include_str!("../migrations/0005_responses.sql")),
];

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|(version, description, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*description),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

pub(crate) async fn open_file(path: &Path) -> Result<SqlitePool, StoreError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10))
        .pragma("wal_autocheckpoint", crate::checkpoint::AUTOCHECKPOINT_PAGES.to_string());
    let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await?;
    migrator().run(&pool).await?;
    Ok(pool)
}

pub(crate) async fn open_memory() -> Result<SqlitePool, StoreError> {
    // One connection: every query sees the same private in-memory database.
    let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await?;
    migrator().run(&pool).await?;
    Ok(pool)
}

/// Milliseconds since the Unix epoch (the store's clock).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
