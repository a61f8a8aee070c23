//! The Tackle agent: build one with a provider and tools, then run turns in sessions.
//!
//! [`Agent::builder`] takes a provider and returns an [`AgentBuilder`]: the model, the tools
//! (builtins, typed tools, closures, MCP servers), the store, skills, deferral, hooks and an
//! approver all have working defaults. A [`Session`] is one stored conversation;
//! [`Session::run_turn`] runs the loop (request, stream, tool calls, results) until the model
//! answers without tools, the step limit, cancellation or a doom-loop stop, and every front end
//! watches it through [`tackle_tools::EventSink`] as [`tackle_protocol::AgentEvent`]s.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tackle_agent::Agent;
//! use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
//! use tackle_testkit::{FakeModel, Script, Turn};
//! use tackle_tools::{ToolFailure, tool_fn};
//!
//! /// Arguments of `add`.
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// First term.
//!     a: i64,
//!     /// Second term.
//!     b: i64,
//! }
//!
//! // A scripted model stands in for a real one here.
//! let fake = FakeModel::start(Script::new(vec![Turn::call("add", r#"{"a": 2, "b": 3}"#), Turn::text("2 + 3 = 5")]))
//!     .await
//!     .unwrap();
//! let config = ProviderConfig::new(ProviderKind::Openai).with_base_url(format!("{}/v1", fake.base_url()));
//! let agent = Agent::builder(OpenAiChat::new(config).unwrap())
//!     .model("gpt-4.1-mini")
//!     .without_builtins()
//!     .tool(tool_fn("add", "Add two integers.", |x: AddArgs| async move {
//!         Ok::<_, ToolFailure>((x.a + x.b).to_string())
//!     }))
//!     .build()
//!     .await
//!     .unwrap();
//! let outcome = agent.run("What is 2 + 3?").await.unwrap();
//! assert_eq!(outcome.text, "2 + 3 = 5");
//! assert_eq!(outcome.steps, 2);
//! # });
//! ```
//!
//! Where things live: [`session`](Session) runs turns (history, requests, tool calls);
//! tools per step come from the frozen [`ToolCatalog`], [`ToolMask`]s, skills and deferral;
//! the context window is budgeted, compacted and offloaded ([`ContextConfig`]). See
//! ARCHITECTURE.md in the repository for the map and the invariants.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod agent;
mod context;
pub mod conversation;
mod error;
mod failure;
mod output;
mod session;
mod subagent;
mod tools;

pub use agent::{
    Agent, AgentBuilder, AgentConfig, BuildError, ForkOptions, ForkReport, NewSessionOptions, RewindOptions,
    RewindReport, TelemetryConfig, ensure_idle, fork, rewind, rewind_preview,
};
pub use context::{
    CompactReason, CompactionReport, ContextConfig, DEFAULT_OFFLOAD_BYTES, ReadResultArgs, ReadUnit,
    StoreOffloader, read_page,
};
pub use error::{AgentError, ModeUnavailable};
pub use failure::{TurnFailure, provider_code};
pub use output::{FINAL_ANSWER_TOOL, OutputSchema, OutputSchemaError, RunTypedError};
pub use session::{LoopGuardConfig, Session, Streaming, TurnInput, TurnOutcome, UnknownStreaming};
pub use subagent::{
    AGENT_TOOL, SubAgent, SubAgentError, SubAgentRegistry, SubAgentSettings,
    parse_file as parse_sub_agent_file,
};
pub use tools::{
    DeferralConfig, DeferralMode, DeferredTools, DiscoveredSkills, MaskError, MaskStrategy,
    SEARCH_RESULT_TOKENS, Skill, SkillLibrary, SkillSet, SkillSource, StepTools, ToolCatalog, ToolChange,
    ToolMask,
};
