//! What the OpenAI-compatible endpoints (`/v1/chat/completions`, `/v1/responses`) share: the
//! OpenAI error shape, the client's function tools and tool choice as Tackle's, the answer format
//! a client asks for (structured output), the gateway request, and turns of Tackle's own agent.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::{Value, json};
use tackle_agent::{
    AgentError, NewSessionOptions, OutputSchema, OutputSchemaError, Session, TurnInput, TurnOutcome,
};
use tackle_protocol::{
    AgentEvent, AllowedToolsMode, Message, ModelRequest, OutputFormat, Role, SystemSection, ToolChoice,
    ToolSpec,
};
use tackle_tools::EventSink;
use tackle_wire::chat::{self, ErrorBody, ErrorDetail, JsonSchemaFormat, ResponseFormat, ToolChoiceMode};
use tackle_wire::responses::{self, TextConfig, TextFormat};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument as _;

use crate::{ApiError, AppState};

/// The OpenAI-compatible routes: every error they answer is an [`OpenAiError`].
pub(crate) const OPENAI_ROUTES: [&str; 3] = ["/v1/chat/completions", "/v1/responses", "/v1/models"];

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
            401 => "authentication_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "server_error",
        };
        let retry_after = e.retry_after_header();
        let body = ErrorBody {
            error: ErrorDetail {
                message: e.message.into(),
                kind: kind.into(),
                param: e.field.map(Into::into),
                code: Some(Value::from(e.code)),
            },
        };
        let mut response = (e.status, Json(body)).into_response();
        if let Some(value) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}

/// A function tool a client sends, whatever the endpoint's shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientTool<'a> {
    /// The `type` the client gave it.
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) description: &'a str,
    pub(crate) parameters: Option<&'a Value>,
}

/// The client's function tools as tool definitions in name order: a client that sends the same
/// tools in another order still hits the same prompt cache. `name_path` is where a tool's name
/// is in the endpoint's shape (`function.name`, `name`), for errors.
pub(crate) fn function_tools(tools: &[ClientTool<'_>], name_path: &str) -> Result<Vec<ToolSpec>, ApiError> {
    let mut specs = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        if t.kind != "function" {
            return Err(ApiError::invalid_field(
                format!("tools[{i}].type"),
                format!("only function tools are supported, not {:?}", t.kind),
            ));
        }
        if !tackle_protocol::is_valid_tool_name(t.name) {
            return Err(ApiError::invalid_field(
                format!("tools[{i}].{name_path}"),
                "tool names must match ^[a-zA-Z0-9_-]{1,64}$",
            ));
        }
        let schema = match t.parameters {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => {
                let path = name_path.strip_suffix("name").unwrap_or_default();
                return Err(ApiError::invalid_field(
                    format!("tools[{i}].{path}parameters"),
                    "parameters must be a JSON Schema object",
                ));
            }
        };
        specs.push(ToolSpec::new(t.name, t.description, schema));
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = specs.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(ApiError::invalid_field("tools", format!("tool {:?} is defined twice", w[0].name)));
    }
    Ok(specs)
}

/// A tool choice as Tackle reads it from either endpoint's wire type (each accepts the other's
/// spelling of a function and an allowed subset too).
enum Asked<'c> {
    Mode(ToolChoiceMode),
    Named(&'c str),
    /// The mode, and each entry's `type` (if stated) and name.
    Allowed(ToolChoiceMode, Vec<(Option<&'c str>, Option<&'c str>)>),
    /// A kind of tool the client cannot send here (hosted, custom, MCP, unknown).
    Unsupported,
}

impl<'c> Asked<'c> {
    fn of_chat(choice: &'c chat::ToolChoiceObject<'c>) -> Self {
        match choice {
            chat::ToolChoiceObject::Function { function } => Self::Named(&function.name),
            chat::ToolChoiceObject::AllowedTools { allowed_tools } => Self::Allowed(
                allowed_tools.mode,
                allowed_tools.tools.iter().map(|t| (t.kind.as_deref(), t.name())).collect(),
            ),
            chat::ToolChoiceObject::Responses(other) => Self::of_responses(other),
            _ => Self::Unsupported,
        }
    }

    fn of_responses(choice: &'c responses::ToolChoiceObject<'c>) -> Self {
        match choice {
            responses::ToolChoiceObject::Function { name } => Self::Named(name),
            responses::ToolChoiceObject::AllowedTools { mode, tools } => {
                Self::Allowed(*mode, tools.iter().map(|t| (t.kind.as_deref(), t.name())).collect())
            }
            responses::ToolChoiceObject::Chat(other) => Self::of_chat(other),
            _ => Self::Unsupported,
        }
    }
}

/// A Chat Completions `tool_choice` as Tackle's.
pub(crate) fn chat_tool_choice(
    choice: Option<&chat::ToolChoice<'_>>,
    tools: &[ToolSpec],
) -> Result<ToolChoice, ApiError> {
    tool_choice(
        match choice {
            None => Asked::Mode(ToolChoiceMode::Auto),
            Some(chat::ToolChoice::Mode(mode)) => Asked::Mode(*mode),
            Some(chat::ToolChoice::Object(object)) => Asked::of_chat(object),
        },
        tools,
    )
}

/// A Responses `tool_choice` as Tackle's.
pub(crate) fn responses_tool_choice(
    choice: Option<&responses::ToolChoice<'_>>,
    tools: &[ToolSpec],
) -> Result<ToolChoice, ApiError> {
    tool_choice(
        match choice {
            None => Asked::Mode(ToolChoiceMode::Auto),
            Some(responses::ToolChoice::Mode(mode)) => Asked::Mode(*mode),
            Some(responses::ToolChoice::Object(object)) => Asked::of_responses(object),
        },
        tools,
    )
}

/// The checks serde cannot make: named tools must be among `tools`, an allowed subset's mode is
/// not `none`, and only functions can be chosen.
fn tool_choice(asked: Asked<'_>, tools: &[ToolSpec]) -> Result<ToolChoice, ApiError> {
    let bad = |m: &str| ApiError::invalid_field("tool_choice", m.to_owned());
    let known = |name: &str| -> Result<String, ApiError> {
        if tools.iter().any(|t| t.name == name) {
            Ok(name.to_owned())
        } else {
            Err(bad(&format!("tool_choice names {name:?}, which is not in tools")))
        }
    };
    Ok(match asked {
        Asked::Mode(ToolChoiceMode::Auto) => ToolChoice::Auto,
        Asked::Mode(ToolChoiceMode::None) => ToolChoice::None,
        Asked::Mode(ToolChoiceMode::Required) => ToolChoice::Required,
        Asked::Named(name) => ToolChoice::Named { name: known(name)? },
        Asked::Allowed(mode, entries) => {
            let mode = match mode {
                ToolChoiceMode::Auto => AllowedToolsMode::Auto,
                ToolChoiceMode::Required => AllowedToolsMode::Required,
                ToolChoiceMode::None => return Err(bad("allowed_tools.mode must be auto or required")),
            };
            let mut names = Vec::new();
            for (kind, name) in entries {
                if kind.is_some_and(|k| k != "function") {
                    return Err(bad("allowed_tools.tools entries are functions (type \"function\")"));
                }
                let name = name.ok_or_else(|| bad("allowed_tools.tools entries need a function name"))?;
                names.push(known(name)?);
            }
            // Catalog order, like every mask Tackle sends.
            names.sort_by_key(|n| tools.iter().position(|t| &t.name == n));
            ToolChoice::Allowed { tools: names, mode }
        }
        Asked::Unsupported => return Err(bad("unknown tool_choice object")),
    })
}

/// The answer format a client asked for besides free text: Chat Completions'
/// `response_format`, Responses' `text.format` (the same kinds; `{"type": "text"}` is none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerFormat<'a> {
    /// `None`: any JSON object (`json_object`, the older JSON mode).
    schema: Option<&'a JsonSchemaFormat<'a>>,
    /// Where the format is in the request (`response_format`, `text.format`), for errors.
    at: &'static str,
    /// Where a `json_schema` format's own fields are (`response_format.json_schema`,
    /// `text.format`).
    fields: &'static str,
}

/// The name `json_object` is asked under: a schema of any object.
const JSON_OBJECT: &str = "json_object";

impl<'a> AnswerFormat<'a> {
    /// A chat request's `response_format`.
    pub(crate) fn of_chat(format: Option<&'a ResponseFormat<'a>>) -> Option<Self> {
        let (at, fields) = ("response_format", "response_format.json_schema");
        match format? {
            ResponseFormat::Text => None,
            ResponseFormat::JsonObject => Some(Self { schema: None, at, fields }),
            ResponseFormat::JsonSchema { json_schema } => {
                Some(Self { schema: Some(json_schema), at, fields })
            }
        }
    }

    /// A responses request's `text.format`.
    pub(crate) fn of_responses(text: Option<&'a TextConfig<'a>>) -> Option<Self> {
        let (at, fields) = ("text.format", "text.format");
        match text?.format.as_ref()? {
            TextFormat::Text => None,
            TextFormat::JsonObject => Some(Self { schema: None, at, fields }),
            TextFormat::JsonSchema(format) => Some(Self { schema: Some(format), at, fields }),
        }
    }

    /// The schema an agent turn's final answer must match: checked here, so a bad one is a 400
    /// naming its field before any session is written or model called. `json_object` is a
    /// schema of any object.
    pub(crate) fn output_schema(&self) -> Result<OutputSchema, ApiError> {
        let Some(format) = self.schema else {
            return OutputSchema::new(JSON_OBJECT, json!({"type": "object"}))
                .map_err(|e| ApiError::internal(format!("the json_object schema: {e}")));
        };
        let schema_at = format!("{}.schema", self.fields);
        let Some(schema) = format.schema.as_deref() else {
            return Err(ApiError {
                code: "missing_required_parameter",
                ..ApiError::invalid_field(
                    schema_at.clone(),
                    format!(
                        "Missing required parameter: '{schema_at}'. Send the JSON Schema the answer must match."
                    ),
                )
            });
        };
        OutputSchema::new(format.name.as_ref(), schema.clone()).map_err(|e| {
            let field = match e {
                OutputSchemaError::Name(_) => format!("{}.name", self.fields),
                _ => schema_at,
            };
            ApiError::invalid_field(field, e.to_string())
        })
    }

    /// The format as the gateway forwards it: what the client sent, field for field (its name,
    /// description, schema and `strict`, or `json_object` as it is), the schema checked as for
    /// the agent, asked natively of the provider. A provider
    /// that cannot constrain its answer (Anthropic Messages) gets a 400 naming the parameter
    /// rather than a request that silently drops it.
    pub(crate) fn gateway(&self, state: &AppState) -> Result<OutputFormat, ApiError> {
        if !state.agent().provider().capabilities().native_output_schema {
            return Err(ApiError::invalid_field(
                self.at,
                format!(
                    "the provider behind this server cannot constrain its answer to a JSON Schema, so {} cannot be \
                     forwarded; use the model {:?}, whose agent asks for it through a final-answer tool and checks it",
                    self.at,
                    state.config().agent_model
                ),
            ));
        }
        let checked = self.output_schema()?;
        let Some(format) = self.schema else {
            return Ok(OutputFormat { json_object: true, ..checked.format().clone() });
        };
        Ok(OutputFormat {
            description: format.description.as_deref().map(str::to_owned),
            strict: format.strict,
            ..checked.format().clone()
        })
    }
}

/// The gateway forwards only the models the server offers (its provider's model and `[server]
/// models`) unless configured open (`gateway_any_model`): a client cannot spend the operator's
/// key on any model it names.
pub(crate) fn check_gateway_model(state: &AppState, model: &str) -> Result<(), ApiError> {
    let config = state.config();
    if config.gateway_any_model
        || model == state.agent().config().model
        || config.models.iter().any(|m| m == model)
    {
        return Ok(());
    }
    let mut offered = vec![config.agent_model.clone(), state.agent().config().model.clone()];
    offered.extend(config.models.iter().cloned());
    Err(ApiError::invalid_field(
        "model",
        format!(
            "model {model:?} is not offered by this server; choose one of {} (GET /v1/models), \
             or let the operator add it to [server] models",
            offered.join(", ")
        ),
    ))
}

/// Every tool call of an assistant message is answered by the tool messages right after it, and
/// every tool message answers one of them: a provider refuses anything else, so the gateway
/// says so (400) before forwarding.
pub(crate) fn check_tool_rounds(messages: &[Message]) -> Result<(), ApiError> {
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

/// A request the gateway forwards to the configured provider.
#[derive(Debug)]
pub(crate) struct Gateway {
    pub(crate) model: String,
    pub(crate) system: Vec<SystemSection>,
    pub(crate) messages: Vec<Message>,
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) tool_choice: ToolChoice,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) parallel_tool_calls: Option<bool>,
    /// The client's prompt cache key; by default a hash of the tools and system prompt.
    pub(crate) prompt_cache_key: Option<String>,
    /// The client's `response_format` / `text.format`, asked natively.
    pub(crate) output: Option<OutputFormat>,
}

impl Gateway {
    /// The provider request: tools in the fixed order, the same cache key for the same prefix.
    pub(crate) fn into_request(self) -> ModelRequest {
        let cache_key = self.prompt_cache_key.unwrap_or_else(|| {
            let prefix = serde_json::to_string(&(&self.tools, &self.system)).unwrap_or_default();
            format!("tackle-{}", &blake3::hash(prefix.as_bytes()).to_hex()[..16])
        });
        let mut request = ModelRequest::new(self.model, self.messages);
        request.system = self.system;
        request.tools = Arc::from(self.tools);
        request.tool_choice = self.tool_choice;
        request.max_output_tokens = self.max_output_tokens;
        request.temperature = self.temperature;
        request.parallel_tool_calls = self.parallel_tool_calls;
        request.prompt_cache_key = Some(cache_key);
        request.output = self.output;
        request
    }
}

/// Seconds since the epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A stream fed by a task through a channel (no extra macro crate needed).
pub(crate) fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(mpsc::UnboundedSender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(f(tx));
    UnboundedReceiverStream::new(rx)
}

/// Earlier turns as the history of a new agent session: their text only (the client's own tool
/// calls are not Tackle's to replay).
pub(crate) fn text_history(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .filter(|m| m.role == Role::User || m.role == Role::Assistant)
        .map(|m| if m.role == Role::User { Message::user(m.text()) } else { Message::assistant(m.text()) })
        .filter(|m| !m.is_empty())
        .collect()
}

/// A new session of the agent for `user`, in the server's default workspace.
pub(crate) async fn new_agent_session(
    state: &AppState,
    user: &str,
    history: Vec<Message>,
) -> Result<Session, ApiError> {
    if state.inner.shutdown.is_cancelled() {
        return Err(ApiError::shutting_down());
    }
    let workspace = state.config().workspaces.get("default").cloned().unwrap_or_default();
    let options = NewSessionOptions { title: None, workspace, owner: Some(user.to_owned()), history };
    Ok(state.agent().create_session(options).await?)
}

/// The answer of an agent turn, step by step: each step that said something is one text. Both
/// endpoints build their answer from these, streaming or not, so the two modes agree: chat
/// completions joins the steps as paragraphs, responses makes one message item of each.
#[derive(Debug, Default)]
pub(crate) struct StepTexts {
    steps: Vec<String>,
    /// A step started since the last text: the next text opens a new one.
    new_step: bool,
}

impl StepTexts {
    /// Takes the turn's next event; returns what it adds to the joined answer (a step's first
    /// text comes after a paragraph break).
    pub(crate) fn observe(&mut self, event: &AgentEvent) -> Option<String> {
        match event {
            AgentEvent::StepStarted { .. } => {
                self.new_step = true;
                None
            }
            AgentEvent::TextDelta { text } if !text.is_empty() => {
                let mut added = String::new();
                if self.new_step || self.steps.is_empty() {
                    if let Some(last) = self.steps.last() {
                        added.push_str(paragraph_break(last));
                    }
                    self.steps.push(String::new());
                    self.new_step = false;
                }
                added.push_str(text);
                if let Some(last) = self.steps.last_mut() {
                    last.push_str(text);
                }
                Some(added)
            }
            _ => None,
        }
    }

    /// The steps' texts joined as paragraphs.
    pub(crate) fn joined(&self) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 {
                out.push_str(paragraph_break(&self.steps[i - 1]));
            }
            out.push_str(step);
        }
        out
    }

    /// Each step's text.
    pub(crate) fn steps(&self) -> &[String] {
        &self.steps
    }
}

/// What separates a text ending like `before` from the next paragraph.
fn paragraph_break(before: &str) -> &'static str {
    if before.ends_with("\n\n") {
        ""
    } else if before.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}

/// A structured turn's answer (its output schema's validated JSON), empty when it ended without
/// one: what an agent-mode client with `response_format` / `text.format` gets as the content.
pub(crate) fn json_answer(outcome: &TurnOutcome) -> String {
    outcome.output.as_ref().map(Value::to_string).unwrap_or_default()
}

/// A turn of the agent running for an OpenAI-compatible request.
pub(crate) struct AgentTurn {
    /// The turn; it goes on (and is stored) if the client leaves.
    pub(crate) task: tokio::task::JoinHandle<Result<TurnOutcome, AgentError>>,
    /// Its events.
    pub(crate) events: mpsc::UnboundedReceiver<AgentEvent>,
}

impl AgentTurn {
    /// Runs `prompt` as the next turn of `session`, which must not be running one already; with
    /// `output`, its final answer must match that schema (structured output).
    pub(crate) async fn start(
        state: &AppState,
        mut session: Session,
        prompt: String,
        output: Option<OutputSchema>,
    ) -> Result<Self, ApiError> {
        if state.inner.shutdown.is_cancelled() {
            return Err(ApiError::shutting_down());
        }
        let guard = state.start_turn(session.id()).await?;
        if let Some(lease) = guard.lease() {
            session.hold_lease(lease);
        }
        let mut input = TurnInput::new(prompt);
        input.output_schema = output;
        // OpenAI clients cannot see approvals: by default a call needing one is denied at once
        // and the model told; with `wait`, a client that knows Tackle finds it under the
        // session id (bounded by the policy's timeout).
        input.approval = Some(state.config().openai_approval);
        // Nor can they show an MCP server's questions: those are declined, and the model told.
        input.elicitation = Some(tackle_tools::ElicitationPolicy::Decline(
            "the MCP server asked the user a question, and the OpenAI-compatible endpoint has no way to show \
             it; tell the user, who can answer it in tackle chat or the web page"
                .to_owned(),
        ));
        let (tx, events) = mpsc::unbounded_channel::<AgentEvent>();
        let sink = EventSink::new(move |e| {
            let _ = tx.send(e);
        });
        let task = state.inner.tasks.spawn(
            async move {
                let cancel = guard.cancel.clone();
                let outcome = session.run_turn(input, &sink, &cancel).await;
                let base = guard.event_base();
                guard.finish(base).await;
                outcome
            }
            // The turn's spans are children of this request's (and of the caller's `traceparent`).
            .in_current_span(),
        );
        Ok(Self { task, events })
    }

    /// Waits for the outcome and every event of the turn.
    pub(crate) async fn finish(mut self) -> Result<(TurnOutcome, Vec<AgentEvent>), ApiError> {
        let mut events = Vec::new();
        while let Some(e) = self.events.recv().await {
            events.push(e);
        }
        Ok((self.outcome().await?, events))
    }

    /// Waits for the outcome; a turn that failed is the error its [`tackle_agent::TurnFailure`]
    /// calls for (`status_of`), except an answer cut off by its output limit, which the route
    /// returns as such (`finish_reason: "length"`, an `incomplete` response).
    pub(crate) async fn outcome(self) -> Result<TurnOutcome, ApiError> {
        drop(self.events);
        let outcome = self
            .task
            .await
            .map_err(|e| ApiError::internal(format!("the agent stopped unexpectedly: {e}")))?
            .map_err(ApiError::from)?;
        if let Some(failure) =
            outcome.error.as_ref().filter(|_| outcome.end == tackle_protocol::TurnEnd::Failed)
            && !matches!(failure, tackle_agent::TurnFailure::Truncated { .. })
        {
            return Err(ApiError::turn_failed(failure));
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_texts_stream_what_they_join() {
        let step = || AgentEvent::StepStarted { step: 1, max_steps: 8 };
        let text = |t: &str| AgentEvent::TextDelta { text: t.into() };
        let events =
            [step(), text("first"), text("."), step(), step(), text("## Summary\n"), text("ok"), step()];
        let mut texts = StepTexts::default();
        let streamed: String = events.iter().filter_map(|e| texts.observe(e)).collect();
        assert_eq!(streamed, "first.\n\n## Summary\nok");
        assert_eq!(texts.joined(), streamed);
        assert_eq!(texts.steps(), ["first.", "## Summary\nok"]);
        let mut texts = StepTexts::default();
        let streamed: String = [text("a\n"), step(), text("b\n\n"), step(), text("c")]
            .iter()
            .filter_map(|e| texts.observe(e))
            .collect();
        assert_eq!((streamed.as_str(), texts.joined().as_str()), ("a\n\nb\n\nc", "a\n\nb\n\nc"));
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, "", json!({"type": "object"}))
    }

    #[test]
    fn tools_are_sorted_checked_and_named_in_errors() {
        let params = json!({"type": "object"});
        let tool = |name| ClientTool { kind: "function", name, description: "", parameters: Some(&params) };
        let specs = function_tools(&[tool("b_tool"), tool("a_tool")], "name").unwrap();
        assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a_tool", "b_tool"]);
        let e = function_tools(&[tool("a b")], "function.name").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tools[0].function.name"));
        let e = function_tools(&[tool("a"), tool("a")], "name").unwrap_err();
        assert!(e.message.contains("defined twice"));
        let hosted = ClientTool { kind: "web_search", ..tool("x") };
        let e = function_tools(&[tool("a"), hosted], "name").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tools[1].type"));
    }

    #[test]
    fn tool_choice_reads_both_shapes() {
        let specs = [spec("a_tool"), spec("b_tool")];
        let chat = |v: Value| chat_tool_choice(Some(&serde_json::from_value(v).unwrap()), &specs);
        let responses = |v: Value| responses_tool_choice(Some(&serde_json::from_value(v).unwrap()), &specs);
        assert_eq!(chat(json!("none")).unwrap(), ToolChoice::None);
        assert_eq!(responses(json!("required")).unwrap(), ToolChoice::Required);
        assert_eq!(chat_tool_choice(None, &specs).unwrap(), ToolChoice::Auto);
        for named in [
            json!({"type": "function", "function": {"name": "b_tool"}}),
            json!({"type": "function", "name": "b_tool"}),
        ] {
            let want = ToolChoice::Named { name: "b_tool".into() };
            assert_eq!(chat(named.clone()).unwrap(), want);
            assert_eq!(responses(named).unwrap(), want);
        }
        let want = ToolChoice::Allowed {
            tools: vec!["a_tool".into(), "b_tool".into()],
            mode: AllowedToolsMode::Required,
        };
        let nested = json!({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "b_tool"}}, {"type": "function", "function": {"name": "a_tool"}}]}});
        let flat = json!({"type": "allowed_tools", "mode": "required", "tools": [
            {"type": "function", "name": "b_tool"}, {"name": "a_tool"}]});
        for v in [nested, flat] {
            assert_eq!(chat(v.clone()).unwrap(), want);
            assert_eq!(responses(v).unwrap(), want);
        }
        for bad in [
            json!({"type": "function", "name": "zzz"}),
            json!({"type": "allowed_tools", "mode": "none", "tools": []}),
            json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "mcp", "server_label": "x"}]}),
            json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function"}]}),
            json!({"type": "file_search"}),
            json!({"type": "somewhere"}),
        ] {
            let e = responses(bad.clone()).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("tool_choice"), "{bad}");
            let e = chat(bad.clone()).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("tool_choice"), "{bad}");
        }
        // Each API's custom tool reads, and is refused: Tackle's clients send functions only.
        let e = responses(json!({"type": "custom", "name": "a_tool"})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tool_choice"));
        let e = chat(json!({"type": "custom", "custom": {"name": "a_tool"}})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tool_choice"));
    }
}
