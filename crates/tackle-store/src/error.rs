//! Errors of the store.

use thiserror::Error;

/// Why a store operation failed. Messages say what to do.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The record does not exist (or belongs to someone else, which is reported the same way).
    #[error("{what} {id} not found{}", hint_for(what))]
    NotFound {
        /// Kind of record (`session`, `todo item`, `locator`, ...).
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A session id prefix matches several sessions.
    #[error("session prefix {prefix:?} is ambiguous: it matches {}; use more characters", candidates.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Matching ids (at most a few).
        candidates: Vec<String>,
    },
    /// Stored output whose time to live has passed.
    #[error(
        "stored output {locator} expired (its time to live ended at {expired_at} ms since the epoch); run the tool again to get fresh output"
    )]
    Expired {
        /// The locator.
        locator: String,
        /// When it expired, unix milliseconds.
        expired_at: i64,
    },
    /// Stored data does not match its digest or cannot be decoded.
    #[error("stored {what} is corrupt: {detail}")]
    Corrupt {
        /// What.
        what: &'static str,
        /// How.
        detail: String,
    },
    /// `[store] url` / `TACKLE_DATABASE_URL` is not a store address.
    #[error(
        "store url {url} is invalid: {reason}; use postgres://USER:PASSWORD@HOST:PORT/DATABASE for PostgreSQL or sqlite:PATH for a SQLite file"
    )]
    InvalidUrl {
        /// The address, its password masked.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The SQLite database failed (on the writer's connection, `writer.rs`).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A fenced write ([`crate::Store::fenced`]) found that its turn's lease had moved on:
    /// another turn took the session over (this instance stalled past the lease), or the lease
    /// expired or was released. Nothing of the write was committed.
    #[error(
        "the turn lost its lease on session {session} (another turn took the session over, or the lease expired); \
         nothing more of this turn was written: read the session's messages and send the next message"
    )]
    LeaseLost {
        /// The session.
        session: String,
    },
    /// The store was closed; open it again.
    #[error("the store is closed; open it again")]
    Closed,
    /// A store call panicked (a bug); nothing of it was committed, and the store stays usable.
    #[error("a store call failed on a bug (it panicked); nothing of it was committed")]
    Panicked,
    /// A store call broke one of the store's own rules (a bug); nothing of it was committed.
    #[error("a store call failed on a bug ({0}); nothing of it was committed")]
    Internal(&'static str),
    /// Migrating the schema failed.
    #[error("cannot migrate the database schema: {0}; a newer tackle may have created this database")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored JSON value could not be read or written.
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    /// A file system error (creating the data directory).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn hint_for(what: &str) -> &'static str {
    match what {
        "session" => "; `tackle sessions list` shows the ids",
        "todo item" => "; list the todo items to see the ids",
        "locator" => "; locators are valid only in the session that created them",
        "response" => "; a response can be continued for 30 days, by the user who made it, if it was stored",
        _ => "",
    }
}

impl StoreError {
    pub(crate) fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound { what, id: id.into() }
    }
}
