//! WAL checkpoints in the background.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses the threshold, so every
//! thousandth page or so one unlucky commit waits for the copy and its fsync (about 13 ms here,
//! the p99 of a server turn). A task checkpoints passively every second instead, off the
//! committing connection; the automatic checkpoint stays as a backstop at a higher threshold in
//! case the task falls behind.

use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;
use tokio::sync::watch;

/// How often the background task checkpoints.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Pages in the WAL before a commit checkpoints by itself (SQLite's default is 1000).
pub(crate) const AUTOCHECKPOINT_PAGES: u32 = 4000;

/// Keeps the checkpoint task alive; the task ends when the last clone is dropped or the pool
/// closes.
#[derive(Clone)]
pub(crate) struct Checkpointer {
    _alive: Arc<watch::Sender<()>>,
}

/// Starts checkpointing `pool` every `every`.
pub(crate) fn spawn(pool: SqlitePool, every: Duration) -> Checkpointer {
    let (alive, mut dropped) = watch::channel(());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = dropped.changed() => break,
                () = tokio::time::sleep(every) => {
                    if pool.is_closed() {
                        break;
                    }
                    if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&pool).await {
                        tracing::debug!(error = %e, "background WAL checkpoint failed");
                    }
                }
            }
        }
    });
    Checkpointer { _alive: Arc::new(alive) }
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

    use super::*;

    #[tokio::test]
    async fn pages_reach_the_database_file_without_a_commit_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("wal_autocheckpoint", "0");
        let pool = SqlitePoolOptions::new().max_connections(2).connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE t (x BLOB)").execute(&pool).await.unwrap();
        for _ in 0..200 {
            sqlx::query("INSERT INTO t VALUES (zeroblob(4000))").execute(&pool).await.unwrap();
        }
        let before = std::fs::metadata(&path).unwrap().len();
        let checkpointer = spawn(pool.clone(), Duration::from_millis(20));
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
        pool.close().await;
    }
}
