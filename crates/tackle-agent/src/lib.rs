//! The Tackle agent: sessions, the loop, and the runtime rules around it.
//!
//! An [`Agent`] holds a provider, a tool executor and a store. A [`Session`] is one
//! conversation; [`Session::run_turn`] runs the loop: request, stream, tool calls, results,
//! until the model answers without tools, the step limit, cancellation or a doom-loop stop.
//! Everything a front end shows comes through an [`tackle_tools::EventSink`] as
//! [`tackle_protocol::AgentEvent`]s.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod agent;
mod catalog;
mod compact;
mod compact_tool;
mod context_window;
mod deferral;
mod error;
pub mod invariants;
mod loop_guard;
mod mask;
mod model_call;
mod offload;
mod prefix;
mod read_result;
mod session;
mod skills;
mod step_tools;
mod system_prompt;
mod tail_note;
mod todo;
mod tool_calls;
mod tool_repair;
mod tool_sources;
mod turn;

pub use agent::{Agent, AgentConfig, NewSessionOptions};
pub use catalog::ToolCatalog;
pub use compact::{CompactReason, CompactionReport};
pub use compact_tool::{CompactContext, CompactContextArgs};
pub use context_window::ContextConfig;
pub use deferral::{
    CALL_TOOL, CallTool, CallToolArgs, DeferralConfig, DeferralMode, DeferredTools, FOUND_TOOLS_KEY,
    FoundTools, TOOL_SEARCH, ToolSearch, ToolSearchArgs, plan_deferral,
};
pub use error::AgentError;
pub use loop_guard::{LoopGuard, LoopGuardConfig, Verdict, canonical_json};
pub use mask::ToolMask;
pub use offload::{DEFAULT_OFFLOAD_BYTES, DEFAULT_OFFLOAD_TTL, StoreOffloader, offload_reference};
pub use prefix::{PrefixStats, PrefixTracker};
pub use read_result::{ReadResult, ReadResultArgs, ReadUnit, read_page};
pub use session::{Session, TurnInput, TurnOutcome};
pub use skills::{
    ACTIVE_SKILLS_KEY, ActivateSkill, ActivateSkillArgs, ActiveSkills, MAX_ACTIVE_SKILLS, Skill, SkillSet,
    parse_skill,
};
pub use step_tools::{Availability, MaskStrategy, StepTools, resolve_step};
pub use system_prompt::{BASE_PROMPT, system_sections};
pub use tail_note::{NOTE_PREFIX, TailNotes, TailState};
pub use todo::{TodoArgs, TodoTool};
pub use tool_repair::repair_tool_name;
pub use tool_sources::ToolChange;
