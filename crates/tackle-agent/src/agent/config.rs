//! [`AgentConfig`]: the loop's settings.

use serde::{Deserialize, Serialize};

use crate::{ContextConfig, DeferralConfig, LoopGuardConfig};

/// Per-agent settings of the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentConfig {
    /// Model name sent to the provider.
    pub model: String,
    /// Steps per turn unless a turn asks for fewer or more.
    pub max_steps: u32,
    /// Output token limit per model call.
    pub max_output_tokens: Option<u32>,
    /// Doom-loop thresholds.
    pub loop_guard: LoopGuardConfig,
    /// Per-step tool availability (masks, skills); `false` is the kill switch: every tool is
    /// always active.
    pub dynamic_tools: bool,
    /// Context window management.
    pub context: ContextConfig,
    /// Deferral of tools over budget.
    pub deferral: DeferralConfig,
    /// What the loop's GenAI trace spans may carry.
    pub telemetry: TelemetryConfig,
    /// The sandbox the shell's commands run in, reported in `session_started` (set by
    /// [`crate::AgentBuilder::sandbox`]).
    pub sandbox: Option<tackle_protocol::SandboxInfo>,
    /// The permission mode of new sessions (a session keeps its own once set).
    #[serde(default)]
    pub permission_mode: tackle_tools::PermissionMode,
    /// Whether sessions may enter plan mode (the `propose_plan` tool is in the catalog).
    #[serde(default)]
    pub plan_mode: bool,
    /// Sub-agents' limits (the depth they nest to).
    #[serde(default)]
    pub subagents: crate::SubAgentSettings,
    /// Whether model answers stream: by default (`Auto`) only when the turn's events are
    /// watched.
    #[serde(default)]
    pub streaming: crate::Streaming,
}

/// What the loop's OpenTelemetry GenAI spans (`invoke_agent`, `chat {model}`,
/// `execute_tool {name}`) may carry (`[telemetry]` in `tackle.toml`). Names, ids, token counts,
/// durations and outcomes are always recorded when spans are collected; message content only
/// when `record_content` is on.
///
/// ```
/// let t = tackle_agent::TelemetryConfig::default();
/// assert!(!t.record_content);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// Record message content on the spans: the model's answer (`gen_ai.output.messages`), tool
    /// call arguments and results (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
    /// Off by default: content may hold anything the user, the model or a tool saw.
    pub record_content: bool,
}

impl AgentConfig {
    /// Defaults for `model`: 25 steps, provider default output limit, default guard, dynamic
    /// tools on.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            max_steps: 25,
            max_output_tokens: None,
            loop_guard: LoopGuardConfig::default(),
            dynamic_tools: true,
            context: ContextConfig::default(),
            deferral: DeferralConfig::default(),
            telemetry: TelemetryConfig::default(),
            sandbox: None,
            permission_mode: tackle_tools::PermissionMode::Default,
            plan_mode: false,
            subagents: crate::SubAgentSettings::default(),
            streaming: crate::Streaming::Auto,
        }
    }
}
