//! Going back in a conversation: the conversation as it was before a turn, rewinding to it (a
//! recorded rewrite, like compaction: nothing is deleted), and forking a session at a turn.
//!
//! The rule that makes this work on any history: the conversation before message `seq` is the
//! latest snapshot made before it (`upto_seq < seq`) plus every message between that snapshot
//! and `seq`, hidden or not — every rewrite (compaction, rewind) saves a snapshot covering the
//! whole session at that moment, so a message hidden after `seq` was visible before it.

use tackle_protocol::Message;

use crate::db::DbRow;
use crate::messages::execute_all;
use crate::messages::stored;
use crate::sessions::Sessions;
use crate::sql::{Query, Row};
use crate::writer::Placement;
use crate::{NewSession, SessionRecord, StoreError};

/// What a rewind of the conversation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRewind {
    /// Messages the conversation had before.
    pub messages_before: usize,
    /// Messages it has now.
    pub messages_after: usize,
    /// The user's message of the turn rewound (to send again, or edit).
    pub prompt: String,
}

impl Sessions<'_> {
    /// The first message of `turn` in a session, if the turn has any.
    pub async fn first_seq_of_turn(self, session_id: &str, turn: i64) -> Result<Option<i64>, StoreError> {
        let query = Query::new("SELECT MIN(seq) AS s FROM messages WHERE session_id = $1 AND turn = $2")
            .bind(session_id)
            .bind(turn);
        self.store.db.read_one(query, |r| r.try_get::<Option<i64>>("s")).await
    }

    /// The conversation as the model saw it before message `seq` (all of it when `None`).
    pub async fn conversation_before(
        self,
        session_id: &str,
        seq: Option<i64>,
    ) -> Result<Vec<Message>, StoreError> {
        let before = seq.unwrap_or(i64::MAX);
        let query = Query::new(
            "SELECT upto_seq, messages FROM snapshots WHERE session_id = $1 AND upto_seq < $2
             ORDER BY id DESC LIMIT 1",
        )
        .bind(session_id)
        .bind(before);
        let snapshot = self
            .store
            .db
            .read_optional(query, |r| {
                Ok((
                    r.try_get::<i64>("upto_seq")?,
                    serde_json::from_str::<Vec<Message>>(r.try_get::<&str>("messages")?)?,
                ))
            })
            .await?;
        let (after, mut messages) = snapshot.unwrap_or((-1, Vec::new()));
        let query = Query::new(
            "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
             WHERE session_id = $1 AND seq > $2 AND seq < $3 ORDER BY seq",
        )
        .bind(session_id)
        .bind(after)
        .bind(before);
        let rows = self.store.db.read_all(query, |r| stored(r)).await?;
        messages.extend(rows.into_iter().map(|m| m.message));
        Ok(messages)
    }

    /// Rewinds a session's conversation to before `turn`: saves the conversation as it was
    /// then as a snapshot (what resuming loads from now on) and hides the messages of `turn` and
    /// later, which stay stored (a later rewind may go back to any of them).
    pub async fn rewind(self, session_id: &str, turn: i64) -> Result<ConversationRewind, StoreError> {
        let first = self
            .first_seq_of_turn(session_id, turn)
            .await?
            .ok_or_else(|| StoreError::not_found("turn", format!("{turn} of session {session_id}")))?;
        let before = self.store.messages().load_context(session_id).await?.messages().len();
        let messages = self.conversation_before(session_id, Some(first)).await?;
        let query = Query::new(
            "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
             WHERE session_id = $1 AND seq = $2",
        )
        .bind(session_id)
        .bind(first);
        let prompt = self
            .store
            .db
            .read_optional(query, |r| stored(r))
            .await?
            .ok_or_else(|| StoreError::not_found("message", format!("{first} of session {session_id}")))?
            .message
            .text();
        let upto = self.store.messages().count(session_id).await? - 1;
        let stats = serde_json::json!({"rewind": {"turn": turn, "messages_before": before}});
        self.store.messages().save_snapshot(session_id, upto, &messages, &stats).await?;
        let hide =
            Query::new("UPDATE messages SET hidden = 1 WHERE session_id = $1 AND seq >= $2 AND hidden = 0")
                .bind(session_id)
                .bind(first);
        self.store.db.execute(None, hide).await?;
        Ok(ConversationRewind { messages_before: before, messages_after: messages.len(), prompt })
    }

    /// A new session with the conversation of `source` before message `upto` (all of it when
    /// `None`): its messages (with their turns, so turn numbers go on where they stopped), the
    /// snapshot that conversation needs when it was compacted or rewound, its tool-call audit,
    /// todos and state. `source` is only read.
    pub async fn fork(
        self,
        source: &str,
        new: NewSession,
        upto: Option<i64>,
    ) -> Result<SessionRecord, StoreError> {
        let before = upto.unwrap_or(i64::MAX);
        let conversation = self.conversation_before(source, upto).await?;
        let record = self.create(new).await?;
        let target = record.id.to_string();
        let copies: Vec<Query> = [
            "INSERT INTO messages (session_id, seq, turn, role, content, hidden, token_count, created_at)
             SELECT $2, seq, turn, role, content, hidden, token_count, created_at FROM messages
             WHERE session_id = $1 AND seq < $3",
            "INSERT INTO tool_calls (session_id, call_id, name, args, status, result, envelope, bytes, truncated,
                 locator, started_at, finished_at, duration_ms)
             SELECT $2, call_id, name, args, status, result, envelope, bytes, truncated, locator, started_at,
                 finished_at, duration_ms FROM tool_calls WHERE session_id = $1",
            "INSERT INTO todos (session_id, id, text, status, position, created_at, updated_at)
             SELECT $2, id, text, status, position, created_at, updated_at FROM todos WHERE session_id = $1",
            "INSERT INTO session_state (session_id, key, value, updated_at)
             SELECT $2, key, value, updated_at FROM session_state WHERE session_id = $1",
        ]
        .into_iter()
        .enumerate()
        .map(|(i, sql)| {
            let query = Query::new(sql).bind(source).bind(&target);
            // Only the messages are cut at `upto`.
            if i == 0 { query.bind(before) } else { query }
        })
        .collect();
        // A long session's copy can take a while: never in place on a runtime thread.
        self.store
            .db
            .transaction(Placement::Blocking, None, async move |conn| execute_all(conn, &copies).await)
            .await?;
        // The fork resumes from exactly that conversation: when its visible messages are not it
        // (the source was compacted or rewound before `upto`), a snapshot says what it is.
        let visible: Vec<Message> = self.store.messages().load_context(&target).await?.messages();
        if visible != conversation {
            let last = self.store.messages().count(&target).await? - 1;
            let stats = serde_json::json!({"fork": {"source": source}});
            self.store.messages().save_snapshot(&target, last, &conversation, &stats).await?;
        }
        Ok(record)
    }

    /// A session's turns: number, first message's sequence number, the user's message, whether
    /// it is in the conversation now (not rewound away).
    pub async fn turns(self, session_id: &str) -> Result<Vec<TurnSummary>, StoreError> {
        let query = Query::new(
            "SELECT m.turn AS turn, m.seq AS seq, m.content AS content, m.hidden AS hidden, m.created_at AS created_at
             FROM messages m JOIN (
                 SELECT turn, MIN(seq) AS first FROM messages WHERE session_id = $1 GROUP BY turn
             ) f ON m.turn = f.turn AND m.seq = f.first
             WHERE m.session_id = $1 ORDER BY m.turn",
        )
        .bind(session_id);
        self.store.db.read_all(query, |r| turn_summary(r)).await
    }
}

fn turn_summary(r: &dyn Row) -> Result<TurnSummary, StoreError> {
    let content: Vec<tackle_protocol::ContentBlock> = serde_json::from_str(r.try_get::<&str>("content")?)?;
    let text = Message { role: tackle_protocol::Role::User, content }.text();
    Ok(TurnSummary {
        turn: r.try_get("turn")?,
        first_seq: r.try_get("seq")?,
        prompt: text,
        hidden: r.try_get::<i64>("hidden")? != 0,
        created_at: r.try_get("created_at")?,
    })
}

/// One turn of a session, as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnSummary {
    /// Turn number.
    pub turn: i64,
    /// Sequence number of its first message.
    pub first_seq: i64,
    /// The user's message.
    pub prompt: String,
    /// Rewound away (or compacted: hidden from the conversation).
    pub hidden: bool,
    /// When it started, Unix milliseconds.
    pub created_at: i64,
}
