//! OpenAI-compatible `POST /v1/chat/completions` and `GET /v1/models`.
//!
//! With `tools` in the request Tackle is a gateway: it forwards to the configured provider with
//! the cache-stable handling (tools in a fixed order, `tool_choice` mapped to the provider's
//! native form) and returns the model's `tool_calls`; the client runs them. Without `tools` and
//! with the agent model name (`tackle-agent` by default), the server runs its own agent with its
//! own tools and streams the final answer as `delta.content`.
//!
//! `response_format` (`json_schema`, `json_object`) is forwarded natively by the gateway; in
//! agent mode it is the turn's output schema: the agent still runs its tools, and the answer is
//! only the validated JSON (streamed as the content once the turn has it; the steps' text is not
//! streamed, since a client parses the content as JSON).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Serialize;
use tackle_protocol::{
    AgentEvent, ContentBlock, ErrorCategory, ErrorCode, ModelResponse, Role, StopReason, ToolOutcome, Usage,
};
use tackle_provider::CallOptions;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa::ToSchema;

use super::chat_wire::*;
pub use super::shared::OpenAiError;
use super::shared::{self, AgentTurn, AnswerFormat, Gateway, async_stream, now_secs};
use crate::auth::User;
use crate::json::ValidJson;
use crate::{ApiError, AppState};

/// `GET /v1/models` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    /// The models.
    pub data: Vec<ModelEntry>,
}

/// One model of `GET /v1/models`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelEntry {
    /// The name to send as `model`.
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Unix seconds (0: Tackle does not know when a provider's model was made).
    pub created: u64,
    /// Always `tackle`: requests for it go through this server.
    pub owned_by: String,
}

/// Models this server answers for: its agent, then the provider models it forwards to.
#[utoipa::path(get, path = "/v1/models", tag = "openai", responses((status = 200, body = ModelList)), security(("bearer" = [])))]
pub async fn models(State(state): State<AppState>, User(_): User) -> Json<ModelList> {
    let mut names = vec![state.config().agent_model.clone(), state.agent().config().model.clone()];
    names.extend(state.config().models.iter().cloned());
    names.extend(super::codex_bridge::model_ids(&state));
    names.dedup();
    let data = names
        .into_iter()
        .map(|id| ModelEntry { id, object: "model".into(), created: 0, owned_by: "tackle".into() })
        .collect();
    Json(ModelList { object: "list".into(), data })
}

/// OpenAI-compatible chat completions (streaming and not). See the module docs for the gateway
/// and agent modes.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai", request_body = ChatRequest,
    responses((status = 200, description = "A `chat.completion` object (`application/json`), or `chat.completion.chunk` \
            objects as server-sent events ending with `[DONE]` when `stream` is true (`text/event-stream`)",
            content((Object = "application/json"), (String = "text/event-stream"))),
        (status = 502, description = "The provider failed (OpenAI error shape)"),
        (status = 503, description = "The server is shutting down (OpenAI error shape)")),
    security(("bearer" = [])))]
pub async fn chat_completions(
    State(state): State<AppState>,
    User(user): User,
    body: Result<ValidJson<ChatRequest>, ApiError>,
) -> Result<Response, OpenAiError> {
    let ValidJson(request) = body.map_err(super::read::reword)?;
    if request.messages.is_empty() {
        return Err(
            ApiError::invalid_field("messages", "messages is empty; send at least one user message").into()
        );
    }
    let format = AnswerFormat::of_chat(request.response_format.as_ref());
    if request.model.starts_with(super::codex_bridge::MODEL_PREFIX) {
        if format.is_some() {
            return Err(ApiError::invalid_field(
                "response_format",
                "models codex/<model> answer in free text: send no response_format, or use the agent or a provider model",
            )
            .into());
        }
        return super::codex_bridge::chat_completions(state, user, request).await;
    }
    if request.model == state.config().agent_model {
        if !request.tools.is_empty() {
            return Err(ApiError::invalid_field(
                "tools",
                format!(
                    "model {:?} runs Tackle's agent with its own tools; send no tools, or name a provider model to use the gateway",
                    request.model
                ),
            )
            .into());
        }
        // The agent picks its own tools; a tool_choice is still checked, not silently dropped.
        shared::chat_tool_choice(request.tool_choice.as_ref(), &[])?;
        // A bad schema is refused before any session is written or model called.
        let output = format.map(|f| f.output_schema()).transpose()?;
        return run_agent(state, user, request, output).await;
    }
    shared::check_gateway_model(&state, &request.model)?;
    let output = format.map(|f| f.gateway(&state)).transpose()?;
    gateway(state, request, output).await
}

/// Forwards a request to the provider and answers in OpenAI's shape.
async fn gateway(
    state: AppState,
    chat: ChatRequest,
    output: Option<tackle_protocol::OutputFormat>,
) -> Result<Response, OpenAiError> {
    let (system, messages) = convert_messages(&chat.messages)?;
    if messages.is_empty() {
        return Err(ApiError::invalid_field(
            "messages",
            "send at least one user message besides system messages",
        )
        .into());
    }
    shared::check_tool_rounds(&messages)?;
    let tools = convert_tools(&chat.tools)?;
    let tool_choice = shared::chat_tool_choice(chat.tool_choice.as_ref(), &tools)?;
    let request = Gateway {
        model: chat.model.clone(),
        system,
        messages,
        tools,
        tool_choice,
        max_output_tokens: chat.max_completion_tokens.or(chat.max_tokens),
        temperature: chat.temperature,
        parallel_tool_calls: chat.parallel_tool_calls,
        prompt_cache_key: chat.prompt_cache_key.clone(),
        output,
    }
    .into_request();
    let provider = state.agent().provider().clone();
    let id = completion_id();
    let created = now_secs();
    if !chat.stream {
        let response =
            provider.complete(&request, &CallOptions::default()).await.map_err(|e| ApiError::provider(&e))?;
        return Ok(Json(completion_body(&id, created, &chat.model, &response)).into_response());
    }
    let include_usage = chat.include_usage();
    let events =
        provider.stream(&request, &CallOptions::default()).await.map_err(|e| ApiError::provider(&e))?;
    let chunks = gateway_chunks(events, id, created, chat.model, include_usage);
    Ok(Sse::new(chunks).into_response())
}

/// Runs Tackle's own agent on the conversation: earlier messages become the session's history,
/// the last user message is the turn. With `output`, the answer is only the turn's validated JSON.
async fn run_agent(
    state: AppState,
    user: String,
    chat: ChatRequest,
    output: Option<tackle_agent::OutputSchema>,
) -> Result<Response, OpenAiError> {
    let (_, messages) = convert_messages(&chat.messages)?;
    let Some(last) = messages.last().filter(|m| m.role == Role::User) else {
        return Err(ApiError::invalid_field(
            "messages",
            "the last message must be the user's (the agent runs its own tools)",
        )
        .into());
    };
    let prompt = last.text();
    let history = shared::text_history(&messages[..messages.len() - 1]);
    let session = shared::new_agent_session(&state, &user, history).await?;
    let session_id = session.id().as_str().to_owned();
    let structured = output.is_some();
    let turn = AgentTurn::start(&state, session, prompt, output).await?;
    let id = completion_id();
    let created = now_secs();
    let model = chat.model.clone();
    let header = [(SESSION_HEADER, session_id.clone())];
    if !chat.stream {
        let (outcome, events) = turn.finish().await?;
        let mut extension = TackleExtension::new(session_id);
        let mut texts = shared::StepTexts::default();
        for e in &events {
            extension.observe(e);
            texts.observe(e);
        }
        // Every step's text, as streaming sends it (not only the last step's); a turn that hit
        // its step limit or whose answer was cut off ends `length`, as streaming says.
        let cut = outcome.end == tackle_protocol::TurnEnd::MaxSteps
            || matches!(outcome.error, Some(tackle_agent::TurnFailure::Truncated { .. }));
        // Structured: only the validated JSON (a turn that ended without one says nothing).
        let text = if structured { shared::json_answer(&outcome) } else { texts.joined() };
        let response = ModelResponse {
            content: vec![ContentBlock::text(text)],
            usage: outcome.usage,
            stop_reason: if cut { StopReason::MaxTokens } else { StopReason::EndTurn },
            ..ModelResponse::default()
        };
        let body = completion_body(&id, created, &model, &response);
        return Ok((header, Json(WithTackle { body, tackle: &extension })).into_response());
    }
    let include_usage = chat.include_usage();
    let chunks = async_stream(move |tx| async move {
        let out = ChunkWriter { tx, id, created, model, include_usage };
        out.start();
        let AgentTurn { task, events } = turn;
        let mut events = UnboundedReceiverStream::new(events);
        let mut usage = Usage::default();
        let mut finish = "stop";
        let mut extension = TackleExtension::new(session_id);
        let mut texts = shared::StepTexts::default();
        while let Some(event) = events.next().await {
            extension.observe(&event);
            // Only the answer is streamed, its steps as paragraphs; tool activity stays inside
            // the agent. A structured answer is streamed once validated, below.
            if let Some(text) = texts.observe(&event)
                && !structured
            {
                out.text(&text);
            }
            match event {
                AgentEvent::TurnFinished { usage: u, reason, .. } => {
                    usage = u;
                    if reason == tackle_protocol::TurnEnd::MaxSteps {
                        finish = "length";
                    }
                }
                // An answer cut off by its output limit ends `length`, as a model's would.
                AgentEvent::Error { code: ErrorCode::OutputTruncated, .. } => finish = "length",
                AgentEvent::Error { message, code } => {
                    out.error(code.as_str(), &message);
                }
                _ => {}
            }
        }
        if structured {
            // The events end with the turn; its outcome holds the validated answer. A turn that
            // failed already said why in an error chunk.
            if let Ok(Ok(outcome)) = task.await {
                let text = shared::json_answer(&outcome);
                if !text.is_empty() {
                    out.text(&text);
                }
            }
        }
        out.finish_with(finish, &usage, Some(&extension));
    });
    Ok((StatusCode::OK, header, Sse::new(chunks).keep_alive(state.heartbeat())).into_response())
}

/// The response header naming the session an agent-mode request ran in.
const SESSION_HEADER: &str = "x-tackle-session-id";

/// What an agent-mode answer adds for clients that know Tackle, as a `tackle` object (OpenAI
/// SDKs keep unknown fields): the session (for `GET /v1/sessions/{id}/approvals` and its
/// messages), calls refused for want of a confirmation, and approvals left pending.
#[derive(Debug, Serialize)]
struct TackleExtension {
    session_id: String,
    #[serde(rename = "denied_calls")]
    denied: Vec<DeniedCall>,
    #[serde(rename = "pending_approvals")]
    pending: Vec<String>,
}

/// A call refused for want of a confirmation.
#[derive(Debug, Serialize)]
struct DeniedCall {
    call_id: String,
    tool: String,
    message: String,
}

impl TackleExtension {
    fn new(session_id: String) -> Self {
        Self { session_id, denied: Vec::new(), pending: Vec::new() }
    }

    fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ApprovalRequested { approval_id, .. } => {
                self.pending.push(approval_id.as_str().to_owned())
            }
            AgentEvent::ApprovalResolved { approval_id, .. } => {
                self.pending.retain(|p| p != approval_id.as_str())
            }
            AgentEvent::ToolResult { id, name, outcome: ToolOutcome::Error { envelope }, .. }
                if envelope.category == ErrorCategory::Denied =>
            {
                self.denied.push(DeniedCall {
                    call_id: id.as_str().to_owned(),
                    tool: name.clone(),
                    message: envelope.message.clone(),
                });
            }
            _ => {}
        }
    }
}
