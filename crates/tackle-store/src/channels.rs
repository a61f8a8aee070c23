//! Chat channels (Telegram, ...): the session each person's chat talks to, a durable inbox of
//! received updates, and small per-channel values.
//!
//! The inbox is how an update is handled exactly once across restarts: a channel stores what it
//! received (and, when it polls, the next offset) in one transaction before it acknowledges it
//! upstream; a worker marks an update `running` before acting on it and `done` after. After a
//! crash, `queued` updates are handled as if just received, and `running` ones are never started
//! again (the person is told instead).

use crate::db::DbRow;
use crate::sql::{Query, no_session};
use crate::writer::Placement;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::SessionId;

use crate::db::now_ms;
use crate::{Store, StoreError};

/// Key of the polling offset in a channel's values.
const OFFSET_KEY: &str = "offset";

/// Where an inbox entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InboxState {
    /// Received, not started.
    Queued,
    /// Started; if the process died meanwhile, it is never started again.
    Running,
    /// Handled.
    Done,
}

impl InboxState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "done" => Self::Done,
            other => {
                return Err(StoreError::Corrupt { what: "channel inbox state", detail: other.to_owned() });
            }
        })
    }
}

/// An update to store in a channel's inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewInboxItem {
    /// The channel's id of the update (Telegram's `update_id`); unique per channel.
    pub update_id: i64,
    /// The chat it belongs to (updates of one chat are handled in `update_id` order).
    pub chat: String,
    /// The update, as the channel parsed it.
    pub payload: Value,
}

/// A stored inbox entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxItem {
    /// Channel name.
    pub channel: String,
    /// The channel's id of the update.
    pub update_id: i64,
    /// The chat it belongs to.
    pub chat: String,
    /// The update.
    pub payload: Value,
    /// Where it is.
    pub state: InboxState,
    /// When it was received, unix ms.
    pub received_at: i64,
}

impl InboxItem {
    fn from_row(row: &(impl DbRow + ?Sized)) -> Result<Self, StoreError> {
        Ok(Self {
            channel: row.try_get("channel")?,
            update_id: row.try_get("update_id")?,
            chat: row.try_get("chat")?,
            payload: serde_json::from_str(row.try_get::<&str>("payload")?)?,
            state: InboxState::parse(row.try_get::<&str>("state")?)?,
            received_at: row.try_get("received_at")?,
        })
    }
}

/// What the store knows about a channel (for `tackle channels status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelSummary {
    /// The next update id to ask for, when the channel polls.
    pub offset: Option<i64>,
    /// Updates received and not started.
    pub queued: u64,
    /// Updates started and not finished.
    pub running: u64,
    /// Updates handled (kept a day, so a redelivered webhook update is recognised).
    pub done: u64,
    /// Chats with a session.
    pub sessions: u64,
    /// When the last update was received, unix ms.
    pub last_received_at: Option<i64>,
}

/// Chat channels: which session each chat talks to, a channel's values, and its durable inbox of
/// received updates.
/// From [`Store::channels`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Channels<'s> {
    pub(crate) store: &'s Store,
}

impl Channels<'_> {
    /// Stores received updates and, when given, the next polling offset, in one transaction.
    /// Updates already stored (a redelivery) are left as they are. Returns the ids that were new.
    pub async fn accept_updates(
        self,
        channel: &str,
        updates: &[NewInboxItem],
        next_offset: Option<i64>,
    ) -> Result<Vec<i64>, StoreError> {
        let now = now_ms();
        let inserts = updates
            .iter()
            .map(|u| {
                let query = Query::new(
                    "INSERT INTO channel_inbox (channel, update_id, chat, payload, state, received_at)
                     VALUES ($1, $2, $3, $4, 'queued', $5) ON CONFLICT (channel, update_id) DO NOTHING",
                )
                .bind(channel)
                .bind(u.update_id)
                .bind(&u.chat)
                .bind(serde_json::to_string(&u.payload)?)
                .bind(now);
                Ok((u.update_id, query))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        // Offsets only move forward, whatever order concurrent writers commit in.
        let offset = next_offset.map(|offset| {
            Query::new(
                "INSERT INTO channel_state (channel, key, value, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                 WHERE CAST(excluded.value AS INTEGER) > CAST(channel_state.value AS INTEGER)",
            )
            .bind(channel)
            .bind(OFFSET_KEY)
            .bind(offset.to_string())
            .bind(now)
        });
        self.store
            .db
            .transaction(Placement::InPlace, None, async move |conn| {
                let mut new = Vec::with_capacity(inserts.len());
                for (update_id, insert) in &inserts {
                    if conn.execute(insert).await? > 0 {
                        new.push(*update_id);
                    }
                }
                if let Some(offset) = &offset {
                    conn.execute(offset).await?;
                }
                Ok(new)
            })
            .await
    }

    /// The next update id a polling channel asks for.
    pub async fn offset(self, channel: &str) -> Result<Option<i64>, StoreError> {
        self.value(channel, OFFSET_KEY).await
    }

    /// Updates not handled yet (queued and running), in `update_id` order.
    pub async fn open_updates(self, channel: &str) -> Result<Vec<InboxItem>, StoreError> {
        let query = Query::new(
            "SELECT channel, update_id, chat, payload, state, received_at FROM channel_inbox
             WHERE channel = $1 AND state IN ('queued', 'running') ORDER BY update_id",
        )
        .bind(channel);
        self.store.db.read_all(query, |r| InboxItem::from_row(r)).await
    }

    /// Marks a queued update running. False when it is not queued (started before, or unknown):
    /// the caller must not act on it.
    pub async fn start_update(self, channel: &str, update_id: i64) -> Result<bool, StoreError> {
        let query = Query::new(
            "UPDATE channel_inbox SET state = 'running', started_at = $1
             WHERE channel = $2 AND update_id = $3 AND state = 'queued'",
        )
        .bind(now_ms())
        .bind(channel)
        .bind(update_id);
        Ok(self.store.db.execute(None, query).await? == 1)
    }

    /// Marks an update handled.
    pub async fn finish_update(self, channel: &str, update_id: i64) -> Result<(), StoreError> {
        let query = Query::new(
            "UPDATE channel_inbox SET state = 'done', finished_at = $1 WHERE channel = $2 AND update_id = $3",
        )
        .bind(now_ms())
        .bind(channel)
        .bind(update_id);
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Deletes handled updates received before `before_ms`; returns how many.
    pub async fn prune_updates(self, channel: &str, before_ms: i64) -> Result<u64, StoreError> {
        let query = Query::new(
            "DELETE FROM channel_inbox WHERE channel = $1 AND state = 'done' AND received_at < $2",
        )
        .bind(channel)
        .bind(before_ms);
        self.store.db.execute(None, query).await
    }

    /// The session `user` talks to in `chat` of `channel`, if any (gone when the session was
    /// deleted).
    pub async fn session(
        self,
        channel: &str,
        chat: &str,
        user: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        let query = Query::new(
            "SELECT session_id FROM channel_sessions WHERE channel = $1 AND chat = $2 AND \"user\" = $3",
        )
        .bind(channel)
        .bind(chat)
        .bind(user);
        let id = self.store.db.read_optional(query, |r| r.try_get::<String>("session_id")).await?;
        Ok(id.map(SessionId::from))
    }

    /// Points `user` in `chat` of `channel` at `session_id` (which must exist), replacing any
    /// earlier session (that one stays stored).
    pub async fn set_session(
        self,
        channel: &str,
        chat: &str,
        user: &str,
        session_id: &str,
    ) -> Result<(), StoreError> {
        let query = Query::new(
            "INSERT INTO channel_sessions (channel, chat, \"user\", session_id, updated_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (channel, chat, \"user\") DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
        )
        .bind(channel)
        .bind(chat)
        .bind(user)
        .bind(session_id)
        .bind(now_ms());
        self.store.db.execute(None, query).await.map_err(|e| no_session(e, session_id))?;
        Ok(())
    }

    /// A value stored for `channel` under `key`.
    pub async fn value<T: DeserializeOwned>(self, channel: &str, key: &str) -> Result<Option<T>, StoreError> {
        let query = Query::new("SELECT value FROM channel_state WHERE channel = $1 AND key = $2")
            .bind(channel)
            .bind(key);
        let value = self.store.db.read_optional(query, |r| r.try_get::<String>("value")).await?;
        Ok(value.map(|v| serde_json::from_str(&v)).transpose()?)
    }

    /// Stores `value` for `channel` under `key`, replacing any previous value.
    pub async fn set_value<T: Serialize + ?Sized>(
        self,
        channel: &str,
        key: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        let query = Query::new(
            "INSERT INTO channel_state (channel, key, value, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(channel)
        .bind(key)
        .bind(serde_json::to_string(value)?)
        .bind(now_ms());
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Stores `value` under `key` unless a value is there already; true when it was stored.
    pub async fn insert_value<T: Serialize + ?Sized>(
        self,
        channel: &str,
        key: &str,
        value: &T,
    ) -> Result<bool, StoreError> {
        let query = Query::new(
            "INSERT INTO channel_state (channel, key, value, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (channel, key) DO NOTHING",
        )
        .bind(channel)
        .bind(key)
        .bind(serde_json::to_string(value)?)
        .bind(now_ms());
        Ok(self.store.db.execute(None, query).await? == 1)
    }

    /// Counts of a channel's inbox and sessions, and its offset.
    pub async fn summary(self, channel: &str) -> Result<ChannelSummary, StoreError> {
        let query = Query::new(
            "SELECT
                (SELECT COUNT(*) FROM channel_inbox WHERE channel = $1 AND state = 'queued') AS queued,
                (SELECT COUNT(*) FROM channel_inbox WHERE channel = $1 AND state = 'running') AS running,
                (SELECT COUNT(*) FROM channel_inbox WHERE channel = $1 AND state = 'done') AS done,
                (SELECT COUNT(*) FROM channel_sessions WHERE channel = $1) AS sessions,
                (SELECT MAX(received_at) FROM channel_inbox WHERE channel = $1) AS last_received_at",
        )
        .bind(channel);
        let summary = self
            .store
            .db
            .read_one(query, |row| {
                let count = |name: &str| -> Result<u64, StoreError> {
                    Ok(u64::try_from(row.try_get::<i64>(name)?).unwrap_or(0))
                };
                Ok(ChannelSummary {
                    offset: None,
                    queued: count("queued")?,
                    running: count("running")?,
                    done: count("done")?,
                    sessions: count("sessions")?,
                    last_received_at: row.try_get("last_received_at")?,
                })
            })
            .await?;
        Ok(ChannelSummary { offset: self.offset(channel).await?, ..summary })
    }
}
