//! Tools as a session sees them: the frozen catalog, per-step masks, skills, deferral behind
//! `tool_search`, tool sources whose lists change, name repair, and the agent's own tools.

mod catalog;
mod deferral;
mod mask;
mod plan;
mod repair;
mod search_result;
mod session_tools;
mod skills;
mod sources;
mod step;
pub(crate) mod todo;

pub use catalog::ToolCatalog;
pub(crate) use deferral::{Deferral, FOUND_TOOLS_KEY, FoundTools, Planned};
pub use deferral::{DeferralConfig, DeferralMode, DeferredTools};
pub use mask::{MaskError, ToolMask};
pub(crate) use plan::{MODE_KEY, PROPOSE_PLAN, ProposePlan};
pub(crate) use repair::repair_tool_name;
pub use search_result::SEARCH_RESULT_TOKENS;
pub(crate) use session_tools::{SessionTools, StepView};
pub(crate) use skills::{ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActivateSkill, ActiveSkills};
pub use skills::{DiscoveredSkills, Skill, SkillLibrary, SkillSet, SkillSource};
pub use sources::ToolChange;
pub(crate) use sources::ToolSources;
pub(crate) use step::{Availability, resolve_step};
pub use step::{MaskStrategy, StepTools};
pub(crate) use todo::TodoTool;

/// The store the current turn writes through, in its [`tackle_tools::TurnState`]: fenced by the
/// turn's lease when it holds one ([`crate::Agent::under_lease`]). Tools that keep session state
/// (todo, skills, found tools) write through it rather than the store they were built with, so
/// their writes are fenced like the loop's.
#[derive(Clone)]
pub(crate) struct TurnStore(pub(crate) tackle_store::Store);

/// The store a tool call writes through: the turn's, or `built_with` outside a turn.
pub(crate) fn store_for(
    ctx: &tackle_tools::ToolContext,
    built_with: &tackle_store::Store,
) -> tackle_store::Store {
    ctx.turn.get::<TurnStore>().map_or_else(|| built_with.clone(), |s| s.0)
}

/// What the agent's own tools ask of the loop, acted on once the step's calls are done: one
/// typed channel, shared through the turn's [`tackle_tools::TurnState`], instead of a flag per
/// request or a tool recognised by its name.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoopRequests(std::sync::Arc<std::sync::Mutex<Requests>>);

/// The requests of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Requests {
    /// Tokens spent by sub-agents the step's calls ran (`agent`), added to the turn's usage.
    pub(crate) usage: tackle_protocol::Usage,
    /// Compact the history before the next step (`compact_context`).
    pub(crate) compact: bool,
    /// Session state the tail note reports changed (the todo list): read it again.
    pub(crate) tail_state_changed: bool,
}

impl LoopRequests {
    /// Asks the loop of the turn `ctx` runs in for `request` (a no-op outside a turn).
    pub(crate) fn ask(ctx: &tackle_tools::ToolContext, request: impl FnOnce(&mut Requests)) {
        if let Some(requests) = ctx.turn.get::<Self>() {
            request(&mut requests.0.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// What was asked since the last call, leaving nothing asked.
    pub(crate) fn take(&self) -> Requests {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
