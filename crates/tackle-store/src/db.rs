//! Opening the database: the two backends, pragmas, pools, embedded migrations.
//!
//! Every query is written once, in SQL both backends accept (`$1` parameters, `ON CONFLICT`,
//! `RETURNING`, `"user"` quoted), and [`on_db!`] runs it on whichever pool the store holds. The
//! schema is the same on both, created by migrations with the same versions; only the dialect of
//! the DDL differs (`migrations/` for SQLite, `migrations/postgres/` for PostgreSQL).

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::{FromSqlResult, ValueRef};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow, Postgres};
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Decode, SqlSafeStr, Type};

use crate::StoreError;
use crate::writer::SqliteWriter;

/// The SQLite schema, embedded in the binary: version, description, SQL.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (2, "steps", include_str!("../migrations/0002_steps.sql")),
    (3, "channels", include_str!("../migrations/0003_channels.sql")),
    (4, "session runner", include_str!("../migrations/0004_session_runner.sql")),
    (5, "responses", include_str!("../migrations/0005_responses.sql")),
    (6, "instances", include_str!("../migrations/0006_instances.sql")),
    (7, "fencing", include_str!("../migrations/0007_fencing.sql")),
    (8, "response items", include_str!("../migrations/0008_response_items.sql")),
    (9, "checkpoints", include_str!("../migrations/0009_checkpoints.sql")),
    (10, "elicitations", include_str!("../migrations/0010_elicitations.sql")),
];

/// The same schema for PostgreSQL: same versions and descriptions, PostgreSQL's dialect.
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/postgres/0001_init.sql")),
    (2, "steps", include_str!("../migrations/postgres/0002_steps.sql")),
    (3, "channels", include_str!("../migrations/postgres/0003_channels.sql")),
    (4, "session runner", include_str!("../migrations/postgres/0004_session_runner.sql")),
    (5, "responses", include_str!("../migrations/postgres/0005_responses.sql")),
    (6, "instances", include_str!("../migrations/postgres/0006_instances.sql")),
    (7, "fencing", include_str!("../migrations/postgres/0007_fencing.sql")),
    (8, "response items", include_str!("../migrations/postgres/0008_response_items.sql")),
    (9, "checkpoints", include_str!("../migrations/postgres/0009_checkpoints.sql")),
    (10, "elicitations", include_str!("../migrations/postgres/0010_elicitations.sql")),
];

fn migrator(migrations: &'static [(i64, &'static str, &'static str)]) -> Migrator {
    let migrations = migrations
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

/// The pools a store holds.
#[derive(Clone)]
pub(crate) enum Db {
    /// The embedded default.
    Sqlite(SqliteDb),
    /// A shared server.
    Postgres(PgPool),
}

/// A SQLite store: the calls an agent makes every step run on one rusqlite connection
/// ([`SqliteWriter`], in the calling thread when it is free); the others through sqlx's pool.
#[derive(Clone)]
pub(crate) struct SqliteDb {
    pub(crate) pool: SqlitePool,
    pub(crate) writer: SqliteWriter,
}

/// Runs `$body` with `$pool` bound to the store's sqlx pool, whichever backend it is. The body
/// is compiled once per backend, so a query that one of them cannot bind or decode fails to
/// build. (The per-step calls match on [`Db`] instead: SQLite runs them on the writer.)
macro_rules! on_db {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.db {
            $crate::db::Db::Sqlite(sqlite) => {
                let $pool = &sqlite.pool;
                $body
            }
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_db;

/// A column type every backend decodes: sqlx's SQLite and PostgreSQL, and rusqlite (the
/// writer's connection).
pub(crate) trait DbValue<'r>:
    Sized + Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres>
{
    /// The value from a rusqlite column.
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self>;
}

impl<'r> DbValue<'r> for i64 {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        value.as_i64()
    }
}

impl<'r> DbValue<'r> for f64 {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Integer(i) => Ok(i as f64),
            other => other.as_f64(),
        }
    }
}

impl<'r> DbValue<'r> for &'r str {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        value.as_str()
    }
}

impl<'r> DbValue<'r> for String {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        value.as_str().map(str::to_owned)
    }
}

impl<'r> DbValue<'r> for Vec<u8> {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        value.as_blob().map(<[u8]>::to_vec)
    }
}

impl<'r, T: DbValue<'r>> DbValue<'r> for Option<T> {
    fn from_rusqlite(value: ValueRef<'r>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Null => Ok(None),
            other => T::from_rusqlite(other).map(Some),
        }
    }
}

/// Reading a column from a row of any backend; decoders take `&impl DbRow`.
pub(crate) trait DbRow {
    /// The value of `column`, decoded as `T`.
    fn try_get<'r, T: DbValue<'r>>(&'r self, column: &str) -> Result<T, StoreError>;
}

impl DbRow for SqliteRow {
    fn try_get<'r, T: DbValue<'r>>(&'r self, column: &str) -> Result<T, StoreError> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
}

impl DbRow for PgRow {
    fn try_get<'r, T: DbValue<'r>>(&'r self, column: &str) -> Result<T, StoreError> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
}

impl DbRow for rusqlite::Row<'_> {
    fn try_get<'r, T: DbValue<'r>>(&'r self, column: &str) -> Result<T, StoreError> {
        let index = self.as_ref().column_index(column)?;
        let value = self.get_ref(index)?;
        T::from_rusqlite(value).map_err(|e| {
            StoreError::Sqlite(rusqlite::Error::FromSqlConversionFailure(
                index,
                value.data_type(),
                Box::new(e),
            ))
        })
    }
}

/// How long a SQLite connection waits for another writer before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn open_file(path: &Path) -> Result<SqliteDb, StoreError> {
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
        .busy_timeout(BUSY_TIMEOUT)
        .pragma("wal_autocheckpoint", crate::checkpoint::AUTOCHECKPOINT_PAGES.to_string());
    // SQLite has no migration lock of its own: two processes opening a fresh file at once would
    // both create the tables (one then fails), and switching a new file to WAL needs an exclusive
    // lock that SQLite refuses at once rather than waiting for. An exclusive lock on a file beside
    // the database makes openers take turns; the second finds the schema current.
    let lock = MigrationLock::acquire(path).await?;
    let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await?;
    migrator(SQLITE_MIGRATIONS).run(&pool).await?;
    drop(lock);
    let writer = SqliteWriter::open(path, BUSY_TIMEOUT).await?;
    Ok(SqliteDb { pool, writer })
}

/// Connections a PostgreSQL store opens at most.
pub(crate) const POSTGRES_MAX_CONNECTIONS: u32 = 16;

pub(crate) async fn open_postgres(url: &str) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url)?;
    // One connection first: it says plainly why the server cannot be reached (refused, unknown
    // database, bad password), where the pool would retry until its timeout and report only that.
    sqlx::Connection::close(<sqlx::PgConnection as sqlx::Connection>::connect_with(&options).await?).await?;
    let pool = PgPoolOptions::new()
        .max_connections(POSTGRES_MAX_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await?;
    // sqlx's PostgreSQL migrator holds an advisory lock while it migrates, so several
    // processes opening a fresh database at once take turns.
    migrator(POSTGRES_MIGRATIONS).run(&pool).await?;
    Ok(pool)
}

/// An exclusive lock on `<database>.migrate-lock`, released when dropped.
struct MigrationLock {
    _file: std::fs::File,
}

impl MigrationLock {
    async fn acquire(database: &Path) -> Result<Self, StoreError> {
        let mut name = database.as_os_str().to_owned();
        name.push(".migrate-lock");
        let path = std::path::PathBuf::from(name);
        let file = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
            file.lock()?;
            Ok(file)
        })
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e)))??;
        Ok(Self { _file: file })
    }
}

/// Runs `attempt` again while it fails on a unique key. Appends number their rows
/// `MAX(...) + 1` in the statement itself; SQLite serializes writers, so two appends never see
/// the same maximum there, but under PostgreSQL's read-committed isolation two concurrent
/// appends to one session can, and the second then fails on the primary key: it is simply
/// repeated (it inserted nothing), so numbers stay dense and unique without a lock round trip.
pub(crate) async fn retry_on_conflict<T, F, Fut>(mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    const ATTEMPTS: usize = 100;
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(StoreError::Database(sqlx::Error::Database(d)))
                if d.is_unique_violation() && tries < ATTEMPTS =>
            {
                tries += 1;
                tokio::task::yield_now().await;
            }
            other => return other,
        }
    }
}

/// A foreign key violation (a row for a session that does not exist) read as the session not
/// being found; any other error as it is.
pub(crate) fn session_fk(e: sqlx::Error, session_id: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::not_found("session", session_id)
        }
        _ => StoreError::Database(e),
    }
}

/// Milliseconds since the Unix epoch (the store's clock).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
