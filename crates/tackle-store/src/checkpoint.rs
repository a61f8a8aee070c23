//! WAL checkpoints in the background.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses the threshold, so every
//! thousandth page or so one unlucky commit waits for the copy and its fsync (about 13 ms here,
//! the p99 of a server turn). A task checkpoints passively every second instead, off the
//! committing connection; the automatic checkpoint stays as a backstop at a higher threshold in
//! case the task falls behind.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::watch;

/// How often the background task checkpoints.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Pages in the WAL before a commit checkpoints by itself (SQLite's default is 1000).
pub(crate) const AUTOCHECKPOINT_PAGES: u32 = 4000;

/// Keeps the checkpoint task alive; the task ends when the last clone is dropped or
/// [`Checkpointer::stop`] is called.
#[derive(Clone)]
pub(crate) struct Checkpointer {
    _alive: Arc<watch::Sender<()>>,
    stopped: Arc<AtomicBool>,
}

impl Checkpointer {
    /// Ends the task at its next tick (the store is closing).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// Starts checkpointing the database at `path` every `every`, on a connection of its own used
/// on a blocking thread.
pub(crate) fn spawn(path: PathBuf, every: Duration) -> Checkpointer {
    let (alive, mut dropped) = watch::channel(());
    let stopped = Arc::new(AtomicBool::new(false));
    let stop = stopped.clone();
    tokio::spawn(async move {
        let mut conn: Option<Connection> = None;
        loop {
            tokio::select! {
                _ = dropped.changed() => break,
                () = tokio::time::sleep(every) => {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let (path, held) = (path.clone(), conn.take());
                    match tokio::task::spawn_blocking(move || checkpoint(&path, held)).await {
                        Ok(Ok(kept)) => conn = Some(kept),
                        Ok(Err(e)) => tracing::debug!(error = %e, "background WAL checkpoint failed"),
                        Err(e) => tracing::debug!(error = %e, "background WAL checkpoint failed"),
                    }
                }
            }
        }
    });
    Checkpointer { _alive: Arc::new(alive), stopped }
}

/// One passive checkpoint on `conn` (opened on first use); returns the connection to keep.
fn checkpoint(path: &std::path::Path, conn: Option<Connection>) -> rusqlite::Result<Connection> {
    let conn = match conn {
        Some(conn) => conn,
        None => Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?,
    };
    conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)")?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pages_reach_the_database_file_without_a_commit_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x BLOB);",
        )
        .unwrap();
        for _ in 0..200 {
            conn.execute_batch("INSERT INTO t VALUES (zeroblob(4000))").unwrap();
        }
        let before = std::fs::metadata(&path).unwrap().len();
        let checkpointer = spawn(path.clone(), Duration::from_millis(20));
        let mut after = before;
        for _ in 0..250 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            after = std::fs::metadata(&path).unwrap().len();
            if after > 500_000 {
                break;
            }
        }
        assert!(after > before + 500_000, "the WAL was copied into the database: {before} -> {after} bytes");
        drop(checkpointer);
    }
}
