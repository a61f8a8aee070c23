//! OpenAI-compatible `POST /v1/chat/completions` and `GET /v1/models`.
//!
//! With `tools` in the request Tackle is a gateway: it forwards to the configured provider with
//! the cache-stable handling (tools in a fixed order, `tool_choice` mapped to the provider's
//! native form) and returns the model's `tool_calls`; the client runs them. Without `tools` and
//! with the agent model name (`tackle-agent` by default), the server runs its own agent with its
//! own tools and streams the final answer as `delta.content`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_agent::{NewSessionOptions, TurnInput};
use tackle_protocol::{
    AgentEvent, AllowedToolsMode, ContentBlock, ErrorCategory, Message, ModelRequest, ModelResponse, Role,
    StopReason, StreamEvent, SystemSection, ToolChoice, ToolInput, ToolOutcome, ToolResult, ToolSpec,
    ToolUse, Usage,
};
use tackle_provider::CallOptions;
use tackle_tools::EventSink;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa::ToSchema;

use crate::auth::User;
use crate::json::ValidJson;
use crate::{ApiError, AppState};

/// An [`ApiError`] in OpenAI's error shape: `{"error": {message, type, param, code}}`.
#[derive(Debug)]
pub struct OpenAiError(pub ApiError);

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let kind = match e.status.as_u16() {
            400 | 404 | 409 | 413 => "invalid_request_error",
            401 => "authentication_error",
            _ => "server_error",
        };
        let body = json!({"error": {"message": e.message, "type": kind, "param": e.field, "code": e.code}});
        (e.status, Json(body)).into_response()
    }
}

/// `POST /v1/chat/completions` body (the parts Tackle uses; others are ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatRequest {
    /// Model name: the agent model (`tackle-agent`) runs Tackle's agent; any other is forwarded.
    pub model: String,
    /// The conversation.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<ChatMessage>,
    /// Function tools the client runs itself.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<ChatTool>,
    /// `auto`, `none`, `required`, `{"type":"function","function":{"name":..}}` or
    /// `{"type":"allowed_tools",...}`.
    #[schema(value_type = Object)]
    pub tool_choice: Option<Value>,
    /// Stream chunks as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// `{"include_usage": true}` adds a final usage chunk.
    #[schema(value_type = Option<Object>)]
    pub stream_options: Option<serde_json::Map<String, Value>>,
    /// Output token limit.
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub max_tokens: Option<u32>,
    /// Output token limit (newer name).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Whether several tool calls may come in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Prompt cache routing key; defaults to a hash of the tools and system prompt.
    pub prompt_cache_key: Option<String>,
}

impl ChatRequest {
    /// Whether a streamed answer ends with a usage chunk (`stream_options.include_usage`).
    fn include_usage(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.get("include_usage")).and_then(Value::as_bool)
            == Some(true)
    }
}

/// One message of a chat request.
#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Vec<ChatToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChatToolCall {
    id: String,
    function: ChatFunctionCall,
}

#[derive(Debug, Deserialize)]
struct ChatFunctionCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// A function tool of a chat request.
#[derive(Debug, Deserialize)]
pub struct ChatTool {
    #[serde(rename = "type")]
    kind: String,
    function: ChatFunction,
}

#[derive(Debug, Deserialize)]
struct ChatFunction {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
}

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
    let ValidJson(request) = body?;
    if request.messages.is_empty() {
        return Err(
            ApiError::invalid_field("messages", "messages is empty; send at least one user message").into()
        );
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
        convert_tool_choice(request.tool_choice.as_ref(), &[])?;
        return run_agent(state, user, request).await;
    }
    let config = state.config();
    if !config.gateway_any_model
        && request.model != state.agent().config().model
        && !config.models.contains(&request.model)
    {
        let mut offered = vec![config.agent_model.clone(), state.agent().config().model.clone()];
        offered.extend(config.models.iter().cloned());
        return Err(ApiError::invalid_field(
            "model",
            format!(
                "model {:?} is not offered by this server; choose one of {} (GET /v1/models), \
                 or let the operator add it to [server] models",
                request.model,
                offered.join(", ")
            ),
        )
        .into());
    }
    gateway(state, request).await
}

fn completion_id() -> String {
    format!("chatcmpl-{}", uuid::Uuid::new_v4().simple())
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Text of an OpenAI `content`: a string or an array of parts (text parts only).
fn content_text(content: &Option<Value>, at: usize) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for (k, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text").and_then(Value::as_str)) {
                    (Some("text"), Some(t)) => out.push_str(t),
                    _ => {
                        return Err(ApiError::invalid_field(
                            format!("messages[{at}].content[{k}]"),
                            "only text content parts are supported",
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(ApiError::invalid_field(
            format!("messages[{at}].content"),
            "content must be a string or an array of parts",
        )),
    }
}

/// Text of a system or user message, which providers refuse empty: a non-empty string, or text
/// parts each with text.
fn non_empty_text(content: &Option<Value>, at: usize) -> Result<String, ApiError> {
    if let Some(Value::Array(parts)) = content
        && (parts.is_empty() || parts.iter().any(|p| p.get("text").and_then(Value::as_str) == Some("")))
    {
        return Err(ApiError::invalid_field(
            format!("messages[{at}].content"),
            "send at least one text part, each with text",
        ));
    }
    let text = content_text(content, at)?;
    if text.is_empty() {
        return Err(ApiError::invalid_field(
            format!("messages[{at}].content"),
            "the content is empty; send the text of the message",
        ));
    }
    Ok(text)
}

/// The system prompt and conversation of a chat request.
fn convert_messages(messages: &[ChatMessage]) -> Result<(Vec<SystemSection>, Vec<Message>), ApiError> {
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role.as_str() {
            "system" | "developer" => {
                system.push(SystemSection::cacheable("client", non_empty_text(&m.content, i)?))
            }
            "user" => out.push(Message::user(non_empty_text(&m.content, i)?)),
            "assistant" => {
                let mut content = Vec::new();
                let text = content_text(&m.content, i)?;
                if !text.is_empty() {
                    content.push(ContentBlock::text(text));
                }
                for call in &m.tool_calls {
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id: call.id.clone().into(),
                        name: call.function.name.clone(),
                        input: ToolInput::parse(&call.function.arguments),
                    }));
                }
                if content.is_empty() {
                    return Err(ApiError::invalid_field(
                        format!("messages[{i}]"),
                        "an assistant message needs content or tool_calls",
                    ));
                }
                out.push(Message { role: Role::Assistant, content });
            }
            "tool" => {
                let id = m.tool_call_id.clone().ok_or_else(|| {
                    ApiError::invalid_field(
                        format!("messages[{i}].tool_call_id"),
                        "a tool message needs tool_call_id",
                    )
                })?;
                let result = ToolResult::ok(id, content_text(&m.content, i)?);
                // Consecutive tool messages answer one assistant message together.
                match out.last_mut() {
                    Some(last) if last.role == Role::Tool => {
                        last.content.push(ContentBlock::ToolResult(result))
                    }
                    _ => out.push(Message::tool_results([result])),
                }
            }
            other => {
                return Err(ApiError::invalid_field(
                    format!("messages[{i}].role"),
                    format!("unknown role {other:?}; use system, developer, user, assistant or tool"),
                ));
            }
        }
    }
    Ok((system, out))
}

/// Every tool call of an assistant message is answered by the tool messages right after it, and
/// every tool message answers one of them: a provider refuses anything else, so the gateway
/// says so (400) before forwarding.
fn check_tool_rounds(messages: &[Message]) -> Result<(), ApiError> {
    let unanswered = |open: &[&str]| {
        ApiError::invalid_field(
            "messages",
            format!(
                "tool calls {} are not answered; send a tool message for each call right after the assistant message",
                open.join(", ")
            ),
        )
    };
    let mut open: Vec<&str> = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            for r in m.tool_results_iter() {
                let Some(at) = open.iter().position(|id| *id == r.tool_use_id) else {
                    return Err(ApiError::invalid_field(
                        "messages",
                        format!(
                            "a tool message answers tool_call_id {:?}, which no tool call of the assistant message before it has (or another tool message answered it)",
                            r.tool_use_id
                        ),
                    ));
                };
                open.remove(at);
            }
            continue;
        }
        if !open.is_empty() {
            return Err(unanswered(&open));
        }
        for u in m.tool_uses() {
            if open.contains(&u.id.as_str()) {
                return Err(ApiError::invalid_field(
                    "messages",
                    format!("tool call id {:?} appears twice in one assistant message", u.id),
                ));
            }
            open.push(&u.id);
        }
    }
    if open.is_empty() { Ok(()) } else { Err(unanswered(&open)) }
}

/// Tool definitions in name order: a client that sends the same tools in another order still
/// hits the same prompt cache.
fn convert_tools(tools: &[ChatTool]) -> Result<Vec<ToolSpec>, ApiError> {
    let mut specs = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        if t.kind != "function" {
            return Err(ApiError::invalid_field(
                format!("tools[{i}].type"),
                "only function tools are supported",
            ));
        }
        if !tackle_protocol::is_valid_tool_name(&t.function.name) {
            return Err(ApiError::invalid_field(
                format!("tools[{i}].function.name"),
                "tool names must match ^[a-zA-Z0-9_-]{1,64}$",
            ));
        }
        let schema = match &t.function.parameters {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => {
                return Err(ApiError::invalid_field(
                    format!("tools[{i}].function.parameters"),
                    "parameters must be a JSON Schema object",
                ));
            }
        };
        specs.push(ToolSpec::new(t.function.name.clone(), t.function.description.clone(), schema));
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = specs.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(ApiError::invalid_field("tools", format!("tool {:?} is defined twice", w[0].name)));
    }
    Ok(specs)
}

fn convert_tool_choice(choice: Option<&Value>, tools: &[ToolSpec]) -> Result<ToolChoice, ApiError> {
    let bad = |m: &str| ApiError::invalid_field("tool_choice", m.to_owned());
    let known = |name: &str| -> Result<String, ApiError> {
        if tools.iter().any(|t| t.name == name) {
            Ok(name.to_owned())
        } else {
            Err(bad(&format!("tool_choice names {name:?}, which is not in tools")))
        }
    };
    Ok(match choice {
        None | Some(Value::Null) => ToolChoice::Auto,
        Some(Value::String(s)) => match s.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => return Err(bad("use auto, none, required or a function object")),
        },
        Some(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = obj
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("function.name is missing"))?;
                ToolChoice::Named { name: known(name)? }
            }
            Some("allowed_tools") => {
                let spec = obj.get("allowed_tools").ok_or_else(|| bad("allowed_tools is missing"))?;
                let mode = match spec.get("mode").and_then(Value::as_str) {
                    Some("auto") => AllowedToolsMode::Auto,
                    Some("required") => AllowedToolsMode::Required,
                    _ => return Err(bad("allowed_tools.mode must be auto or required")),
                };
                let entries = spec
                    .get("tools")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("allowed_tools.tools must be an array of functions"))?;
                let mut names = Vec::new();
                for t in entries {
                    let name = t
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("allowed_tools.tools entries need a function name"))?;
                    if t.get("type").is_some_and(|k| k != "function") {
                        return Err(bad("allowed_tools.tools entries are functions (type \"function\")"));
                    }
                    names.push(known(name)?);
                }
                // Catalog order, like every mask Tackle sends.
                names.sort_by_key(|n| tools.iter().position(|t| &t.name == n));
                ToolChoice::Allowed { tools: names, mode }
            }
            _ => return Err(bad("unknown tool_choice object")),
        },
    })
}

fn finish_reason(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens | StopReason::ContextExceeded => "length",
        StopReason::Refusal => "content_filter",
        _ => "stop",
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
    })
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
    check_tool_rounds(&messages)?;
    let tools = convert_tools(&chat.tools)?;
    let tool_choice = convert_tool_choice(chat.tool_choice.as_ref(), &tools)?;
    let cache_key = chat.prompt_cache_key.clone().unwrap_or_else(|| {
        let prefix = serde_json::to_string(&(&tools, &system)).unwrap_or_default();
        format!("tackle-{}", &blake3::hash(prefix.as_bytes()).to_hex()[..16])
    });
    let mut request = ModelRequest::new(chat.model.clone(), messages);
    request.system = system;
    request.tools = Arc::from(tools);
    request.tool_choice = tool_choice;
    request.max_output_tokens = chat.max_completion_tokens.or(chat.max_tokens);
    request.temperature = chat.temperature;
    request.parallel_tool_calls = chat.parallel_tool_calls;
    request.prompt_cache_key = Some(cache_key);
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

fn completion_body(id: &str, created: u64, model: &str, response: &ModelResponse) -> Value {
    let text = response.text();
    let calls: Vec<Value> = response
        .tool_uses()
        .map(|u| json!({"id": u.id, "type": "function", "function": {"name": u.name, "arguments": u.input.to_wire_string()}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::String(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(&response.stop_reason), "logprobs": null}],
        "usage": usage_json(&response.usage),
    })
}

/// Writes the `chat.completion.chunk` events of one streamed answer.
struct ChunkWriter {
    tx: mpsc::UnboundedSender<Result<Event, Infallible>>,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

impl ChunkWriter {
    fn send(&self, body: Value) -> bool {
        self.tx.send(Ok(Event::default().data(body.to_string()))).is_ok()
    }

    /// One delta; false when the client is gone.
    fn delta(&self, delta: Value, finish: Option<&str>) -> bool {
        self.send(json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        }))
    }

    /// A failure in OpenAI's error shape.
    fn error(&self, code: &str, message: &str) -> bool {
        self.send(json!({"error": {"message": message, "type": "server_error", "param": null, "code": code}}))
    }

    /// The finish reason, the usage chunk if asked for, and `[DONE]`.
    fn finish(&self, reason: &str, usage: &Usage) {
        self.finish_with(reason, usage, None);
    }

    /// [`Self::finish`] with Tackle's extension object on the chunk carrying the finish reason.
    fn finish_with(&self, reason: &str, usage: &Usage, tackle: Option<Value>) {
        let mut chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": reason, "logprobs": null}],
        });
        if let Some(tackle) = tackle {
            chunk["tackle"] = tackle;
        }
        self.send(chunk);
        if self.include_usage {
            self.send(json!({
                "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [], "usage": usage_json(usage),
            }));
        }
        let _ = self.tx.send(Ok(Event::default().data("[DONE]")));
    }
}

fn gateway_chunks(
    events: tackle_provider::EventStream,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let out = ChunkWriter { tx, id, created, model, include_usage };
        if !out.delta(json!({"role": "assistant", "content": ""}), None) {
            return;
        }
        let mut events = events;
        let mut usage = Usage::default();
        let mut stop = StopReason::EndTurn;
        let mut call_index: Vec<u32> = Vec::new();
        while let Some(event) = events.next().await {
            let delta = match event {
                Ok(StreamEvent::TextDelta { text }) => json!({"content": text}),
                Ok(StreamEvent::ToolCallStart { index, id: call_id, name }) => {
                    call_index.push(index);
                    let at = call_index.len() - 1;
                    json!({"tool_calls": [{"index": at, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]})
                }
                Ok(StreamEvent::ToolCallDelta { index, arguments }) => {
                    let at = call_index.iter().position(|i| *i == index).unwrap_or(0);
                    json!({"tool_calls": [{"index": at, "function": {"arguments": arguments}}]})
                }
                Ok(StreamEvent::Usage(u)) => {
                    usage = u;
                    continue;
                }
                Ok(StreamEvent::Stop { reason, .. }) => {
                    stop = reason;
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    // Mid-stream failures are reported in OpenAI's error shape, then the stream ends.
                    out.error("provider_error", &e.to_string());
                    return;
                }
            };
            if !out.delta(delta, None) {
                return;
            }
        }
        out.finish(finish_reason(&stop), &usage);
    })
}

/// A stream fed by a task through a channel (no extra macro crate needed).
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(mpsc::UnboundedSender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(f(tx));
    UnboundedReceiverStream::new(rx)
}

/// Runs Tackle's own agent on the conversation: earlier messages become the session's history,
/// the last user message is the turn.
async fn run_agent(state: AppState, user: String, chat: ChatRequest) -> Result<Response, OpenAiError> {
    if state.inner.shutdown.is_cancelled() {
        return Err(ApiError::shutting_down().into());
    }
    let (_, messages) = convert_messages(&chat.messages)?;
    let Some(last) = messages.last().filter(|m| m.role == Role::User) else {
        return Err(ApiError::invalid_field(
            "messages",
            "the last message must be the user's (the agent runs its own tools)",
        )
        .into());
    };
    let prompt = last.text();
    let agent = state.agent().clone();
    let workspace = state.config().workspaces.get("default").cloned().unwrap_or_default();
    // Earlier turns become the session's history as text (the client's own tool calls are not
    // Tackle's to replay).
    let history: Vec<Message> = messages[..messages.len() - 1]
        .iter()
        .filter(|m| m.role == Role::User || m.role == Role::Assistant)
        .map(|m| if m.role == Role::User { Message::user(m.text()) } else { Message::assistant(m.text()) })
        .filter(|m| !m.is_empty())
        .collect();
    let mut session = agent
        .create_session(NewSessionOptions { title: None, workspace, owner: Some(user), history })
        .await
        .map_err(ApiError::from)?;
    let guard = state.inner.turns.start(session.id())?;
    let session_id = session.id().as_str().to_owned();
    let mut input = TurnInput::new(prompt);
    // OpenAI clients cannot see approvals: by default a call needing one is denied at once and
    // the model told; with `wait`, a client that knows Tackle finds it under the session id.
    input.approval = Some(state.config().openai_approval);
    let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
    let sink = EventSink::new(move |e| {
        let _ = tx.send(e);
    });
    let task = state.inner.tasks.spawn(async move {
        let cancel = guard.cancel.clone();
        let outcome = session.run_turn(input, &sink, &cancel).await;
        drop(guard);
        outcome
    });
    let id = completion_id();
    let created = now_secs();
    let model = chat.model.clone();
    let header = [(SESSION_HEADER, session_id.clone())];
    if !chat.stream {
        let events: Vec<AgentEvent> = UnboundedReceiverStream::new(rx).collect().await;
        let mut extension = TackleExtension::new(session_id);
        events.iter().for_each(|e| extension.observe(e));
        let outcome = task
            .await
            .map_err(|e| ApiError::internal(format!("the agent stopped unexpectedly: {e}")))?
            .map_err(ApiError::from)?;
        if let Some(error) = outcome.error.filter(|_| outcome.end == tackle_protocol::TurnEnd::Failed) {
            return Err(ApiError::upstream(error).into());
        }
        let response = ModelResponse {
            content: vec![ContentBlock::text(outcome.text)],
            usage: outcome.usage,
            stop_reason: StopReason::EndTurn,
        };
        let mut body = completion_body(&id, created, &model, &response);
        body["tackle"] = extension.to_json();
        return Ok((header, Json(body)).into_response());
    }
    let include_usage = chat.include_usage();
    let chunks = async_stream(move |tx| async move {
        let out = ChunkWriter { tx, id, created, model, include_usage };
        out.delta(json!({"role": "assistant", "content": ""}), None);
        let mut events = UnboundedReceiverStream::new(rx);
        let mut usage = Usage::default();
        let mut finish = "stop";
        let mut extension = TackleExtension::new(session_id);
        while let Some(event) = events.next().await {
            extension.observe(&event);
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
        out.finish_with(finish, &usage, Some(extension.to_json()));
    });
    Ok((StatusCode::OK, header, Sse::new(chunks)).into_response())
}

/// The response header naming the session an agent-mode request ran in.
const SESSION_HEADER: &str = "x-tackle-session-id";

/// What an agent-mode answer adds for clients that know Tackle, as a `tackle` object (OpenAI
/// SDKs keep unknown fields): the session (for `GET /v1/sessions/{id}/approvals` and its
/// messages), calls refused for want of a confirmation, and approvals left pending.
struct TackleExtension {
    session_id: String,
    denied: Vec<Value>,
    pending: Vec<String>,
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
                self.denied.push(json!({"call_id": id, "tool": name, "message": envelope.message}));
            }
            _ => {}
        }
    }

    fn to_json(&self) -> Value {
        json!({"session_id": self.session_id, "denied_calls": self.denied, "pending_approvals": self.pending})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(v: Value) -> Vec<ChatMessage> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn messages_convert_with_tool_rounds() {
        let (system, out) = convert_messages(&msgs(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        ])))
        .unwrap();
        assert_eq!(system.len(), 1);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].tool_uses().count(), 2);
        assert_eq!(out[2].tool_results_iter().count(), 2, "consecutive tool messages merge");
        assert!(tackle_agent::invariants::is_valid(&out));
    }

    #[test]
    fn bad_messages_name_the_field() {
        let e = convert_messages(&msgs(json!([{"role": "robot", "content": "x"}]))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[0].role"));
        let e = convert_messages(&msgs(json!([{"role": "tool", "content": "x"}]))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[0].tool_call_id"));
        let e = convert_messages(&msgs(json!([{"role": "user", "content": [{"type": "image_url"}]}])))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[0].content[0]"));
    }

    #[test]
    fn tools_are_sorted_and_tool_choice_maps() {
        let tools: Vec<ChatTool> = serde_json::from_value(json!([
            {"type": "function", "function": {"name": "b_tool", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "a_tool"}},
        ]))
        .unwrap();
        let specs = convert_tools(&tools).unwrap();
        assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a_tool", "b_tool"]);
        assert_eq!(convert_tool_choice(Some(&json!("none")), &specs).unwrap(), ToolChoice::None);
        assert_eq!(
            convert_tool_choice(Some(&json!({"type": "function", "function": {"name": "b_tool"}})), &specs)
                .unwrap(),
            ToolChoice::Named { name: "b_tool".into() }
        );
        let allowed = json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
            {"type": "function", "function": {"name": "b_tool"}}, {"type": "function", "function": {"name": "a_tool"}}]}});
        assert_eq!(
            convert_tool_choice(Some(&allowed), &specs).unwrap(),
            ToolChoice::Allowed {
                tools: vec!["a_tool".into(), "b_tool".into()],
                mode: AllowedToolsMode::Auto
            }
        );
        let e = convert_tool_choice(Some(&json!({"type": "function", "function": {"name": "zzz"}})), &specs)
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tool_choice"));
        let dup: Vec<ChatTool> = serde_json::from_value(json!([
            {"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}])).unwrap();
        assert!(convert_tools(&dup).is_err());
    }
}
