//! Tool-call audit: every call, its arguments and outcome. It is also how a call id runs at
//! most once: a call is recorded as running before it starts.

use std::fmt;

use crate::db::DbRow;
use crate::messages::MessageRow;
use crate::sql::{Conn, Query, no_session};
use crate::writer::Placement;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::Message;
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

/// Outcome of [`Calls::begin`](crate::Calls::begin).
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

/// A call about to run, recorded with the assistant message that makes it
/// ([`Calls::append_with_calls`](crate::Calls::append_with_calls)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallStart<'a> {
    /// Call id.
    pub call_id: &'a str,
    /// The tool that will run.
    pub name: &'a str,
    /// Its arguments.
    pub args: &'a Value,
}

fn record(row: &(impl DbRow + ?Sized)) -> Result<ToolCallRecord, StoreError> {
    let json_opt = |col: &str| -> Result<Option<String>, StoreError> { row.try_get::<Option<String>>(col) };
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

pub(crate) const BEGIN: &str = "INSERT INTO tool_calls (session_id, call_id, name, args, status, started_at)
     VALUES ($1, $2, $3, $4, 'running', $5) ON CONFLICT (session_id, call_id) DO NOTHING";

pub(crate) const FINISH: &str =
    "UPDATE tool_calls SET status = $1, result = $2, envelope = $3, bytes = $4, truncated = $5,
        locator = $6, finished_at = $7, duration_ms = $8
     WHERE session_id = $9 AND call_id = $10";

const GET: &str = concat!(select_calls!(), " WHERE session_id = $1 AND call_id = $2");

const INTERRUPT: &str = "UPDATE tool_calls SET status = 'interrupted', finished_at = $1
     WHERE session_id = $2 AND status = 'running' RETURNING call_id";

impl ToolCallFinish {
    /// [`FINISH`] for `call_id`, with its values.
    pub(crate) fn query(&self, session_id: &str, call_id: &str) -> Result<Query, StoreError> {
        Ok(Query::new(FINISH)
            .bind(self.status.as_str())
            .bind(serde_json::to_string(&self.result)?)
            .bind(self.envelope.as_ref().map(serde_json::to_string).transpose()?)
            .bind(i64::try_from(self.bytes).unwrap_or(i64::MAX))
            .bind(i64::from(self.truncated))
            .bind(&self.locator)
            .bind(now_ms())
            .bind(i64::try_from(self.duration_ms).unwrap_or(i64::MAX))
            .bind(session_id)
            .bind(call_id))
    }
}

/// [`BEGIN`] with its values (`args` serialized).
fn begin_query(session_id: &str, call_id: &str, name: &str, args: &str) -> Query {
    Query::new(BEGIN).bind(session_id).bind(call_id).bind(name).bind(args).bind(now_ms())
}

fn get_query(session_id: &str, call_id: &str) -> Query {
    Query::new(GET).bind(session_id).bind(call_id)
}

/// Records a call as running unless its id is already recorded, on either backend: `None` when
/// it was recorded now, else the record that was there.
async fn begin_on(
    conn: &mut Conn<'_>,
    session_id: &str,
    call_id: &str,
    name: &str,
    args: &str,
) -> Result<Option<ToolCallRecord>, StoreError> {
    let inserted = conn
        .execute(&begin_query(session_id, call_id, name, args))
        .await
        .map_err(|e| no_session(e, session_id))?;
    if inserted == 1 {
        return Ok(None);
    }
    let existing = conn.fetch_optional(&get_query(session_id, call_id), |r| record(r)).await?;
    existing.map(Some).ok_or_else(|| StoreError::not_found("tool call", call_id))
}

/// The statements of [`Calls::append_with_calls`](crate::Calls::append_with_calls), inside its transaction, on either backend.
async fn append_with_calls_on(
    conn: &mut Conn<'_>,
    session_id: &str,
    turn: i64,
    row: &MessageRow,
    starts: &[(String, String, String)],
) -> Result<(i64, Vec<Option<ToolCallRecord>>), StoreError> {
    let seq = row.insert(conn, session_id, turn).await?;
    let mut existing = Vec::with_capacity(starts.len());
    for (call, name, args) in starts {
        existing.push(begin_on(conn, session_id, call, name, args).await?);
    }
    Ok((seq, existing))
}

fn outcome(existing: Option<ToolCallRecord>) -> BeginOutcome {
    match existing {
        None => BeginOutcome::Started,
        Some(r) if r.status == ToolCallStatus::Running => BeginOutcome::AlreadyRunning(r),
        Some(r) => BeginOutcome::AlreadyFinished(r),
    }
}

/// The tool-call audit (the `tool_calls` table), which also makes each call id run at most once.
/// From [`Store::calls`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Calls<'s> {
    pub(crate) store: &'s Store,
}

impl Calls<'_> {
    /// Which of `call_ids` the session's audit already holds (in one query), so a model that
    /// reuses an id gets a fresh one instead of the earlier call's result.
    pub async fn recorded_ids(
        self,
        session_id: &str,
        call_ids: &[&str],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        if call_ids.is_empty() {
            return Ok(Default::default());
        }
        let placeholders = (2..call_ids.len() + 2).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
        // Built from fixed fragments only; every value is bound.
        let sql =
            format!("SELECT call_id FROM tool_calls WHERE session_id = $1 AND call_id IN ({placeholders})");
        let query = call_ids.iter().fold(Query::assembled(sql).bind(session_id), |q, id| q.bind(*id));
        let ids = self.store.db.fetch_all(None, query, |r| r.try_get::<String>("call_id")).await?;
        Ok(ids.into_iter().collect())
    }

    /// Records a call as running unless its id is already recorded.
    pub async fn begin(
        self,
        session_id: &str,
        call_id: &str,
        name: &str,
        args: &Value,
    ) -> Result<BeginOutcome, StoreError> {
        let args = serde_json::to_string(args)?;
        let epoch = self.store.epoch_for(session_id);
        let (session, call, name) = (session_id.to_owned(), call_id.to_owned(), name.to_owned());
        let existing = self
            .store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                begin_on(conn, &session, &call, &name, &args).await
            })
            .await?;
        Ok(outcome(existing))
    }

    /// Appends the assistant message that makes tool calls and records each call as running,
    /// in one transaction (one writer call on SQLite): what [`Messages::append`](crate::Messages::append)
    /// and [`Calls::begin`](crate::Calls::begin) for each call do, committed together before any runs.
    /// Returns the message's `seq` and each call's outcome, in order.
    pub async fn append_with_calls(
        self,
        session_id: &str,
        turn: i64,
        message: &Message,
        token_count: Option<i64>,
        calls: &[CallStart<'_>],
    ) -> Result<(i64, Vec<BeginOutcome>), StoreError> {
        let row = MessageRow::new(message, token_count)?;
        let starts = calls
            .iter()
            .map(|c| Ok((c.call_id.to_owned(), c.name.to_owned(), serde_json::to_string(c.args)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let (epoch, session) = (self.store.epoch_for(session_id), session_id.to_owned());
        let (seq, existing) = self
            .store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                append_with_calls_on(conn, &session, turn, &row, &starts).await
            })
            .await?;
        Ok((seq, existing.into_iter().map(outcome).collect()))
    }

    /// Records how a call finished.
    pub async fn finish(
        self,
        session_id: &str,
        call_id: &str,
        finish: ToolCallFinish,
    ) -> Result<(), StoreError> {
        let query = finish.query(session_id, call_id)?;
        if self.store.db.execute(self.store.epoch_for(session_id), query).await? == 0 {
            return Err(StoreError::not_found("tool call", call_id));
        }
        Ok(())
    }

    /// The record of a call.
    pub async fn get(self, session_id: &str, call_id: &str) -> Result<Option<ToolCallRecord>, StoreError> {
        self.store.db.fetch_optional(None, get_query(session_id, call_id), |r| record(r)).await
    }

    /// Every call of a session, oldest first.
    pub async fn list(self, session_id: &str) -> Result<Vec<ToolCallRecord>, StoreError> {
        let query =
            Query::new(concat!(select_calls!(), " WHERE session_id = $1 ORDER BY started_at, call_id"))
                .bind(session_id);
        self.store.db.read_all(query, |r| record(r)).await
    }

    /// Marks calls left running (by a crash) as interrupted; returns their ids.
    pub async fn mark_running_as_interrupted(self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let query = Query::new(INTERRUPT).bind(now_ms()).bind(session_id);
        self.store
            .db
            .fetch_all(self.store.epoch_for(session_id), query, |r| r.try_get::<String>("call_id"))
            .await
    }
}
