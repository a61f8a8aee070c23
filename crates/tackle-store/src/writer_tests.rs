use std::time::Duration;

use super::*;
use crate::db::{SqliteDb, open_sqlite};
use crate::sql::{Query, RowExt, sqlite_execute, sqlite_fetch_optional};

async fn open(dir: &tempfile::TempDir) -> SqliteDb {
    open_sqlite(&dir.path().join("w.db")).await.unwrap()
}

/// Another connection to the same file (another process, say), waiting up to 10 s for locks.
fn other(dir: &tempfile::TempDir) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(dir.path().join("w.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// A fresh database with an empty table `t (x INTEGER)`.
async fn open_with_table(dir: &tempfile::TempDir) -> SqliteDb {
    let db = open(dir).await;
    db.writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("CREATE TABLE t (x INTEGER)")))
        .await
        .unwrap();
    db
}

/// Another connection writes `x` into `t` without waiting: nobody holds the write lock.
fn write_lock_is_free(dir: &tempfile::TempDir, x: i64) {
    let other = other(dir);
    other.busy_timeout(Duration::ZERO).unwrap();
    other.execute_batch(&format!("INSERT INTO t (x) VALUES ({x})")).unwrap();
}

/// `SELECT COUNT(*), SUM(x) FROM t`, on a read connection.
async fn count_and_sum(db: &SqliteDb) -> (i64, i64) {
    db.readers
        .call(|conn| {
            let query = Query::new("SELECT COUNT(*) AS n, COALESCE(SUM(x), 0) AS s FROM t");
            let row =
                sqlite_fetch_optional(conn, &query, |r| Ok((r.try_get::<i64>("n")?, r.try_get::<i64>("s")?)));
            Ok(row?.unwrap_or_default())
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn numbered_parameters_bind_by_number_wherever_they_appear() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    let got = db
        .writer
        .call(Placement::InPlace, |conn| {
            let query = Query::new("SELECT $2 || $1 || $1 || $2 AS s").bind("a").bind("b");
            sqlite_fetch_optional(conn, &query, |r| r.try_get::<String>("s"))
        })
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("baab"));
    // A parameter the statement does not have is an error, not a silent shift.
    let err = db
        .writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("SELECT $1").bind(1i64).bind(2i64)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("1 parameters, 2 values"), "{err}");
}

#[tokio::test]
async fn what_the_writer_commits_the_readers_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    db.writer
        .call(Placement::InPlace, |conn| {
            sqlite_execute(conn, &Query::new("CREATE TABLE t (x INTEGER)"))?;
            sqlite_execute(conn, &Query::new("INSERT INTO t (x) VALUES ($1)").bind(7i64))
        })
        .await
        .unwrap();
    assert_eq!(count_and_sum(&db).await, (1, 7));
}

#[tokio::test]
async fn a_panicking_call_fails_alone_and_rolls_its_transaction_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(&dir).await;
    let err = db
        .writer
        .call(Placement::InPlace, |conn| -> Result<(), StoreError> {
            conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO t (x) VALUES (1);")?;
            panic!("a bug in a store call");
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Panicked), "{err}");
    // The connection lives on, out of the half-done transaction, and the lock is free.
    let n = db
        .writer
        .call(Placement::InPlace, |conn| {
            sqlite_fetch_optional(conn, &Query::new("SELECT COUNT(*) AS n FROM t"), |r| r.try_get::<i64>("n"))
        })
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    write_lock_is_free(&dir, 2);
}

/// A call that finds the connection taken waits for it on a blocking thread; if its caller
/// gives up meanwhile, the call still runs, whole, and later calls see it.
#[tokio::test]
async fn a_call_whose_caller_gave_up_still_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    db.writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("CREATE TABLE t (x INTEGER)")))
        .await
        .unwrap();
    let held = db.writer.conn.clone();
    let barriers = std::sync::Arc::new((std::sync::Barrier::new(2), std::sync::Barrier::new(2)));
    let holder = std::thread::spawn({
        let barriers = barriers.clone();
        move || {
            let _guard = held.lock().unwrap();
            barriers.0.wait();
            barriers.1.wait();
        }
    });
    barriers.0.wait();
    let slow = db
        .writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("INSERT INTO t (x) VALUES (1)")));
    assert!(tokio::time::timeout(Duration::from_millis(50), slow).await.is_err());
    barriers.1.wait();
    holder.join().unwrap();
    let count = || {
        db.writer.call(Placement::InPlace, |conn| {
            sqlite_fetch_optional(conn, &Query::new("SELECT COUNT(*) AS n FROM t"), |r| r.try_get::<i64>("n"))
        })
    };
    let landed = tokio::time::timeout(Duration::from_secs(10), async {
        while count().await.unwrap() != Some(1) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(landed.is_ok(), "the abandoned call never committed");
}

/// Another connection holds the write lock while a one-thread runtime goes on: the call finds
/// the lock busy at once, waits for it on a blocking thread (never blocking the runtime, which
/// must go on to let the other connection commit), and both commit.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_lock_never_blocks_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    db.writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("CREATE TABLE t (x INTEGER)")))
        .await
        .unwrap();
    let holder = other(&dir);
    holder.execute_batch("BEGIN IMMEDIATE; INSERT INTO t (x) VALUES (1);").unwrap();
    let writer = db.writer.clone();
    let waiting = tokio::spawn(async move {
        writer
            .call(Placement::InPlace, |conn| {
                sqlite_execute(conn, &Query::new("INSERT INTO t (x) VALUES (2)"))
            })
            .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "the call got the write lock another connection holds");
    holder.execute_batch("COMMIT").unwrap();
    waiting.await.unwrap().unwrap();
    assert_eq!(count_and_sum(&db).await, (2, 3));
}

/// Many tasks on several threads write at once, another connection too: every call lands once,
/// whichever path it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_all_land_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    db.writer
        .call(Placement::InPlace, |conn| {
            sqlite_execute(conn, &Query::new("CREATE TABLE t (x INTEGER PRIMARY KEY)"))
        })
        .await
        .unwrap();
    let tasks: Vec<_> = (0..400i64)
        .map(|i| {
            let writer = db.writer.clone();
            let path = dir.path().join("w.db");
            tokio::spawn(async move {
                if i % 10 == 0 {
                    tokio::task::spawn_blocking(move || {
                        let conn = rusqlite::Connection::open(path).unwrap();
                        conn.busy_timeout(Duration::from_secs(10)).unwrap();
                        conn.execute_batch(&format!(
                            "BEGIN IMMEDIATE; INSERT INTO t (x) VALUES ({i}); COMMIT;"
                        ))
                        .unwrap();
                    })
                    .await
                    .unwrap();
                } else {
                    writer
                        .call(Placement::InPlace, move |conn| {
                            let tx =
                                conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                            sqlite_execute(&tx, &Query::new("INSERT INTO t (x) VALUES ($1)").bind(i))?;
                            tx.commit()?;
                            Ok(())
                        })
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(count_and_sum(&db).await, (400, (0..400).sum()));
}

#[tokio::test]
async fn after_close_calls_fail_with_closed() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    db.writer.close().await;
    let err = db
        .writer
        .call(Placement::InPlace, |conn| sqlite_execute(conn, &Query::new("SELECT 1")))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Closed), "{err}");
    assert_eq!(err.to_string(), "the store is closed; open it again");
}

#[tokio::test]
async fn a_foreign_key_violation_reads_as_the_session_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    let err = db
        .writer
        .call(Placement::InPlace, |conn| {
            sqlite_execute(conn, &Query::new("INSERT INTO todos (session_id, id, position, text, status, created_at, updated_at) VALUES ('nope', 1, 1, 't', 'open', 0, 0)"))
                .map_err(|e| crate::sql::no_session(e, "nope"))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { what: "session", .. }), "{err}");
}

/// A transaction whose work fails commits none of it and leaves no transaction open: the next
/// write (another connection's, waiting for nothing) goes through.
#[tokio::test]
async fn a_failed_transaction_commits_nothing_and_frees_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with_table(&dir).await;
    let err = db
        .writer
        .transaction(Placement::InPlace, |conn| {
            sqlite_execute(conn, &Query::new("INSERT INTO t (x) VALUES (1)"))?;
            sqlite_execute(conn, &Query::new("INSERT INTO nowhere (x) VALUES (1)"))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Sqlite(_)), "{err}");
    assert_eq!(count_and_sum(&db).await, (0, 0));
    write_lock_is_free(&dir, 2);
    let insert =
        |conn: &mut rusqlite::Connection| sqlite_execute(conn, &Query::new("INSERT INTO t (x) VALUES (3)"));
    assert_eq!(db.writer.transaction(Placement::Blocking, insert).await.unwrap(), 1);
    assert_eq!(count_and_sum(&db).await, (2, 5));
}
