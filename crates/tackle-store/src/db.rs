//! Opening the database: the two backends, pragmas, pools, embedded migrations.
//!
//! Every query is written once, in SQL both backends accept (`$1` parameters, `ON CONFLICT`,
//! `RETURNING`, `"user"` quoted), as a [`Query`] run on a [`Conn`] that [`Db`] lends: a single
//! statement through [`Db::execute`] and its kin, statements that commit together through
//! [`Db::transaction`] (see `sql.rs`). The schema is the same on both, created
//! by migrations with the same versions; only the dialect of the DDL differs (`migrations/` for SQLite, `migrations/postgres/` for PostgreSQL).

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::fence::{self, Epoch};
use crate::readers::SqliteReaders;
use crate::sql::{self, Conn, Query, Row};
use crate::writer::{Placement, SqliteWriter};
use crate::{Backend, StoreError};

/// The schema's migrations, each as `(version, description, file)`: the same versions and
/// descriptions on both backends, the DDL in each one's dialect (`migrations/<file>` for
/// SQLite, `migrations/postgres/<file>` for PostgreSQL), embedded in the binary.
macro_rules! migrations {
    ($(($version:literal, $description:literal, $file:literal),)*) => {
        /// The SQLite schema: version, description, SQL.
        pub(crate) const SQLITE_MIGRATIONS: &[(i64, &str, &str)] =
            &[$(($version, $description, include_str!(concat!("../migrations/", $file))),)*];
        /// The same schema for PostgreSQL.
        const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] =
            &[$(($version, $description, include_str!(concat!("../migrations/postgres/", $file))),)*];
    };
}

migrations! {
    (1, "init", "0001_init.sql"),
    (2, "steps", "0002_steps.sql"),
    (3, "channels", "0003_channels.sql"),
    (4, "session runner", "0004_session_runner.sql"),
    (5, "responses", "0005_responses.sql"),
    (6, "instances", "0006_instances.sql"),
    (7, "fencing", "0007_fencing.sql"),
    (8, "response items", "0008_response_items.sql"),
    (9, "checkpoints", "0009_checkpoints.sql"),
    (10, "elicitations", "0010_elicitations.sql"),
    (11, "subagents", "0011_subagents.sql"),
    (12, "fewer pages", "0012_fewer_pages.sql"),
}

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

/// Statements written once for both drivers, run on the [`Conn`] that [`Db::write`] or
/// [`Db::transaction`] lends. A body owns what it uses (`'static`) and may run more than once: on
/// SQLite it may move to a blocking thread ([`SqliteWriter`]) after a first attempt in place
/// found the write lock busy (nothing was written then), and on PostgreSQL a write that failed on
/// a unique key runs again ([`again_after`]).
pub(crate) trait Body<T>: AsyncFnMut(&mut Conn<'_>) -> Result<T, StoreError> + Send + 'static {}

impl<T, B: AsyncFnMut(&mut Conn<'_>) -> Result<T, StoreError> + Send + 'static> Body<T> for B {}

/// What a write runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The body as it is (one statement, or statements that need not commit together), unless
    /// it is fenced: then in a transaction that checks the fence first.
    Statement,
    /// Always one transaction, which checks the fence (if any) first.
    Transaction,
}

/// Where each database is entered: every statement of the store runs on a [`Conn`] that
/// [`Db::write`], [`Db::transaction`] or [`Db::read`] lends to a body written once for both
/// drivers; only here does the store tell the drivers apart.
impl Db {
    /// Runs `body` on the writer (SQLite) or a pooled connection (PostgreSQL): as it is when
    /// `epoch` is `None` (one statement, or statements that need not commit together), else in a
    /// write transaction that checks the fence first (`fence.rs`). On SQLite, `placement` says
    /// whether it may run in place ([no-wait-in-place]); PostgreSQL's writes never hold a
    /// thread: they are awaited.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        placement: Placement,
        epoch: Epoch,
        body: impl Body<T>,
    ) -> Result<T, StoreError> {
        self.run(placement, Scope::Statement, epoch, body).await
    }

    /// Runs `body` in one write transaction that first checks the fence `epoch` (`fence.rs`):
    /// everything it does commits together or not at all. On SQLite, `placement` says whether it
    /// may run in place ([no-wait-in-place]); [`Placement::Blocking`] for large copies.
    pub(crate) async fn transaction<T: Send + 'static>(
        &self,
        placement: Placement,
        epoch: Epoch,
        body: impl Body<T>,
    ) -> Result<T, StoreError> {
        self.run(placement, Scope::Transaction, epoch, body).await
    }

    async fn run<T: Send + 'static>(
        &self,
        placement: Placement,
        scope: Scope,
        epoch: Epoch,
        mut body: impl Body<T>,
    ) -> Result<T, StoreError> {
        let in_transaction = scope == Scope::Transaction || epoch.is_some();
        match self {
            Db::Sqlite(sqlite) if in_transaction => {
                sqlite
                    .writer
                    .transaction(placement, move |tx| {
                        sql::ready(async {
                            let conn = &mut Conn::Sqlite(tx);
                            fence::check(conn, &epoch).await?;
                            body(conn).await
                        })
                    })
                    .await
            }
            Db::Sqlite(sqlite) => {
                sqlite.writer.call(placement, move |conn| sql::ready(body(&mut Conn::Sqlite(conn)))).await
            }
            Db::Postgres(pool) => {
                let mut tries = 0;
                loop {
                    let done = if in_transaction {
                        pg_transaction(pool, &epoch, &mut body).await
                    } else {
                        body(&mut Conn::Postgres(&mut *pool.acquire().await?)).await
                    };
                    if !again_after(&done, &mut tries).await {
                        return done;
                    }
                }
            }
        }
    }

    /// Runs `body`, which only reads, on a read connection (SQLite: on a blocking thread, never
    /// holding the writer, `readers.rs`) or a pooled connection (PostgreSQL).
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        body: impl AsyncFnOnce(&mut Conn<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.readers.call(move |conn| sql::ready(body(&mut Conn::Sqlite(conn)))).await
            }
            Db::Postgres(pool) => body(&mut Conn::Postgres(&mut *pool.acquire().await?)).await,
        }
    }

    /// Which database this is.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Closes the connections, waiting for running queries; later calls fail.
    pub(crate) async fn close(&self) {
        match self {
            Db::Sqlite(sqlite) => {
                sqlite.writer.close().await;
                sqlite.readers.close();
            }
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

/// Runs `body` in a PostgreSQL transaction of `pool` that first checks `epoch` (locking the
/// session row until it commits).
async fn pg_transaction<T>(pool: &PgPool, epoch: &Epoch, body: &mut impl Body<T>) -> Result<T, StoreError> {
    let mut tx = pool.begin().await?;
    let conn = &mut Conn::Postgres(&mut tx);
    fence::check(conn, epoch).await?;
    let done = body(conn).await?;
    tx.commit().await?;
    Ok(done)
}

/// One statement through [`Db::write`] and [`Db::read`].
impl Db {
    /// Runs a write of one statement, checked against `epoch` (`fence.rs`); returns the rows
    /// it changed. SQLite: on the writer ([no-wait-in-place]).
    pub(crate) async fn execute(&self, epoch: Epoch, query: Query) -> Result<u64, StoreError> {
        self.execute_on(Placement::InPlace, epoch, query).await
    }

    /// Like [`Db::execute`], where `placement` says whether it may run in place on SQLite.
    pub(crate) async fn execute_on(
        &self,
        placement: Placement,
        epoch: Epoch,
        query: Query,
    ) -> Result<u64, StoreError> {
        self.write(placement, epoch, async move |conn| conn.execute(&query).await).await
    }

    /// Runs one statement on the writer's connection (SQLite) or the pool, checked against
    /// `epoch` when it is a write, and decodes every row.
    pub(crate) async fn fetch_all<T: Send + 'static>(
        &self,
        epoch: Epoch,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        self.write(Placement::InPlace, epoch, async move |conn| conn.fetch_all(&query, decode).await).await
    }

    /// Like [`Db::fetch_all`], for at most one row.
    pub(crate) async fn fetch_optional<T: Send + 'static>(
        &self,
        epoch: Epoch,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        self.write(Placement::InPlace, epoch, async move |conn| conn.fetch_optional(&query, decode).await)
            .await
    }

    /// Runs one read on a read connection (see [`Db::read`]) and decodes every row.
    pub(crate) async fn read_all<T: Send + 'static>(
        &self,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        self.read(async move |conn| conn.fetch_all(&query, decode).await).await
    }

    /// Like [`Db::read_all`], for at most one row.
    pub(crate) async fn read_optional<T: Send + 'static>(
        &self,
        query: Query,
        decode: fn(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        self.read(async move |conn| conn.fetch_optional(&query, decode).await).await
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

/// Typed access to a row of any driver (see `sql.rs`); decoders take
/// `&(impl DbRow + ?Sized)`, which `&dyn sql::Row` is.
pub(crate) use crate::sql::RowExt as DbRow;

/// How long a SQLite connection waits for another writer before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating it if needed) and migrates the SQLite file at `path`.
pub(crate) async fn open_file(path: &Path) -> Result<Db, StoreError> {
    Ok(Db::Sqlite(open_sqlite(path).await?))
}

/// [`open_file`]'s connections.
pub(crate) async fn open_sqlite(path: &Path) -> Result<SqliteDb, StoreError> {
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

/// Connects to the PostgreSQL database at `url` and migrates it.
pub(crate) async fn open_postgres(url: &str) -> Result<Db, StoreError> {
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
    Ok(Db::Postgres(pool))
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

/// Whether a write that ended in `done` runs again: when it failed on a unique key, at most
/// 100 times (counted in `tries`), after letting other tasks run. Appends number their rows
/// `MAX(...) + 1` in the statement itself; SQLite serializes writers, so two appends never see
/// the same maximum there, but under PostgreSQL's read-committed isolation two concurrent
/// appends to one session can, and the second then fails on the primary key: it is simply
/// repeated (it committed nothing), so numbers stay dense and unique without a lock round trip.
async fn again_after<T>(done: &Result<T, StoreError>, tries: &mut usize) -> bool {
    const ATTEMPTS: usize = 100;
    let conflict =
        matches!(done, Err(StoreError::Database(sqlx::Error::Database(d))) if d.is_unique_violation());
    if !conflict || *tries >= ATTEMPTS {
        return false;
    }
    *tries += 1;
    tokio::task::yield_now().await;
    true
}

/// Milliseconds since the Unix epoch (the store's clock).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
