//! [`TackleMcp`]: the MCP tools `tackle` and `tackle_reply` (and, optionally, the agent's own
//! tools) over an [`Agent`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_agent::{Agent, NewSessionOptions, OutputSchema, Session, TurnInput};
use tackle_protocol::{SessionId, ToolCallId, ToolInput, ToolUse, TurnEnd};
use tackle_tools::{ApprovalPolicy, CallOptions, PermissionMode, ToolContext};

use crate::approvals::{ClientApprovals, can_elicit};
use crate::http::McpUser;
use crate::progress::Progress;

/// The tool that runs a task in a new session.
const TASK_TOOL: &str = "tackle";
/// The tool that continues a session.
const REPLY_TOOL: &str = "tackle_reply";
/// The name an `output_schema` is sent under where the provider names the format.
const OUTPUT_SCHEMA_NAME: &str = "output";
/// The owner of sessions started without authentication (stdio, a loopback HTTP server
/// without tokens), as in `tackle serve`.
const LOCAL_USER: &str = "local";

/// How `tackle mcp serve` serves.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServeOptions {
    /// What happens to calls that need confirmation when the client did not declare the
    /// elicitation capability (nobody can be asked): `deny` by default.
    pub approval: ApprovalPolicy,
    /// List Tackle's own tools too, each callable directly.
    pub expose_tools: bool,
    /// Models of the provider a task may name besides the agent's own.
    pub models: Vec<String>,
}

impl Default for McpServeOptions {
    fn default() -> Self {
        Self { approval: ApprovalPolicy::Deny, expose_tools: false, models: Vec::new() }
    }
}

struct Shared {
    agent: Agent,
    approvals: ClientApprovals,
    options: McpServeOptions,
    /// Sessions with a turn in flight: a second call on one is refused, not interleaved.
    running: Mutex<HashSet<SessionId>>,
}

/// Tackle as an MCP server handler. Cheap to clone; each MCP connection gets its own
/// ([`TackleMcp::connection`]) so direct tool calls of different clients never share a session.
#[derive(Clone)]
pub struct TackleMcp {
    shared: Arc<Shared>,
    /// The session direct tool calls of this connection are recorded in, created at the first.
    tool_session: Arc<tokio::sync::Mutex<Option<SessionId>>>,
}

/// Arguments of `tackle`. Its doc comments are the tool's input schema (schemars), so what the
/// client is told and what is parsed are one declaration.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    /// The task, as you would tell a person.
    prompt: String,
    /// A model of the server's provider (default: the server's).
    model: Option<String>,
    /// Permission mode of the session: what runs without confirmation.
    mode: Option<Mode>,
    /// A JSON Schema (an object) the final answer must match; it is then in `output`, validated.
    #[serde(default)]
    #[schemars(schema_with = "json_schema_object")]
    output_schema: Option<Value>,
}

/// Arguments of `tackle_reply`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReplyArgs {
    /// The session_id a tackle call returned.
    session_id: String,
    /// The next message to the agent.
    prompt: String,
    /// A JSON Schema (an object) this turn's final answer must match, as in `tackle`.
    #[serde(default)]
    #[schemars(schema_with = "json_schema_object")]
    output_schema: Option<Value>,
}

/// The permission modes a task may ask for (`PermissionMode`'s names; its aliases, Claude
/// Code's among them, are taken too but not advertised).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    Default,
    #[serde(alias = "acceptEdits", alias = "accept_edits")]
    AcceptEdits,
    Plan,
    #[serde(alias = "bypassPermissions")]
    Bypass,
}

impl From<Mode> for PermissionMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Default => Self::Default,
            Mode::AcceptEdits => Self::AcceptEdits,
            Mode::Plan => Self::Plan,
            Mode::Bypass => Self::Bypass,
        }
    }
}

/// What `tackle` and `tackle_reply` return as `structuredContent`: this value serialized is the
/// content sent, and its schema (schemars, serialize contract) is the tools' declared
/// `outputSchema`, so the two cannot drift.
#[derive(Debug, Serialize, JsonSchema)]
struct Answer {
    /// The session; continue it with tackle_reply.
    session_id: String,
    /// The final answer of the turn (with `output_schema`, the JSON answer as text).
    answer: String,
    /// How the turn ended.
    end: End,
    /// Model calls the turn took.
    steps: u32,
    /// With `output_schema`: the final answer, validated against that schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
    /// Why the turn failed or stopped short.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Failure>,
}

/// How a turn ended (`TurnEnd`'s names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum End {
    Completed,
    MaxSteps,
    Cancelled,
    Failed,
}

impl From<TurnEnd> for End {
    fn from(end: TurnEnd) -> Self {
        match end {
            TurnEnd::Completed => Self::Completed,
            TurnEnd::MaxSteps => Self::MaxSteps,
            TurnEnd::Cancelled => Self::Cancelled,
            TurnEnd::Failed => Self::Failed,
        }
    }
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxSteps => "max_steps",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// A turn's failure, as the sessions API reports it.
#[derive(Debug, Serialize, JsonSchema)]
struct Failure {
    /// Why, stable for machines (`output_invalid`, `max_steps`, `rate_limited`, ...).
    code: String,
    /// What happened.
    message: String,
}

/// A call that cannot run as asked: the client's model reads the message (a tool error result,
/// so it can correct the call).
#[derive(Debug)]
struct Refusal(String);

impl Refusal {
    fn result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.0)])
    }
}

impl TackleMcp {
    /// A server over `agent`, whose approver (and elicitor) must be `approvals`.
    pub fn new(agent: Agent, approvals: ClientApprovals, options: McpServeOptions) -> Self {
        let shared = Shared { agent, approvals, options, running: Mutex::new(HashSet::new()) };
        Self { shared: Arc::new(shared), tool_session: Arc::default() }
    }

    /// The handler of one more MCP connection (same agent and sessions, its own direct-call
    /// session).
    pub fn connection(&self) -> Self {
        Self { shared: self.shared.clone(), tool_session: Arc::default() }
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.shared.agent
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![task_tool(), reply_tool()];
        if self.shared.options.expose_tools {
            tools.extend(
                self.shared
                    .agent
                    .tool_specs()
                    .into_iter()
                    .filter(|s| s.name != TASK_TOOL && s.name != REPLY_TOOL)
                    .map(|spec| {
                        let schema = match spec.input_schema {
                            Value::Object(map) => map,
                            _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
                        };
                        let mut tool = Tool::new(spec.name, spec.description, schema);
                        let mut hints = ToolAnnotations::new()
                            .read_only(spec.annotations.read_only)
                            .destructive(spec.annotations.destructive);
                        hints.idempotent_hint = Some(spec.annotations.idempotent);
                        tool.annotations = Some(hints);
                        tool
                    }),
            );
        }
        tools
    }

    /// The agent answering with `model` (its own when `None`), if a task may name it.
    fn agent_for(&self, model: Option<&str>) -> Result<Agent, Refusal> {
        let agent = &self.shared.agent;
        match model {
            None => Ok(agent.clone()),
            Some(m) if m == agent.config().model => Ok(agent.clone()),
            Some(m) if self.shared.options.models.iter().any(|x| x == m) => Ok(agent.with_model(m)),
            Some(m) => {
                let mut allowed = vec![agent.config().model.clone()];
                allowed.extend(self.shared.options.models.iter().cloned());
                Err(Refusal(format!(
                    "model {m:?} is not served here; name one of {} (or leave `model` out); the server's \
                     `[server] models` setting lists more",
                    allowed.join(", ")
                )))
            }
        }
    }

    async fn run_task(
        &self,
        args: TaskArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        check_prompt(&args.prompt)?;
        let output_schema = output_schema(args.output_schema)?;
        let agent = self.agent_for(args.model.as_deref())?;
        let mode = match args.mode {
            Some(mode) => {
                let mode = PermissionMode::from(mode);
                agent.mode_available(mode).map_err(|e| Refusal(e.to_string()))?;
                Some(mode)
            }
            None => None,
        };
        let mut session = agent
            .create_session(NewSessionOptions { owner: Some(owner(ctx)), ..NewSessionOptions::default() })
            .await
            .map_err(|e| Refusal(format!("cannot create a session: {e}")))?;
        if let Some(mode) = mode {
            session.set_mode(mode).await.map_err(|e| Refusal(e.to_string()))?;
        }
        self.run_turn(&mut session, args.prompt, output_schema, ctx).await
    }

    async fn reply(
        &self,
        args: ReplyArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        check_prompt(&args.prompt)?;
        let output_schema = output_schema(args.output_schema)?;
        let unknown = || {
            Refusal(format!("no session {:?}: pass the session_id a `tackle` call returned", args.session_id))
        };
        let record =
            self.shared.agent.store().sessions().get(&args.session_id).await.map_err(|e| match e {
                tackle_store::StoreError::NotFound { .. } => unknown(),
                other => Refusal(format!("cannot read session {:?}: {other}", args.session_id)),
            })?;
        // Another user's session is as unknown as a session that does not exist.
        if record.owner != owner(ctx) {
            return Err(unknown());
        }
        let agent = if record.model == self.shared.agent.config().model {
            self.shared.agent.clone()
        } else {
            self.shared.agent.with_model(record.model.clone())
        };
        let mut session = agent
            .open_session(&record.id)
            .await
            .map_err(|e| Refusal(format!("cannot open session {}: {e}", record.id)))?;
        self.run_turn(&mut session, args.prompt, output_schema, ctx).await
    }

    /// One turn of `session` for the client of `ctx`: its progress token gets progress, its
    /// cancellation cancels the turn, its confirmations are asked of it when it can answer.
    /// With `output_schema` the answer must match it (`TurnInput::output_schema`, as `tackle run
    /// --output-schema` and the sessions API ask), else the result is an error.
    async fn run_turn(
        &self,
        session: &mut Session,
        prompt: String,
        output_schema: Option<OutputSchema>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        let id = session.id().clone();
        let _running = self.start(&id)?;
        let typed = output_schema.is_some();
        let mut input = TurnInput::new(prompt);
        input.output_schema = output_schema;
        let _asking = if can_elicit(ctx) {
            Some(self.shared.approvals.register(id.clone(), ctx.peer.clone()))
        } else {
            input.approval = Some(self.shared.options.approval);
            None
        };
        let progress = Progress::new(ctx.peer.clone(), ctx.meta.get_progress_token());
        let outcome = session.run_turn(input, progress.sink(), &ctx.ct).await;
        progress.finish().await;
        let outcome = outcome.map_err(|e| Refusal(format!("the turn of session {id} failed: {e}")))?;
        let end = End::from(outcome.end);
        let answer = Answer {
            session_id: outcome.session_id.to_string(),
            answer: outcome.text,
            end,
            steps: outcome.steps,
            output: outcome.output,
            error: outcome
                .error
                .as_ref()
                .map(|f| Failure { code: f.code().as_str().to_owned(), message: f.to_string() }),
        };
        Ok(answer_result(answer, typed))
    }

    /// Marks `session` running until the guard drops; refuses a second turn on it.
    fn start(&self, session: &SessionId) -> Result<RunningGuard, Refusal> {
        let mut running = self.shared.running.lock().unwrap_or_else(|p| p.into_inner());
        if !running.insert(session.clone()) {
            return Err(Refusal(format!(
                "session {session} is running a turn already; wait for that call to return, then reply"
            )));
        }
        Ok(RunningGuard { shared: self.shared.clone(), session: session.clone() })
    }

    /// The session this connection's direct tool calls run in.
    async fn tool_session(&self, ctx: &RequestContext<RoleServer>) -> Result<SessionId, Refusal> {
        let mut slot = self.tool_session.lock().await;
        if let Some(id) = &*slot {
            return Ok(id.clone());
        }
        let session = self
            .shared
            .agent
            .create_session(NewSessionOptions {
                title: Some("tool calls from an MCP client".to_owned()),
                owner: Some(owner(ctx)),
                ..NewSessionOptions::default()
            })
            .await
            .map_err(|e| Refusal(format!("cannot create a session for the call: {e}")))?;
        let id = session.id().clone();
        *slot = Some(id.clone());
        Ok(id)
    }

    /// One of the agent's own tools, called through its executor (hooks, approvals, sandbox,
    /// output caps), as the model would call it.
    async fn call_own_tool(
        &self,
        name: String,
        args: Value,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        let agent = &self.shared.agent;
        let session = self.tool_session(ctx).await?;
        let call_id = ToolCallId::new(format!("mcp_{}", uuid::Uuid::now_v7().simple()));
        let call = ToolUse { id: call_id.clone(), name, input: ToolInput::Json { value: args } };
        let mut tool_ctx = ToolContext::new(session.clone(), call_id, agent.workspace().to_owned());
        tool_ctx.cancel = ctx.ct.clone();
        tool_ctx.turn.insert(agent.config().permission_mode);
        let _asking = if can_elicit(ctx) {
            Some(self.shared.approvals.register(session, ctx.peer.clone()))
        } else {
            tool_ctx.turn.insert(self.shared.options.approval);
            None
        };
        let report = agent.executor().execute(&call, tool_ctx, &CallOptions::default()).await;
        let content = vec![ContentBlock::text(report.result.content)];
        Ok(if report.result.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        })
    }
}

/// Removes a session from the running set when its turn ends.
struct RunningGuard {
    shared: Arc<Shared>,
    session: SessionId,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.shared.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.session);
    }
}

/// The user of the request: the one its bearer token named over HTTP, else `local`.
fn owner(ctx: &RequestContext<RoleServer>) -> String {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<McpUser>())
        .map_or_else(|| LOCAL_USER.to_owned(), |u| u.0.clone())
}

fn check_prompt(prompt: &str) -> Result<(), Refusal> {
    if prompt.trim().is_empty() {
        return Err(Refusal("`prompt` is empty: say what the task is".to_owned()));
    }
    Ok(())
}

/// The call's result for `answer`: the answer (with `output_schema`, its JSON) and a note naming
/// the session as text, `answer` itself as `structuredContent`. A turn that failed, was
/// cancelled or, asked for `output_schema`, gave no valid answer is an error result whose text
/// names the failure's code.
fn answer_result(answer: Answer, typed: bool) -> CallToolResult {
    let note = format!("[session_id: {} (continue it with tackle_reply)]", answer.session_id);
    let failed = matches!(answer.end, End::Failed | End::Cancelled) || (typed && answer.output.is_none());
    let first = if failed {
        let end = answer.end.as_str();
        let why = match &answer.error {
            Some(f) => format!("{}: {}", f.code, f.message),
            None if typed => "no answer matching `output_schema`".to_owned(),
            None => end.to_owned(),
        };
        format!("the task did not finish ({end}): {why}")
    } else {
        answer.answer.clone()
    };
    let content = vec![ContentBlock::text(first), ContentBlock::text(note)];
    let mut result = if failed { CallToolResult::error(content) } else { CallToolResult::success(content) };
    // `Answer` serializes to an object of strings and numbers: this cannot fail.
    result.structured_content = serde_json::to_value(&answer).ok();
    result
}

/// `output_schema`, checked before anything runs: a refusal naming the argument when it is not
/// a JSON Schema object that compiles.
fn output_schema(schema: Option<Value>) -> Result<Option<OutputSchema>, Refusal> {
    schema.map(|s| OutputSchema::new(OUTPUT_SCHEMA_NAME, s)).transpose().map_err(|e| {
        Refusal(format!(
            "invalid `output_schema`: {e}. Pass a JSON Schema object for the final answer, e.g. \
             {{\"type\": \"object\", \"properties\": {{\"ok\": {{\"type\": \"boolean\"}}}}, \"required\": [\"ok\"]}}, \
             or leave `output_schema` out for a prose answer"
        ))
    })
}

/// `output_schema`'s declared schema: any JSON object (the JSON Schema is checked when called).
fn json_schema_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

/// The JSON Schema of `T` as MCP clients read it: an object at the root, subschemas inlined (no
/// `$ref` or `$defs` for a client's validator to resolve), no `$schema` (clients take 2020-12 by
/// default; the TypeScript SDK's Ajv rejects a `$schema` it was not set up for), optional fields
/// absent rather than `null`, integers without schemars' own formats (`uint32`, which a strict
/// validator refuses as unknown), and without the root's title and description.
fn schema_of<T: JsonSchema>(settings: SchemaSettings) -> JsonObject {
    let generator = settings
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    drop_null_of_optional(&mut schema);
    let mut schema = match schema {
        Value::Object(map) => map,
        // A derived struct's schema is always an object.
        _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
    };
    schema.remove("title");
    schema.remove("description");
    schema
}

/// schemars lets an `Option` field be `null`; here an optional field is one left out (the
/// arguments take `null` as absent, the answer never sends it), so each property that is not
/// required loses its `null`: from `type`, from `enum`, its `default`, or the `anyOf` branch.
/// Integer formats go too.
fn drop_null_of_optional(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"))
    {
        map.remove("format");
    }
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                drop_null(property);
            }
            drop_null_of_optional(property);
        }
    }
    if let Some(items) = map.get_mut("items") {
        drop_null_of_optional(items);
    }
}

fn drop_null(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(branches)) = map.get("anyOf")
        && branches.len() == 2
        && let Some(other) = branches.iter().find(|b| b.get("type") != Some(&json!("null")))
        && branches.iter().any(|b| b.get("type") == Some(&json!("null")))
        && let Value::Object(other) = other.clone()
    {
        map.remove("anyOf");
        for (key, value) in other {
            map.entry(key).or_insert(value);
        }
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
}

/// The tools' input schema for arguments of type `T` (what `T` accepts).
fn input_schema<T: JsonSchema>() -> JsonObject {
    schema_of::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The tools' output schema: what [`Answer`] serializes to.
fn answer_schema() -> JsonObject {
    schema_of::<Answer>(SchemaSettings::draft2020_12().for_serialize())
}

fn task_tool() -> Tool {
    let mut tool = Tool::new(
        TASK_TOOL,
        "Run a task with a Tackle agent in a new session, in the server's workspace, with its tools \
         (files, shell, search, its MCP servers). Returns the agent's final answer and the session id; \
         continue the conversation with tackle_reply. With output_schema, the answer is JSON matching \
         it, in `output`.",
        input_schema::<TaskArgs>(),
    );
    tool.output_schema = Some(Arc::new(answer_schema()));
    tool.annotations = Some(ToolAnnotations::new().read_only(false).destructive(true).open_world(true));
    tool
}

fn reply_tool() -> Tool {
    let mut tool = Tool::new(
        REPLY_TOOL,
        "Continue a Tackle session with another message; returns the agent's answer.",
        input_schema::<ReplyArgs>(),
    );
    tool.output_schema = Some(Arc::new(answer_schema()));
    tool.annotations = Some(ToolAnnotations::new().read_only(false).destructive(true).open_world(true));
    tool
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: Option<JsonObject>) -> Result<T, Refusal> {
    serde_json::from_value(Value::Object(args.unwrap_or_default()))
        .map_err(|e| Refusal(format!("invalid arguments for {tool}: {e}")))
}

impl ServerHandler for TackleMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::new("tackle", env!("CARGO_PKG_VERSION"));
        info.title = Some("Tackle".to_owned());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "Tackle runs tasks with a tool-using agent. Call `tackle` with a prompt to start a task; \
                 it returns the answer and a session_id. Call `tackle_reply` with that session_id to \
                 continue.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let outcome = match name.as_str() {
            TASK_TOOL => match parse::<TaskArgs>(TASK_TOOL, request.arguments) {
                Ok(args) => self.run_task(args, &context).await,
                Err(refusal) => Err(refusal),
            },
            REPLY_TOOL => match parse::<ReplyArgs>(REPLY_TOOL, request.arguments) {
                Ok(args) => self.reply(args, &context).await,
                Err(refusal) => Err(refusal),
            },
            _ if self.shared.options.expose_tools && self.get_tool(&name).is_some() => {
                let args = Value::Object(request.arguments.unwrap_or_default());
                self.call_own_tool(name, args, &context).await
            }
            _ => return Err(ErrorData::invalid_params(format!("unknown tool: {name}"), None)),
        };
        Ok(outcome.unwrap_or_else(Refusal::result).into())
    }
}

#[cfg(test)]
#[path = "handler_tests.rs"]
mod tests;
