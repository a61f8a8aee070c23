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
use serde::Deserialize;
use serde_json::{Value, json};
use tackle_agent::{Agent, NewSessionOptions, Session, TurnInput};
use tackle_protocol::{SessionId, ToolCallId, ToolInput, ToolUse, TurnEnd};
use tackle_tools::{ApprovalPolicy, CallOptions, PermissionMode, ToolContext};

use crate::approvals::{ClientApprovals, can_elicit};
use crate::http::McpUser;
use crate::progress::Progress;

/// The tool that runs a task in a new session.
const TASK_TOOL: &str = "tackle";
/// The tool that continues a session.
const REPLY_TOOL: &str = "tackle_reply";
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

/// Arguments of `tackle`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    prompt: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    mode: Option<String>,
}

/// Arguments of `tackle_reply`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyArgs {
    session_id: String,
    prompt: String,
}

/// A call that cannot run as asked: the client's model reads the message (a tool error result,
/// so it can correct the call).
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
        let agent = self.agent_for(args.model.as_deref())?;
        let mode = match args.mode.as_deref() {
            Some(text) => {
                let mode: PermissionMode = text.parse().map_err(|e| {
                    Refusal(format!("{e}; `mode` is one of default, accept-edits, plan, bypass"))
                })?;
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
        self.run_turn(&mut session, args.prompt, ctx).await
    }

    async fn reply(
        &self,
        args: ReplyArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        check_prompt(&args.prompt)?;
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
        self.run_turn(&mut session, args.prompt, ctx).await
    }

    /// One turn of `session` for the client of `ctx`: its progress token gets progress, its
    /// cancellation cancels the turn, its confirmations are asked of it when it can answer.
    async fn run_turn(
        &self,
        session: &mut Session,
        prompt: String,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Refusal> {
        let id = session.id().clone();
        let _running = self.start(&id)?;
        let mut input = TurnInput::new(prompt);
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
        let end = turn_end(outcome.end);
        let structured = json!({
            "session_id": outcome.session_id,
            "answer": outcome.text,
            "end": end,
            "steps": outcome.steps,
        });
        let note = format!("[session_id: {} (continue it with tackle_reply)]", outcome.session_id);
        let mut result = match (&outcome.end, &outcome.error) {
            (TurnEnd::Failed | TurnEnd::Cancelled, failure) => {
                let why = failure.as_ref().map_or_else(|| end.to_owned(), |f| f.to_string());
                CallToolResult::error(vec![
                    ContentBlock::text(format!("the task did not finish ({end}): {why}")),
                    ContentBlock::text(note),
                ])
            }
            _ => CallToolResult::success(vec![
                ContentBlock::text(outcome.text.clone()),
                ContentBlock::text(note),
            ]),
        };
        result.structured_content = Some(structured);
        Ok(result)
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

fn turn_end(end: TurnEnd) -> &'static str {
    match end {
        TurnEnd::Completed => "completed",
        TurnEnd::MaxSteps => "max_steps",
        TurnEnd::Cancelled => "cancelled",
        TurnEnd::Failed => "failed",
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// What `tackle` and `tackle_reply` return as `structuredContent`.
fn answer_schema() -> JsonObject {
    object(json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "The session; continue it with tackle_reply."},
            "answer": {"type": "string", "description": "The final answer of the turn."},
            "end": {"type": "string", "enum": ["completed", "max_steps", "cancelled", "failed"]},
            "steps": {"type": "integer", "description": "Model calls the turn took."}
        },
        "required": ["session_id", "answer", "end", "steps"]
    }))
}

fn task_tool() -> Tool {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task, as you would tell a person."},
            "model": {"type": "string", "description": "A model of the server's provider (default: the server's)."},
            "mode": {
                "type": "string",
                "enum": ["default", "accept-edits", "plan", "bypass"],
                "description": "Permission mode of the session: what runs without confirmation."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    }));
    let mut tool = Tool::new(
        TASK_TOOL,
        "Run a task with a Tackle agent in a new session, in the server's workspace, with its tools \
         (files, shell, search, its MCP servers). Returns the agent's final answer and the session id; \
         continue the conversation with tackle_reply.",
        schema,
    );
    tool.output_schema = Some(Arc::new(answer_schema()));
    tool.annotations = Some(ToolAnnotations::new().read_only(false).destructive(true).open_world(true));
    tool
}

fn reply_tool() -> Tool {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "The session_id a tackle call returned."},
            "prompt": {"type": "string", "description": "The next message to the agent."}
        },
        "required": ["session_id", "prompt"],
        "additionalProperties": false
    }));
    let mut tool = Tool::new(
        REPLY_TOOL,
        "Continue a Tackle session with another message; returns the agent's answer.",
        schema,
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
