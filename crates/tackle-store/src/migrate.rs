//! SQLite's migrations, run on rusqlite against the table sqlx's migrator keeps for PostgreSQL
//! and kept for SQLite before (`_sqlx_migrations`: the same rows, the same SHA-384 checksums),
//! so a database created by either opens with the other.

use std::time::Instant;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use sqlx::migrate::{MigrateError, Migrator};

use crate::StoreError;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// Applies the migrations of `migrator` that `conn`'s database lacks, each in its own
/// transaction with its bookkeeping row. Fails, changing nothing, when an applied migration is
/// unknown to this build (a newer tackle made the database) or differs from this build's.
pub(crate) fn run(conn: &mut Connection, migrator: &Migrator) -> Result<(), StoreError> {
    conn.execute_batch(TABLE)?;
    let dirty: Option<i64> = conn
        .query_row(
            "SELECT version FROM _sqlx_migrations WHERE success = false ORDER BY version LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(version) = dirty {
        return Err(MigrateError::Dirty(version).into());
    }
    let applied: Vec<(i64, Vec<u8>)> = {
        let mut statement =
            conn.prepare("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")?;
        statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?
    };
    for (version, checksum) in &applied {
        match migrator.iter().find(|m| m.version == *version) {
            None => return Err(MigrateError::VersionMissing(*version).into()),
            Some(m) if *m.checksum != checksum[..] => {
                return Err(MigrateError::VersionMismatch(*version).into());
            }
            Some(_) => {}
        }
    }
    for migration in migrator.iter().filter(|m| !applied.iter().any(|(v, _)| *v == m.version)) {
        let start = Instant::now();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(migration.sql.as_str())?;
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (?1, ?2, TRUE, ?3, -1)",
            params![migration.version, &*migration.description, &*migration.checksum],
        )?;
        tx.commit()?;
        let elapsed = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
        conn.execute(
            "UPDATE _sqlx_migrations SET execution_time = ?1 WHERE version = ?2",
            params![elapsed, migration.version],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{SQLITE_MIGRATIONS, migrator};

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        run(&mut conn, &migrator(SQLITE_MIGRATIONS)).unwrap();
        conn
    }

    /// A file in `migrations/` (or `migrations/postgres/`) that `migrations!` does not list would
    /// never run: each directory holds exactly the listed files, in version order.
    #[test]
    fn every_migration_file_is_listed() {
        let expected: Vec<String> = SQLITE_MIGRATIONS.iter().map(|(v, _, _)| format!("{v:04}")).collect();
        for dir in ["migrations", "migrations/postgres"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            let mut files: Vec<String> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".sql"))
                .collect();
            files.sort();
            let versions: Vec<String> = files.iter().map(|f| f[..4].to_owned()).collect();
            assert_eq!(versions, expected, "{dir}: every file must be listed in db.rs `migrations!`");
        }
        // The SQLite texts are the files' (not an older copy).
        let last = SQLITE_MIGRATIONS.last().unwrap();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{:04}_", last.0)))
            .unwrap();
        assert_eq!(std::fs::read_to_string(file).unwrap(), last.2);
    }

    #[test]
    fn every_migration_is_applied_once_with_sqlx_bookkeeping() {
        let mut conn = migrated();
        let rows: Vec<(i64, bool, Vec<u8>)> = conn
            .prepare("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<i64> = SQLITE_MIGRATIONS.iter().map(|(v, _, _)| *v).collect();
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), expected);
        // sqlx's checksum (SHA-384 of the SQL), so sqlx's migrator accepts the database too.
        assert!(rows.iter().all(|(_, success, checksum)| *success && checksum.len() == 48));
        // A second run changes nothing.
        run(&mut conn, &migrator(SQLITE_MIGRATIONS)).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM _sqlx_migrations", [], |r| r.get(0)).unwrap();
        assert_eq!(n, expected.len() as i64);
    }

    #[test]
    fn a_database_from_a_newer_or_different_schema_is_refused() {
        let mut conn = migrated();
        conn.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (9999, 'from the future', TRUE, x'00', 0)",
            [],
        )
        .unwrap();
        let err = run(&mut conn, &migrator(SQLITE_MIGRATIONS)).unwrap_err();
        assert!(matches!(err, StoreError::Migrate(MigrateError::VersionMissing(9999))), "{err}");
        assert!(err.to_string().contains("a newer tackle"), "{err}");

        let mut conn = migrated();
        conn.execute("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1", []).unwrap();
        let err = run(&mut conn, &migrator(SQLITE_MIGRATIONS)).unwrap_err();
        assert!(matches!(err, StoreError::Migrate(MigrateError::VersionMismatch(1))), "{err}");

        let mut conn = migrated();
        conn.execute("UPDATE _sqlx_migrations SET success = FALSE WHERE version = 2", []).unwrap();
        let err = run(&mut conn, &migrator(SQLITE_MIGRATIONS)).unwrap_err();
        assert!(matches!(err, StoreError::Migrate(MigrateError::Dirty(2))), "{err}");
    }
}
