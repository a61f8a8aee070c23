//! Durable storage for Tackle: SQLite (the embedded default: one file, WAL) or PostgreSQL (several
//! processes on one database), with embedded migrations. SQLite is reached through rusqlite (the
//! calls an agent makes every step on one connection, in the calling thread when it is free),
//! PostgreSQL through sqlx; each query is written once for both (`sql.rs`).
//!
//! One [`Store`] holds sessions and everything that belongs to them: messages in order, the
//! tool-call audit (which also makes each call id run at most once), offloaded outputs
//! (zstd-compressed, blake3-checked, per session, with a time to live), todo items, session
//! state and compaction snapshots. Deleting a session deletes all of it. Responses made through
//! the server's Responses endpoint are kept for `previous_response_id`, per user, for 30 days. Chat channels keep
//! which session each chat talks to and a durable inbox of received updates.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use tackle_protocol::Message;
//! use tackle_store::{NewSession, Store};
//! let store = Store::open_in_memory().await.unwrap();
//! let session = store.sessions().create(NewSession { owner: "local".into(), ..NewSession::default() }).await.unwrap();
//! store.messages().append_all(&session.id, 1, &[Message::user("hi"), Message::assistant("hello")]).await.unwrap();
//! assert_eq!(store.messages().count(&session.id).await.unwrap(), 2);
//! # });
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod approvals;
mod blobs;
mod channels;
mod checkpoint;
mod db;
mod elicitations;
mod error;
mod events;
mod fence;
mod file_checkpoints;
mod frames;
mod history;
mod leases;
mod messages;
mod migrate;
mod readers;
mod responses;
mod runner;
mod sessions;
mod snapshots;
mod sql;
mod state;
mod steps;
mod todos;
mod tool_calls;
mod url;
mod writer;

use std::path::Path;

pub use approvals::{ApprovalDecisionRecord, Approvals, StoredApproval};
pub use blobs::{Blob, BlobMeta, Blobs, NewBlob};
pub use channels::{ChannelSummary, Channels, InboxItem, InboxState, NewInboxItem};
pub use db::now_ms;
pub use elicitations::{ElicitationAnswerRecord, Elicitations, StoredElicitation};
pub use error::StoreError;
pub use events::{Events, StoredEvent};
pub use file_checkpoints::{CheckpointObject, CheckpointRecord, Checkpoints, NewCheckpoint};
pub use history::{ConversationRewind, TurnSummary};
pub use leases::{Lease, LeaseRefusal, Leases};
pub use messages::{MessageFilter, Messages, StoredMessage};
pub use responses::{NewResponse, RESPONSE_TTL, ResponseChain, Responses};
pub use sessions::{
    ChildSession, NewSession, ParentLink, SessionFilter, SessionRecord, SessionStatus, SessionSummary,
    SessionUpdate, Sessions,
};
pub use snapshots::{LoadedContext, Snapshot};
pub use state::SessionState;
pub use steps::{StepCommit, StepRecord, Steps};
pub use todos::{TodoItem, TodoPage, TodoStatus, TodoUpdate, Todos};
pub use tool_calls::{BeginOutcome, CallStart, Calls, ToolCallFinish, ToolCallRecord, ToolCallStatus};
pub use url::{Backend, StoreUrl};

/// The store. Cheap to clone: clones share one connection pool.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use tackle_store::{NewSession, Store};
/// let store = Store::open_in_memory().await.unwrap();
/// let s = store.sessions().create(NewSession { owner: "local".into(), ..Default::default() }).await.unwrap();
/// store.messages().append(&s.id, 1, &tackle_protocol::Message::user("hi")).await.unwrap();
/// assert_eq!(store.messages().count(&s.id).await.unwrap(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct Store {
    db: db::Db,
    /// Background WAL checkpoints of a file database.
    _checkpointer: Option<checkpoint::Checkpointer>,
    /// The directory of a throwaway store ([`Store::open_in_memory`]), removed with the last
    /// clone (after the connections above, which are dropped first).
    _scratch: Option<std::sync::Arc<tempfile::TempDir>>,
    /// The lease whose session's writes are checked ([`Store::fenced`]); `None`: unchecked.
    fence: Option<std::sync::Arc<fence::Fence>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating it and its directory if needed) the database file at `path`.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let db = db::open_file(path).await?;
        let checkpointer = checkpoint::spawn(path.to_owned(), checkpoint::CHECKPOINT_EVERY);
        Ok(Self { db, _checkpointer: Some(checkpointer), _scratch: None, fence: None })
    }

    /// Opens the store at `url`: `postgres://user:password@host:port/database` (or
    /// `postgresql://`) for a PostgreSQL server, whose database must exist; `sqlite:` followed
    /// by a path for a SQLite file. Creates or migrates the schema; several processes may open
    /// the same fresh database at once.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), tackle_store::StoreError> {
    /// let store = tackle_store::Store::connect("postgres://tackle@db.internal/tackle").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        match StoreUrl::parse(url)? {
            StoreUrl::Postgres(url) => Ok(Self {
                db: db::open_postgres(&url).await?,
                _checkpointer: None,
                _scratch: None,
                fence: None,
            }),
            StoreUrl::Sqlite(path) => Self::open(&path).await,
        }
    }

    /// A private throwaway database, for tests and runs that keep nothing: a SQLite file in a
    /// fresh temporary directory (so it behaves exactly like [`Store::open`]'s), removed when
    /// the last clone of the store is dropped.
    pub async fn open_in_memory() -> Result<Self, StoreError> {
        let scratch = tempfile::Builder::new().prefix("tackle-store-").tempdir()?;
        let mut store = Self::open(&scratch.path().join("tackle.db")).await?;
        store._scratch = Some(std::sync::Arc::new(scratch));
        Ok(store)
    }

    /// Closes the connections, waiting for running queries; later calls fail.
    pub async fn close(&self) {
        if let Some(checkpointer) = &self._checkpointer {
            checkpointer.stop();
        }
        self.db.close().await;
    }

    /// Which database holds the store.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// The SQLite journal mode in use (`wal` for files); `None` on PostgreSQL.
    pub async fn journal_mode(&self) -> Result<Option<String>, StoreError> {
        if self.backend() != Backend::Sqlite {
            return Ok(None);
        }
        let query = sql::Query::new("PRAGMA journal_mode");
        self.db.read_optional(query, |r| sql::RowExt::try_get::<String>(r, "journal_mode")).await
    }
}

/// The store's domains: each handle owns its tables' queries. Handles are borrowed views,
/// free to copy; a call's future borrows only the store.
impl Store {
    /// Sessions, their turn start, key-value state and history (turns, rewinds, forks).
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { store: self }
    }

    /// A session's messages in order, and its compaction snapshots.
    pub fn messages(&self) -> Messages<'_> {
        Messages { store: self }
    }

    /// The tool-call audit.
    pub fn calls(&self) -> Calls<'_> {
        Calls { store: self }
    }

    /// The record of each model step.
    pub fn steps(&self) -> Steps<'_> {
        Steps { store: self }
    }

    /// Offloaded outputs.
    pub fn blobs(&self) -> Blobs<'_> {
        Blobs { store: self }
    }

    /// Chat channels' sessions, values and inboxes.
    pub fn channels(&self) -> Channels<'_> {
        Channels { store: self }
    }

    /// Approvals and their decisions.
    pub fn approvals(&self) -> Approvals<'_> {
        Approvals { store: self }
    }

    /// Questions asked of a user and their answers.
    pub fn elicitations(&self) -> Elicitations<'_> {
        Elicitations { store: self }
    }

    /// A session's streamed events.
    pub fn events(&self) -> Events<'_> {
        Events { store: self }
    }

    /// File checkpoints and their objects.
    pub fn checkpoints(&self) -> Checkpoints<'_> {
        Checkpoints { store: self }
    }

    /// Which instance runs each session's turn, and cancel requests.
    pub fn leases(&self) -> Leases<'_> {
        Leases { store: self }
    }

    /// A session's todo items.
    pub fn todos(&self) -> Todos<'_> {
        Todos { store: self }
    }

    /// Responses kept for `previous_response_id`.
    pub fn responses(&self) -> Responses<'_> {
        Responses { store: self }
    }
}
