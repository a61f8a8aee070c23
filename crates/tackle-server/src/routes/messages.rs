//! Turns: `POST /v1/sessions/{id}/messages` (SSE or JSON), cancel and compact.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
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
use crate::turns::EventRecorder;
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
    /// MCP resources to attach after the message, besides those it mentions as `@server:uri`:
    /// they are read when the message arrives (an unreadable one is a 400) and sent with it, text
    /// inline, binary contents described, never inlined.
    #[serde(default)]
    pub resources: Vec<ResourceRef>,
    /// The final answer must be JSON matching this JSON Schema (structured output): asked
    /// natively where the provider can (OpenAI `response_format` / `text.format`, strict only
    /// for schemas in the strict subset), else through a final-answer tool; validated, with one
    /// repair round showing the model the error. The result's `output` holds the answer; an
    /// answer still invalid fails the turn with `output_invalid` (502).
    pub output_schema: Option<OutputSchemaField>,
}

/// `outputSchema`: a named JSON Schema for the final answer.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSchemaField {
    /// The schema's name (`^[a-zA-Z0-9_-]{1,64}$`), sent where the provider names it.
    #[schema(pattern = r"^[a-zA-Z0-9_-]{1,64}$")]
    #[serde(default = "default_schema_name")]
    pub name: String,
    /// The JSON Schema (an object).
    #[schema(value_type = Object)]
    pub schema: serde_json::Value,
}

fn default_schema_name() -> String {
    "output".to_owned()
}

/// An MCP resource to attach to a message.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceRef {
    /// The MCP server's configured name.
    #[schema(min_length = 1)]
    pub server: String,
    /// The resource's URI on it.
    #[schema(min_length = 1)]
    pub uri: String,
}

/// `message` with the MCP resources it mentions and `more` attached; before the turn starts, so an
/// unreadable resource is a 400 and nothing runs.
async fn with_resources(
    state: &AppState,
    session: &str,
    message: String,
    more: &[ResourceRef],
) -> Result<String, ApiError> {
    let Some(mcp) = state.agent().mcp() else {
        if let Some(r) = more.first() {
            return Err(ApiError::invalid_field(
                "resources",
                format!("no MCP server `{}` is configured", r.server),
            ));
        }
        return Ok(message);
    };
    let more: Vec<tackle_mcp::attach::ResourceMention> = more
        .iter()
        .map(|r| tackle_mcp::attach::ResourceMention { server: r.server.clone(), uri: r.uri.clone() })
        .collect();
    if more.is_empty() && tackle_mcp::attach::mentions(&message, &mcp.server_names()).is_empty() {
        return Ok(message);
    }
    // Reading a resource happens outside a turn: a question the server asks is declined.
    let ctx = tackle_tools::ToolContext::new(session, "attach", state.agent().workspace().to_owned());
    ctx.turn.insert(tackle_tools::ElicitationPolicy::Decline(
        "the server asked a question while a resource was attached; nobody can answer it then".to_owned(),
    ));
    mcp.attach_resources(&message, &more, &ctx).await.map_err(|(m, e)| {
        ApiError::invalid_field("resources", format!("cannot attach @{}:{}: {e}", m.server, m.uri))
    })
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

/// The body of a failed `POST /v1/sessions/{id}/messages`: an [`ErrorBody`] when the request
/// was refused, or the [`TurnResult`] of a turn that failed (`stream: false`). Both have
/// `error.code` and `error.message`; the status follows from the code (docs/operations.md).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // Documents the shapes; responses are built as either type directly.
pub enum SendFailure {
    /// The request was refused before a turn ran.
    Refused(ErrorBody),
    /// The turn ran and failed.
    Failed(TurnResult),
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
    /// Final answer (with `outputSchema`, the JSON answer serialized).
    pub text: String,
    /// The validated JSON answer, when the turn asked for an `outputSchema` and completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub output: Option<serde_json::Value>,
    /// Usage summed over the turn.
    pub usage: tackle_protocol::Usage,
    /// Why the turn failed or stopped short; its `code` also decides the response's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<tackle_protocol::FailureReport>,
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
        (status = 400, description = "The request is invalid, or (`stream: false`) the turn failed with \
            `context_length_exceeded`", body = SendFailure),
        (status = 403, description = "A `UserPromptSubmit` hook refused the prompt (`stream: false`)", body = SendFailure),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The session is busy, or its lease moved to another instance", body = SendFailure),
        (status = 413, body = ErrorBody),
        (status = 429, description = "The provider rate-limited the turn (`stream: false`); `Retry-After` says when \
            to try again if the provider did", body = SendFailure),
        (status = 500, body = SendFailure),
        (status = 502, description = "The provider failed or refused Tackle's request, or the loop guard stopped \
            the model (`stream: false`)", body = SendFailure),
        (status = 503, description = "The provider is overloaded (`stream: false`), or the server is shutting down",
            body = SendFailure),
        (status = 504, description = "The provider did not answer in time (`stream: false`)", body = SendFailure)),
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
    let output_schema = body
        .output_schema
        .map(|f| tackle_agent::OutputSchema::new(f.name, f.schema))
        .transpose()
        .map_err(|e| ApiError::invalid_field("outputSchema", e.to_string()))?;
    if state.inner.shutdown.is_cancelled() {
        return Err(ApiError::shutting_down());
    }
    let record = state.owned_session(&id, &user).await?;
    let message = with_resources(&state, &id, body.message, &body.resources).await?;
    let guard = state.start_turn(&id).await?;
    let mut session = state.agent_for(&record.model).open_session(&id).await?;
    // Sessions are loaded per request: SessionStart hooks run at a session's first turn only.
    session.mark_continuing();
    // Every write of the turn is fenced by its lease: should this instance stall while another
    // takes the session over, the turn stops at its next write.
    if let Some(lease) = guard.lease() {
        session.hold_lease(lease);
    }
    let mut input = TurnInput::new(message);
    input.max_steps = body.max_steps;
    input.tool_mask = body.tool_mask.map(tackle_agent::ToolMask::new);
    input.approval = Some(state.config().approval);
    input.output_schema = output_schema;

    // Every event is numbered after the session's last one and stored, so a client that loses
    // the stream reconnects (`GET /v1/sessions/{id}/events`, `Last-Event-ID`) on any instance.
    // A turn that lost its lease stores no more events.
    let events_store = match guard.lease() {
        Some(lease) => state.agent().store().fenced(lease),
        None => state.agent().store().clone(),
    };
    let recorder = Arc::new(EventRecorder::start(events_store, id.clone(), guard.event_base()));
    let (tx, rx) = mpsc::unbounded_channel::<(i64, String, AgentEvent)>();
    let sink = EventSink::new({
        let recorder = recorder.clone();
        move |event| {
            let (seq, data) = recorder.record(&event);
            // A closed receiver means the client left; the turn goes on and is stored.
            let _ = tx.send((seq, data, event));
        }
    });
    let task = state.inner.tasks.spawn(
        async move {
            let cancel = guard.cancel.clone();
            let outcome = session.run_turn(input, &sink, &cancel).await;
            if let Err(e) = &outcome {
                tracing::error!(session = %session.id(), error = %e, "turn failed");
                let code = match e {
                    tackle_agent::AgentError::Store(tackle_store::StoreError::LeaseLost { .. }) => {
                        tackle_protocol::ErrorCode::LeaseLost
                    }
                    _ => tackle_protocol::ErrorCode::Internal,
                };
                sink.emit(AgentEvent::Error { code, message: e.to_string() });
            }
            // The session is free (lease released, events stored) before the client's stream
            // ends, so a client that got `turn_finished` may send the next message at once.
            let last_event = recorder.finish().await;
            guard.finish(last_event).await;
            drop(sink);
            outcome
        }
        // The turn's spans are children of this request's (and of the caller's `traceparent`).
        .in_current_span(),
    );

    if body.stream.unwrap_or(true) {
        let events = UnboundedReceiverStream::new(rx).map(|(seq, data, event)| {
            // Serialized once, for the store and the stream alike.
            Ok::<_, Infallible>(Event::default().id(seq.to_string()).event(event.name()).data(data))
        });
        let keep_alive = state.heartbeat();
        return Ok(Sse::new(events).keep_alive(keep_alive).into_response());
    }
    let events: Vec<AgentEvent> = UnboundedReceiverStream::new(rx).map(|(_, _, event)| event).collect().await;
    let outcome: TurnOutcome = task
        .await
        .map_err(|e| ApiError::internal(format!("the turn stopped unexpectedly: {e}")))?
        .map_err(ApiError::from)?;
    // A failed turn answers with the status its failure calls for (429 for a rate-limited
    // provider, 400 for a full context, ...), the whole result in the body either way.
    let failure = outcome.error.as_ref().filter(|_| outcome.end == tackle_protocol::TurnEnd::Failed);
    let status = failure.map_or(StatusCode::OK, |f| crate::error::status_of(f.code()));
    let retry_after = failure.map(ApiError::turn_failed).and_then(|e| e.retry_after_header());
    let mut response = (
        status,
        Json(TurnResult {
            session_id: outcome.session_id.into(),
            steps: outcome.steps,
            end: outcome.end,
            text: outcome.text,
            output: outcome.output,
            usage: outcome.usage,
            error: outcome.error.as_ref().map(tackle_agent::TurnFailure::report),
            events,
        }),
    )
        .into_response();
    if let Some(value) = retry_after {
        response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
    }
    Ok(response)
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
    // Running here, or on another instance on the same database (which sees the request
    // within its coordinator's poll interval).
    let cancelled =
        state.inner.turns.cancel(&id) || state.agent().store().leases().request_cancel(&id).await?;
    Ok(Json(CancelResult { cancelled }))
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
    let guard = state.start_turn(&id).await?;
    let base = guard.event_base();
    let mut session = state.agent_for(&record.model).open_session(&id).await?;
    if let Some(lease) = guard.lease() {
        session.hold_lease(lease);
    }
    let report = session.compact_now(&EventSink::discard()).await;
    guard.finish(base).await;
    Ok(Json(report?.into()))
}

/// The headers of `GET /v1/sessions/{id}/events`.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
pub struct ReplayHeaders {
    /// The id of the last event received; later events follow.
    #[param(rename = "Last-Event-ID", minimum = 0, nullable = false)]
    pub last_event_id: Option<i64>,
}

/// Event names after which a turn sends nothing more. (An `error` is not one: a cancelled or
/// failed turn sends `turn_finished` after it; a turn that ended on an internal error sends no
/// `turn_finished`, and its replay ends when its session is no longer running.)
const LAST_EVENTS: &[&str] = &["turn_finished"];

/// Stored events read per query while replaying.
const REPLAY_PAGE: u32 = 500;

/// Reconnects to a session's event stream: the events of its running or latest turn after
/// `Last-Event-ID` (all of them without it), each once and in order, then, while the turn runs
/// (on this instance or another one on the same database), its new events as they are stored,
/// until it finishes. Ids are those of the original stream.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "turns",
    params(("id" = String, Path, description = "Session id"),
        ReplayHeaders),
    responses(
        (status = 200, description = "An SSE stream of the turn's events (`text/event-stream`, each event's data one `AgentEvent`)",
            content((AgentEvent = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn events(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => {
            value.to_str().ok().and_then(|v| v.trim().parse::<i64>().ok()).filter(|v| *v >= 0).ok_or_else(
                || {
                    ApiError::invalid_field(
                        "Last-Event-ID",
                        "Last-Event-ID must be the id of an event of this session's stream (a whole number)",
                    )
                },
            )?
        }
    };
    state.owned_session(&id, &user).await?;
    let replay = Replay {
        store: state.agent().store().clone(),
        session: id,
        after,
        pending: std::collections::VecDeque::new(),
        finished: false,
        last_look: false,
    };
    let events = futures::stream::unfold(replay, |mut replay| async move {
        let event = replay.next().await?;
        let sse = Event::default().id(event.seq.to_string()).event(event.name.clone()).data(event.data);
        Some((Ok::<_, Infallible>(sse), replay))
    });
    let keep_alive = state.heartbeat();
    Ok(Sse::new(events).keep_alive(keep_alive).into_response())
}

/// Where a replay is: what was sent, what is read but not sent yet.
struct Replay {
    store: tackle_store::Store,
    session: String,
    after: i64,
    pending: std::collections::VecDeque<tackle_store::StoredEvent>,
    /// The turn's last event was sent.
    finished: bool,
    /// No turn runs any more: one more read, then the end.
    last_look: bool,
}

impl Replay {
    async fn next(&mut self) -> Option<tackle_store::StoredEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.after = event.seq;
                if LAST_EVENTS.contains(&event.name.as_str()) {
                    self.finished = true;
                    self.pending.clear();
                }
                return Some(event);
            }
            if self.finished {
                return None;
            }
            match self.store.events().after(&self.session, self.after, REPLAY_PAGE).await {
                Ok(events) if !events.is_empty() => {
                    self.pending.extend(events);
                    continue;
                }
                Ok(_) if self.last_look => return None,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(session = %self.session, error = %e, "cannot read stored events");
                    return None;
                }
            }
            // Nothing new. A running turn stores its events before it ends, so once no turn
            // runs, one more read finds everything.
            match self.store.sessions().get(&self.session).await {
                Ok(record) if record.status == tackle_store::SessionStatus::Running => {
                    tokio::time::sleep(crate::turns::POLL).await;
                }
                _ => self.last_look = true,
            }
        }
    }
}
