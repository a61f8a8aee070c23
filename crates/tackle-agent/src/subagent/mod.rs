//! Sub-agents: the `agent` tool runs a task in a child session and returns its final answer.
//!
//! A child is a session of its own (linked to the parent's session and call in the store, so
//! front ends show the tree) with its own context and tool mask, in the parent's workspace and
//! sandbox (the same agent, so the same tools, approver and store). It shares the parent's
//! frozen tool catalog and system sections byte for byte, and the parent's prompt-cache key,
//! so its first request reads the provider's cache of the parent's prefix
//! (**[subagent-shares-prefix]**; its first step's `prefix_ratio` is measured against the
//! parent's request). The loop knows nothing of this tool: it puts a [`SubAgentHost`] in the
//! turn's state when the agent has sub-agents, and the tool finds it there.
//!
//! ```no_run
//! # async fn demo(provider: std::sync::Arc<dyn tackle_provider::Provider>) -> Result<(), Box<dyn std::error::Error>> {
//! use tackle_agent::{Agent, SubAgent, SubAgentRegistry};
//! let mut agents = SubAgentRegistry::new();
//! agents.insert(SubAgent::new("reviewer", "Reviews a change for bugs.").tools(["read_file"]))?;
//! let agent = Agent::builder(provider).model("gpt-4.1").sub_agents(agents).build().await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tackle_protocol::{AgentEvent, SessionId, SystemSection};
use tackle_tools::EventSink;

use crate::session::PrefixTracker;
use crate::{Agent, Session};

mod definition;
mod tool;

pub use definition::{SubAgent, SubAgentError, SubAgentRegistry, parse_file};
pub(crate) use tool::AgentTool;

/// The name of the tool that starts a sub-agent.
pub const AGENT_TOOL: &str = "agent";

/// Limits of sub-agents (`[subagents]` in `tackle.toml`).
///
/// ```
/// assert_eq!(tackle_agent::SubAgentSettings::default().max_depth, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SubAgentSettings {
    /// How deep sub-agents nest: a top-level session is at depth 0, its children at 1; a
    /// session at this depth gets no `agent` tool (0 turns sub-agents off).
    pub max_depth: u32,
}

impl Default for SubAgentSettings {
    fn default() -> Self {
        Self { max_depth: 2 }
    }
}

/// What a session's sub-agents inherit from it, put in the turn's state by the loop when the
/// agent has sub-agents; the `agent` tool reads it there.
#[derive(Clone)]
pub(crate) struct SubAgentHost {
    /// The parent's agent (its store fenced like the parent's turn).
    pub(crate) agent: Agent,
    /// The configured sub-agents.
    pub(crate) registry: Arc<SubAgentRegistry>,
    /// The parent's owner.
    pub(crate) owner: String,
    /// The parent's depth (0 for a top-level session).
    pub(crate) depth: u32,
    /// The prompt-cache key the parent's requests carry.
    pub(crate) cache_key: String,
    /// The parent's system sections, shared byte for byte.
    pub(crate) system: Vec<SystemSection>,
}

/// The request the parent's current step sent, measured against by a child's first request.
#[derive(Clone)]
pub(crate) struct ParentRequest(pub(crate) PrefixTracker);

impl SubAgentHost {
    /// The host of `session`'s turns, when its agent has sub-agents.
    pub(crate) fn of(session: &Session) -> Option<Self> {
        let registry = session.agent.inner.subagents.clone()?;
        Some(Self {
            agent: session.agent.clone(),
            registry,
            owner: session.record.owner.clone(),
            depth: session.depth,
            cache_key: session.cache_key(),
            system: session.system.clone(),
        })
    }
}

/// The child's events as the parent's front end sees them: questions for a person (approvals,
/// elicitations) as they are, so the parent's front end answers them on its usual channel;
/// everything else wrapped in a `subagent` event naming the child and the parent's call.
pub(crate) fn forwarding_sink(parent: &EventSink, child: &SessionId, call_id: &str, depth: u32) -> EventSink {
    if parent.discards() {
        // Nobody watches the parent, so nobody watches the child: its answers need not stream.
        return EventSink::discard();
    }
    let parent = parent.clone();
    let child = child.to_string();
    let call_id = call_id.to_owned();
    EventSink::new(move |event| match event {
        AgentEvent::ApprovalRequested { .. }
        | AgentEvent::ApprovalResolved { .. }
        | AgentEvent::ElicitationRequested { .. }
        | AgentEvent::ElicitationResolved { .. } => parent.emit(event),
        other => parent.emit(AgentEvent::Custom {
            name: "subagent".into(),
            data: serde_json::json!({
                "call_id": call_id,
                "session_id": child,
                "depth": depth,
                "event": other,
            }),
        }),
    })
}
