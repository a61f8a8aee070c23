//! Turns: `POST /v1/sessions/{id}/messages` (SSE or JSON), cancel and compact.

use std::collections::BTreeMap;
use std::convert::Infallible;

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tackle_agent::{CompactionReport, TurnInput, TurnOutcome};
use tackle_protocol::AgentEvent;
use tackle_tools::EventSink;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument as _;
use utoipa::ToSchema;

use crate::auth::User;
use crate::extract::ValidPath;
use crate::json::ValidJson;
use crate::{ApiError, AppState, ErrorBody};

/// `POST /v1/sessions/{id}/messages` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendMessage {
    /// The user's message: some text besides whitespace.
    #[schema(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \x1C-\x1F\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF]"
    )]
    pub message: String,
    /// Which tools the model may call in this turn: tool name to `true` (callable) or `false`
    /// (not callable). Omitted or `{}`: every tool is callable. Tools not named stay callable
    /// unless some tool is set to `true`, in which case only the `true` ones are. Unknown names
    /// are reported in a `warning` event. The tool definitions sent to the model never change
    /// (prompt cache); availability is enforced with OpenAI `allowed_tools`, or, for providers
    /// without it (Anthropic, most OpenAI-compatible servers), with a note at the conversation's
    /// tail plus the executor refusing calls to masked tools (a `warning` event
    /// `strategy_fallback` says so).
    #[schema(example = json!({"shell": false}))]
    pub tool_mask: Option<BTreeMap<String, bool>>,
    /// Stream events as SSE (default) or answer with one JSON result when the turn ends.
    pub stream: Option<bool>,
    /// Steps (model calls) for this turn instead of the server's default.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub max_steps: Option<u32>,
}

/// Whether `text` has nothing but whitespace: the characters Rust, Python and ECMAScript count as
/// whitespace (the pattern of [`SendMessage::message`] names the same set).
pub(crate) fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || matches!(c, '\x1c'..='\x1f' | '\u{feff}'))
}

/// `POST /v1/sessions/{id}/cancel` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct CancelResult {
    /// True when a running turn was told to stop; false when none was running.
    pub cancelled: bool,
}

/// Result of a turn (`stream: false`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    /// Session id.
    pub session_id: String,
    /// Steps taken.
    pub steps: u32,
    /// `completed`, `max_steps`, `cancelled` or `failed`.
    pub end: tackle_protocol::TurnEnd,
    /// Final answer.
    pub text: String,
    /// Usage summed over the turn.
    pub usage: tackle_protocol::Usage,
    /// Why the turn failed or stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every event of the turn, in order.
    #[schema(value_type = Vec<AgentEvent>)]
    pub events: Vec<AgentEvent>,
}

/// `POST /v1/sessions/{id}/compact` response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    /// Strategies that ran: `clear_tool_results`, `summarize`, `truncate`.
    pub strategies: Vec<String>,
    /// Conversation tokens before.
    pub tokens_before: u64,
    /// Conversation tokens after.
    pub tokens_after: u64,
    /// Messages before.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
}

impl From<CompactionReport> for CompactResult {
    fn from(r: CompactionReport) -> Self {
        Self {
            strategies: r.strategies,
            tokens_before: r.tokens_before,
            tokens_after: r.tokens_after,
            messages_before: r.messages_before,
            messages_after: r.messages_after,
        }
    }
}

/// Sends a message and runs a turn. With `stream` (the default) the answer is an SSE stream:
/// each event is named after its `type` (`text_delta`, `tool_call`, `tool_result`,
/// `approval_requested`, `turn_finished`, ...), carries an increasing `id`, and `: heartbeat`
/// comments keep idle connections open. The turn goes on if the client disconnects; cancel it
/// with `/cancel`.
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", tag = "turns", request_body = SendMessage,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "An SSE stream of agent events (`stream` true or omitted: `text/event-stream`, \
            each event's data one `AgentEvent`), or the turn's result (`stream: false`: `application/json`)",
            content((AgentEvent = "text/event-stream"), (TurnResult = "application/json"))),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 502, description = "The provider failed (`stream: false`)", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn send(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<SendMessage>,
) -> Result<Response, ApiError> {
    if is_blank(&body.message) {
        return Err(ApiError::invalid_field("message", "message is empty; send the user's text"));
    }
    if body.max_steps == Some(0) {
        return Err(ApiError::invalid_field("maxSteps", "maxSteps must be at least 1"));
    }
    if state.inner.shutdown.is_cancelled() {
        return Err(ApiError::shutting_down());
    }
    let record = state.owned_session(&id, &user).await?;
    let guard = state.inner.turns.start(&id)?;
    let mut session = state.agent_for(&record.model).open_session(&id).await?;
    let mut input = TurnInput::new(body.message);
    input.max_steps = body.max_steps;
    input.tool_mask = body.tool_mask.map(tackle_agent::ToolMask::new);
    input.approval = Some(state.config().approval);

    let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
    let sink = EventSink::new(move |event| {
        // A closed receiver means the client left; the turn goes on and is stored.
        let _ = tx.send(event);
    });
    let task = state.inner.tasks.spawn(
        async move {
            let cancel = guard.cancel.clone();
            let outcome = session.run_turn(input, &sink, &cancel).await;
            if let Err(e) = &outcome {
                tracing::error!(session = %session.id(), error = %e, "turn failed");
                sink.emit(AgentEvent::Error { code: "internal".into(), message: e.to_string() });
            }
            drop(guard);
            outcome
        }
        // The turn's spans are children of this request's (and of the caller's `traceparent`).
        .in_current_span(),
    );

    if body.stream.unwrap_or(true) {
        let events = UnboundedReceiverStream::new(rx).enumerate().map(|(n, event)| {
            let sse = Event::default().id((n + 1).to_string()).event(event.name());
            Ok::<_, Infallible>(
                sse.json_data(&event).unwrap_or_else(|_| Event::default().comment("unencodable event")),
            )
        });
        let keep_alive = KeepAlive::new().interval(state.config().heartbeat).text("heartbeat");
        return Ok(Sse::new(events).keep_alive(keep_alive).into_response());
    }
    let events: Vec<AgentEvent> = UnboundedReceiverStream::new(rx).collect().await;
    let outcome: TurnOutcome = task
        .await
        .map_err(|e| ApiError::internal(format!("the turn stopped unexpectedly: {e}")))?
        .map_err(ApiError::from)?;
    Ok(Json(TurnResult {
        session_id: outcome.session_id.into(),
        steps: outcome.steps,
        end: outcome.end,
        text: outcome.text,
        usage: outcome.usage,
        error: outcome.error,
        events,
    })
    .into_response())
}

/// Cancels the running turn of a session. The turn ends with `cancelled`; calls in flight are
/// answered `interrupted` and nothing is lost.
#[utoipa::path(post, path = "/v1/sessions/{id}/cancel", tag = "turns", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = CancelResult), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn cancel(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<CancelResult>, ApiError> {
    state.owned_session(&id, &user).await?;
    Ok(Json(CancelResult { cancelled: state.inner.turns.cancel(&id) }))
}

/// Compacts a session's context now (old tool outputs cleared behind locators, then a summary
/// of older turns); the last turn is kept verbatim and nothing is deleted from the store.
#[utoipa::path(post, path = "/v1/sessions/{id}/compact", tag = "turns", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = CompactResult), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 502, body = ErrorBody)), security(("bearer" = [])))]
pub async fn compact(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<CompactResult>, ApiError> {
    let record = state.owned_session(&id, &user).await?;
    let _guard = state.inner.turns.start(&id)?;
    let mut session = state.agent_for(&record.model).open_session(&id).await?;
    let report = session.compact_now(&EventSink::discard()).await?;
    Ok(Json(report.into()))
}
