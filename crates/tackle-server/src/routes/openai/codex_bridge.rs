//! Bridge mode of `POST /v1/chat/completions` and `POST /v1/responses`: models
//! `codex/<model>` run on Codex's app-server with the client's tools (see
//! [`tackle_codex::CodexBridge`]).
//!
//! The client's tools become the Codex thread's dynamic tools (`tool_choice: "none"` sends
//! none, a named function only that one). When Codex calls one, the response ends with
//! `tool_calls` (`finish_reason: "tool_calls"`, streamed as deltas or in the JSON message)
//! while Codex waits; the client's next request carrying the `role: "tool"` results is matched
//! to the waiting calls by call id and conversation, and the same turn streams on. Results for
//! calls that do not exist or were released after `[codex] tool_call_timeout_secs` are 4xx.

use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tackle_codex::{BridgeError, BridgeRequest};
use tackle_protocol::ResponseAccumulator;

use super::chat_wire::{
    ChatRequest, completion_body, completion_id, convert_messages, convert_tools, gateway_chunks,
};
use super::shared::{OpenAiError, chat_tool_choice, now_secs};
use crate::{ApiError, AppState};

/// Model names with this prefix go to Codex.
pub const MODEL_PREFIX: &str = "codex/";

/// The Codex models `/v1/models` lists (none when the bridge is off).
pub(crate) fn model_ids(state: &AppState) -> Vec<String> {
    let Some(bridge) = &state.inner.codex else { return Vec::new() };
    std::iter::once("default".to_owned())
        .chain(bridge.server().config().models.iter().cloned())
        .map(|m| format!("{MODEL_PREFIX}{m}"))
        .collect()
}

/// The bridge, or the error a `codex/…` model gets when the server runs none.
fn bridge_for(state: &AppState, model: &str) -> Result<std::sync::Arc<tackle_codex::CodexBridge>, ApiError> {
    state.inner.codex.clone().ok_or_else(|| ApiError {
        status: StatusCode::NOT_FOUND,
        code: "model_not_found",
        message: format!(
            "model {model:?} is not served: Codex models need `tackle serve --provider codex` or [codex] bridge = true"
        ),
        field: Some("model".into()),
        retry_after: None,
    })
}

/// Starts a Codex turn, or continues the one whose calls `request` answers, for either OpenAI
/// route; `at` names where the client sent a tool call id (for errors).
pub(crate) async fn turn(
    state: &AppState,
    request: BridgeRequest,
    requested_model: &str,
    at: impl Fn(&str) -> String,
) -> Result<tackle_provider::EventStream, OpenAiError> {
    let bridge = bridge_for(state, requested_model)?;
    bridge.turn(request).await.map_err(|e| bridge_error(e, at))
}

/// The Codex model a `codex/<model>` name asks for.
pub(crate) fn codex_model(requested: &str) -> Option<&str> {
    requested.strip_prefix(MODEL_PREFIX)
}

/// Serves one chat completion on Codex.
pub(crate) async fn chat_completions(
    state: AppState,
    user: String,
    chat: ChatRequest,
) -> Result<Response, OpenAiError> {
    bridge_for(&state, &chat.model)?;
    let (system, messages) = convert_messages(&chat.messages)?;
    let tools = convert_tools(&chat.tools)?;
    let tool_choice = chat_tool_choice(chat.tool_choice.as_ref(), &tools)?;
    let instructions: Vec<&str> = system.iter().map(|s| s.text.as_str()).collect();
    let model = chat.model.strip_prefix(MODEL_PREFIX).unwrap_or(&chat.model).to_owned();
    let request = BridgeRequest {
        owner: user,
        model,
        instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
        messages,
        tools,
        tool_choice,
    };
    let at = |id: &str| {
        chat.messages
            .iter()
            .position(|m| m.role == tackle_wire::chat::Role::Tool && m.tool_call_id.as_deref() == Some(id))
            .map(|i| format!("messages[{i}].tool_call_id"))
            .unwrap_or_else(|| "messages".into())
    };
    let events = turn(&state, request, &chat.model, at).await?;
    let id = completion_id();
    let created = now_secs();
    if chat.stream {
        let include_usage = chat.include_usage();
        return Ok(
            Sse::new(gateway_chunks(events, id, created, chat.model.clone(), include_usage)).into_response()
        );
    }
    let mut acc = ResponseAccumulator::default();
    let mut events = events;
    while let Some(event) = events.next().await {
        acc.push(&event.map_err(|e| ApiError::upstream(e.to_string()))?);
    }
    Ok(Json(completion_body(&id, created, &chat.model, &acc.finish())).into_response())
}

/// A bridge failure in OpenAI's error shape, naming the client's field (`at` a call id) where
/// it can.
fn bridge_error(e: BridgeError, at: impl Fn(&str) -> String) -> OpenAiError {
    let message = e.to_string();
    let conflict = |code: &'static str, field: Option<String>| ApiError {
        status: StatusCode::CONFLICT,
        code,
        message: message.clone(),
        field,
        retry_after: None,
    };
    let error = match &e {
        BridgeError::UnknownToolCall { id, .. } => {
            ApiError { code: "unknown_tool_call", ..ApiError::invalid_field(at(id), message) }
        }
        BridgeError::MissingToolResult { .. } => {
            ApiError { code: "missing_tool_result", ..ApiError::invalid_field(at(""), message) }
        }
        BridgeError::ConversationMismatch => {
            ApiError { code: "conversation_mismatch", ..ApiError::invalid_field(at(""), message) }
        }
        BridgeError::Invalid(_) => ApiError::invalid_field(at(""), message),
        BridgeError::ExpiredToolCall { id, .. } => conflict("tool_call_expired", Some(at(id))),
        BridgeError::AlreadyAnswered { id } => conflict("tool_call_answered", Some(at(id))),
        BridgeError::Busy => conflict("busy", None),
        BridgeError::Codex(_) => ApiError::upstream(message),
    };
    error.into()
}
