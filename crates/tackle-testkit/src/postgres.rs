//! The PostgreSQL server tests run against: `scripts/test.sh` starts a throwaway cluster
//! (`scripts/postgres.sh`) and passes its admin URL in `TACKLE_TEST_DATABASE_URL`; each test
//! gets a database of its own from [`fresh_database`], so tests never see each other's rows.
//!
//! ```no_run
//! # async fn f() {
//! use tackle_testkit::{peers, postgres};
//! let Some(url) = peers::or_skip(postgres::fresh_database().await) else { return };
//! # }
//! ```

use sqlx::Connection;

use crate::peers::MissingPeer;

/// The variable holding the admin URL of the test server.
pub const URL_VAR: &str = "TACKLE_TEST_DATABASE_URL";

/// Creates an empty database on the test server and returns its URL.
///
/// # Panics
/// When the server is configured but refuses: a broken peer must fail the test, not skip it.
pub async fn fresh_database() -> Result<String, MissingPeer> {
    let admin = match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            return Err(MissingPeer::new(
                "a PostgreSQL test server",
                format!("{URL_VAR} is not set; scripts/test.sh starts one with scripts/postgres.sh"),
            ));
        }
    };
    let name = format!("tackle_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the PostgreSQL test server at {admin}: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("cannot create a test database: {e}"));
    let _ = conn.close().await;
    Ok(with_database(&admin, &name))
}

/// `url` naming `database` instead of its own.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_name_the_new_database() {
        assert_eq!(super::with_database("postgres://u@h:1/postgres", "t1"), "postgres://u@h:1/t1");
        assert_eq!(super::with_database("postgres://u@h:1", "t1"), "postgres://u@h:1/t1");
        assert_eq!(
            super::with_database("postgres://u@h/p?sslmode=disable", "t"),
            "postgres://u@h/t?sslmode=disable"
        );
    }
}
