//! Tools as a session sees them: the frozen catalog, per-step masks, skills, deferral behind
//! `tool_search`, tool sources whose lists change, name repair, and the agent's own tools.

mod catalog;
mod deferral;
mod mask;
mod plan;
mod repair;
mod session_tools;
mod skills;
mod sources;
mod step;
pub(crate) mod todo;

pub use catalog::ToolCatalog;
pub(crate) use deferral::{
    CALL_TOOL, CallTool, FOUND_TOOLS_KEY, FoundTools, TOOL_SEARCH, ToolSearch, plan_deferral,
};
pub use deferral::{DeferralConfig, DeferralMode, DeferredTools};
pub use mask::{MaskError, ToolMask};
pub(crate) use plan::{MODE_KEY, PROPOSE_PLAN, ProposePlan};
pub(crate) use repair::repair_tool_name;
pub(crate) use session_tools::{Planned, SessionTools, StepView};
pub(crate) use skills::{ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActivateSkill, ActiveSkills};
pub use skills::{DiscoveredSkills, Skill, SkillError, SkillLibrary, SkillSet};
pub use sources::ToolChange;
pub(crate) use sources::ToolSources;
pub(crate) use step::{Availability, resolve_step};
pub use step::{MaskStrategy, StepTools};
pub(crate) use todo::TodoTool;
