//! The Tackle agent: sessions, the loop, and the runtime rules around it.
//!
//! An [`Agent`] holds a provider, a tool executor and a store. A [`Session`] is one
//! conversation; [`Session::run_turn`] runs the loop: request, stream, tool calls, results,
//! until the model answers without tools, the step limit, cancellation or a doom-loop stop.
//! Everything a front end shows comes through an [`tackle_tools::EventSink`] as
//! [`tackle_protocol::AgentEvent`]s.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod agent;
mod context;
mod error;
pub mod invariants;
mod session;
mod tools;

pub use agent::{Agent, AgentBuilder, AgentConfig, BuildError, NewSessionOptions};
pub use context::{
    CompactContext, CompactContextArgs, CompactReason, CompactionReport, ContextConfig,
    DEFAULT_OFFLOAD_BYTES, DEFAULT_OFFLOAD_TTL, ReadResult, ReadResultArgs, ReadUnit, StoreOffloader,
    offload_reference, read_page,
};
pub use error::AgentError;
pub use session::{
    BASE_PROMPT, LoopGuard, LoopGuardConfig, NOTE_PREFIX, PrefixStats, PrefixTracker, Session, TailNotes,
    TailState, TurnInput, TurnOutcome, Verdict, canonical_json, system_sections,
};
pub use tools::{
    ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActivateSkill, ActivateSkillArgs, ActiveSkills, Availability,
    CALL_TOOL, CallTool, CallToolArgs, DeferralConfig, DeferralMode, DeferredTools, DiscoveredSkills,
    FOUND_TOOLS_KEY, FoundTools, MAX_ACTIVE_SKILLS, MaskStrategy, Skill, SkillLibrary, SkillSet, StepTools,
    TOOL_SEARCH, TodoArgs, TodoTool, ToolCatalog, ToolChange, ToolMask, ToolSearch, ToolSearchArgs,
    parse_skill, plan_deferral, repair_tool_name, resolve_step,
};
