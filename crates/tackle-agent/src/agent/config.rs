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
    /// The sandbox the shell's commands run in, reported in `session_started` (set by
    /// [`crate::AgentBuilder::sandbox`]).
    pub sandbox: Option<tackle_protocol::SandboxInfo>,
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
            sandbox: None,
        }
    }
}
