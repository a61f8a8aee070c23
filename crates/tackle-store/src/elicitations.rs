//! Questions MCP servers ask the person behind a turn (elicitation), shared by every instance on
//! the database, like approvals: the instance whose turn waits records each one; any instance
//! lists them and records an answer; the waiting instance picks the answer up
//! ([`Elicitations::answer_of`](crate::Elicitations::answer_of)).

use serde_json::Value;

use crate::approvals::alive;
use crate::db::DbRow;
use crate::sql::{Query, Row};
use crate::{Store, StoreError, now_ms};

/// A question waiting for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredElicitation {
    /// Elicitation id.
    pub id: String,
    /// Session id.
    pub session_id: String,
    /// The asking call.
    pub call_id: String,
    /// Tool name of the call.
    pub tool: String,
    /// The MCP server that asks.
    pub server: String,
    /// The question.
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    /// The form's schema.
    pub schema: Option<Value>,
    /// The page to open.
    pub url: Option<String>,
}

/// An answer recorded for a question this process waits on: `{"action": "accept" | "decline" |
/// "cancel", "content": {...}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationAnswerRecord {
    /// Elicitation id.
    pub id: String,
    /// The answer as JSON.
    pub answer: Value,
}

/// Questions (MCP elicitations) asked of a user and their answers, durable across restarts.
/// From [`Store::elicitations`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Elicitations<'s> {
    pub(crate) store: &'s Store,
}

impl Elicitations<'_> {
    /// Records a question this process waits on.
    pub async fn put(self, question: &StoredElicitation) -> Result<(), StoreError> {
        let query = Query::new(
            "INSERT INTO elicitations (id, session_id, call_id, tool, server, message, mode, schema, url, runner, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&question.id)
        .bind(&question.session_id)
        .bind(&question.call_id)
        .bind(&question.tool)
        .bind(&question.server)
        .bind(&question.message)
        .bind(&question.mode)
        .bind(question.schema.as_ref().map(serde_json::to_string).transpose()?)
        .bind(&question.url)
        .bind(crate::runner::current_id())
        .bind(now_ms());
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Unanswered questions of `session_id`'s live turn, oldest first.
    pub async fn pending(self, session_id: &str) -> Result<Vec<StoredElicitation>, StoreError> {
        let query = Query::new(
            "SELECT e.id, e.session_id, e.call_id, e.tool, e.server, e.message, e.mode, e.schema, e.url,
                    s.runner, s.lease_until
             FROM elicitations e JOIN sessions s ON s.id = e.session_id
             WHERE e.session_id = $1 AND e.answer IS NULL AND s.status = 'running' AND s.runner = e.runner
             ORDER BY e.created_at, e.id",
        )
        .bind(session_id);
        let rows = self.store.db.read_all(query, |row| Ok((pending(row)?, alive(row, now_ms())?))).await?;
        // Questions of a turn whose instance died wait for nobody.
        Ok(rows.into_iter().filter(|(_, alive)| *alive).map(|(question, _)| question).collect())
    }

    /// The session of an unanswered question, if there is one with this id.
    pub async fn session_of(self, id: &str) -> Result<Option<String>, StoreError> {
        let query =
            Query::new("SELECT session_id FROM elicitations WHERE id = $1 AND answer IS NULL").bind(id);
        self.store.db.read_optional(query, |r| r.try_get::<String>("session_id")).await
    }

    /// Records an answer for whichever instance waits on it; false when the question is not
    /// pending (answered already, or gone).
    pub async fn answer(self, id: &str, answer: &Value) -> Result<bool, StoreError> {
        let query = Query::new(
            "UPDATE elicitations SET answer = $1, answered_at = $2 WHERE id = $3 AND answer IS NULL",
        )
        .bind(serde_json::to_string(answer)?)
        .bind(now_ms())
        .bind(id);
        Ok(self.store.db.execute(None, query).await? == 1)
    }

    /// The answer recorded for question `id`, if there is one.
    pub async fn answer_of(self, id: &str) -> Result<Option<ElicitationAnswerRecord>, StoreError> {
        let query =
            Query::new("SELECT id, answer FROM elicitations WHERE id = $1 AND answer IS NOT NULL").bind(id);
        self.store
            .db
            .read_optional(query, |row| {
                Ok(ElicitationAnswerRecord {
                    id: row.try_get("id")?,
                    answer: serde_json::from_str(row.try_get::<&str>("answer")?)?,
                })
            })
            .await
    }

    /// Forgets a question (answered, or its call ended).
    pub async fn delete(self, id: &str) -> Result<(), StoreError> {
        self.store.db.execute(None, Query::new("DELETE FROM elicitations WHERE id = $1").bind(id)).await?;
        Ok(())
    }
}

fn pending(row: &dyn Row) -> Result<StoredElicitation, StoreError> {
    let schema: Option<&str> = row.try_get("schema")?;
    Ok(StoredElicitation {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        call_id: row.try_get("call_id")?,
        tool: row.try_get("tool")?,
        server: row.try_get("server")?,
        message: row.try_get("message")?,
        mode: row.try_get("mode")?,
        schema: schema.map(serde_json::from_str).transpose()?,
        url: row.try_get("url")?,
    })
}
