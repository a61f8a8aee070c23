//! Snapshots: the conversation as the model should see it after a compaction. Resume starts
//! from the latest snapshot plus the messages stored after it.

use crate::db::DbRow;
use crate::messages::Messages;
use crate::sql::{Query, no_session};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::Message;

use crate::db::now_ms;
use crate::{StoreError, StoredMessage};

/// A stored snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Id, increasing.
    pub id: i64,
    /// Session.
    pub session_id: String,
    /// Creation, unix ms.
    pub created_at: i64,
    /// Seq of the last message the snapshot covers.
    pub upto_seq: i64,
    /// The conversation the model sees.
    pub messages: Vec<Message>,
    /// Compaction statistics.
    pub stats: Value,
}

/// What resume loads: the latest snapshot and the visible messages after it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedContext {
    /// The latest snapshot, if the session was ever compacted.
    pub snapshot: Option<Snapshot>,
    /// Visible messages after the snapshot (all visible messages without one).
    pub later: Vec<StoredMessage>,
}

impl LoadedContext {
    /// The conversation as the model should see it.
    pub fn messages(&self) -> Vec<Message> {
        let mut out = self.snapshot.as_ref().map(|s| s.messages.clone()).unwrap_or_default();
        out.extend(self.later.iter().map(|m| m.message.clone()));
        out
    }
}

fn snapshot(row: &(impl DbRow + ?Sized)) -> Result<Snapshot, StoreError> {
    Ok(Snapshot {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        created_at: row.try_get("created_at")?,
        upto_seq: row.try_get("upto_seq")?,
        messages: serde_json::from_str(row.try_get::<&str>("messages")?)?,
        stats: serde_json::from_str(row.try_get::<&str>("stats")?)?,
    })
}

impl Messages<'_> {
    /// Saves a snapshot covering messages up to `upto_seq`.
    pub async fn save_snapshot(
        self,
        session_id: &str,
        upto_seq: i64,
        messages: &[Message],
        stats: &Value,
    ) -> Result<Snapshot, StoreError> {
        let query = Query::new(
            "INSERT INTO snapshots (session_id, created_at, upto_seq, messages, stats) VALUES ($1, $2, $3, $4, $5)
             RETURNING id, session_id, created_at, upto_seq, messages, stats",
        )
        .bind(session_id)
        .bind(now_ms())
        .bind(upto_seq)
        .bind(serde_json::to_string(messages)?)
        .bind(serde_json::to_string(stats)?);
        self.store
            .db
            .fetch_optional(self.store.epoch_for(session_id), query, |r| snapshot(r))
            .await
            .map_err(|e| no_session(e, session_id))?
            .ok_or_else(|| StoreError::not_found("session", session_id))
    }

    /// The most recent snapshot.
    pub async fn latest_snapshot(self, session_id: &str) -> Result<Option<Snapshot>, StoreError> {
        let query = Query::new(
            "SELECT id, session_id, created_at, upto_seq, messages, stats FROM snapshots
             WHERE session_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(session_id);
        self.store.db.read_optional(query, |r| snapshot(r)).await
    }

    /// The latest snapshot plus the visible messages stored after it.
    pub async fn load_context(self, session_id: &str) -> Result<LoadedContext, StoreError> {
        let snapshot = self.latest_snapshot(session_id).await?;
        let after = snapshot.as_ref().map(|s| s.upto_seq).unwrap_or(-1);
        let later = self.visible_messages_after(session_id, after).await?;
        Ok(LoadedContext { snapshot, later })
    }
}
