//! The typed event stream of an agent run, shared by every front end (CLI, REPL, server, SSE).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ApprovalId, ElicitationId, SessionId, StopReason, ToolCallId, ToolError, Usage};

/// One event of an agent run. Serialized as one JSON object with a `type` tag, so a run can be
/// written as JSON lines or sent as server-sent events named after the tag.
///
/// ```
/// use tackle_protocol::AgentEvent;
/// let e = AgentEvent::TextDelta { text: "hi".into() };
/// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"type":"text_delta","text":"hi"}"#);
/// assert_eq!(e.name(), "text_delta");
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A turn began in a (new or resumed) session.
    SessionStarted {
        /// Session id.
        session_id: SessionId,
        /// Provider name (`openai`, `anthropic`, ...).
        provider: String,
        /// Model name.
        model: String,
        /// True when the session existed before this turn.
        resumed: bool,
        /// The sandbox commands run in, when the agent reports one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxInfo>,
    },
    /// A model call is about to be made.
    StepStarted {
        /// 1-based step number within the turn.
        step: u32,
        /// Steps allowed in the turn.
        max_steps: u32,
    },
    /// Which tools the model may call in this step.
    ToolsResolved {
        /// Step number.
        step: u32,
        /// Callable tools, in catalog order.
        active: Vec<String>,
        /// Defined but not callable in this step, in catalog order.
        inactive: Vec<String>,
        /// How the provider is told (`all`, `allowed_tools`, `tail_note`, `none`, ...).
        strategy: String,
    },
    /// More answer text from the model.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More reasoning text from the model (display only).
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// Call id.
        id: ToolCallId,
        /// Tool name as the model spelled it.
        name: String,
        /// Arguments (the raw text as a JSON string when they were not valid JSON).
        args: Value,
    },
    /// A call waits for a person's approval.
    ApprovalRequested {
        /// Approval id, used to approve or deny.
        approval_id: ApprovalId,
        /// Call id.
        call_id: ToolCallId,
        /// Tool name.
        tool: String,
        /// Arguments of the call.
        args: Value,
    },
    /// A pending approval was decided.
    ApprovalResolved {
        /// Approval id.
        approval_id: ApprovalId,
        /// Whether the call may run.
        approved: bool,
        /// Reason given, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A running call asks the person behind the turn a question (an MCP server's
    /// elicitation): a form to fill in (`mode: form`, its JSON Schema in `schema`) or a page to
    /// visit (`mode: url`). Answered through the front end the turn runs in.
    ElicitationRequested {
        /// Elicitation id, used to answer.
        elicitation_id: ElicitationId,
        /// The call that asks.
        call_id: ToolCallId,
        /// Tool name.
        tool: String,
        /// The MCP server that asks.
        server: String,
        /// The server's question.
        message: String,
        /// `form` or `url`.
        mode: String,
        /// The form's schema (flat object of primitive fields), for `form`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<Value>,
        /// The page to open, for `url`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// A pending elicitation was answered (or withdrawn).
    ElicitationResolved {
        /// Elicitation id.
        elicitation_id: ElicitationId,
        /// `accept`, `decline` or `cancel`.
        action: String,
    },
    /// A tool call finished.
    ToolResult {
        /// Call id.
        id: ToolCallId,
        /// Tool name.
        name: String,
        /// Success or the error envelope the model sees.
        outcome: ToolOutcome,
        /// Size of the output before any cap, in bytes.
        bytes: u64,
        /// Lines of the output before any cap.
        lines: u64,
        /// True when the model sees a capped or offloaded version.
        truncated: bool,
        /// Locator of the full output when it was offloaded to the store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        locator: Option<String>,
        /// Wall time of the call.
        duration_ms: u64,
    },
    /// A model call and its tool calls are done.
    StepFinished {
        /// Step number.
        step: u32,
        /// Why the model stopped.
        #[cfg_attr(feature = "openapi", schema(value_type = String))]
        stop_reason: StopReason,
        /// Usage reported by the provider, including cache reads and writes.
        usage: Usage,
        /// Wall time of the step, model and tools.
        duration_ms: u64,
        /// Metrics of prompt-cache stability and context use, when measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metrics: Option<StepMetrics>,
    },
    /// The turn ended.
    TurnFinished {
        /// Steps taken.
        steps: u32,
        /// How the turn ended.
        reason: TurnEnd,
        /// Final answer text of the last step.
        text: String,
        /// Usage summed over the turn.
        usage: Usage,
    },
    /// Something worth a person's attention that does not stop the turn.
    Warning {
        /// What kind of warning, stable for machines.
        code: WarningCode,
        /// Explanation.
        message: String,
    },
    /// A provider call failed and will be retried.
    Retry {
        /// Attempt about to be made (2 for the first retry).
        attempt: u32,
        /// Wait before it, in milliseconds.
        wait_ms: u64,
        /// Why.
        reason: String,
    },
    /// The turn failed.
    Error {
        /// Why, stable for machines (`rate_limited`, `context_length_exceeded`, `loop_guard`,
        /// `cancelled`, ...).
        code: crate::ErrorCode,
        /// What happened and what to do.
        message: String,
    },
    /// The conversation was compacted to fit the context window. Nothing is lost: cleared
    /// outputs are restorable by locator, summarized and dropped messages stay in the store.
    ContextCompacted {
        /// Why: `threshold`, `forced` (a tool call or a command), `context_exceeded` (the provider
        /// refused the request).
        reason: String,
        /// Strategies that ran, in order: `clear_tool_results`, `summarize`, `truncate`.
        strategies: Vec<String>,
        /// Conversation tokens before.
        tokens_before: u64,
        /// Conversation tokens after.
        tokens_after: u64,
        /// Messages before.
        messages_before: u64,
        /// Messages after.
        messages_after: u64,
    },
    /// The session's tools changed, applied at the start of this turn: a tool source (an MCP
    /// server's `list_changed`) changed its list, or a resumed session found a different tool
    /// set. Never sent between two steps of a turn.
    CatalogChanged {
        /// Why: `tool_source` (a source changed while the session was open) or `resumed`.
        reason: String,
        /// Tools that appeared, sorted (listed and deferred alike).
        added: Vec<String>,
        /// Tools that went away, sorted.
        removed: Vec<String>,
        /// Whether the definitions sent to the provider changed, so its prompt cache restarts
        /// from the tools; false when only deferred tools (behind `tool_search`) changed.
        cache_break: bool,
        /// Fingerprint of the catalog now (as in `tackle sessions show`).
        fingerprint: String,
    },
    /// A lifecycle hook (a `[[hooks]]` command with an `event`) ran. Sent for every run, so
    /// front ends can show it (in verbose mode) and logs can audit it.
    HookFinished {
        /// The event it ran for, as Claude Code names it: `PreToolUse`, `PostToolUse`,
        /// `UserPromptSubmit`, `Stop`, `SessionStart`, `SessionEnd`, `PreCompact`, `Notification`.
        event: String,
        /// The hook's command (shortened for display).
        hook: String,
        /// `ok`, `blocked` (exit code 2, or a blocking decision in its JSON) or `error` (another
        /// exit code, a timeout, or a command that could not start).
        outcome: String,
        /// Its exit code; `None` when it timed out or could not start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Wall time.
        duration_ms: u64,
        /// What it said for people or the model: the reason of a block, the standard error of a
        /// failure, its `systemMessage`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Its standard output, unless it asked to suppress it (`suppressOutput`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// The session's permission mode changed (`default`, `accept-edits`, `plan`, `bypass`):
    /// e.g. the user approved a plan, which switches `plan` to `default`.
    ModeChanged {
        /// The mode now.
        mode: String,
        /// Why: `plan_approved`, `user`.
        reason: String,
    },
    /// The workspace was recorded before the turn, so `rewind` can restore it.
    CheckpointCreated {
        /// The turn it precedes.
        turn: i64,
        /// Files recorded.
        files: u64,
        /// Files whose content was read again because their size, time or inode changed.
        hashed: u64,
        /// Bytes of new content stored (compressed), 0 when nothing changed.
        stored_bytes: u64,
        /// Wall time.
        duration_ms: u64,
    },
    /// An event defined by an extension (progress, ...).
    Custom {
        /// Event name.
        name: String,
        /// Payload.
        data: Value,
    },
}

impl AgentEvent {
    /// The `type` tag, used as the SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SessionStarted { .. } => "session_started",
            Self::StepStarted { .. } => "step_started",
            Self::ToolsResolved { .. } => "tools_resolved",
            Self::TextDelta { .. } => "text_delta",
            Self::ReasoningDelta { .. } => "reasoning_delta",
            Self::ToolCall { .. } => "tool_call",
            Self::ApprovalRequested { .. } => "approval_requested",
            Self::ApprovalResolved { .. } => "approval_resolved",
            Self::ElicitationRequested { .. } => "elicitation_requested",
            Self::ElicitationResolved { .. } => "elicitation_resolved",
            Self::ToolResult { .. } => "tool_result",
            Self::StepFinished { .. } => "step_finished",
            Self::TurnFinished { .. } => "turn_finished",
            Self::Warning { .. } => "warning",
            Self::Retry { .. } => "retry",
            Self::Error { .. } => "error",
            Self::ContextCompacted { .. } => "context_compacted",
            Self::CatalogChanged { .. } => "catalog_changed",
            Self::HookFinished { .. } => "hook_finished",
            Self::ModeChanged { .. } => "mode_changed",
            Self::CheckpointCreated { .. } => "checkpoint_created",
            Self::Custom { .. } => "custom",
        }
    }
}

/// The sandbox the agent's commands run in, as reported in [`AgentEvent::SessionStarted`].
///
/// ```
/// use tackle_protocol::SandboxInfo;
/// let info = SandboxInfo { mode: "workspace-write".into(), network: false, enforced_by: Some("Linux namespaces".into()) };
/// assert_eq!(
///     serde_json::to_string(&info).unwrap(),
///     r#"{"mode":"workspace-write","network":false,"enforced_by":"Linux namespaces"}"#
/// );
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    /// `workspace-write`, `read-only` or `off`.
    pub mode: String,
    /// Whether commands may use the network.
    pub network: bool,
    /// What enforces it (`Linux namespaces`, `Landlock ABI 6 + seccomp`); `None` when off, or
    /// when the configured sandbox is unavailable and commands are refused.
    pub enforced_by: Option<String>,
}

/// How a tool call ended, as reported in [`AgentEvent::ToolResult`].
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool succeeded.
    Ok {
        /// The first few hundred characters of what the model sees.
        preview: String,
        /// The last lines of what the model sees, when it is longer than the preview (where a
        /// command's output ends, for front ends that show it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tail: Option<String>,
    },
    /// The tool failed; the model sees this envelope.
    Error {
        /// The envelope.
        envelope: ToolError,
    },
}

/// How a turn ended.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without calling tools.
    Completed,
    /// The step limit was reached; the last step ran without tools.
    MaxSteps,
    /// The turn was cancelled.
    Cancelled,
    /// The loop stopped it (repeated failures, a fatal error).
    Failed,
}

/// Per-step measurements attached to [`AgentEvent::StepFinished`].
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Size of the cache-relevant part of the request (tools, system, messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<u64>,
    /// Bytes of the request shared, from the start, with the previous request of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_bytes: Option<u64>,
    /// `prefix_bytes` over the previous request's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_ratio: Option<f64>,
    /// First JSON path that differs from the previous request, when the shared prefix ends early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_break: Option<String>,
    /// Context window use of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextReport>,
}

/// Context window use of one request, by component.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextReport {
    /// The model's window.
    pub window: u64,
    /// Tokens reserved for the answer.
    pub reserved_output: u64,
    /// Tokens used.
    pub used: u64,
    /// Tokens left in the window after the reservation.
    pub remaining: u64,
    /// Used share of the window after the reservation, in percent.
    pub percent: f64,
    /// System prompt tokens.
    pub system: u64,
    /// Skills section tokens.
    pub skills: u64,
    /// Tool definition tokens.
    pub tools: u64,
    /// Conversation tokens: the session's messages counted with the model's tokenizer
    /// (calibrated against the provider's reports when that tokenizer is not the model's own).
    /// Compaction reports its before and after in the same terms.
    pub conversation: u64,
    /// Input tokens the provider reported for the last request, when `used` starts from them
    /// (plus what was counted since); then `used` can differ from the sum of the components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_input: Option<u64>,
}

/// The kind of a [`AgentEvent::Warning`], stable for machines (serialized in snake case).
///
/// ```
/// use tackle_protocol::WarningCode;
/// assert_eq!(WarningCode::CacheBreak.as_str(), "cache_break");
/// assert_eq!(WarningCode::CacheBreak, "cache_break");
/// let parsed: WarningCode = serde_json::from_str("\"a_code_from_a_newer_tackle\"").unwrap();
/// assert_eq!(parsed, WarningCode::Other);
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WarningCode {
    /// A tool mask names tools that do not exist.
    UnknownToolInMask,
    /// A native strategy is unavailable and a fallback is used (tail notes instead of
    /// `allowed_tools`, the `tool_search` proxy instead of native deferred loading).
    StrategyFallback,
    /// The request prefix changed: the provider's prompt cache is invalidated from there.
    CacheBreak,
    /// The turn reached its step limit.
    MaxSteps,
    /// The same failing call was repeated; the model was reminded.
    RepeatedFailure,
    /// A misspelled tool name was repaired.
    ToolNameRepaired,
    /// A skill file could not be read.
    SkillInvalid,
    /// Summarizing for compaction failed; the oldest messages were dropped instead.
    SummarizationFailed,
    /// The model reused a tool-call id; the call got a fresh one and ran.
    ToolCallIdReused,
    /// A hook answered `continue: false`: the turn stopped after the step.
    HookStopped,
    /// A session's stored permission mode cannot run here; it runs in default mode.
    ModeUnavailable,
    /// The workspace could not be checkpointed before a turn (too many files, unreadable).
    CheckpointFailed,
    /// The stored history was not a valid conversation (a call without its result, an empty
    /// message, ...): it was repaired before the request, and the message says how.
    HistoryRepaired,
    /// The final answer did not match the turn's output schema; the model was shown why and
    /// asked once more.
    OutputRepair,
    /// A code this version does not know (from a newer Tackle).
    #[serde(other)]
    Other,
}

impl WarningCode {
    /// The code as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownToolInMask => "unknown_tool_in_mask",
            Self::StrategyFallback => "strategy_fallback",
            Self::CacheBreak => "cache_break",
            Self::MaxSteps => "max_steps",
            Self::RepeatedFailure => "repeated_failure",
            Self::ToolNameRepaired => "tool_name_repaired",
            Self::SkillInvalid => "skill_invalid",
            Self::SummarizationFailed => "summarization_failed",
            Self::ToolCallIdReused => "tool_call_id_reused",
            Self::HookStopped => "hook_stopped",
            Self::ModeUnavailable => "mode_unavailable",
            Self::CheckpointFailed => "checkpoint_failed",
            Self::HistoryRepaired => "history_repaired",
            Self::OutputRepair => "output_repair",
            Self::Other => "other",
        }
    }
}

impl std::fmt::Display for WarningCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for WarningCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for WarningCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
