//! Sessions: one conversation each, owned by a user.

use std::fmt;

use crate::db::DbRow;
use crate::messages::MessageRow;
use crate::sql::{Conn, Query, Row};
use crate::writer::Placement;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::Message;

use crate::db::now_ms;
use crate::runner::Runner;
use crate::{Store, StoreError};

/// Lifecycle state of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// No turn running.
    Idle,
    /// A turn is running.
    Running,
    /// A turn was running when its process died; the next turn answers its open calls.
    Interrupted,
    /// The last turn failed.
    Failed,
    /// Kept for reference; not offered for new turns by front ends.
    Archived,
}

impl SessionStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
            Self::Archived => "archived",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "idle" => Self::Idle,
            "running" => Self::Running,
            "interrupted" => Self::Interrupted,
            "failed" => Self::Failed,
            "archived" => Self::Archived,
            other => return Err(StoreError::Corrupt { what: "session status", detail: other.to_owned() }),
        })
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// UUIDv7.
    pub id: tackle_protocol::SessionId,
    /// Owner (user id); `local` for the CLI.
    pub owner: String,
    /// Title.
    pub title: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Workspace root.
    pub workspace: String,
    /// Lifecycle state.
    pub status: SessionStatus,
    /// Free-form settings of front ends.
    pub metadata: Value,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Last change, unix ms.
    pub updated_at: i64,
}

/// What a new session needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSession {
    /// Owner.
    pub owner: String,
    /// Title (may be empty).
    pub title: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Workspace root.
    pub workspace: String,
    /// Metadata.
    pub metadata: Value,
}

/// A session another session started (a sub-agent's), as its parent lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSession {
    /// UUIDv7.
    pub id: String,
    /// Title.
    pub title: String,
    /// Model name.
    pub model: String,
    /// Lifecycle state.
    pub status: SessionStatus,
    /// The parent's tool call that started it.
    pub parent_call_id: String,
    /// Creation time, unix ms.
    pub created_at: i64,
}

/// Which session and tool call started a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentLink {
    /// The parent session.
    pub session_id: String,
    /// The parent's tool call.
    pub call_id: String,
}

/// Changes to a session; `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionUpdate {
    /// New title.
    pub title: Option<String>,
    /// New status.
    pub status: Option<SessionStatus>,
    /// New model.
    pub model: Option<String>,
    /// New metadata.
    pub metadata: Option<Value>,
}

/// Which sessions to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Only this owner's.
    pub owner: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<u32>,
    /// Skip this many.
    pub offset: u32,
}

/// A session in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// UUIDv7.
    pub id: String,
    /// Owner.
    pub owner: String,
    /// Title.
    pub title: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Workspace root.
    pub workspace: String,
    /// Lifecycle state.
    pub status: SessionStatus,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Last activity, unix ms.
    pub updated_at: i64,
    /// Messages stored (hidden ones included).
    pub message_count: i64,
}

macro_rules! session_columns {
    () => {
        "id, owner, title, provider, model, workspace, status, runner, lease_until, metadata, created_at, updated_at, \
         (SELECT now_ms FROM db_clock) AS db_now"
    };
}

/// The stored status, with a running turn whose process is gone, or whose lease expired by the
/// database's clock (`db_now`: its instance stopped renewing it), reported as interrupted.
fn status_of(row: &(impl DbRow + ?Sized)) -> Result<SessionStatus, StoreError> {
    let status = SessionStatus::parse(row.try_get::<&str>("status")?)?;
    let runner: Option<&str> = row.try_get("runner")?;
    let lease_until: Option<i64> = row.try_get("lease_until")?;
    let now: i64 = row.try_get("db_now")?;
    Ok(if status == SessionStatus::Running && !turn_alive(runner, lease_until, now) {
        SessionStatus::Interrupted
    } else {
        status
    })
}

/// Whether a session marked running still has a live turn: its runner process exists (as far
/// as this host can tell) and its lease, if it holds one, has not expired.
pub(crate) fn turn_alive(runner: Option<&str>, lease_until: Option<i64>, now: i64) -> bool {
    let process_gone = runner.and_then(Runner::decode).is_some_and(|r| r.is_gone());
    let lease_expired = lease_until.is_some_and(|until| until <= now);
    runner.is_some() && !process_gone && !lease_expired
}

const CREATE: &str = "INSERT INTO sessions (id, owner, title, provider, model, workspace, status, metadata, created_at, updated_at,
        parent_id, parent_call_id)
     VALUES ($1, $2, $3, $4, $5, $6, 'idle', $7, $8, $9, $10, $11)";

/// How many sessions are above session `$1` through its parent links (0 for a session no
/// session started). The links are set when a child is created, so they cannot form a cycle; the
/// walk stops at [`MAX_ANCESTORS`] all the same, so rows edited by hand cannot loop it.
const DEPTH: &str = "WITH RECURSIVE ancestors (id, depth) AS (
        SELECT parent_id, CAST(1 AS BIGINT) FROM sessions WHERE id = $1 AND parent_id IS NOT NULL
        UNION ALL
        SELECT s.parent_id, a.depth + 1 FROM sessions s JOIN ancestors a ON s.id = a.id
        WHERE s.parent_id IS NOT NULL AND a.depth < $2
     )
     SELECT CAST(COALESCE(MAX(depth), 0) AS BIGINT) AS depth FROM ancestors";

/// The most ancestors [`Sessions::depth`] counts.
const MAX_ANCESTORS: i64 = 1024;

const GET: &str = concat!("SELECT ", session_columns!(), " FROM sessions WHERE id = $1");

const UPDATE: &str = "UPDATE sessions SET
        title = COALESCE($1, title),
        runner = CASE WHEN $2 IS NULL THEN runner WHEN $3 = 'running' THEN $4 ELSE NULL END,
        status = COALESCE($5, status),
        model = COALESCE($6, model),
        metadata = COALESCE($7, metadata),
        updated_at = $8
     WHERE id = $9";

/// A [`SessionUpdate`] as [`UPDATE`] binds it.
struct UpdateRow {
    title: Option<String>,
    status: Option<&'static str>,
    model: Option<String>,
    metadata: Option<String>,
}

impl UpdateRow {
    fn new(update: SessionUpdate) -> Result<Self, StoreError> {
        Ok(Self {
            metadata: update.metadata.as_ref().map(serde_json::to_string).transpose()?,
            status: update.status.map(SessionStatus::as_str),
            title: update.title,
            model: update.model,
        })
    }

    /// Applies it to session `id` (in the caller's transaction, if any).
    async fn run(&self, conn: &mut Conn<'_>, id: &str) -> Result<(), StoreError> {
        let query = Query::new(UPDATE)
            .bind(&self.title)
            .bind(self.status)
            .bind(self.status)
            .bind(crate::runner::current_id())
            .bind(self.status)
            .bind(&self.model)
            .bind(&self.metadata)
            .bind(now_ms())
            .bind(id);
        if conn.execute(&query).await? == 0 {
            return Err(StoreError::not_found("session", id));
        }
        Ok(())
    }
}

/// Ends a turn inside the caller's transaction: the session's status set (which clears its
/// runner, as [`Sessions::update`] does), and the session as it now is.
pub(crate) async fn end_turn_on(
    conn: &mut Conn<'_>,
    id: &str,
    status: SessionStatus,
) -> Result<SessionRecord, StoreError> {
    let row = UpdateRow::new(SessionUpdate { status: Some(status), ..SessionUpdate::default() })?;
    Ok(update_on(conn, id, &row, None).await?.0)
}

/// The session `id`.
async fn get_on(conn: &mut Conn<'_>, id: &str) -> Result<SessionRecord, StoreError> {
    conn.fetch_optional(&Query::new(GET).bind(id), |row| record(row))
        .await?
        .ok_or_else(|| StoreError::not_found("session", id))
}

/// The statements of [`Sessions::update`](crate::Sessions::update) and [`Sessions::start_turn`](crate::Sessions::start_turn) (with its first
/// message), inside one transaction, on either backend.
async fn update_on(
    conn: &mut Conn<'_>,
    id: &str,
    row: &UpdateRow,
    first: Option<(&MessageRow, i64)>,
) -> Result<(SessionRecord, Option<i64>), StoreError> {
    row.run(conn, id).await?;
    let seq = match first {
        Some((message, turn)) => Some(message.insert(conn, id, turn).await?),
        None => None,
    };
    Ok((get_on(conn, id).await?, seq))
}

fn record(row: &(impl DbRow + ?Sized)) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: row.try_get::<String>("id")?.into(),
        owner: row.try_get("owner")?,
        title: row.try_get("title")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        workspace: row.try_get("workspace")?,
        status: status_of(row)?,
        metadata: serde_json::from_str(row.try_get::<&str>("metadata")?)?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Sessions (the `sessions` table): creating, finding, listing, updating and deleting them, a turn's
/// start, each session's key-value state, and its history (turns, rewinds, forks).
/// From [`Store::sessions`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Sessions<'s> {
    pub(crate) store: &'s Store,
}

impl Sessions<'_> {
    /// Creates a session with a new UUIDv7 id, status `idle`.
    pub async fn create(self, new: NewSession) -> Result<SessionRecord, StoreError> {
        self.create_with_state(new, &[]).await
    }

    /// Creates a session with its first state values (see [`Sessions::set_states`]) in the same
    /// commit: opening a new session costs one write, not two.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use tackle_store::{NewSession, Store};
    /// let store = Store::open_in_memory().await.unwrap();
    /// let new = NewSession { owner: "local".into(), ..NewSession::default() };
    /// let s = store.sessions().create_with_state(new, &[("mode", serde_json::json!("plan"))]).await.unwrap();
    /// assert_eq!(store.sessions().get_state::<String>(&s.id, "mode").await.unwrap().as_deref(), Some("plan"));
    /// # });
    /// ```
    pub async fn create_with_state(
        self,
        new: NewSession,
        state: &[(&str, Value)],
    ) -> Result<SessionRecord, StoreError> {
        self.insert(new, None, state).await
    }

    /// Creates a session started by tool call `parent.call_id` of session `parent.session_id`
    /// (a sub-agent's, see migration 0011): its row, its link to the parent and its first state
    /// values in one commit, so no reader ever sees the child unlinked.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use tackle_store::{NewSession, ParentLink, Store};
    /// let store = Store::open_in_memory().await.unwrap();
    /// let new = || NewSession { owner: "local".into(), ..NewSession::default() };
    /// let parent = store.sessions().create(new()).await.unwrap();
    /// let link = ParentLink { session_id: parent.id.to_string(), call_id: "call_1".into() };
    /// let child = store.sessions().create_child(new(), &link, &[]).await.unwrap();
    /// assert_eq!(store.sessions().parent(&child.id).await.unwrap(), Some(link));
    /// assert_eq!(store.sessions().depth(&child.id).await.unwrap(), 1);
    /// # });
    /// ```
    pub async fn create_child(
        self,
        new: NewSession,
        parent: &ParentLink,
        state: &[(&str, Value)],
    ) -> Result<SessionRecord, StoreError> {
        self.insert(new, Some(parent), state).await
    }

    /// Inserts a session row (linked to `parent` when given) and its state in one transaction.
    async fn insert(
        self,
        new: NewSession,
        parent: Option<&ParentLink>,
        state: &[(&str, Value)],
    ) -> Result<SessionRecord, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let state = crate::state::upsert_states(&id, crate::state::state_texts(state)?);
        let now = now_ms();
        let query = Query::new(CREATE)
            .bind(&id)
            .bind(new.owner)
            .bind(new.title)
            .bind(new.provider)
            .bind(new.model)
            .bind(new.workspace)
            .bind(serde_json::to_string(&new.metadata)?)
            .bind(now)
            .bind(now)
            .bind(parent.map(|p| p.session_id.as_str()))
            .bind(parent.map(|p| p.call_id.as_str()));
        self.store
            .db
            .transaction(Placement::InPlace, None, async move |conn| {
                conn.execute(&query).await?;
                if let Some(state) = &state {
                    conn.execute(state).await?;
                }
                get_on(conn, &id).await
            })
            .await
    }

    /// The session `id`.
    pub async fn get(self, id: &str) -> Result<SessionRecord, StoreError> {
        self.store
            .db
            .fetch_optional(None, Query::new(GET).bind(id), |row| record(row))
            .await?
            .ok_or_else(|| StoreError::not_found("session", id))
    }

    /// The session `id` if `owner` owns it; another owner's session is reported as not found.
    pub async fn get_for_owner(self, id: &str, owner: &str) -> Result<SessionRecord, StoreError> {
        let r = self.get(id).await?;
        if r.owner != owner {
            return Err(StoreError::not_found("session", id));
        }
        Ok(r)
    }

    /// The session whose id starts with `prefix` (like git's short hashes).
    pub async fn find_by_prefix(self, prefix: &str) -> Result<SessionRecord, StoreError> {
        let prefix = prefix.trim();
        if prefix.is_empty() {
            return Err(StoreError::not_found("session", "(empty id)"));
        }
        let escaped = prefix.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        let query = Query::new("SELECT id FROM sessions WHERE id LIKE $1 ESCAPE '\\' ORDER BY id LIMIT 6")
            .bind(format!("{escaped}%"));
        let ids = self.store.db.read_all(query, |r| r.try_get::<String>("id")).await?;
        match ids.as_slice() {
            [] => Err(StoreError::not_found("session", prefix)),
            [one] => self.get(one).await,
            _ if ids.iter().any(|i| i == prefix) => self.get(prefix).await,
            _ => Err(StoreError::Ambiguous { prefix: prefix.to_owned(), candidates: ids }),
        }
    }

    /// Sessions whose metadata says they were imported from the exported session `source`
    /// (`{"imported_from": source}`, as `tackle sessions import` records it), oldest first.
    pub async fn imported_from(self, source: &str) -> Result<Vec<String>, StoreError> {
        // Metadata is stored as compact JSON; the key and its string value are matched as
        // written, every LIKE wildcard in them escaped.
        let needle = format!("\"imported_from\":{}", serde_json::to_string(source)?);
        let escaped = needle.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        let query =
            Query::new("SELECT id FROM sessions WHERE metadata LIKE $1 ESCAPE '\\' ORDER BY created_at, id")
                .bind(format!("%{escaped}%"));
        self.store.db.read_all(query, |r| r.try_get::<String>("id")).await
    }

    /// Sessions, most recently active first.
    pub async fn list(self, filter: SessionFilter) -> Result<Vec<SessionSummary>, StoreError> {
        let query = Query::new(
            "SELECT s.id, s.owner, s.title, s.provider, s.model, s.workspace, s.status, s.runner, s.lease_until, s.created_at, s.updated_at,
                (SELECT now_ms FROM db_clock) AS db_now,
                (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count
             FROM sessions s
             WHERE ($1 IS NULL OR s.owner = $1)
             ORDER BY s.updated_at DESC, s.id DESC
             LIMIT $2 OFFSET $3",
        )
        .bind(filter.owner.as_deref())
        .bind(i64::from(filter.limit.unwrap_or(100)))
        .bind(i64::from(filter.offset));
        self.store.db.read_all(query, |row| summary(row)).await
    }

    /// Applies `update` and returns the new record.
    pub async fn update(self, id: &str, update: SessionUpdate) -> Result<SessionRecord, StoreError> {
        let row = UpdateRow::new(update)?;
        Ok(self.update_in_transaction(id, row, None).await?.0)
    }

    /// Starts a turn in one transaction: applies `update` (the session marked running) and
    /// appends the turn's first message with its token count. Returns the new record and the
    /// message's `seq`.
    pub async fn start_turn(
        self,
        id: &str,
        update: SessionUpdate,
        turn: i64,
        message: &Message,
        token_count: Option<i64>,
    ) -> Result<(SessionRecord, i64), StoreError> {
        let row = UpdateRow::new(update)?;
        let message = MessageRow::new(message, token_count)?;
        let (record, seq) = self.update_in_transaction(id, row, Some((message, turn))).await?;
        let seq = seq.ok_or(StoreError::Internal("a turn's first message got no seq"))?;
        Ok((record, seq))
    }

    /// [`update_on`] in one transaction of either backend.
    async fn update_in_transaction(
        self,
        id: &str,
        row: UpdateRow,
        first: Option<(MessageRow, i64)>,
    ) -> Result<(SessionRecord, Option<i64>), StoreError> {
        let (epoch, id) = (self.store.epoch_for(id), id.to_owned());
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                let first = first.as_ref().map(|(m, turn)| (m, *turn));
                update_on(conn, &id, &row, first).await
            })
            .await
    }

    /// The sessions session `parent` started (its sub-agents), oldest first.
    pub async fn children(self, parent: &str) -> Result<Vec<ChildSession>, StoreError> {
        let query = Query::new(
            "SELECT id, title, model, status, runner, lease_until, parent_call_id, created_at,
                (SELECT now_ms FROM db_clock) AS db_now
             FROM sessions WHERE parent_id = $1 ORDER BY created_at, id",
        )
        .bind(parent);
        self.store
            .db
            .read_all(query, |row| {
                Ok(ChildSession {
                    id: row.try_get("id")?,
                    title: row.try_get("title")?,
                    model: row.try_get("model")?,
                    status: status_of(row)?,
                    parent_call_id: row.try_get::<Option<String>>("parent_call_id")?.unwrap_or_default(),
                    created_at: row.try_get("created_at")?,
                })
            })
            .await
    }

    /// The session and tool call that started session `id`, when a parent started it.
    pub async fn parent(self, id: &str) -> Result<Option<ParentLink>, StoreError> {
        let query = Query::new("SELECT parent_id, parent_call_id FROM sessions WHERE id = $1").bind(id);
        let row = self
            .store
            .db
            .fetch_optional(None, query, |row| {
                let parent: Option<String> = row.try_get("parent_id")?;
                let call: Option<String> = row.try_get("parent_call_id")?;
                Ok(parent.map(|session_id| ParentLink { session_id, call_id: call.unwrap_or_default() }))
            })
            .await?;
        match row {
            None => Err(StoreError::not_found("session", id)),
            Some(link) => Ok(link),
        }
    }

    /// How deep session `id` is in a tree of sub-agents: how many sessions are above it through
    /// the parent links (0 for a session a person started, or one whose parent was deleted:
    /// deleting a session unlinks its children).
    pub async fn depth(self, id: &str) -> Result<u32, StoreError> {
        let query = Query::new(DEPTH).bind(id).bind(MAX_ANCESTORS);
        let depth = self.store.db.read_one(query, |row| row.try_get::<i64>("depth")).await?;
        Ok(u32::try_from(depth).unwrap_or(u32::MAX))
    }

    /// Deletes a session and everything stored with it.
    pub async fn delete(self, id: &str) -> Result<(), StoreError> {
        if self.store.db.execute(None, Query::new("DELETE FROM sessions WHERE id = $1").bind(id)).await? == 0
        {
            return Err(StoreError::not_found("session", id));
        }
        Ok(())
    }
}

fn summary(row: &dyn Row) -> Result<SessionSummary, StoreError> {
    Ok(SessionSummary {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        title: row.try_get("title")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        workspace: row.try_get("workspace")?,
        status: status_of(row)?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        message_count: row.try_get("message_count")?,
    })
}
