//! The SQLite hot path: the calls an agent makes every step run on one rusqlite connection,
//! in the caller's own thread when nothing else holds it.
//!
//! sqlx runs every SQLite statement on its connection's worker thread and hands each one over
//! (and its rows back) through channels: an agent step of a few store calls made ~10 such
//! round trips, two thread wake-ups each, which was most of a step's kernel time. The calls an
//! agent makes every step (appending messages, the tool-call audit, steps, session state) run
//! here instead, each as one closure that does all of its statements (inside one transaction
//! where there are several):
//!
//! - **Fast path**: the connection is free and SQLite's write lock is free: the closure runs at
//!   once, on the calling thread, with no hand-off at all (a step's commit takes tens of
//!   microseconds; nothing async runs while a transaction is open).
//! - **Slow path**: another call holds the connection, or another connection (the sqlx pool,
//!   another process) holds the write lock: SQLite answers busy at once (the fast path never
//!   waits), nothing was written, and the closure runs again on a blocking thread
//!   (`spawn_blocking`) that waits for the connection and the lock (SQLite's busy timeout). The
//!   runtime's threads never wait for a lock, so a transaction of the sqlx pool held across an
//!   await can always finish, even on a one-thread runtime.
//! - **Large writes** ([`Placement::Blocking`]: a large blob, a fork's copy of a session) take
//!   the slow path at once, even when everything is free: in place they would hold a runtime
//!   thread for as long as they take.
//!
//! A call whose caller gave up (its future dropped) during the slow path still runs to its
//! end: a commit is never cut in half.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;

/// Where a call on the writer may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In place when the connection and SQLite's write lock are free ([no-wait-in-place]): the
    /// per-step writes, which take tens of microseconds.
    InPlace,
    /// Always on a blocking thread: writes big enough that running them in place would hold a
    /// runtime thread for as long as they take (a large blob, a fork's copy of a session).
    Blocking,
}

/// The connection; clones share it. `None` once closed.
#[derive(Clone)]
pub(crate) struct SqliteWriter {
    conn: Arc<Mutex<Option<Connection>>>,
    busy_timeout: Duration,
}

impl SqliteWriter {
    /// The writer over `conn` (opened by [`open_connection`], migrated).
    pub(crate) fn new(conn: Connection, busy_timeout: Duration) -> Self {
        Self { conn: Arc::new(Mutex::new(Some(conn))), busy_timeout }
    }

    /// Runs `work` on the connection and returns what it returned: in place when `placement`
    /// allows it and the connection and SQLite's write lock are free, else on a blocking thread
    /// that waits for them. `work` must be atomic (one statement, or one transaction), since a
    /// busy first attempt runs it again.
    pub(crate) async fn call<T, F>(&self, placement: Placement, mut work: F) -> Result<T, StoreError>
    where
        F: FnMut(&mut Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        if placement == Placement::InPlace
            && let Some(done) = self.try_in_place(&mut work)
        {
            return done;
        }
        let conn = self.conn.clone();
        let busy_timeout = self.busy_timeout;
        tokio::task::spawn_blocking(move || {
            let mut guard = lock(&conn);
            let conn = guard.as_mut().ok_or(StoreError::Closed)?;
            conn.busy_timeout(busy_timeout)?;
            run(conn, &mut work)
        })
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e)))?
    }

    /// Runs `work` inside one write transaction (`BEGIN IMMEDIATE`), committed when it
    /// returns `Ok`, rolled back when it (or the commit) fails; `placement` as for
    /// [`SqliteWriter::call`]. `work` gets the connection itself, not a borrowed
    /// `rusqlite::Transaction`: a `&mut Connection` may cross threads (`Send`), which a body
    /// written for both drivers needs (`sql::Conn`).
    pub(crate) async fn transaction<T, F>(&self, placement: Placement, mut work: F) -> Result<T, StoreError>
    where
        F: FnMut(&mut Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        self.call(placement, move |conn| {
            // Cached like every other statement: parsing `BEGIN` and `COMMIT` anew was a tenth of
            // what a commit cost in instructions.
            conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
            let done =
                work(conn).and_then(|done| Ok(conn.prepare_cached("COMMIT")?.execute([]).map(|_| done)?));
            if done.is_err() && !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            done
        })
        .await
    }

    /// The fast path: `work` run on this thread if the connection is free, `None` if it is
    /// taken or SQLite's write lock is busy (then nothing was written).
    fn try_in_place<T>(
        &self,
        work: &mut impl FnMut(&mut Connection) -> Result<T, StoreError>,
    ) -> Option<Result<T, StoreError>> {
        let mut guard = match self.conn.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let Some(conn) = guard.as_mut() else { return Some(Err(StoreError::Closed)) };
        // Never wait in place: a busy lock sends the call to the slow path.
        if let Err(e) = conn.busy_timeout(Duration::ZERO) {
            return Some(Err(e.into()));
        }
        match run(conn, work) {
            Err(e) if is_busy(&e) => None,
            done => Some(done),
        }
    }

    /// Waits for a running call, then closes the connection; later calls fail with
    /// [`StoreError::Closed`].
    pub(crate) async fn close(&self) {
        let conn = self.conn.clone();
        let _ = tokio::task::spawn_blocking(move || drop(lock(&conn).take())).await;
    }
}

fn lock(conn: &Mutex<Option<Connection>>) -> MutexGuard<'_, Option<Connection>> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `work`; a panic fails this call (its transaction rolled back), not the connection.
fn run<T>(
    conn: &mut Connection,
    work: &mut impl FnMut(&mut Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(conn))) {
        Ok(done) => done,
        Err(_) => {
            tracing::error!("a store call panicked");
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Err(StoreError::Panicked)
        }
    }
}

fn is_busy(error: &StoreError) -> bool {
    matches!(
        error,
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Opens (creating it if needed) the database file at `path` in WAL mode, with the store's
/// settings.
pub(crate) fn open_connection(
    path: &std::path::Path,
    busy_timeout: Duration,
) -> Result<Connection, StoreError> {
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    // WAL is a property of the file (set once, by the first opener, under the migration lock);
    // the others are per connection.
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;
         PRAGMA wal_autocheckpoint = {};",
        crate::checkpoint::AUTOCHECKPOINT_PAGES
    ))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
