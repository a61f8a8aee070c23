//! Todo items of a session (the `todo` tool's list).

use crate::db::DbRow;
use crate::sql::{Query, no_session};
use serde::{Deserialize, Serialize};

use crate::db::now_ms;
use crate::{Store, StoreError};

/// State of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Open,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}

impl TodoStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::InProgress => "in_progress",
            Self::Done => "done",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "open" => Self::Open,
            "in_progress" => Self::InProgress,
            "done" => Self::Done,
            other => return Err(StoreError::Corrupt { what: "todo status", detail: other.to_owned() }),
        })
    }
}

/// A todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Id within the session, from 1.
    pub id: i64,
    /// What to do.
    pub text: String,
    /// State.
    pub status: TodoStatus,
    /// Creation, unix ms.
    pub created_at: i64,
    /// Last change, unix ms.
    pub updated_at: i64,
}

/// Changes to an item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoUpdate {
    /// New text.
    pub text: Option<String>,
    /// New status.
    pub status: Option<TodoStatus>,
}

/// A page of items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoPage {
    /// The items of the page, in list order.
    pub items: Vec<TodoItem>,
    /// Items in the whole list.
    pub total_count: u64,
}

const OPEN: &str =
    "SELECT id, text, status, created_at, updated_at FROM todos WHERE session_id = $1 AND status != 'done'
     ORDER BY position";

fn item(row: &(impl DbRow + ?Sized)) -> Result<TodoItem, StoreError> {
    Ok(TodoItem {
        id: row.try_get("id")?,
        text: row.try_get("text")?,
        status: TodoStatus::parse(row.try_get::<&str>("status")?)?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// A session's todo items.
/// From [`Store::todos`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Todos<'s> {
    pub(crate) store: &'s Store,
}

impl Todos<'_> {
    /// Adds an item at the end.
    pub async fn add(self, session_id: &str, text: &str) -> Result<TodoItem, StoreError> {
        let query = Query::new(
            "INSERT INTO todos (session_id, id, text, status, position, created_at, updated_at)
             VALUES ($1,
                     (SELECT COALESCE(MAX(id), 0) + 1 FROM todos WHERE session_id = $1), $2, 'open',
                     (SELECT COALESCE(MAX(position), 0) + 1 FROM todos WHERE session_id = $1), $3, $3)
             RETURNING id, text, status, created_at, updated_at",
        )
        .bind(session_id)
        .bind(text)
        .bind(now_ms());
        self.store
            .db
            .fetch_optional(self.store.epoch_for(session_id), query, |row| item(row))
            .await
            .map_err(|e| no_session(e, session_id))?
            .ok_or_else(|| StoreError::not_found("session", session_id))
    }

    /// Changes an item.
    pub async fn update(self, session_id: &str, id: i64, update: TodoUpdate) -> Result<TodoItem, StoreError> {
        let query = Query::new(
            "UPDATE todos SET text = COALESCE($1, text), status = COALESCE($2, status), updated_at = $3
             WHERE session_id = $4 AND id = $5 RETURNING id, text, status, created_at, updated_at",
        )
        .bind(update.text)
        .bind(update.status.map(TodoStatus::as_str))
        .bind(now_ms())
        .bind(session_id)
        .bind(id);
        self.store
            .db
            .fetch_optional(self.store.epoch_for(session_id), query, |row| item(row))
            .await?
            .ok_or_else(|| StoreError::not_found("todo item", id.to_string()))
    }

    /// Removes an item and returns it.
    pub async fn remove(self, session_id: &str, id: i64) -> Result<TodoItem, StoreError> {
        let query = Query::new(
            "DELETE FROM todos WHERE session_id = $1 AND id = $2 RETURNING id, text, status, created_at, updated_at",
        )
        .bind(session_id)
        .bind(id);
        self.store
            .db
            .fetch_optional(self.store.epoch_for(session_id), query, |row| item(row))
            .await?
            .ok_or_else(|| StoreError::not_found("todo item", id.to_string()))
    }

    /// A page of items in list order.
    pub async fn list(self, session_id: &str, offset: u32, limit: u32) -> Result<TodoPage, StoreError> {
        let page = Query::new(
            "SELECT id, text, status, created_at, updated_at FROM todos WHERE session_id = $1
             ORDER BY position LIMIT $2 OFFSET $3",
        )
        .bind(session_id)
        .bind(i64::from(limit))
        .bind(i64::from(offset));
        let items = self.store.db.read_all(page, |row| item(row)).await?;
        let count = Query::new("SELECT COUNT(*) AS n FROM todos WHERE session_id = $1").bind(session_id);
        let total: i64 = self.store.db.read_one(count, |r| r.try_get("n")).await?;
        Ok(TodoPage { items, total_count: total.max(0) as u64 })
    }

    /// Items not done, in list order.
    pub async fn open(self, session_id: &str) -> Result<Vec<TodoItem>, StoreError> {
        self.store.db.fetch_all(None, Query::new(OPEN).bind(session_id), |row| item(row)).await
    }
}
