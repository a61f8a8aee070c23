//! Tools as a session sees them: the frozen catalog, per-step masks, skills, deferral behind
//! `tool_search`, tool sources whose lists change, name repair, and the agent's own tools.

mod catalog;
mod deferral;
mod mask;
mod repair;
mod session_tools;
mod skills;
mod sources;
mod step;
mod todo;

pub use catalog::ToolCatalog;
pub use deferral::{
    CALL_TOOL, CallTool, CallToolArgs, DeferralConfig, DeferralMode, DeferredTools, FOUND_TOOLS_KEY,
    FoundTools, TOOL_SEARCH, ToolSearch, ToolSearchArgs, plan_deferral,
};
pub use mask::ToolMask;
pub use repair::repair_tool_name;
pub(crate) use session_tools::{Planned, SessionTools, StepView};
pub use skills::{
    ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActivateSkill, ActivateSkillArgs, ActiveSkills, DiscoveredSkills,
    MAX_ACTIVE_SKILLS, Skill, SkillLibrary, SkillSet, parse_skill,
};
pub use sources::ToolChange;
pub(crate) use sources::ToolSources;
pub use step::{Availability, MaskStrategy, StepTools, resolve_step};
pub use todo::{TodoArgs, TodoTool};
