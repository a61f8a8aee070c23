//! Steps: one row per model call, with usage and prompt-cache stability, for `sessions show`
//! and cost accounting.

use tackle_protocol::Message;

use crate::ToolCallFinish;

use crate::db::DbRow;
use crate::messages::MessageRow;
use crate::sql::{Conn, Query, Row, no_session};
use crate::writer::Placement;
use serde::{Deserialize, Serialize};

use crate::db::now_ms;
use crate::sessions::end_turn_on;
use crate::state::{state_texts, upsert_states};
use crate::{SessionRecord, SessionStatus, Store, StoreError};

/// A recorded step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepRecord {
    /// Turn number.
    pub turn: i64,
    /// Step number within the turn, from 1.
    pub step: i64,
    /// Why the model stopped.
    pub stop_reason: String,
    /// Prompt tokens (cache reads and writes included).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Size of the cache-relevant request bytes.
    pub request_bytes: Option<u64>,
    /// Bytes shared with the previous request, from the start.
    pub prefix_bytes: Option<u64>,
    /// `prefix_bytes` over the previous request's size.
    pub prefix_ratio: Option<f64>,
    /// First differing JSON path, when the prefix broke.
    pub cache_break: Option<String>,
    /// How tool availability was enforced.
    pub strategy: Option<String>,
    /// Wall time of the step.
    pub duration_ms: u64,
}

const RECORD: &str = "INSERT INTO steps (session_id, turn, step, stop_reason, input_tokens, output_tokens, cache_read,
         cache_write, request_bytes, prefix_bytes, prefix_ratio, cache_break, strategy, duration_ms, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (session_id, turn, step) DO UPDATE SET stop_reason = excluded.stop_reason,
         input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
         cache_read = excluded.cache_read, cache_write = excluded.cache_write,
         request_bytes = excluded.request_bytes, prefix_bytes = excluded.prefix_bytes,
         prefix_ratio = excluded.prefix_ratio, cache_break = excluded.cache_break,
         strategy = excluded.strategy, duration_ms = excluded.duration_ms, created_at = excluded.created_at";

/// [`RECORD`] with its values.
fn record_query(session_id: &str, step: &StepRecord) -> Query {
    Query::new(RECORD)
        .bind(session_id)
        .bind(step.turn)
        .bind(step.step)
        .bind(&step.stop_reason)
        .bind(to_i64(step.input_tokens))
        .bind(to_i64(step.output_tokens))
        .bind(to_i64(step.cache_read_tokens))
        .bind(to_i64(step.cache_write_tokens))
        .bind(step.request_bytes.map(to_i64))
        .bind(step.prefix_bytes.map(to_i64))
        .bind(step.prefix_ratio)
        .bind(&step.cache_break)
        .bind(&step.strategy)
        .bind(to_i64(step.duration_ms))
        .bind(now_ms())
}

/// The statements of [`Steps::commit`](crate::Steps::commit), inside its transaction, on either backend.
async fn commit_on(
    conn: &mut Conn<'_>,
    session_id: &str,
    turn: i64,
    message: Option<&MessageRow>,
    finished: &[(String, ToolCallFinish)],
    step: &StepRecord,
    state: Option<&Query>,
) -> Result<Option<i64>, StoreError> {
    if let Some(state) = state {
        conn.execute(state).await.map_err(|e| no_session(e, session_id))?;
    }
    for (call, finish) in finished {
        if conn.execute(&finish.query(session_id, call)?).await? == 0 {
            return Err(StoreError::not_found("tool call", call.as_str()));
        }
    }
    let seq = match message {
        Some(row) => Some(row.insert(conn, session_id, turn).await?),
        None => None,
    };
    conn.execute(&record_query(session_id, step)).await.map_err(|e| no_session(e, session_id))?;
    Ok(seq)
}

/// What the end of a step commits at once ([`Steps::commit`](crate::Steps::commit)).
#[derive(Debug, Clone)]
pub struct StepCommit<'a> {
    /// The turn.
    pub turn: i64,
    /// The step's last message (the answer, or the tool results) with its token count.
    pub message: Option<(&'a Message, Option<i64>)>,
    /// Calls whose end is committed with it: call id and how it finished.
    pub finished: Vec<(String, ToolCallFinish)>,
    /// The step's record.
    pub step: &'a StepRecord,
    /// Session state values upserted with it (key, value; see
    /// [`Sessions::set_states`](crate::Sessions::set_states)), such as what the step's usage
    /// taught about token counts: a value learnt during a step costs no commit of its own.
    pub state: Vec<(&'a str, serde_json::Value)>,
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The record of each model step (the `steps` table).
/// From [`Store::steps`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Steps<'s> {
    pub(crate) store: &'s Store,
}

impl Steps<'_> {
    /// Records a step (replacing a row of the same turn and step).
    pub async fn record(self, session_id: &str, step: &StepRecord) -> Result<(), StoreError> {
        let query = record_query(session_id, step);
        self.store
            .db
            .execute(self.store.epoch_for(session_id), query)
            .await
            .map_err(|e| no_session(e, session_id))?;
        Ok(())
    }

    /// Commits the end of a step in one transaction (one writer call on SQLite):
    /// the calls finished with it, its last message (the answer or the tool results), its
    /// state values and its record. Returns the message's `seq`.
    pub async fn commit(self, session_id: &str, commit: StepCommit<'_>) -> Result<Option<i64>, StoreError> {
        if commit.message.is_none() && commit.finished.is_empty() && commit.state.is_empty() {
            self.record(session_id, commit.step).await?;
            return Ok(None);
        }
        Ok(self.commit_with(session_id, commit, None).await?.0)
    }

    /// [`Steps::commit`] for the step that ends its turn: the session's status is set in the
    /// same transaction (`idle`, or `failed` for a turn that failed), so the end of a turn costs
    /// no commit of its own. Returns the message's `seq` and the session as it now is.
    pub async fn commit_last(
        self,
        session_id: &str,
        commit: StepCommit<'_>,
        status: SessionStatus,
    ) -> Result<(Option<i64>, SessionRecord), StoreError> {
        let (seq, record) = self.commit_with(session_id, commit, Some(status)).await?;
        let record = record.ok_or(StoreError::Internal("the turn's last step returned no session"))?;
        Ok((seq, record))
    }

    async fn commit_with(
        self,
        session_id: &str,
        commit: StepCommit<'_>,
        status: Option<SessionStatus>,
    ) -> Result<(Option<i64>, Option<SessionRecord>), StoreError> {
        let StepCommit { turn, message, finished, step, state } = commit;
        let message = message.map(|(m, tokens)| MessageRow::new(m, tokens)).transpose()?;
        let state = upsert_states(session_id, state_texts(&state)?);
        let (epoch, session, step) = (self.store.epoch_for(session_id), session_id.to_owned(), step.clone());
        self.store
            .db
            .transaction(Placement::InPlace, epoch, async move |conn| {
                let seq = commit_on(conn, &session, turn, message.as_ref(), &finished, &step, state.as_ref())
                    .await?;
                let record = match status {
                    Some(status) => Some(end_turn_on(conn, &session, status).await?),
                    None => None,
                };
                Ok((seq, record))
            })
            .await
    }

    /// Steps of a session in order.
    pub async fn list(self, session_id: &str) -> Result<Vec<StepRecord>, StoreError> {
        let query = Query::new(
            "SELECT turn, step, stop_reason, input_tokens, output_tokens, cache_read, cache_write, request_bytes,
                prefix_bytes, prefix_ratio, cache_break, strategy, duration_ms
             FROM steps WHERE session_id = $1 ORDER BY turn, step",
        )
        .bind(session_id);
        self.store.db.read_all(query, |r| step_record(r)).await
    }
}

fn step_record(r: &dyn Row) -> Result<StepRecord, StoreError> {
    let u = |v: i64| v.max(0) as u64;
    Ok(StepRecord {
        turn: r.try_get("turn")?,
        step: r.try_get("step")?,
        stop_reason: r.try_get("stop_reason")?,
        input_tokens: u(r.try_get("input_tokens")?),
        output_tokens: u(r.try_get("output_tokens")?),
        cache_read_tokens: u(r.try_get("cache_read")?),
        cache_write_tokens: u(r.try_get("cache_write")?),
        request_bytes: r.try_get::<Option<i64>>("request_bytes")?.map(u),
        prefix_bytes: r.try_get::<Option<i64>>("prefix_bytes")?.map(u),
        prefix_ratio: r.try_get("prefix_ratio")?,
        cache_break: r.try_get("cache_break")?,
        strategy: r.try_get("strategy")?,
        duration_ms: u(r.try_get("duration_ms")?),
    })
}
