//! Opening the database: the two backends, pragmas, pools, embedded migrations.
//!
//! Every query is written once, in SQL both backends accept (`$1` parameters, `ON CONFLICT`,
//! `RETURNING`, `"user"` quoted), as a [`Query`] run through [`Db`]'s methods or, for statements
//! that run together, [`transaction!`] (see `sql.rs`). The schema is the same on both, created
//! by migrations with the same versions; only the dialect of the DDL differs (`migrations/` for SQLite, `migrations/postgres/` for PostgreSQL).

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::StoreError;
use crate::fence::{self, Epoch};
use crate::readers::SqliteReaders;
use crate::sql::{self, Query, Row};
use crate::writer::{Placement, SqliteWriter};

/// The SQLite schema, embedded in the binary: version, description, SQL.
pub(crate) const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
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

pub(crate) fn migrator(migrations: &'static [(i64, &'static str, &'static str)]) -> Migrator {
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

/// A SQLite store, reached through rusqlite only: every write (and the reads an agent makes every
/// step) on one connection ([`SqliteWriter`], in the calling thread when it is free), the other
/// reads on a few read connections ([`SqliteReaders`]).
#[derive(Clone)]
pub(crate) struct SqliteDb {
    pub(crate) writer: SqliteWriter,
    pub(crate) readers: SqliteReaders,
}

impl Db {
    /// Runs a write of one statement, checked against `epoch` (`fence.rs`); returns the rows
    /// it changed. SQLite: on the writer ([no-wait-in-place]).
    pub(crate) async fn execute(&self, epoch: Epoch, query: Query) -> Result<u64, StoreError> {
        self.execute_on(Placement::InPlace, epoch, query).await
    }

    /// Like [`Db::execute`]; on SQLite, `placement` says whether the write may run in place
    /// (PostgreSQL's writes never hold a thread: they are awaited).
    pub(crate) async fn execute_on(
        &self,
        placement: Placement,
        epoch: Epoch,
        query: Query,
    ) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.writer.write_on(placement, epoch, move |conn| sql::sqlite_execute(conn, &query)).await
            }
            Db::Postgres(pool) => {
                fence::pg_write(pool, &epoch, async |conn| sql::pg_execute(conn, &query).await).await
            }
        }
    }

    /// Runs one statement on the writer's connection (SQLite) or the pool, checked against
    /// `epoch` when it is a write, and decodes every row.
    pub(crate) async fn fetch_all<T: Send + 'static>(
        &self,
        epoch: Epoch,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.writer.write(epoch, move |conn| sql::sqlite_fetch_all(conn, &query, decode)).await
            }
            Db::Postgres(pool) => {
                fence::pg_write(pool, &epoch, async |conn| sql::pg_fetch_all(conn, &query, decode).await)
                    .await
            }
        }
    }

    /// Like [`Db::fetch_all`], for at most one row.
    pub(crate) async fn fetch_optional<T: Send + 'static>(
        &self,
        epoch: Epoch,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.writer.write(epoch, move |conn| sql::sqlite_fetch_optional(conn, &query, decode)).await
            }
            Db::Postgres(pool) => {
                fence::pg_write(pool, &epoch, async |conn| sql::pg_fetch_optional(conn, &query, decode).await)
                    .await
            }
        }
    }
}

impl Db {
    /// Runs one read on a read connection (SQLite: on a blocking thread, never holding the
    /// writer) or the pool, and decodes every row.
    pub(crate) async fn read_all<T: Send + 'static>(
        &self,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.readers.call(move |conn| sql::sqlite_fetch_all(conn, &query, decode)).await
            }
            Db::Postgres(pool) => sql::pg_fetch_all(pool, &query, decode).await,
        }
    }

    /// Like [`Db::read_all`], for at most one row.
    pub(crate) async fn read_optional<T: Send + 'static>(
        &self,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.readers.call(move |conn| sql::sqlite_fetch_optional(conn, &query, decode)).await
            }
            Db::Postgres(pool) => sql::pg_fetch_optional(pool, &query, decode).await,
        }
    }

    /// Like [`Db::read_optional`], for exactly one row (an aggregate, say).
    pub(crate) async fn read_one<T: Send + 'static>(
        &self,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.read_optional(query, decode)
            .await?
            .ok_or(StoreError::Internal("a query that always returns a row returned none"))
    }
}

/// Runs `$body` (an expression of type `Result<T, StoreError>`, usually an `async fn` over
/// `$conn: &mut impl sql::Conn` awaited) in one write transaction that first checks the fence
/// `$epoch`: on SQLite inside the writer's closure (so what it names is moved in: own it), on
/// PostgreSQL in a sqlx transaction. The body is written once and compiled once per driver.
/// `transaction!(on Placement::Blocking, db, epoch, |conn| body)` never runs it in place (see
/// `writer.rs`).
macro_rules! transaction {
    ($db:expr, $epoch:expr, |$conn:ident| $body:expr) => {
        $crate::db::transaction!(on $crate::writer::Placement::InPlace, $db, $epoch, |$conn| $body)
    };
    (on $placement:expr, $db:expr, $epoch:expr, |$conn:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite(sqlite) => {
                sqlite
                    .writer
                    .transaction_on($placement, move |tx| {
                        let $conn = &mut $crate::sql::SqliteConn(tx);
                        $crate::sql::ready(async {
                            $crate::sql::Conn::check_fence($conn, &$epoch).await?;
                            $body
                        })
                    })
                    .await
            }
            $crate::db::Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                let $conn = &mut $crate::sql::PgConn(&mut tx);
                let done: Result<_, $crate::StoreError> = async {
                    $crate::sql::Conn::check_fence($conn, &$epoch).await?;
                    $body
                }
                .await;
                let done = done?;
                tx.commit().await?;
                Ok(done)
            }
        }
    };
}
pub(crate) use transaction;

/// Typed access to a row of any driver (see `sql.rs`); decoders take
/// `&(impl DbRow + ?Sized)`, which `&dyn sql::Row` is.
pub(crate) use crate::sql::RowExt as DbRow;

/// How long a SQLite connection waits for another writer before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn open_file(path: &Path) -> Result<SqliteDb, StoreError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    // SQLite has no migration lock of its own: two processes opening a fresh file at once would
    // both create the tables (one then fails), and switching a new file to WAL needs an exclusive
    // lock that SQLite refuses at once rather than waiting for. An exclusive lock on a file beside
    // the database makes openers take turns; the second finds the schema current.
    let lock = MigrationLock::acquire(path).await?;
    let file = path.to_owned();
    let conn = tokio::task::spawn_blocking(move || -> Result<rusqlite::Connection, StoreError> {
        let mut conn = crate::writer::open_connection(&file, BUSY_TIMEOUT)?;
        crate::migrate::run(&mut conn, &migrator(SQLITE_MIGRATIONS))?;
        Ok(conn)
    })
    .await
    .map_err(|e| StoreError::Io(std::io::Error::other(e)))??;
    drop(lock);
    let writer = SqliteWriter::new(conn, BUSY_TIMEOUT);
    let readers = SqliteReaders::new(path.to_owned(), BUSY_TIMEOUT);
    Ok(SqliteDb { writer, readers })
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

/// Milliseconds since the Unix epoch (the store's clock).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
