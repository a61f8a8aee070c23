//! OpenAI-compatible `POST /v1/responses`.
//!
//! As for chat completions, there are two modes. With any model but the agent's, Tackle is a
//! gateway: the client's function tools go to the configured provider in a fixed order, the
//! model's calls come back as `function_call` items for the client to run, and its
//! `function_call_output` items are accepted on the next request. With the agent model
//! (`tackle-agent` by default) and no tools, the server runs its own agent and answers with its
//! text. Either way a response is stored (unless `store: false`) for 30 days, so a request may
//! send only what is new and name the response it continues (`previous_response_id`); an
//! agent-mode response continues its session. Only the user who made a response can continue
//! from it.
//!
//! `text.format` (`json_schema`, `json_object`) is forwarded natively by the gateway and echoed
//! in the response; in agent mode it is the turn's output schema: the agent still runs its tools,
//! and the output is one message whose text is only the validated JSON (streamed once the turn
//! has it; the steps' text is not streamed).

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Map, Value};
use tackle_protocol::{
    AgentEvent, ContentBlock, ErrorCode, Message, ModelResponse, Reasoning, ResponseAccumulator, Role,
    StopReason, StreamEvent, SystemSection, ToolInput, ToolResult, ToolUse, TurnEnd, Usage,
};
use tackle_provider::{CallOptions, ProviderError, REASONING_FORMAT};
use tackle_store::NewResponse;
use tackle_wire::responses::{
    self as wire, DeltaEvent, DoneEvent, FunctionCallItem, FunctionTool, InputItem, ItemEvent,
    MessageContent, MessageItem, MessageRole, OutputItem, Part, PartEvent, ReasoningItem, ResponseEvent,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa::ToSchema;

use super::read;
use super::shared::{
    self, AgentTurn, AnswerFormat, ClientTool, Gateway, OpenAiError, async_stream, now_secs,
};
use crate::auth::User;
use crate::json::ValidJson;
use crate::{ApiError, AppState};

/// `POST /v1/responses` body (the parts Tackle uses; others are accepted and ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ResponsesRequest {
    /// Model name: the agent model (`tackle-agent`) runs Tackle's agent; any other is forwarded.
    pub model: String,
    /// A user message as a string, or input items: `message` (roles user, assistant, system,
    /// developer; text parts), `function_call`, `function_call_output` and `reasoning`.
    #[schema(value_type = Object)]
    pub input: Value,
    /// System instructions (not carried over from `previous_response_id`, as with OpenAI).
    pub instructions: Option<String>,
    /// Function tools the client runs itself: `{"type": "function", "name", "description",
    /// "parameters", "strict"}`.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    /// `auto`, `none`, `required`, `{"type": "function", "name"}` or
    /// `{"type": "allowed_tools", "mode", "tools"}`.
    // Optional in the document too: `value_type` alone would list it as required.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tool_choice: Option<wire::ToolChoice<'static>>,
    /// Whether several tool calls may come in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Stream the documented server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Output token limit.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// A response made through this server, by the same user, to continue from.
    pub previous_response_id: Option<String>,
    /// Keep the response for `previous_response_id` (default true).
    pub store: Option<bool>,
    /// Prompt cache routing key; defaults to a hash of the tools and instructions.
    pub prompt_cache_key: Option<String>,
    /// Echoed back.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Option<Value>,
    /// `{"format": ...}`: `{"type": "text"}` (the default), `{"type": "json_object"}`, or
    /// `{"type": "json_schema", "name", "schema", "strict"}` (structured output); echoed back.
    /// Forwarded as is to a provider model; with the agent model, the agent's final answer must
    /// match the schema (tools still run before it), and the output message is only that JSON.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub text: Option<wire::TextConfig<'static>>,
}

/// Creates a response (streaming and not). See the module docs for the gateway and agent modes.
#[utoipa::path(post, path = "/v1/responses", tag = "openai", request_body = ResponsesRequest,
    responses((status = 200, description = "A response object, or the documented response.* server-sent events when stream is true"),
        (status = 400, description = "OpenAI error shape"), (status = 401, description = "OpenAI error shape"),
        (status = 404, description = "previous_response_id names no stored response of this user (OpenAI error shape)"),
        (status = 409, description = "The agent session of previous_response_id is running a turn (OpenAI error shape)"),
        (status = 502, description = "The provider failed (OpenAI error shape)")),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    User(user): User,
    body: Result<ValidJson<ResponsesRequest>, ApiError>,
) -> Result<Response, OpenAiError> {
    let ValidJson(mut request) = body.map_err(read::reword)?;
    let agent = request.tools.is_empty() && request.model == state.config().agent_model;
    // A bad schema is refused before any session is written or model called.
    let output = match AnswerFormat::of_responses(request.text.as_ref()) {
        Some(format) if agent => Some(format.output_schema()?),
        _ => None,
    };
    resolve_references(&state, &user, &mut request.input).await?;
    let input = read_input(&request.input, agent)?;
    let previous = match &request.previous_response_id {
        Some(id) => Some(state.agent().store().responses().chain(id, &user).await.map_err(|e| match e {
            tackle_store::StoreError::NotFound { .. } => ApiError {
                status: axum::http::StatusCode::NOT_FOUND,
                code: "not_found",
                ..ApiError::invalid_field(
                    "previous_response_id",
                    format!(
                        "Previous response with id '{id}' not found: only responses you made through this server \
                         in the last 30 days, without store: false, can be continued"
                    ),
                )
            },
            other => other.into(),
        })?),
        None => None,
    };
    let header = Header::new(&request, &user);
    if agent {
        return run_agent(state, header, request, input, previous, output).await;
    }
    gateway(state, header, request, input, previous).await
}

/// What a response object says besides its output: ids and the request's echoed parameters.
#[derive(Debug, Clone)]
struct Header {
    id: String,
    user: String,
    created_at: u64,
    model: String,
    previous: Option<String>,
    store: bool,
    echo: wire::Echo<'static>,
}

impl Header {
    fn new(r: &ResponsesRequest, user: &str) -> Self {
        let store = r.store.unwrap_or(true);
        // The parameters in the API's order; those Tackle does not take are their defaults.
        let echo = wire::Echo {
            instructions: Some(r.instructions.clone().map(|t| wire::Input::Text(t.into()))),
            max_output_tokens: Some(r.max_output_tokens.map(u64::from)),
            parallel_tool_calls: Some(r.parallel_tool_calls.unwrap_or(true)),
            previous_response_id: Some(r.previous_response_id.clone().map(Into::into)),
            prompt_cache_key: Some(r.prompt_cache_key.clone().map(Into::into)),
            reasoning: Some(wire::EchoReasoning { effort: Some(None), summary: Some(None) }),
            store: Some(store),
            // Widened as the echo always was (0.7 is echoed 0.699999988079071): bytes unchanged.
            temperature: Some(r.temperature.map(f64::from)),
            text: Some(wire::TextConfig {
                format: Some(
                    r.text.as_ref().and_then(|t| t.format.clone()).unwrap_or(wire::TextFormat::Text),
                ),
                verbosity: r.text.as_ref().and_then(|t| t.verbosity.clone()),
            }),
            tool_choice: Some(
                r.tool_choice.clone().unwrap_or(wire::ToolChoice::Mode(wire::ToolChoiceMode::Auto)),
            ),
            tools: Some(r.tools.clone()),
            top_p: Some(None),
            truncation: Some("disabled".into()),
            user: Some(None),
            metadata: Some(r.metadata.clone().unwrap_or_else(|| Value::Object(Map::new()))),
            other: Map::new(),
        };
        Self {
            id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
            user: user.to_owned(),
            created_at: now_secs(),
            model: r.model.clone(),
            previous: r.previous_response_id.clone(),
            store,
            echo,
        }
    }

    /// The response object.
    fn object(
        &self,
        status: &str,
        end: &End,
        output: Vec<OutputItem<'static>>,
        usage: Option<&Usage>,
    ) -> wire::Response<'static> {
        wire::Response {
            id: Some(self.id.clone().into()),
            object: Some("response".into()),
            created_at: Some(self.created_at),
            status: Some(status.to_owned().into()),
            background: Some(false),
            error: end.error(),
            incomplete_details: end.incomplete(),
            model: Some(self.model.clone().into()),
            output,
            echo: self.echo.clone(),
            usage: usage.map(wire_usage),
        }
    }

    /// Keeps the response for `previous_response_id`, and its output `items` for
    /// `item_reference`, unless the request said `store: false`.
    async fn keep(
        &self,
        state: &AppState,
        session: Option<&str>,
        messages: &[Message],
        items: &[OutputItem<'_>],
    ) -> Result<(), ApiError> {
        if !self.store {
            return Ok(());
        }
        let items = items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::internal(format!("an output item could not be kept: {e}")))?;
        let items = &items[..];
        let response = NewResponse {
            id: &self.id,
            owner: &self.user,
            previous_id: self.previous.as_deref(),
            session_id: session,
            messages,
            items,
        };
        state.agent().store().responses().put(response).await.map_err(|e| {
            tracing::error!(error = %e, response = %self.id, "cannot store a response");
            ApiError::from(e)
        })
    }
}

/// How a response ended.
#[derive(Debug, Clone, PartialEq)]
enum End {
    Completed,
    /// Cut short: `max_output_tokens`, `content_filter`, `max_steps`.
    Incomplete(&'static str),
    /// Failed, with an error code and message.
    Failed(&'static str, String),
}

impl End {
    fn from_stop(stop: &StopReason) -> Self {
        match stop {
            StopReason::MaxTokens => Self::Incomplete("max_output_tokens"),
            StopReason::Refusal => Self::Incomplete("content_filter"),
            StopReason::Other(reason) if reason.starts_with("incomplete") => Self::Incomplete("incomplete"),
            _ => Self::Completed,
        }
    }

    fn from_provider(e: &ProviderError) -> Self {
        Self::from_code(tackle_agent::provider_code(e), e.to_string())
    }

    /// A failure in the Responses API's own error codes (`response.error.code`).
    fn from_code(code: ErrorCode, message: String) -> Self {
        let code = match code {
            ErrorCode::RateLimited => "rate_limit_exceeded",
            ErrorCode::ProviderRejected | ErrorCode::ContextLengthExceeded | ErrorCode::PromptBlocked => {
                "invalid_prompt"
            }
            _ => "server_error",
        };
        Self::Failed(code, message)
    }

    fn status(&self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Incomplete(_) => "incomplete",
            Self::Failed(..) => "failed",
        }
    }

    fn item_status(&self) -> &'static str {
        if matches!(self, Self::Completed) { "completed" } else { "incomplete" }
    }

    fn error(&self) -> Option<wire::ResponseError<'static>> {
        match self {
            Self::Failed(code, message) => Some(wire::ResponseError {
                code: Some((*code).into()),
                message: Some(message.clone().into()),
                kind: None,
            }),
            _ => None,
        }
    }

    fn incomplete(&self) -> Option<wire::IncompleteDetails<'static>> {
        match self {
            Self::Incomplete(reason) => Some(wire::IncompleteDetails { reason: Some((*reason).into()) }),
            _ => None,
        }
    }

    /// The terminal event, carrying `response`.
    fn event(&self, response: wire::Response<'static>) -> wire::StreamEvent<'static> {
        let event = ResponseEvent { response, sequence_number: 0 };
        match self {
            Self::Completed => wire::StreamEvent::Completed(event),
            Self::Incomplete(_) => wire::StreamEvent::Incomplete(event),
            Self::Failed(..) => wire::StreamEvent::Failed(event),
        }
    }
}

fn wire_usage(u: &Usage) -> wire::ResponseUsage {
    wire::ResponseUsage {
        input_tokens: u.input_tokens,
        input_tokens_details: Some(wire::InputTokensDetails {
            cached_tokens: u.cache_read_tokens,
            cache_write_tokens: Some(u.cache_write_tokens),
        }),
        output_tokens: u.output_tokens,
        output_tokens_details: Some(wire::OutputTokensDetails { reasoning_tokens: u.reasoning_tokens }),
        total_tokens: u.input_tokens + u.output_tokens,
    }
}

/// The request's input as Tackle's conversation.
#[derive(Debug, Default)]
struct Input {
    /// `system` and `developer` messages.
    system: Vec<SystemSection>,
    /// The conversation the input adds.
    messages: Vec<Message>,
    /// For each message, the input item it starts at (for errors).
    starts: Vec<usize>,
    /// The call id of each `function_call_output` item, and the item's index (for errors).
    calls_answered: Vec<(String, usize)>,
}

impl Input {
    /// The message items of `role` go into: the last message if it has that role, else a new one.
    fn message_for(&mut self, role: Role, item: usize) -> &mut Message {
        if self.messages.last().is_none_or(|m| m.role != role) {
            self.messages.push(Message { role, content: Vec::new() });
            self.starts.push(item);
        }
        let last = self.messages.len() - 1;
        &mut self.messages[last]
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text of a message's (or a call output's) content: a string or text parts.
fn content_text(content: &MessageContent<'_>, at: &str) -> Result<String, ApiError> {
    let parts = match content {
        MessageContent::Text(text) => return Ok(text.to_string()),
        MessageContent::Parts(parts) => parts,
    };
    let mut out = String::new();
    for (k, part) in parts.iter().enumerate() {
        let text = match part {
            Part::InputText { text } | Part::OutputText { text, .. } => Some(text.as_ref()),
            Part::Refusal { refusal } => Some(refusal.as_ref()),
            // Chat Completions' name for a text part, which some clients send here too.
            Part::Other(v) if str_at(v, "type") == Some("text") => str_at(v, "text"),
            Part::SummaryText { .. } | Part::Other(_) => None,
        };
        let text = text.ok_or_else(|| {
            ApiError::invalid_field(format!("{at}.content[{k}]"), "only text parts are supported")
        })?;
        out.push_str(text);
    }
    Ok(out)
}

/// Reads one input item: its kind decides the tackle-wire type it is read as, and a field that
/// does not fit is named (`input[2].call_id`). Kinds the route does not read stay JSON.
fn read_item(item: &Value, at: &str) -> Result<InputItem<'static>, ApiError> {
    Ok(match InputItem::kind_of(item) {
        Some("message") => InputItem::Message(read::read(item.clone(), at)?),
        Some("function_call") => InputItem::FunctionCall(read::read(item.clone(), at)?),
        Some("function_call_output") => InputItem::FunctionCallOutput(read::read(item.clone(), at)?),
        _ => InputItem::Other(std::borrow::Cow::Owned(item.clone())),
    })
}

/// Replaces each `{"type": "item_reference", "id"}` of `input` by the output item it names: an
/// item of a response this user stored (messages, function calls and reasoning are resolvable),
/// as OpenAI does while `store` is true. Any other id is a 404, other users' included.
async fn resolve_references(state: &AppState, user: &str, input: &mut Value) -> Result<(), ApiError> {
    let Value::Array(items) = input else { return Ok(()) };
    for (i, item) in items.iter_mut().enumerate() {
        if str_at(item, "type") != Some("item_reference") {
            continue;
        }
        let Some(id) = str_at(item, "id").map(str::to_owned) else {
            return Err(ApiError::invalid_field(format!("input[{i}].id"), "id is required"));
        };
        *item = state.agent().store().responses().item(&id, user).await.map_err(|e| match e {
            tackle_store::StoreError::NotFound { .. } => ApiError {
                status: axum::http::StatusCode::NOT_FOUND,
                code: "not_found",
                ..ApiError::invalid_field(
                    format!("input[{i}].id"),
                    format!(
                        "Item with id '{id}' not found: only output items of responses you made through this \
                         server in the last 30 days, without store: false, can be referenced"
                    ),
                )
            },
            other => other.into(),
        })?;
    }
    Ok(())
}

/// Reads `input`. In agent mode only messages are accepted: the agent runs its own tools.
fn read_input(input: &Value, agent: bool) -> Result<Input, ApiError> {
    let mut out = Input::default();
    let items = match input {
        Value::String(s) if s.trim().is_empty() => {
            return Err(ApiError::invalid_field("input", "input is empty; send the user's message"));
        }
        Value::String(s) => {
            out.messages.push(Message::user(s.clone()));
            out.starts.push(0);
            return Ok(out);
        }
        Value::Array(items) => items,
        _ => return Err(ApiError::invalid_field("input", "input must be a string or an array of items")),
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let kind = InputItem::kind_of(item).unwrap_or("");
        if agent && kind != "message" {
            return Err(ApiError::invalid_field(
                format!("{at}.type"),
                "the agent runs its own tools: send message items only (or use a provider model to run tools yourself)",
            ));
        }
        match read_item(item, &at)? {
            InputItem::Message(m) => {
                let text = content_text(&m.content, &at)?;
                match m.role {
                    MessageRole::System | MessageRole::Developer => {
                        out.system.push(SystemSection::cacheable("client", text))
                    }
                    MessageRole::User => {
                        out.messages.push(Message::user(text));
                        out.starts.push(i);
                    }
                    MessageRole::Assistant if !text.is_empty() => {
                        out.message_for(Role::Assistant, i).content.push(ContentBlock::text(text))
                    }
                    MessageRole::Assistant => {}
                }
            }
            InputItem::FunctionCall(c) => {
                let call = ToolUse {
                    id: c.call_id.as_ref().into(),
                    name: c.name.into_owned(),
                    input: ToolInput::parse(&c.arguments),
                };
                out.message_for(Role::Assistant, i).content.push(ContentBlock::ToolUse(call));
            }
            InputItem::FunctionCallOutput(o) => {
                let output = content_text(&o.output, &at)?;
                out.calls_answered.push((o.call_id.to_string(), i));
                out.message_for(Role::Tool, i)
                    .content
                    .push(ContentBlock::ToolResult(ToolResult::ok(o.call_id.into_owned(), output)));
            }
            InputItem::Other(v) if kind == "reasoning" => {
                let item = ReasoningItem(v.into_owned());
                let reasoning = Reasoning {
                    format: REASONING_FORMAT.into(),
                    text: item.summary_texts().collect::<Vec<_>>().join("\n\n"),
                    data: item.0,
                };
                out.message_for(Role::Assistant, i).content.push(ContentBlock::Reasoning(reasoning));
            }
            InputItem::Other(_) if kind.is_empty() => {
                return Err(ApiError {
                    code: "missing_required_parameter",
                    ..ApiError::invalid_field(
                        format!("{at}.type"),
                        format!("Missing required parameter: '{at}.type'."),
                    )
                });
            }
            InputItem::Other(_) => {
                return Err(ApiError::invalid_field(
                    format!("{at}.type"),
                    format!(
                        "{kind:?} items are not supported; send message, function_call, function_call_output and reasoning items"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// Checks that every call in `messages` is answered right after it and every output answers a
/// call. `origin(i)` names where message `i` came from, for errors.
fn check_calls(messages: &[Message], origin: impl Fn(usize) -> String) -> Result<(), ApiError> {
    let mut pending: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Tool => {
                for r in m.tool_results_iter() {
                    let Some(pos) = pending.iter().position(|p| *p == r.tool_use_id) else {
                        return Err(ApiError::invalid_field(
                            origin(i),
                            format!(
                                "no function_call with call_id {:?} comes before this output",
                                r.tool_use_id
                            ),
                        ));
                    };
                    pending.remove(pos);
                }
            }
            _ => {
                if let Some(open) = pending.first() {
                    return Err(ApiError::invalid_field(
                        origin(i),
                        format!(
                            "function_call {open:?} has no function_call_output before this item; send its output right after the call"
                        ),
                    ));
                }
                pending = m.tool_uses().map(|u| u.id.as_str()).collect();
            }
        }
    }
    match pending.first() {
        Some(open) => Err(ApiError::invalid_field(
            "input",
            format!("function_call {open:?} has no function_call_output; send it in this request"),
        )),
        None => Ok(()),
    }
}

/// The output items of a model response, in the order the model produced them. Reasoning from
/// the Responses API goes out verbatim (clients send it back as is); other providers' reasoning
/// as a summary the client can show.
fn output_items(content: &[ContentBlock], status: &str) -> Vec<OutputItem<'static>> {
    let mut out = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<OutputItem<'static>>| {
        if !text.is_empty() {
            out.push(message_item(&new_id("msg"), &std::mem::take(text), status));
        }
    };
    for block in content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolUse(u) => {
                flush(&mut text, &mut out);
                out.push(call_item(&new_id("fc"), u, &u.input.to_wire_string(), status));
            }
            ContentBlock::Reasoning(r) => {
                flush(&mut text, &mut out);
                out.extend(reasoning_item(r));
            }
            ContentBlock::ToolResult(_) => {}
        }
    }
    flush(&mut text, &mut out);
    out
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// An assistant message item of one text part.
fn message_item(id: &str, text: &str, status: &str) -> OutputItem<'static> {
    let part = Part::output_text(text.to_owned());
    OutputItem::Message(MessageItem::assistant(id.to_owned(), vec![part], status.to_owned()))
}

fn call_item(id: &str, call: &ToolUse, arguments: &str, status: &str) -> OutputItem<'static> {
    OutputItem::FunctionCall(FunctionCallItem {
        id: Some(id.to_owned().into()),
        call_id: call.id.to_string().into(),
        name: call.name.clone().into(),
        namespace: None,
        arguments: arguments.to_owned().into(),
        status: Some(status.to_owned().into()),
    })
}

/// Reasoning from the Responses API as it came (key order included); other providers'
/// reasoning as a summary.
fn reasoning_item(r: &Reasoning) -> Option<OutputItem<'static>> {
    if r.format == REASONING_FORMAT && r.data.is_object() {
        return Some(OutputItem::Reasoning(ReasoningItem(r.data.clone())));
    }
    (!r.text.is_empty()).then(|| OutputItem::Reasoning(ReasoningItem::new(&new_id("rs"), &[&r.text], None)))
}

/// Forwards the request to the provider and answers in the Responses shape.
async fn gateway(
    state: AppState,
    header: Header,
    request: ResponsesRequest,
    input: Input,
    previous: Option<tackle_store::ResponseChain>,
) -> Result<Response, OpenAiError> {
    let stored = previous.map(|p| p.messages).unwrap_or_default();
    let mut messages = stored.clone();
    messages.extend(input.messages.iter().cloned());
    let (n_stored, starts) = (stored.len(), input.starts.clone());
    check_calls(&messages, |i| match i.checked_sub(n_stored) {
        Some(k) => format!("input[{}]", starts[k]),
        None => "previous_response_id".into(),
    })?;
    if !messages.iter().any(|m| m.role == Role::User) {
        return Err(ApiError::invalid_field("input", "send at least one user message").into());
    }
    // Function tools read typed (a field that does not fit is named); other kinds are refused
    // by `function_tools`, naming their `type`.
    let functions = request
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| match str_at(t, "type") {
            Some("function") => {
                read::read::<FunctionTool<'static>>(t.clone(), &format!("tools[{i}]")).map(Some)
            }
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tools: Vec<ClientTool<'_>> = request
        .tools
        .iter()
        .zip(&functions)
        .map(|(t, f)| match f {
            Some(f) => ClientTool {
                kind: "function",
                name: &f.name,
                description: f.description.as_deref().unwrap_or(""),
                parameters: f.parameters.as_deref(),
            },
            None => ClientTool {
                kind: str_at(t, "type").unwrap_or(""),
                name: "",
                description: "",
                parameters: None,
            },
        })
        .collect();
    let tools = shared::function_tools(&tools, "name")?;
    let tool_choice = shared::responses_tool_choice(request.tool_choice.as_ref(), &tools)?;
    // `codex/<model>` runs on Codex through the bridge, as on /v1/chat/completions.
    let codex = super::codex_bridge::codex_model(&request.model).map(str::to_owned);
    if codex.is_none() {
        shared::check_gateway_model(&state, &request.model)?;
    }
    let output = match AnswerFormat::of_responses(request.text.as_ref()) {
        Some(_) if codex.is_some() => {
            return Err(ApiError::invalid_field(
                "text.format",
                "models codex/<model> answer in free text: send no text.format, or use the agent or a provider model",
            )
            .into());
        }
        Some(format) => Some(format.gateway(&state)?),
        None => None,
    };
    let mut system: Vec<SystemSection> =
        request.instructions.iter().map(|t| SystemSection::cacheable("instructions", t.clone())).collect();
    system.extend(input.system);
    let model_request = Gateway {
        model: request.model.clone(),
        system,
        messages,
        tools,
        tool_choice,
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature,
        parallel_tool_calls: request.parallel_tool_calls,
        prompt_cache_key: request.prompt_cache_key.clone(),
        output,
    }
    .into_request();
    let source = Upstream {
        state: state.clone(),
        codex,
        owner: header.user.clone(),
        calls_answered: input.calls_answered,
    };
    let mut added = input.messages;
    if !request.stream {
        let response = source.complete(&model_request).await?;
        let end = End::from_stop(&response.stop_reason);
        let output = output_items(&response.content, end.item_status());
        added.push(response.clone().into_message());
        header.keep(&state, None, &added, &output).await?;
        return Ok(Json(header.object(end.status(), &end, output, Some(&response.usage))).into_response());
    }
    let mut events = source.stream(&model_request).await?;
    let stream = async_stream(move |tx| async move {
        let mut out = EventWriter::new(tx, header.clone());
        let mut acc = ResponseAccumulator::default();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => return out.end(&End::from_provider(&e), None),
            };
            acc.push(&event);
            match event {
                StreamEvent::TextDelta { text } => out.text(&text),
                StreamEvent::ToolCallStart { index, id, name } => out.call_start(index, id, name),
                StreamEvent::ToolCallDelta { index, arguments } => out.call_delta(index, &arguments),
                StreamEvent::ToolCallEnd { index, call } => out.call_end(index, call),
                StreamEvent::Reasoning(r) => out.reasoning(&r),
                _ => {}
            }
            if out.gone {
                return; // the client left; nothing was stored
            }
        }
        let response: ModelResponse = acc.finish();
        let (end, usage) = (End::from_stop(&response.stop_reason), response.usage);
        added.push(response.into_message());
        out.settle(end.item_status());
        let end = match header.keep(&state, None, &added, &out.output).await {
            Ok(()) => end,
            Err(e) => End::Failed("server_error", format!("the response could not be stored: {}", e.message)),
        };
        out.end(&end, Some(&usage));
    });
    Ok(Sse::new(stream).into_response())
}

/// Where a gateway request goes: the server's provider, or Codex through the bridge.
struct Upstream {
    state: AppState,
    /// The Codex model of a `codex/<model>` request.
    codex: Option<String>,
    owner: String,
    /// The `function_call_output` items of the request: call id and item index.
    calls_answered: Vec<(String, usize)>,
}

impl Upstream {
    async fn stream(
        &self,
        request: &tackle_protocol::ModelRequest,
    ) -> Result<tackle_provider::EventStream, OpenAiError> {
        let Some(model) = &self.codex else {
            let provider = self.state.agent().provider().clone();
            return provider
                .stream(request, &CallOptions::default())
                .await
                .map_err(|e| ApiError::provider(&e).into());
        };
        let instructions: Vec<&str> = request.system.iter().map(|s| s.text.as_str()).collect();
        let bridged = tackle_codex::BridgeRequest {
            owner: self.owner.clone(),
            model: model.clone(),
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            messages: request.messages.as_ref().clone(),
            tools: request.tools.to_vec(),
            tool_choice: request.tool_choice.clone(),
        };
        // A call id the client sent: the `function_call_output` item that carries it.
        let at = |id: &str| {
            self.calls_answered
                .iter()
                .find(|(call, _)| !id.is_empty() && call == id)
                .map(|(_, i)| format!("input[{i}].call_id"))
                .unwrap_or_else(|| "input".into())
        };
        let requested = format!("{}{model}", super::codex_bridge::MODEL_PREFIX);
        super::codex_bridge::turn(&self.state, bridged, &requested, at).await
    }

    async fn complete(&self, request: &tackle_protocol::ModelRequest) -> Result<ModelResponse, OpenAiError> {
        let mut events = self.stream(request).await?;
        let mut acc = ResponseAccumulator::default();
        while let Some(event) = events.next().await {
            acc.push(&event.map_err(|e| ApiError::provider(&e))?);
        }
        Ok(acc.finish())
    }
}

/// Runs Tackle's own agent: the last user message is the turn; earlier messages are the history
/// of a new session, or the turn continues the session of `previous_response_id`. With `output`,
/// the output is one message of the turn's validated JSON.
async fn run_agent(
    state: AppState,
    header: Header,
    request: ResponsesRequest,
    input: Input,
    previous: Option<tackle_store::ResponseChain>,
    output: Option<tackle_agent::OutputSchema>,
) -> Result<Response, OpenAiError> {
    let Some(last) = input.messages.last().filter(|m| m.role == Role::User) else {
        return Err(ApiError::invalid_field("input", "the last item must be the user's message").into());
    };
    let prompt = last.text();
    let earlier = &input.messages[..input.messages.len() - 1];
    let session = match previous {
        Some(chain) if chain.session_id.is_some() => {
            if !earlier.is_empty() {
                return Err(ApiError::invalid_field(
                    "input",
                    "previous_response_id continues an agent session: send only the next user message",
                )
                .into());
            }
            let id = chain.session_id.unwrap_or_default();
            let record = state.owned_session(&id, &header.user).await?;
            state.agent_for(&record.model).open_session(&id).await.map_err(ApiError::from)?
        }
        other => {
            let mut history = shared::text_history(&other.map(|c| c.messages).unwrap_or_default());
            history.extend(shared::text_history(earlier));
            shared::new_agent_session(&state, &header.user, history).await?
        }
    };
    let session_id = session.id().to_owned();
    let structured = output.is_some();
    let turn = AgentTurn::start(&state, session, prompt.clone(), output).await?;
    if !request.stream {
        let (outcome, events) = turn.finish().await?;
        let end = match outcome.end {
            TurnEnd::MaxSteps => End::Incomplete("max_steps"),
            TurnEnd::Failed => match last_stop(&events).map(End::from_stop) {
                // The answer was cut off: what was said is returned, marked incomplete.
                Some(incomplete @ End::Incomplete(_)) => incomplete,
                _ => match &outcome.error {
                    Some(failure) => End::from_code(failure.code(), failure.to_string()),
                    None => End::Failed("server_error", "the turn failed".to_owned()),
                },
            },
            _ => End::Completed,
        };
        // One message item per step that said something, as streaming sends them.
        let mut texts = shared::StepTexts::default();
        for e in &events {
            texts.observe(e);
        }
        let (output, answer) = if structured {
            // Only the validated JSON, as one message (none when the turn ended without it).
            let answer = shared::json_answer(&outcome);
            let item = (!answer.is_empty()).then(|| message_item(&new_id("msg"), &answer, end.item_status()));
            (item.into_iter().collect(), answer)
        } else {
            let items =
                texts.steps().iter().map(|t| message_item(&new_id("msg"), t, end.item_status())).collect();
            (items, texts.joined())
        };
        let output: Vec<OutputItem<'static>> = output;
        let added = [Message::user(prompt), Message::assistant(answer)];
        header.keep(&state, Some(&session_id), &added, &output).await?;
        return Ok(Json(header.object(end.status(), &end, output, Some(&outcome.usage))).into_response());
    }
    let heartbeat = state.heartbeat();
    let stream = async_stream(move |tx| async move {
        let mut out = EventWriter::new(tx, header.clone());
        let mut events = UnboundedReceiverStream::new(turn.events);
        let mut usage = Usage::default();
        let mut end = End::Completed;
        let mut texts = shared::StepTexts::default();
        let mut stop = None;
        while let Some(event) = events.next().await {
            texts.observe(&event);
            if let AgentEvent::StepFinished { stop_reason, .. } = &event {
                stop = Some(stop_reason.clone());
            }
            match event {
                // Only the answer is streamed, one message item per step; tool activity stays
                // inside the agent. A structured answer is streamed once validated, below.
                AgentEvent::TextDelta { text } if !structured => out.text(&text),
                AgentEvent::StepStarted { .. } if !structured => out.boundary(),
                AgentEvent::TurnFinished { usage: u, reason, .. } => {
                    usage = u;
                    if reason == TurnEnd::MaxSteps {
                        end = End::Incomplete("max_steps");
                    }
                }
                AgentEvent::Error { message, code } => end = End::from_code(code, message),
                _ => {}
            }
        }
        if let (End::Failed(..), Some(End::Incomplete(reason))) = (&end, stop.as_ref().map(End::from_stop)) {
            // The answer was cut off: what was said is kept, marked incomplete.
            end = End::Incomplete(reason);
        }
        let mut answer = texts.joined();
        match turn.task.await {
            Ok(Ok(outcome)) if structured => answer = shared::json_answer(&outcome),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => end = End::Failed("server_error", e.to_string()),
            Err(e) => end = End::Failed("server_error", format!("the agent stopped unexpectedly: {e}")),
        }
        if !matches!(end, End::Failed(..)) {
            if structured && !answer.is_empty() {
                out.text(&answer);
            }
            let added = [Message::user(prompt), Message::assistant(answer)];
            out.settle(end.item_status());
            if let Err(e) = header.keep(&state, Some(&session_id), &added, &out.output).await {
                end = End::Failed("server_error", format!("the response could not be stored: {}", e.message));
            }
        }
        out.end(&end, Some(&usage));
    });
    Ok(Sse::new(stream).keep_alive(heartbeat).into_response())
}

/// Why the last step of a turn stopped.
fn last_stop(events: &[AgentEvent]) -> Option<&StopReason> {
    events.iter().rev().find_map(|e| match e {
        AgentEvent::StepFinished { stop_reason, .. } => Some(stop_reason),
        _ => None,
    })
}

/// An output item started while another one streams: buffered until that one is done.
#[derive(Debug)]
enum Pending {
    Text(String),
    Call { index: u32, call_id: String, name: String, args: String, done: Option<ToolUse> },
    Done(OutputItem<'static>),
}

/// The item streaming now.
#[derive(Debug)]
enum Open {
    Message { id: String, text: String },
    Call { index: u32, id: String, call_id: String, name: String, args: String },
}

/// Writes one response as the documented server-sent events: `response.created`,
/// `response.in_progress`, then each output item `added` -> its parts and deltas -> `done`, one
/// item at a time in output order (an item that starts while another streams waits, buffered),
/// then `response.completed`, `.incomplete` or `.failed`. Every event has a `sequence_number`.
struct EventWriter {
    tx: UnboundedSender<Result<Event, Infallible>>,
    header: Header,
    seq: u64,
    output: Vec<OutputItem<'static>>,
    open: Option<Open>,
    queue: VecDeque<Pending>,
    /// The client left.
    gone: bool,
}

impl EventWriter {
    fn new(tx: UnboundedSender<Result<Event, Infallible>>, header: Header) -> Self {
        let mut w =
            Self { tx, header, seq: 0, output: Vec::new(), open: None, queue: VecDeque::new(), gone: false };
        let created = w.header.object("in_progress", &End::Completed, Vec::new(), None);
        w.emit(wire::StreamEvent::Created(ResponseEvent { response: created, sequence_number: 0 }));
        let in_progress = w.header.object("in_progress", &End::Completed, Vec::new(), None);
        w.emit(wire::StreamEvent::InProgress(ResponseEvent { response: in_progress, sequence_number: 0 }));
        w
    }

    /// Sends `event`, numbered.
    fn emit(&mut self, mut event: wire::StreamEvent<'_>) {
        event.set_sequence_number(self.seq);
        self.seq += 1;
        let (Some(kind), Ok(data)) = (event.kind(), serde_json::to_string(&event)) else {
            // Only `Unknown` has no type, and these types always serialize.
            tracing::error!(?event, "a response event could not be written");
            return;
        };
        if self.tx.send(Ok(Event::default().event(kind).data(data))).is_err() {
            self.gone = true;
        }
    }

    fn index(&self) -> u32 {
        u32::try_from(self.output.len()).unwrap_or(u32::MAX)
    }

    fn item_event(&self, item: OutputItem<'static>) -> ItemEvent<'static> {
        ItemEvent { output_index: Some(self.index()), item, sequence_number: 0 }
    }

    /// The first message part (`output_text`) of item `id`.
    fn part_event<'a>(&self, id: &'a str, text: &'a str) -> PartEvent<'a> {
        PartEvent {
            item_id: Some(id.into()),
            output_index: Some(self.index()),
            content_index: Some(0),
            summary_index: None,
            part: Part::output_text(text),
            sequence_number: 0,
        }
    }

    fn open_message(&mut self) {
        let id = new_id("msg");
        let item = OutputItem::Message(MessageItem::assistant(id.clone(), Vec::new(), "in_progress"));
        self.emit(wire::StreamEvent::OutputItemAdded(self.item_event(item)));
        self.emit(wire::StreamEvent::ContentPartAdded(self.part_event(&id, "")));
        self.open = Some(Open::Message { id, text: String::new() });
    }

    fn message_delta(&mut self, delta: &str) {
        if let Some(Open::Message { id, text }) = &mut self.open {
            text.push_str(delta);
            let id = id.clone();
            self.emit(wire::StreamEvent::OutputTextDelta(DeltaEvent {
                item_id: Some(id.into()),
                output_index: Some(self.index()),
                content_index: Some(0),
                delta: delta.into(),
                logprobs: Some(Vec::new()),
                ..DeltaEvent::default()
            }));
        }
    }

    fn open_call(&mut self, index: u32, call_id: String, name: String) {
        let id = new_id("fc");
        let item = OutputItem::FunctionCall(FunctionCallItem {
            id: Some(id.clone().into()),
            call_id: call_id.clone().into(),
            name: name.clone().into(),
            namespace: None,
            arguments: "".into(),
            status: Some("in_progress".into()),
        });
        self.emit(wire::StreamEvent::OutputItemAdded(self.item_event(item)));
        self.open = Some(Open::Call { index, id, call_id, name, args: String::new() });
    }

    fn open_call_delta(&mut self, delta: &str) {
        if let Some(Open::Call { id, args, .. }) = &mut self.open {
            args.push_str(delta);
            let id = id.clone();
            self.emit(wire::StreamEvent::FunctionCallArgumentsDelta(DeltaEvent {
                item_id: Some(id.into()),
                output_index: Some(self.index()),
                delta: delta.into(),
                ..DeltaEvent::default()
            }));
        }
    }

    /// Finishes the open item; a call takes its final arguments from `done` when given.
    fn close(&mut self, done: Option<&ToolUse>, status: &str) {
        match self.open.take() {
            Some(Open::Message { id, text }) => {
                self.emit(wire::StreamEvent::OutputTextDone(DoneEvent {
                    item_id: Some(id.as_str().into()),
                    output_index: Some(self.index()),
                    content_index: Some(0),
                    text: Some(text.as_str().into()),
                    logprobs: Some(Vec::new()),
                    ..DoneEvent::default()
                }));
                self.emit(wire::StreamEvent::ContentPartDone(self.part_event(&id, &text)));
                self.finish_item(message_item(&id, &text, status));
            }
            Some(Open::Call { id, call_id, name, args, .. }) => {
                let arguments = match done {
                    Some(call) if args.is_empty() => call.input.to_wire_string(),
                    _ => args,
                };
                self.emit(wire::StreamEvent::FunctionCallArgumentsDone(DoneEvent {
                    item_id: Some(id.as_str().into()),
                    output_index: Some(self.index()),
                    name: Some(name.as_str().into()),
                    arguments: Some(arguments.as_str().into()),
                    ..DoneEvent::default()
                }));
                let call = ToolUse { id: call_id.into(), name, input: ToolInput::parse(&arguments) };
                self.finish_item(call_item(&id, &call, &arguments, status));
            }
            None => {}
        }
    }

    fn finish_item(&mut self, item: OutputItem<'static>) {
        self.emit(wire::StreamEvent::OutputItemDone(self.item_event(item.clone())));
        self.output.push(item);
    }

    /// Streams what waited, until an item is left open.
    fn advance(&mut self) {
        while self.open.is_none() {
            let Some(next) = self.queue.pop_front() else { return };
            match next {
                Pending::Text(text) => {
                    self.open_message();
                    self.message_delta(&text);
                    if !self.queue.is_empty() {
                        self.close(None, "completed");
                    }
                }
                Pending::Call { index, call_id, name, args, done } => {
                    self.open_call(index, call_id, name);
                    if !args.is_empty() {
                        self.open_call_delta(&args);
                    }
                    if let Some(call) = done {
                        self.close(Some(&call), "completed");
                    }
                }
                Pending::Done(item) => {
                    self.emit(wire::StreamEvent::OutputItemAdded(self.item_event(item.clone())));
                    self.finish_item(item);
                }
            }
        }
    }

    fn text(&mut self, delta: &str) {
        match &self.open {
            Some(Open::Message { .. }) => self.message_delta(delta),
            None => {
                self.open_message();
                self.message_delta(delta);
            }
            Some(Open::Call { .. }) => match self.queue.back_mut() {
                Some(Pending::Text(t)) => t.push_str(delta),
                _ => self.queue.push_back(Pending::Text(delta.to_owned())),
            },
        }
    }

    fn call_start(&mut self, index: u32, call_id: String, name: String) {
        match &self.open {
            Some(Open::Call { .. }) => {
                self.queue.push_back(Pending::Call { index, call_id, name, args: String::new(), done: None })
            }
            _ => {
                self.close(None, "completed");
                self.open_call(index, call_id, name);
            }
        }
    }

    fn call_delta(&mut self, index: u32, delta: &str) {
        if matches!(&self.open, Some(Open::Call { index: i, .. }) if *i == index) {
            return self.open_call_delta(delta);
        }
        for p in &mut self.queue {
            if let Pending::Call { index: i, args, .. } = p
                && *i == index
            {
                args.push_str(delta);
            }
        }
    }

    fn call_end(&mut self, index: u32, call: ToolUse) {
        if matches!(&self.open, Some(Open::Call { index: i, .. }) if *i == index) {
            self.close(Some(&call), "completed");
            return self.advance();
        }
        for p in &mut self.queue {
            if let Pending::Call { index: i, done, .. } = p
                && *i == index
            {
                *done = Some(call);
                return;
            }
        }
        // A call that never started: stream it whole.
        self.queue.push_back(Pending::Call {
            index,
            call_id: call.id.to_string(),
            name: call.name.clone(),
            args: call.input.to_wire_string(),
            done: Some(call),
        });
        if !matches!(&self.open, Some(Open::Call { .. })) {
            self.close(None, "completed");
            self.advance();
        }
    }

    fn reasoning(&mut self, r: &Reasoning) {
        let Some(item) = reasoning_item(r) else { return };
        self.queue.push_back(Pending::Done(item));
        if !matches!(&self.open, Some(Open::Call { .. })) {
            self.close(None, "completed");
            self.advance();
        }
    }

    /// A step of the agent ended: its text is one message.
    fn boundary(&mut self) {
        if matches!(&self.open, Some(Open::Message { .. })) {
            self.close(None, "completed");
        }
    }

    /// Finishes every item, with item status `status` for those still open.
    fn settle(&mut self, status: &str) {
        loop {
            self.close(None, status);
            if self.queue.is_empty() {
                break;
            }
            self.advance();
        }
    }

    /// Finishes every item and sends the terminal event.
    fn end(mut self, end: &End, usage: Option<&Usage>) {
        self.settle(end.item_status());
        let object = self.header.object(end.status(), end, std::mem::take(&mut self.output), usage);
        self.emit(end.event(object));
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
