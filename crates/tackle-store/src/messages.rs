//! Messages: the conversation of a session, in order, each committed as it happens.

use rusqlite::ToSql;

use crate::db::{Db, DbRow, on_db, retry_on_conflict, session_fk};
use crate::fence::{self, CheckFence};
use crate::writer::{self, not_found_if_no_session};
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

    /// Appends it on the writer's connection (in the caller's transaction, if any); returns
    /// its `seq`.
    pub(crate) fn insert_on(
        &self,
        conn: &rusqlite::Connection,
        session: &str,
        turn: i64,
    ) -> Result<i64, StoreError> {
        let params: [&dyn ToSql; 6] =
            [&session, &turn, &self.role, &self.content, &self.token_count, &now_ms()];
        writer::query_optional(conn, APPEND, &params, |r| r.try_get("seq"))
            .map_err(|e| not_found_if_no_session(e, session))?
            .ok_or_else(|| StoreError::not_found("session", session))
    }

    /// Appends it on a PostgreSQL connection; returns its `seq`.
    pub(crate) async fn insert_postgres(
        &self,
        conn: &mut sqlx::PgConnection,
        session: &str,
        turn: i64,
    ) -> Result<i64, StoreError> {
        let row = sqlx::query(APPEND)
            .bind(session)
            .bind(turn)
            .bind(self.role)
            .bind(&self.content)
            .bind(self.token_count)
            .bind(now_ms())
            .fetch_one(conn)
            .await
            .map_err(|e| session_fk(e, session))?;
        row.try_get("seq")
    }
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

pub(crate) fn stored(row: &impl DbRow) -> Result<StoredMessage, StoreError> {
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

impl Store {
    /// Appends a message and commits it; returns its `seq`.
    pub async fn append_message(
        &self,
        session_id: &str,
        turn: i64,
        message: &Message,
    ) -> Result<i64, StoreError> {
        self.append_counted_message(session_id, turn, message, None).await
    }

    /// Appends a message with its token count (so a resumed session need not count it again)
    /// and commits it; returns its `seq`.
    pub async fn append_counted_message(
        &self,
        session_id: &str,
        turn: i64,
        message: &Message,
        token_count: Option<i64>,
    ) -> Result<i64, StoreError> {
        retry_on_conflict(|| self.try_append_counted_message(session_id, turn, message, token_count)).await
    }

    async fn try_append_counted_message(
        &self,
        session_id: &str,
        turn: i64,
        message: &Message,
        token_count: Option<i64>,
    ) -> Result<i64, StoreError> {
        let row = MessageRow::new(message, token_count)?;
        let epoch = self.epoch_for(session_id);
        match &self.db {
            Db::Sqlite(sqlite) => {
                let session = session_id.to_owned();
                sqlite.writer.write(epoch, move |conn| row.insert_on(conn, &session, turn)).await
            }
            Db::Postgres(pool) => {
                fence::pg_write(pool, &epoch, async |conn| row.insert_postgres(conn, session_id, turn).await)
                    .await
            }
        }
    }

    /// Appends several messages in one transaction; returns their `seq`s.
    pub async fn append_messages(
        &self,
        session_id: &str,
        turn: i64,
        messages: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        retry_on_conflict(|| self.try_append_messages(session_id, turn, messages)).await
    }

    async fn try_append_messages(
        &self,
        session_id: &str,
        turn: i64,
        messages: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        let rows = messages.iter().map(|m| MessageRow::new(m, None)).collect::<Result<Vec<_>, _>>()?;
        let epoch = self.epoch_for(session_id);
        match &self.db {
            Db::Sqlite(sqlite) => {
                let session = session_id.to_owned();
                sqlite
                    .writer
                    .transaction(move |tx| {
                        fence::check_on(tx, &epoch)?;
                        let seqs = rows
                            .iter()
                            .map(|row| row.insert_on(tx, &session, turn))
                            .collect::<Result<_, _>>()?;
                        Ok(seqs)
                    })
                    .await
            }
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                tx.check_fence(&epoch).await?;
                let mut seqs = Vec::with_capacity(rows.len());
                for row in &rows {
                    seqs.push(row.insert_postgres(&mut tx, session_id, turn).await?);
                }
                tx.commit().await?;
                Ok(seqs)
            }
        }
    }

    /// Messages of a session in order.
    pub async fn load_messages(
        &self,
        session_id: &str,
        filter: MessageFilter,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        on_db!(self, pool => {
            let rows = sqlx::query(
                "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
                 WHERE session_id = $1 AND ($2 OR hidden = 0) ORDER BY seq",
            )
            .bind(session_id)
            .bind(filter.include_hidden)
            .fetch_all(pool)
            .await?;
            rows.iter().map(stored).collect()
        })
    }

    /// Messages with `seq` greater than `after`, visible ones only, in order.
    pub(crate) async fn visible_messages_after(
        &self,
        session_id: &str,
        after: i64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        on_db!(self, pool => {
            let rows = sqlx::query(
                "SELECT seq, turn, role, content, hidden, token_count, created_at FROM messages
                 WHERE session_id = $1 AND seq > $2 AND hidden = 0 ORDER BY seq",
            )
            .bind(session_id)
            .bind(after)
            .fetch_all(pool)
            .await?;
            rows.iter().map(stored).collect()
        })
    }

    /// Hides messages from the model (compaction); they stay stored.
    pub async fn hide_messages(&self, session_id: &str, seqs: &[i64]) -> Result<u64, StoreError> {
        on_db!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut n = 0;
            for seq in seqs {
                n += sqlx::query("UPDATE messages SET hidden = 1 WHERE session_id = $1 AND seq = $2")
                    .bind(session_id)
                    .bind(seq)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            // After the writes: on SQLite the first write takes the write lock (a read first
            // could not upgrade if another connection wrote meanwhile).
            tx.check_fence(&self.epoch_for(session_id)).await?;
            tx.commit().await?;
            Ok(n)
        })
    }

    /// Forgets the token counts of a session's messages (they were counted with another
    /// vocabulary).
    pub async fn clear_token_counts(&self, session_id: &str) -> Result<(), StoreError> {
        on_db!(self, pool => {
            sqlx::query(
                "UPDATE messages SET token_count = NULL WHERE session_id = $1 AND token_count IS NOT NULL",
            )
            .bind(session_id)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Records measured token counts of messages.
    pub async fn set_token_counts(&self, session_id: &str, counts: &[(i64, i64)]) -> Result<(), StoreError> {
        on_db!(self, pool => {
            let mut tx = pool.begin().await?;
            for (seq, count) in counts {
                sqlx::query("UPDATE messages SET token_count = $1 WHERE session_id = $2 AND seq = $3")
                    .bind(count)
                    .bind(session_id)
                    .bind(seq)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.check_fence(&self.epoch_for(session_id)).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// Number of stored messages (hidden included).
    pub async fn message_count(&self, session_id: &str) -> Result<i64, StoreError> {
        on_db!(self, pool => {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM messages WHERE session_id = $1")
                .bind(session_id)
                .fetch_one(pool)
                .await?;
            Ok(row.try_get("n")?)
        })
    }

    /// The highest turn number stored, if any.
    pub async fn last_turn(&self, session_id: &str) -> Result<Option<i64>, StoreError> {
        match &self.db {
            Db::Sqlite(sqlite) => {
                let session = session_id.to_owned();
                sqlite
                    .writer
                    .call(move |conn| {
                        let turn = writer::query_optional(conn, LAST_TURN, &[&session], |r| r.try_get("t"))?;
                        Ok(turn.flatten())
                    })
                    .await
            }
            Db::Postgres(pool) => {
                let row = sqlx::query(LAST_TURN).bind(session_id).fetch_one(pool).await?;
                Ok(row.try_get("t")?)
            }
        }
    }
}
