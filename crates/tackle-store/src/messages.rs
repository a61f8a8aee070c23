//! Messages: the conversation of a session, in order, each committed as it happens.

use crate::db::DbRow;
use crate::sql::{Conn, Query, no_session};
use crate::writer::Placement;
use serde::{Deserialize, Serialize};
use tackle_protocol::{ContentBlock, Message, Role};

use crate::db::now_ms;
use crate::{Store, StoreError};

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Position in the session, from 0, dense.
    pub seq: i64,
    /// Turn it belongs to, from 1.
    pub turn: i64,
    /// The message.
    pub message: Message,
    /// Hidden from the model (summarized or cleared by compaction); never deleted.
    pub hidden: bool,
    /// Token count, once measured.
    pub token_count: Option<i64>,
    /// When it was stored, unix ms.
    pub created_at: i64,
}

/// Which messages to load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Include messages hidden by compaction.
    pub include_hidden: bool,
}

/// Appends one message numbered after the session's last, with its token count.
const APPEND: &str = "INSERT INTO messages (session_id, seq, turn, role, content, token_count, created_at)
     VALUES ($1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = $1), $2, $3, $4, $5, $6)
     RETURNING seq";

/// A message as it is stored, ready to append.
pub(crate) struct MessageRow {
    role: &'static str,
    content: String,
    token_count: Option<i64>,
}

impl MessageRow {
    pub(crate) fn new(message: &Message, token_count: Option<i64>) -> Result<Self, StoreError> {
        Ok(Self {
            role: role_str(message.role),
            content: serde_json::to_string(&message.content)?,
            token_count,
        })
    }

    /// [`APPEND`] with its values.
    fn append_query(&self, session_id: &str, turn: i64) -> Query {
        Query::new(APPEND)
            .bind(session_id)
            .bind(turn)
            .bind(self.role)
            .bind(&self.content)
            .bind(self.token_count)
            .bind(now_ms())
    }

    /// Appends it (in the caller's transaction, if any); returns its `seq`.
    pub(crate) async fn insert(
        &self,
        conn: &mut Conn<'_>,
        session_id: &str,
        turn: i64,
    ) -> Result<i64, StoreError> {
        conn.fetch_optional(&self.append_query(session_id, turn), |r| r.try_get::<i64>("seq"))
            .await
            .map_err(|e| no_session(e, session_id))?
            .ok_or_else(|| StoreError::not_found("session", session_id))
    }
}

/// Runs `queries` in order; returns the rows they changed.
pub(crate) async fn execute_all(conn: &mut Conn<'_>, queries: &[Query]) -> Result<u64, StoreError> {
    let mut changed = 0;
    for query in queries {
        changed += conn.execute(query).await?;
    }
    Ok(changed)
}

/// The statements of [`Messages::append_all`](crate::Messages::append_all), inside its transaction, on either backend.
async fn append_all(
    conn: &mut Conn<'_>,
    session_id: &str,
    turn: i64,
    rows: &[MessageRow],
) -> Result<Vec<i64>, StoreError> {
    let mut seqs = Vec::with_capacity(rows.len());
    for row in rows {
        seqs.push(row.insert(conn, session_id, turn).await?);
    }
    if !rows.is_empty() {
        touch(conn, session_id).await?;
    }
    Ok(seqs)
}

/// Marks session `id` active now (`updated_at`), in the caller's transaction. Messages appended
/// through [`Messages`] are activity; a turn's own step commits are not touched one by one, since
/// the turn's start and end set it (migration 0012).
async fn touch(conn: &mut Conn<'_>, id: &str) -> Result<(), StoreError> {
    let query = Query::new("UPDATE sessions SET updated_at = $1 WHERE id = $2").bind(now_ms()).bind(id);
    conn.execute(&query).await.map_err(|e| no_session(e, id))?;
    Ok(())
}

/// The highest turn of a session.
const LAST_TURN: &str = "SELECT MAX(turn) AS t FROM messages WHERE session_id = $1";

fn role_str(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

pub(crate) fn stored(row: &(impl DbRow + ?Sized)) -> Result<StoredMessage, StoreError> {
    let role = match row.try_get::<&str>("role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => return Err(StoreError::Corrupt { what: "message role", detail: other.to_owned() }),
    };
    let content: Vec<ContentBlock> = serde_json::from_str(row.try_get::<&str>("content")?)?;
    Ok(StoredMessage {
        seq: row.try_get("seq")?,
        turn: row.try_get("turn")?,
        message: Message { role, content },
        hidden: row.try_get::<i64>("hidden")? != 0,
        token_count: row.try_get("token_count")?,
        created_at: row.try_get("created_at")?,
    })
}

/// A session's messages in order (the `messages` table) and its compaction snapshots.
/// From [`Store::messages`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Messages<'s> {
    pub(crate) store: &'s Store,
}

impl Messages<'_> {
    /// Appends a message and commits it; returns its `seq`.
    pub async fn append(self, session_id: &str, turn: i64, message: &Message) -> Result<i64, StoreError> {
        self.append_counted(session_id, turn, message, None).await
    }

    /// Appends a message with its token count (so a resumed session need not count it again)
    /// and commits it; returns its `seq`.
    pub async fn append_counted(
        self,
        session_id: &str,
        turn: i64,
        message: &Message,
        token_count: Option<i64>,
    ) -> Result<i64, StoreError> {
        let row = MessageRow::new(message, token_count)?;
        let (epoch, session) = (self.store.epoch_for(session_id), session_id.to_owned());
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                let seq = row.insert(conn, &session, turn).await?;
                touch(conn, &session).await?;
                Ok(seq)
            })
            .await
    }

    /// Appends several messages in one transaction; returns their `seq`s.
    pub async fn append_all(
        self,
        session_id: &str,
        turn: i64,
        messages: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        let rows = messages.iter().map(|m| MessageRow::new(m, None)).collect::<Result<Vec<_>, _>>()?;
        let (epoch, session) = (self.store.epoch_for(session_id), session_id.to_owned());
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                append_all(conn, &session, turn, &rows).await
            })
            .await
    }

    /// Messages of a session in order.
    pub async fn load(
        self,
        session_id: &str,
        filter: MessageFilter,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let query = Query::new(
            "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
             WHERE session_id = $1 AND ($2 OR hidden = 0) ORDER BY seq",
        )
        .bind(session_id)
        .bind(filter.include_hidden);
        self.store.db.read_all(query, |r| stored(r)).await
    }

    /// Messages with `seq` greater than `after`, visible ones only, in order.
    pub(crate) async fn visible_messages_after(
        self,
        session_id: &str,
        after: i64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let query = Query::new(
            "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
             WHERE session_id = $1 AND seq > $2 AND hidden = 0 ORDER BY seq",
        )
        .bind(session_id)
        .bind(after);
        self.store.db.read_all(query, |r| stored(r)).await
    }

    /// Hides messages from the model (compaction); they stay stored.
    pub async fn hide(self, session_id: &str, seqs: &[i64]) -> Result<u64, StoreError> {
        let hides: Vec<Query> = seqs
            .iter()
            .map(|seq| {
                Query::new("UPDATE messages SET hidden = 1 WHERE session_id = $1 AND seq = $2")
                    .bind(session_id)
                    .bind(*seq)
            })
            .collect();
        let epoch = self.store.epoch_for(session_id);
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| execute_all(conn, &hides).await)
            .await
    }

    /// Forgets the token counts of a session's messages (they were counted with another
    /// vocabulary).
    pub async fn clear_token_counts(self, session_id: &str) -> Result<(), StoreError> {
        let query = Query::new(
            "UPDATE messages SET token_count = NULL WHERE session_id = $1 AND token_count IS NOT NULL",
        )
        .bind(session_id);
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Records measured token counts of messages.
    pub async fn set_token_counts(self, session_id: &str, counts: &[(i64, i64)]) -> Result<(), StoreError> {
        let updates: Vec<Query> = counts
            .iter()
            .map(|(seq, count)| {
                Query::new("UPDATE messages SET token_count = $1 WHERE session_id = $2 AND seq = $3")
                    .bind(*count)
                    .bind(session_id)
                    .bind(*seq)
            })
            .collect();
        let epoch = self.store.epoch_for(session_id);
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| execute_all(conn, &updates).await)
            .await?;
        Ok(())
    }

    /// Number of stored messages (hidden included).
    pub async fn count(self, session_id: &str) -> Result<i64, StoreError> {
        let query = Query::new("SELECT COUNT(*) AS n FROM messages WHERE session_id = $1").bind(session_id);
        self.store.db.read_one(query, |r| r.try_get("n")).await
    }

    /// The highest turn number stored, if any.
    pub async fn last_turn(self, session_id: &str) -> Result<Option<i64>, StoreError> {
        let turn = self
            .store
            .db
            .fetch_optional(None, Query::new(LAST_TURN).bind(session_id), |r| r.try_get::<Option<i64>>("t"))
            .await?;
        Ok(turn.flatten())
    }
}
