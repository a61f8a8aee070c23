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
    CompactReason, CompactionReport, ContextConfig, DEFAULT_OFFLOAD_BYTES, DEFAULT_OFFLOAD_TTL,
    ReadResultArgs, ReadUnit, StoreOffloader, read_page,
};
pub use error::AgentError;
pub use session::{LoopGuardConfig, PrefixStats, Session, TurnInput, TurnOutcome};
pub use tools::{
    DeferralConfig, DeferralMode, DeferredTools, DiscoveredSkills, MaskError, MaskStrategy, Skill,
    SkillError, SkillLibrary, SkillSet, StepTools, ToolCatalog, ToolChange, ToolMask,
};
