//! SQLite reads that are not on an agent's per-step path (listings, history, blobs): a few
//! rusqlite connections, each used on a blocking thread, so a long read never holds the writer
//! (WAL: readers and the writer do not wait for each other) nor a runtime thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use crate::StoreError;

/// Read connections open at most.
const READERS: usize = 4;

/// The read connections; clones share them. Opened as needed, kept for reuse.
#[derive(Clone)]
pub(crate) struct SqliteReaders {
    idle: Arc<Mutex<Vec<Connection>>>,
    permits: Arc<Semaphore>,
    path: Arc<PathBuf>,
    busy_timeout: Duration,
}

impl SqliteReaders {
    /// Readers of `path` (already created and migrated); none is opened yet.
    pub(crate) fn new(path: PathBuf, busy_timeout: Duration) -> Self {
        Self {
            idle: Arc::new(Mutex::new(Vec::new())),
            permits: Arc::new(Semaphore::new(READERS)),
            path: Arc::new(path),
            busy_timeout,
        }
    }

    /// Runs `work` on a read connection, on a blocking thread.
    pub(crate) async fn call<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self.permits.clone().acquire_owned().await.map_err(|_| StoreError::Closed)?;
        let (idle, path, busy_timeout) = (self.idle.clone(), self.path.clone(), self.busy_timeout);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = match lock(&idle).pop() {
                Some(conn) => conn,
                None => open_reader(&path, busy_timeout)?,
            };
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut conn)));
            match done {
                Ok(done) => {
                    lock(&idle).push(conn);
                    done
                }
                Err(_) => {
                    tracing::error!("a store read panicked");
                    Err(StoreError::Panicked)
                }
            }
        })
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e)))?
    }

    /// Closes the idle connections; later reads fail with [`StoreError::Closed`].
    pub(crate) fn close(&self) {
        self.permits.close();
        lock(&self.idle).clear();
    }
}

fn lock(idle: &Mutex<Vec<Connection>>) -> MutexGuard<'_, Vec<Connection>> {
    idle.lock().unwrap_or_else(|p| p.into_inner())
}

fn open_reader(path: &std::path::Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    conn.execute_batch("PRAGMA query_only = ON;")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}
