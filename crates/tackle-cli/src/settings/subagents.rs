//! `[subagents]` and `[agents.NAME]`: the `agent` tool and the sub-agents it offers, beside the
//! `agents/NAME.md` files of the user config dir and the workspace.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tackle_agent::{SubAgent, SubAgentError, SubAgentRegistry};

/// Whether the `agent` tool is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubAgentsSwitch {
    /// When any sub-agent is configured (a file or a table).
    #[default]
    Auto,
    /// Always (general-purpose children when none is configured).
    On,
    /// Never.
    Off,
}

/// `[subagents]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubAgentsSettings {
    /// `auto` (the `agent` tool when a sub-agent is configured), `on` or `off`
    /// (`TACKLE_SUBAGENTS_ENABLED`).
    pub enabled: SubAgentsSwitch,
    /// How deep sub-agents nest: children of a top-level session are at depth 1; at this depth
    /// the `agent` tool is not offered (`TACKLE_SUBAGENTS_MAX_DEPTH`).
    pub max_depth: u32,
}

impl Default for SubAgentsSettings {
    fn default() -> Self {
        Self {
            enabled: SubAgentsSwitch::Auto,
            max_depth: tackle_agent::SubAgentSettings::default().max_depth,
        }
    }
}

/// `[agents.NAME]`: a sub-agent defined in `tackle.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTable {
    /// When the model should hand it a task.
    pub description: String,
    /// Its instructions (the body of an `agents/NAME.md`).
    #[serde(default)]
    pub instructions: String,
    /// The tools it may call; all when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its model; the parent's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The sub-agents of `workspace`: `agents/*.md` in the user config dir, then in the workspace,
/// then `[agents.NAME]` tables (a later definition of a name replaces an earlier one). `None`
/// when the `agent` tool is off. A bad file or table is an error naming it and the field.
pub fn sub_agent_registry(
    settings: &super::Settings,
    workspace: &Path,
) -> Result<Option<SubAgentRegistry>, SubAgentError> {
    if settings.subagents.enabled == SubAgentsSwitch::Off {
        return Ok(None);
    }
    let mut registry = SubAgentRegistry::new();
    if let Some(dir) = super::user_config_dir() {
        registry.load_dir(&dir)?;
    }
    registry.load_dir(workspace)?;
    for (name, table) in &settings.agents {
        let mut agent = SubAgent::new(name, &table.description)
            .instructions(&table.instructions)
            .source(format!("tackle.toml [agents.{name}]"));
        if let Some(tools) = &table.tools {
            agent = agent.tools(tools.iter().cloned());
        }
        if let Some(model) = table.model.as_deref().filter(|m| *m != "inherit") {
            agent = agent.model(model);
        }
        registry.insert(agent)?;
    }
    let on = settings.subagents.enabled == SubAgentsSwitch::On || !registry.is_empty();
    Ok(on.then_some(registry))
}

/// The `[agents.NAME]` tables, in name order (as `tackle config` shows them).
pub type AgentTables = BTreeMap<String, AgentTable>;
