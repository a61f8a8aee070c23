//! Tool-call audit: every call, its arguments and outcome. It is also how a call id runs at
//! most once: a call is recorded as running before it starts.

use std::fmt;

use crate::db::{DbRow, on_db};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::{ToolError, ToolResult};

use crate::db::now_ms;
use crate::{Store, StoreError};

/// State of a recorded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Started, not finished (or the process died).
    Running,
    /// Succeeded.
    Ok,
    /// Failed with an envelope.
    Error,
    /// Never finished: cancelled or crashed.
    Interrupted,
}

impl ToolCallStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "running" => Self::Running,
            "ok" => Self::Ok,
            "error" => Self::Error,
            "interrupted" => Self::Interrupted,
            other => return Err(StoreError::Corrupt { what: "tool call status", detail: other.to_owned() }),
        })
    }
}

impl fmt::Display for ToolCallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// Call id.
    pub call_id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub args: Value,
    /// State.
    pub status: ToolCallStatus,
    /// What the model saw, once finished.
    pub result: Option<ToolResult>,
    /// The envelope, when it failed.
    pub envelope: Option<ToolError>,
    /// Output size in bytes.
    pub bytes: u64,
    /// Whether the model saw a shortened output.
    pub truncated: bool,
    /// Locator of the offloaded output.
    pub locator: Option<String>,
    /// Start, unix ms.
    pub started_at: i64,
    /// End, unix ms.
    pub finished_at: Option<i64>,
    /// Wall time.
    pub duration_ms: Option<u64>,
}

/// Outcome of [`Store::begin_tool_call`].
#[derive(Debug, Clone, PartialEq)]
pub enum BeginOutcome {
    /// Recorded as running: go ahead.
    Started,
    /// This call id already finished: reuse its result, do not run it again.
    AlreadyFinished(ToolCallRecord),
    /// This call id is recorded as running (another worker, or a crash): do not run it.
    AlreadyRunning(ToolCallRecord),
}

/// How a call finished.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallFinish {
    /// Final state.
    pub status: ToolCallStatus,
    /// What the model saw.
    pub result: ToolResult,
    /// The envelope, when it failed.
    pub envelope: Option<ToolError>,
    /// Output size.
    pub bytes: u64,
    /// Whether it was shortened.
    pub truncated: bool,
    /// Offload locator.
    pub locator: Option<String>,
    /// Wall time.
    pub duration_ms: u64,
}

fn record(row: &impl DbRow) -> Result<ToolCallRecord, StoreError> {
    let json_opt =
        |col: &str| -> Result<Option<String>, StoreError> { Ok(row.try_get::<Option<String>>(col)?) };
    Ok(ToolCallRecord {
        call_id: row.try_get("call_id")?,
        name: row.try_get("name")?,
        args: serde_json::from_str(row.try_get::<&str>("args")?)?,
        status: ToolCallStatus::parse(row.try_get::<&str>("status")?)?,
        result: json_opt("result")?.map(|s| serde_json::from_str(&s)).transpose()?,
        envelope: json_opt("envelope")?.map(|s| serde_json::from_str(&s)).transpose()?,
        bytes: row.try_get::<i64>("bytes")?.max(0) as u64,
        truncated: row.try_get::<i64>("truncated")? != 0,
        locator: row.try_get("locator")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
        duration_ms: row.try_get::<Option<i64>>("duration_ms")?.map(|d| d.max(0) as u64),
    })
}

macro_rules! select_calls {
    () => {
        "SELECT call_id, name, args, status, result, envelope, bytes, truncated, locator, started_at, finished_at, \
         duration_ms FROM tool_calls"
    };
}

impl Store {
    /// Which of `call_ids` the session's audit already holds (in one query), so a model that
    /// reuses an id gets a fresh one instead of the earlier call's result.
    pub async fn recorded_call_ids(
        &self,
        session_id: &str,
        call_ids: &[&str],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        on_db!(self, pool => {
            if call_ids.is_empty() {
                return Ok(Default::default());
            }
            let mut query = sqlx::QueryBuilder::new("SELECT call_id FROM tool_calls WHERE session_id = ");
            query.push_bind(session_id).push(" AND call_id IN (");
            let mut ids = query.separated(", ");
            for id in call_ids {
                ids.push_bind(*id);
            }
            query.push(")");
            let rows = query.build().fetch_all(pool).await?;
            rows.iter().map(|r| Ok(r.try_get::<String>("call_id")?)).collect()
        })
    }

    /// Records a call as running unless its id is already recorded.
    pub async fn begin_tool_call(
        &self,
        session_id: &str,
        call_id: &str,
        name: &str,
        args: &Value,
    ) -> Result<BeginOutcome, StoreError> {
        on_db!(self, pool => {
            let inserted = sqlx::query(
                "INSERT INTO tool_calls (session_id, call_id, name, args, status, started_at)
                 VALUES ($1, $2, $3, $4, 'running', $5) ON CONFLICT (session_id, call_id) DO NOTHING",
            )
            .bind(session_id)
            .bind(call_id)
            .bind(name)
            .bind(serde_json::to_string(args)?)
            .bind(now_ms())
            .execute(pool)
            .await?
            .rows_affected();
            if inserted == 1 {
                return Ok(BeginOutcome::Started);
            }
            let existing = self
                .get_tool_call(session_id, call_id)
                .await?
                .ok_or_else(|| StoreError::not_found("tool call", call_id))?;
            Ok(match existing.status {
                ToolCallStatus::Running => BeginOutcome::AlreadyRunning(existing),
                _ => BeginOutcome::AlreadyFinished(existing),
            })
        })
    }

    /// Records how a call finished.
    pub async fn finish_tool_call(
        &self,
        session_id: &str,
        call_id: &str,
        finish: ToolCallFinish,
    ) -> Result<(), StoreError> {
        on_db!(self, pool => {
            let done = sqlx::query(
                "UPDATE tool_calls SET status = $1, result = $2, envelope = $3, bytes = $4, truncated = $5, locator = $6,
                    finished_at = $7, duration_ms = $8
             WHERE session_id = $9 AND call_id = $10",
            )
            .bind(finish.status.as_str())
            .bind(serde_json::to_string(&finish.result)?)
            .bind(finish.envelope.as_ref().map(serde_json::to_string).transpose()?)
            .bind(i64::try_from(finish.bytes).unwrap_or(i64::MAX))
            .bind(i64::from(finish.truncated))
            .bind(finish.locator)
            .bind(now_ms())
            .bind(i64::try_from(finish.duration_ms).unwrap_or(i64::MAX))
            .bind(session_id)
            .bind(call_id)
            .execute(pool)
            .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::not_found("tool call", call_id));
            }
            Ok(())
        })
    }

    /// The record of a call.
    pub async fn get_tool_call(
        &self,
        session_id: &str,
        call_id: &str,
    ) -> Result<Option<ToolCallRecord>, StoreError> {
        on_db!(self, pool => {
            let row = sqlx::query(concat!(select_calls!(), " WHERE session_id = $1 AND call_id = $2"))
                .bind(session_id)
                .bind(call_id)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(record).transpose()
        })
    }

    /// Every call of a session, oldest first.
    pub async fn list_tool_calls(&self, session_id: &str) -> Result<Vec<ToolCallRecord>, StoreError> {
        on_db!(self, pool => {
            let rows =
                sqlx::query(concat!(select_calls!(), " WHERE session_id = $1 ORDER BY started_at, call_id"))
                    .bind(session_id)
                    .fetch_all(pool)
                    .await?;
            rows.iter().map(record).collect()
        })
    }

    /// Marks calls left running (by a crash) as interrupted; returns their ids.
    pub async fn mark_running_as_interrupted(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        on_db!(self, pool => {
            let rows = sqlx::query(
                "UPDATE tool_calls SET status = 'interrupted', finished_at = $1
                 WHERE session_id = $2 AND status = 'running' RETURNING call_id",
            )
            .bind(now_ms())
            .bind(session_id)
            .fetch_all(pool)
            .await?;
            rows.iter().map(|r| Ok(r.try_get("call_id")?)).collect()
        })
    }
}
