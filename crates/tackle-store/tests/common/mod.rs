//! Both backends for the store suite: every test in `both!` runs once on a SQLite file and once
//! on a fresh database of the PostgreSQL test server (`tackle_testkit::postgres`).

#![allow(dead_code)]

use tackle_store::Store;

/// Where one test's store lives; [`TestDb::open`] again is a restart.
pub enum TestDb {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl TestDb {
    pub fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    /// A fresh PostgreSQL database; `None` (skipped) when there is no test server and peers
    /// are optional.
    pub async fn postgres() -> Option<Self> {
        tackle_testkit::peers::or_skip(tackle_testkit::postgres::fresh_database().await).map(Self::Postgres)
    }

    fn sqlite_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
        dir.path().join("nested/dir/tackle.db")
    }

    pub fn url(&self) -> String {
        match self {
            Self::Sqlite(dir) => format!("sqlite:{}", Self::sqlite_path(dir).display()),
            Self::Postgres(url) => url.clone(),
        }
    }

    /// Opens (or re-opens, as a new process would) the store.
    pub async fn open(&self) -> Store {
        Store::connect(&self.url()).await.unwrap()
    }

    /// Replaces the stored (compressed) bytes of a blob behind the store's back.
    pub async fn set_blob_data(&self, locator: &str, data: Vec<u8>) {
        match self {
            Self::Sqlite(dir) => {
                let conn = rusqlite::Connection::open(Self::sqlite_path(dir)).unwrap();
                conn.execute(
                    "UPDATE blobs SET data = ?1 WHERE locator = ?2",
                    rusqlite::params![data, locator],
                )
                .unwrap();
            }
            Self::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.unwrap();
                sqlx::query("UPDATE blobs SET data = $1 WHERE locator = $2")
                    .bind(data)
                    .bind(locator)
                    .execute(&pool)
                    .await
                    .unwrap();
                pool.close().await;
            }
        }
    }

    /// The stored (compressed) bytes of a blob.
    pub async fn blob_data(&self, locator: &str) -> Vec<u8> {
        match self {
            Self::Sqlite(dir) => {
                let conn = rusqlite::Connection::open(Self::sqlite_path(dir)).unwrap();
                conn.query_row("SELECT data FROM blobs WHERE locator = ?1", [locator], |r| r.get(0)).unwrap()
            }
            Self::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.unwrap();
                let (data,): (Vec<u8>,) = sqlx::query_as("SELECT data FROM blobs WHERE locator = $1")
                    .bind(locator)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                pool.close().await;
                data
            }
        }
    }
}

/// `both! { async fn name(db) { ... } ... }`: a module per test with a `sqlite` and a
/// `postgres` test, `db` being that backend's [`TestDb`].
#[macro_export]
macro_rules! both {
    ($(async fn $name:ident($db:ident) $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let $db = $crate::common::TestDb::sqlite();
                    $body
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some($db) = $crate::common::TestDb::postgres().await else { return };
                    $body
                }
            }
        )*
    };
}
