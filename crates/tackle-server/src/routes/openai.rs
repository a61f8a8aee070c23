//! OpenAI-compatible `POST /v1/chat/completions` and `GET /v1/models`.
//!
//! With `tools` in the request Tackle is a gateway: it forwards to the configured provider with
//! the cache-stable handling (tools in a fixed order, `tool_choice` mapped to the provider's
//! native form) and returns the model's `tool_calls`; the client runs them. Without `tools` and
//! with the agent model name (`tackle-agent` by default), the server runs its own agent with its
//! own tools and streams the final answer as `delta.content`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tackle_protocol::{AgentEvent, ContentBlock, ModelResponse, Role, StopReason, Usage};
use tackle_provider::CallOptions;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa::ToSchema;

use super::chat_wire::*;
pub use super::compat::OpenAiError;
use super::compat::{self, AgentTurn, Gateway, async_stream, now_secs};
use crate::auth::User;
use crate::json::ValidJson;
use crate::{ApiError, AppState};

/// `GET /v1/models` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    /// The models.
    #[schema(value_type = Vec<Object>)]
    pub data: Vec<Value>,
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
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "tackle"}))
        .collect();
    Json(ModelList { object: "list".into(), data })
}

/// OpenAI-compatible chat completions (streaming and not). See the module docs for the gateway
/// and agent modes.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai", request_body = ChatRequest,
    responses((status = 200, description = "A chat.completion object, or chat.completion.chunk SSE when stream is true"),
        (status = 400, description = "OpenAI error shape"), (status = 401, description = "OpenAI error shape"),
        (status = 502, description = "The provider failed (OpenAI error shape)")),
    security(("bearer" = [])))]
pub async fn chat_completions(
    State(state): State<AppState>,
    User(user): User,
    body: Result<ValidJson<ChatRequest>, ApiError>,
) -> Result<Response, OpenAiError> {
    let ValidJson(request) = body?;
    if request.messages.is_empty() {
        return Err(
            ApiError::invalid_field("messages", "messages is empty; send at least one user message").into()
        );
    }
    if request.model.starts_with(super::codex_bridge::MODEL_PREFIX) {
        return super::codex_bridge::chat_completions(state, user, request).await;
    }
    if request.tools.is_empty() && request.model == state.config().agent_model {
        return run_agent(state, user, request).await;
    }
    gateway(state, request).await
}

/// Forwards a request to the provider and answers in OpenAI's shape.
async fn gateway(state: AppState, chat: ChatRequest) -> Result<Response, OpenAiError> {
    let (system, messages) = convert_messages(&chat.messages)?;
    if messages.is_empty() {
        return Err(ApiError::invalid_field(
            "messages",
            "send at least one user message besides system messages",
        )
        .into());
    }
    let tools = convert_tools(&chat.tools)?;
    let tool_choice = compat::tool_choice(chat.tool_choice.as_ref(), &tools)?;
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
    }
    .into_request();
    let provider = state.agent().provider().clone();
    let id = completion_id();
    let created = now_secs();
    if !chat.stream {
        let response = provider
            .complete(&request, &CallOptions::default())
            .await
            .map_err(|e| ApiError::upstream(e.to_string()))?;
        return Ok(Json(completion_body(&id, created, &chat.model, &response)).into_response());
    }
    let include_usage = chat.include_usage();
    let events = provider
        .stream(&request, &CallOptions::default())
        .await
        .map_err(|e| ApiError::upstream(e.to_string()))?;
    let chunks = gateway_chunks(events, id, created, chat.model, include_usage);
    Ok(Sse::new(chunks).into_response())
}

/// Runs Tackle's own agent on the conversation: earlier messages become the session's history,
/// the last user message is the turn.
async fn run_agent(state: AppState, user: String, chat: ChatRequest) -> Result<Response, OpenAiError> {
    let (_, messages) = convert_messages(&chat.messages)?;
    let Some(last) = messages.last().filter(|m| m.role == Role::User) else {
        return Err(ApiError::invalid_field(
            "messages",
            "the last message must be the user's (the agent runs its own tools)",
        )
        .into());
    };
    let prompt = last.text();
    let history = compat::text_history(&messages[..messages.len() - 1]);
    let session = compat::new_agent_session(&state, &user, history).await?;
    let turn = AgentTurn::start(&state, session, prompt)?;
    let id = completion_id();
    let created = now_secs();
    let model = chat.model.clone();
    if !chat.stream {
        let outcome = turn.outcome().await?;
        let response = ModelResponse {
            content: vec![ContentBlock::text(outcome.text)],
            usage: outcome.usage,
            stop_reason: StopReason::EndTurn,
        };
        return Ok(Json(completion_body(&id, created, &model, &response)).into_response());
    }
    let include_usage = chat.include_usage();
    let chunks = async_stream(move |tx| async move {
        let out = ChunkWriter { tx, id, created, model, include_usage };
        out.delta(json!({"role": "assistant", "content": ""}), None);
        let mut events = UnboundedReceiverStream::new(turn.events);
        let mut usage = Usage::default();
        let mut finish = "stop";
        while let Some(event) = events.next().await {
            match event {
                // Only the answer is streamed; tool activity stays inside the agent.
                AgentEvent::TextDelta { text } => {
                    out.delta(json!({"content": text}), None);
                }
                AgentEvent::TurnFinished { usage: u, reason, .. } => {
                    usage = u;
                    if reason == tackle_protocol::TurnEnd::MaxSteps {
                        finish = "length";
                    }
                }
                AgentEvent::Error { message, code } if code != "max_steps" => {
                    out.error(&code, &message);
                }
                _ => {}
            }
        }
        out.finish(finish, &usage);
    });
    Ok((StatusCode::OK, Sse::new(chunks)).into_response())
}
