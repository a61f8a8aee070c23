//! The app-server messages Tackle sends and reads, as typed values.
//!
//! Written against the JSON Schema the pinned binary generates
//! (`codex app-server generate-json-schema --experimental`, committed trimmed in
//! `schema/app-server.schema.json`): every message Tackle sends is validated against it in the
//! tests, and the schema is compared with the installed binary's. Messages Tackle reads keep
//! only the fields it uses and ignore the rest, so additions on Codex's side do not break it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_wire::responses::InputItem;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }
    };
}

id_type!(
    /// A Codex thread (a conversation Codex stores under `CODEX_HOME`).
    ThreadId
);
id_type!(
    /// A turn of a thread.
    TurnId
);
id_type!(
    /// A tool call, as the model numbered it (`call_id` on the Responses wire).
    CallId
);

// ---- client -> server --------------------------------------------------------------------

/// `initialize` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who is connecting (Codex sends it upstream as `originator`).
    pub client_info: ClientInfo,
    /// Opt-ins.
    pub capabilities: InitializeCapabilities,
}

/// `initialize` client identity.
#[derive(Debug, Clone, Serialize)]
pub struct ClientInfo {
    /// Short name.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// Version.
    pub version: String,
}

/// `initialize` capabilities.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Needed for `dynamicTools`, `thread/inject_items` and raw response events.
    pub experimental_api: bool,
}

/// A tool Codex may call back (`thread/start` `dynamicTools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolSpec {
    /// A function tool.
    #[serde(rename_all = "camelCase")]
    Function {
        /// Tool name.
        name: String,
        /// What it does.
        description: String,
        /// JSON Schema of its arguments.
        input_schema: Value,
    },
}

impl DynamicToolSpec {
    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Function { name, .. } => name,
        }
    }
}

/// `thread/start` params.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Working directory of the thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Replaces Codex's system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Tools Codex calls back with `item/tool/call`.
    pub dynamic_tools: Vec<DynamicToolSpec>,
    /// Keep the thread in memory only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Emit `rawResponseItem/completed` and `rawResponse/completed`, which tell when a model
    /// response (and so a batch of tool calls) is complete.
    pub experimental_raw_events: bool,
    /// `"never"`, `"on-request"`, `"untrusted"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// `"read-only"`, `"workspace-write"`, `"danger-full-access"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Configuration overrides (features, web search, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Map<String, Value>>,
}

/// `thread/resume` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Replaces Codex's system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// Sandbox mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Configuration overrides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Map<String, Value>>,
}

/// One input item of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// UI spans (always empty: the protocol requires the field).
        text_elements: Vec<Value>,
    },
}

impl UserInput {
    /// A text input.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), text_elements: Vec::new() }
    }
}

/// `turn/start` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// New input (may be empty: the model continues from the history).
    pub input: Vec<UserInput>,
}

/// `turn/steer` params: input added to the running turn.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// Fails unless this turn is the active one.
    pub expected_turn_id: TurnId,
    /// The input.
    pub input: Vec<UserInput>,
}

/// `turn/interrupt` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// The turn.
    pub turn_id: TurnId,
}

/// `thread/inject_items` params: raw Responses API items appended to the model-visible history.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadInjectItemsParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// Responses items (`message`, `function_call`, `function_call_output`).
    pub items: Vec<InputItem<'static>>,
}

/// The answer to `item/tool/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallResponse {
    /// What the model reads.
    pub content_items: Vec<ContentItem>,
    /// False for an error result.
    pub success: bool,
}

impl DynamicToolCallResponse {
    /// A text result.
    pub fn text(text: impl Into<String>, success: bool) -> Self {
        Self { content_items: vec![ContentItem::InputText { text: text.into() }], success }
    }
}

/// A piece of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
    /// An image by URL.
    #[serde(rename_all = "camelCase")]
    InputImage {
        /// The URL (or data URL).
        image_url: String,
    },
}

/// The server's requests Tackle answers besides `item/tool/call`, by method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerRequestMethod {
    /// `item/commandExecution/requestApproval`: run a command.
    CommandExecutionApproval,
    /// `item/fileChange/requestApproval`: apply file changes.
    FileChangeApproval,
    /// `item/permissions/requestApproval`: grant more permissions for the turn.
    PermissionsApproval,
    /// `execCommandApproval`: the first protocol's command approval.
    ExecCommandApproval,
    /// `applyPatchApproval`: the first protocol's patch approval.
    ApplyPatchApproval,
    /// `item/tool/requestUserInput`: questions for the user.
    ToolRequestUserInput,
    /// `mcpServer/elicitation/request`: an MCP server's question.
    McpServerElicitation,
    /// `currentTime/read`: the client's clock.
    CurrentTimeRead,
}

impl ServerRequestMethod {
    pub(crate) const ALL: [Self; 8] = [
        Self::CommandExecutionApproval,
        Self::FileChangeApproval,
        Self::PermissionsApproval,
        Self::ExecCommandApproval,
        Self::ApplyPatchApproval,
        Self::ToolRequestUserInput,
        Self::McpServerElicitation,
        Self::CurrentTimeRead,
    ];

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CommandExecutionApproval => "item/commandExecution/requestApproval",
            Self::FileChangeApproval => "item/fileChange/requestApproval",
            Self::PermissionsApproval => "item/permissions/requestApproval",
            Self::ExecCommandApproval => "execCommandApproval",
            Self::ApplyPatchApproval => "applyPatchApproval",
            Self::ToolRequestUserInput => "item/tool/requestUserInput",
            Self::McpServerElicitation => "mcpServer/elicitation/request",
            Self::CurrentTimeRead => "currentTime/read",
        }
    }

    /// The method named `name`, if Tackle answers it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// A decision on a command or a file change (`CommandExecutionApprovalDecision`,
/// `FileChangeApprovalDecision`; Tackle decides one request at a time, so never "for session").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run it.
    Accept,
    /// Do not run it; the turn goes on.
    Decline,
}

/// The answer to `item/commandExecution/requestApproval` and `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalResponse {
    /// The decision.
    pub decision: ApprovalDecision,
}

/// A decision in the first protocol's approvals (`ReviewDecision`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Run it.
    Approved,
    /// Do not run it; the session goes on.
    Denied {
        /// Why, for the model.
        rejection: String,
    },
}

/// The answer to `execCommandApproval` and `applyPatchApproval`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewResponse {
    /// The decision.
    pub decision: ReviewDecision,
}

/// How long granted permissions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionGrantScope {
    /// This turn only.
    Turn,
}

/// The answer to `item/permissions/requestApproval`: the permissions granted (the asked ones,
/// or none), as the request's `GrantedPermissionProfile`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionsResponse {
    /// What is granted; an empty object grants nothing.
    pub permissions: Value,
    /// For how long.
    pub scope: PermissionGrantScope,
}

/// The answer to `item/tool/requestUserInput`: answers by question id.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UserInputResponse {
    /// The answers; empty when nobody can answer.
    pub answers: std::collections::BTreeMap<String, Value>,
}

/// What the client did with an MCP server's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    /// Declined to answer.
    Decline,
}

/// The answer to `mcpServer/elicitation/request`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitationResponse {
    /// The action.
    pub action: ElicitationAction,
    /// The form's content (none when declined).
    pub content: Option<Value>,
}

/// The answer to `currentTime/read`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentTimeReadResponse {
    /// Seconds since the Unix epoch.
    pub current_time_at: u64,
}

// ---- server -> client --------------------------------------------------------------------

/// `thread/start` and `thread/resume` results (the parts Tackle reads).
#[derive(Debug, Clone, Deserialize)]
pub struct ThreadResult {
    /// The thread.
    pub thread: Thread,
    /// The model the thread uses.
    #[serde(default)]
    pub model: Option<String>,
}

/// A thread.
#[derive(Debug, Clone, Deserialize)]
pub struct Thread {
    /// Its id.
    pub id: ThreadId,
    /// Its turns (filled by `thread/resume`).
    #[serde(default)]
    pub turns: Vec<Turn>,
}

/// A turn.
#[derive(Debug, Clone, Deserialize)]
pub struct Turn {
    /// Its id.
    pub id: TurnId,
    /// `inProgress`, `completed`, `interrupted`, `failed`.
    #[serde(default)]
    pub status: String,
    /// Its items (as far as loaded).
    #[serde(default, deserialize_with = "ThreadItem::tolerant")]
    pub items: Vec<ThreadItem>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<TurnError>,
}

/// An item of a thread (`item/started`, `item/completed`, a resumed turn's `items`), the kinds
/// the bridge reads typed. Every other kind (`userMessage`, `reasoning`, `commandExecution`,
/// `contextCompaction`, ... and those a later Codex adds), and a known kind whose fields do not
/// fit, reads as [`ThreadItem::Unknown`]: an item never fails a notification.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// The model's answer text.
    AgentMessage {
        /// Its id (the `itemId` of its deltas).
        #[serde(default)]
        id: Option<String>,
        /// Its whole text.
        #[serde(default)]
        text: Option<String>,
    },
    /// A call of a client-side (dynamic) tool.
    DynamicToolCall {
        /// Its id: the call id of `item/tool/call`.
        #[serde(default)]
        id: Option<String>,
        /// `inProgress`, `completed`, `failed`.
        #[serde(default)]
        status: Option<String>,
    },
    /// Any other item.
    #[serde(other)]
    Unknown,
}

impl ThreadItem {
    /// Reads an item, tolerating what does not fit (see the type's docs).
    pub fn read(value: &Value) -> Self {
        Self::deserialize(value).unwrap_or(Self::Unknown)
    }

    fn tolerant<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Self>, D::Error> {
        let items = Vec::<Value>::deserialize(d)?;
        Ok(items.iter().map(Self::read).collect())
    }

    fn tolerant_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::read(&Value::deserialize(d)?))
    }
}

/// A turn's failure.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// Codex's message.
    pub message: String,
    /// Its class: a string, or an object with one key.
    #[serde(default)]
    pub codex_error_info: Option<Value>,
    /// More about it (the backend's own message, for a retried request).
    #[serde(default)]
    pub additional_details: Option<String>,
}

impl TurnError {
    /// The error class (`contextWindowExceeded`, `httpConnectionFailed`, ...).
    pub fn kind(&self) -> Option<String> {
        match &self.codex_error_info {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(m)) => m.keys().next().cloned(),
            _ => None,
        }
    }
}

/// `turn/start` result.
#[derive(Debug, Clone, Deserialize)]
pub struct TurnStartResult {
    /// The new turn.
    pub turn: Turn,
}

/// `turn/steer` result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResult {
    /// The turn that took the input.
    pub turn_id: TurnId,
}

/// `item/tool/call` params: Codex asks the client to run one of its dynamic tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallParams {
    /// The thread.
    pub thread_id: ThreadId,
    /// The turn.
    pub turn_id: TurnId,
    /// The model's call id.
    pub call_id: CallId,
    /// Namespace of a namespaced tool.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Parsed arguments.
    #[serde(default)]
    pub arguments: Value,
}

/// `thread/tokenUsage/updated` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageUpdated {
    /// The thread.
    pub thread_id: ThreadId,
    /// The turn.
    pub turn_id: TurnId,
    /// Usage of the last response and of the thread.
    pub token_usage: ThreadTokenUsage,
}

/// Token usage of a thread.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// The last model response.
    pub last: TokenUsageBreakdown,
    /// The whole thread.
    pub total: TokenUsageBreakdown,
    /// The model's usable window.
    #[serde(default)]
    pub model_context_window: Option<i64>,
}

/// Token counts; `input_tokens` includes the cached ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenUsageBreakdown {
    /// Prompt tokens, cached included.
    pub input_tokens: i64,
    /// Prompt tokens read from the cache.
    pub cached_input_tokens: i64,
    /// Prompt tokens written to the cache.
    pub cache_write_input_tokens: i64,
    /// Generated tokens.
    pub output_tokens: i64,
    /// Reasoning tokens (part of `output_tokens`).
    pub reasoning_output_tokens: i64,
    /// Total.
    pub total_tokens: i64,
}

impl From<TokenUsageBreakdown> for tackle_protocol::Usage {
    fn from(u: TokenUsageBreakdown) -> Self {
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        Self {
            input_tokens: n(u.input_tokens),
            output_tokens: n(u.output_tokens),
            cache_read_tokens: n(u.cached_input_tokens),
            cache_write_tokens: n(u.cache_write_input_tokens),
            reasoning_tokens: n(u.reasoning_output_tokens),
        }
    }
}

/// A notification Tackle reads, typed by its method (`Notification::read`); the app-server
/// sends many others (`item/started`, `thread/status/changed`, `account/rateLimits/updated`,
/// ... and those a later Codex adds), which read as [`Notification::Other`]. Only the fields
/// Tackle reads are typed, each as the schema requires it.
#[derive(Debug, Clone)]
pub enum Notification {
    /// `turn/started`.
    TurnStarted(TurnNotification),
    /// `turn/completed`: the turn's final status and failure.
    TurnCompleted(TurnNotification),
    /// `item/agentMessage/delta`.
    AgentMessageDelta(TextDelta),
    /// `item/reasoning/summaryTextDelta`.
    ReasoningSummaryDelta(TextDelta),
    /// `item/reasoning/textDelta`.
    ReasoningTextDelta(TextDelta),
    /// `item/completed`.
    ItemCompleted(ItemCompleted),
    /// `rawResponseItem/completed` (experimental raw events).
    RawItemCompleted(RawItemCompleted),
    /// `rawResponse/completed` (experimental raw events).
    RawResponseCompleted(RawResponseCompleted),
    /// `thread/tokenUsage/updated`.
    TokenUsage(TokenUsageUpdated),
    /// `error`.
    Error(ErrorNotification),
    /// `warning`.
    Warning(WarningNotification),
    /// A method Tackle does not read.
    Other,
}

/// A notification of a method Tackle reads whose params do not fit its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{method}` params do not fit at `{path}`: {message}")]
pub struct NotificationError {
    /// The method.
    pub method: String,
    /// Where in the params (`turn.id`, `.` for the params themselves).
    pub path: String,
    /// What does not fit (`missing field `turnId``).
    pub message: String,
}

impl Notification {
    /// Reads the params of `method`; an unknown method is [`Notification::Other`].
    pub fn read(method: &str, params: Value) -> Result<Self, NotificationError> {
        fn typed<T: serde::de::DeserializeOwned>(
            method: &str,
            params: Value,
        ) -> Result<T, NotificationError> {
            serde_path_to_error::deserialize(params).map_err(|e| NotificationError {
                method: method.to_owned(),
                path: e.path().to_string(),
                message: e.into_inner().to_string(),
            })
        }
        Ok(match method {
            method::TURN_STARTED => Self::TurnStarted(typed(method, params)?),
            method::TURN_COMPLETED => Self::TurnCompleted(typed(method, params)?),
            method::AGENT_MESSAGE_DELTA => Self::AgentMessageDelta(typed(method, params)?),
            method::REASONING_SUMMARY_DELTA => Self::ReasoningSummaryDelta(typed(method, params)?),
            method::REASONING_TEXT_DELTA => Self::ReasoningTextDelta(typed(method, params)?),
            method::ITEM_COMPLETED => Self::ItemCompleted(typed(method, params)?),
            method::RAW_ITEM_COMPLETED => Self::RawItemCompleted(typed(method, params)?),
            method::RAW_RESPONSE_COMPLETED => Self::RawResponseCompleted(typed(method, params)?),
            method::TOKEN_USAGE => Self::TokenUsage(typed(method, params)?),
            method::ERROR => Self::Error(typed(method, params)?),
            method::WARNING => Self::Warning(typed(method, params)?),
            _ => Self::Other,
        })
    }

    /// The turn it is about, if it names one.
    pub fn turn(&self) -> Option<&TurnId> {
        match self {
            Self::TurnStarted(n) | Self::TurnCompleted(n) => Some(&n.turn.id),
            Self::AgentMessageDelta(d) | Self::ReasoningSummaryDelta(d) | Self::ReasoningTextDelta(d) => {
                Some(&d.turn_id)
            }
            Self::ItemCompleted(n) => Some(&n.turn_id),
            Self::RawItemCompleted(n) => Some(&n.turn_id),
            Self::RawResponseCompleted(n) => Some(&n.turn_id),
            Self::TokenUsage(n) => Some(&n.turn_id),
            Self::Error(n) => Some(&n.turn_id),
            Self::Warning(_) | Self::Other => None,
        }
    }
}

/// `turn/started` and `turn/completed` params.
#[derive(Debug, Clone, Deserialize)]
pub struct TurnNotification {
    /// The turn.
    pub turn: Turn,
}

/// The params of a text delta (`item/agentMessage/delta`, `item/reasoning/...Delta`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextDelta {
    /// The turn.
    pub turn_id: TurnId,
    /// The item it adds to.
    pub item_id: String,
    /// The text.
    pub delta: String,
}

/// `item/completed` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompleted {
    /// The turn.
    pub turn_id: TurnId,
    /// The item ([`ThreadItem::Unknown`] for a kind Tackle does not read).
    #[serde(deserialize_with = "ThreadItem::tolerant_one")]
    pub item: ThreadItem,
}

/// `rawResponseItem/completed` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawItemCompleted {
    /// The turn.
    pub turn_id: TurnId,
    /// The model's item, a Responses output item; one that does not read is kept as serde's
    /// reason (it still counts as a raw event; it is no call).
    #[serde(deserialize_with = "raw_item")]
    pub item: Result<tackle_wire::responses::OutputItem<'static>, String>,
}

fn raw_item<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Result<tackle_wire::responses::OutputItem<'static>, String>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(tackle_wire::responses::OutputItem::deserialize(value).map_err(|e| e.to_string()))
}

/// `rawResponse/completed` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawResponseCompleted {
    /// The turn.
    pub turn_id: TurnId,
    /// The exact usage of the model response, when the backend reported it.
    #[serde(default)]
    pub usage: Option<TokenUsageBreakdown>,
}

/// `error` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The turn.
    pub turn_id: TurnId,
    /// Whether Codex retries the request.
    pub will_retry: bool,
    /// What failed.
    pub error: TurnError,
}

/// `warning` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    /// For the user.
    pub message: String,
}

/// The `threadId` of a notification or request, if it has one.
pub fn thread_of(params: &Value) -> Option<ThreadId> {
    params.get("threadId").and_then(Value::as_str).map(ThreadId::from)
}

/// The `turnId` of a notification or request, if it has one.
pub fn turn_of(params: &Value) -> Option<TurnId> {
    params
        .get("turnId")
        .and_then(Value::as_str)
        .or_else(|| params.pointer("/turn/id").and_then(Value::as_str))
        .map(TurnId::from)
}

/// Method names.
pub mod method {
    /// Client: handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Client notification after `initialize`.
    pub const INITIALIZED: &str = "initialized";
    /// Client: new thread.
    pub const THREAD_START: &str = "thread/start";
    /// Client: load a stored thread.
    pub const THREAD_RESUME: &str = "thread/resume";
    /// Client: append raw items to a thread's history.
    pub const THREAD_INJECT_ITEMS: &str = "thread/inject_items";
    /// Client: new turn.
    pub const TURN_START: &str = "turn/start";
    /// Client: more input for the running turn.
    pub const TURN_STEER: &str = "turn/steer";
    /// Client: stop the running turn.
    pub const TURN_INTERRUPT: &str = "turn/interrupt";
    /// Server request: run a dynamic tool.
    pub const TOOL_CALL: &str = "item/tool/call";
    /// Server notifications.
    pub const TURN_STARTED: &str = "turn/started";
    /// A turn ended.
    pub const TURN_COMPLETED: &str = "turn/completed";
    /// Answer text.
    pub const AGENT_MESSAGE_DELTA: &str = "item/agentMessage/delta";
    /// An item (an answer message, a tool call, ...) is complete.
    pub const ITEM_COMPLETED: &str = "item/completed";
    /// Reasoning summary text.
    pub const REASONING_SUMMARY_DELTA: &str = "item/reasoning/summaryTextDelta";
    /// Raw reasoning text.
    pub const REASONING_TEXT_DELTA: &str = "item/reasoning/textDelta";
    /// Token usage after a model response.
    pub const TOKEN_USAGE: &str = "thread/tokenUsage/updated";
    /// A turn error (possibly retried by Codex).
    pub const ERROR: &str = "error";
    /// A warning.
    pub const WARNING: &str = "warning";
    /// One item of a model response is complete (raw events).
    pub const RAW_ITEM_COMPLETED: &str = "rawResponseItem/completed";
    /// A model response is complete (raw events).
    pub const RAW_RESPONSE_COMPLETED: &str = "rawResponse/completed";
}

#[cfg(test)]
#[path = "wire_tests.rs"]
pub(crate) mod tests;
