//! The Tackle tool framework.
//!
//! A [`Tool`] has a [`tackle_protocol::ToolSpec`] and an async `call`; [`TypedTool`] derives
//! the schema from a Rust type. The [`ToolRegistry`] keeps tools in order; the
//! [`ToolExecutor`] runs a call through validation, the [`HookPolicy`], approvals, a timeout
//! and the output cap, and turns every failure into the [`tackle_protocol::ToolError`]
//! envelope the model sees. [`ToolSearchIndex`] ranks tool definitions for a free-text query
//! (field-weighted BM25 with stemming, or plain BM25), for tools deferred behind `tool_search`.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tackle_protocol::{ToolInput, ToolUse};
//! use tackle_tools::{ApprovalMode, AutoApprove, CallOptions, ExecLimits, HookPolicy, IntoTool, ToolContext,
//!     ToolExecutor, ToolFailure, ToolRegistry, tool_fn};
//!
//! /// Arguments of `add`.
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// First term.
//!     a: i64,
//!     /// Second term.
//!     b: i64,
//! }
//! let mut registry = ToolRegistry::new();
//! registry.register(tool_fn("add", "Add two integers.", |x: AddArgs| async move { (x.a + x.b).to_string() }).into_tool()).unwrap();
//! let executor = ToolExecutor::new(Arc::new(registry), HookPolicy::defaults(ApprovalMode::Headless),
//!     Arc::new(AutoApprove), ExecLimits::default());
//! let ctx = ToolContext::new("session", "call_1", std::env::temp_dir());
//! let ok = ToolUse { id: "call_1".into(), name: "add".into(), input: ToolInput::parse(r#"{"a": 2, "b": 3}"#) };
//! assert_eq!(executor.execute(&ok, ctx.clone(), &CallOptions::default()).await.result.content, "5");
//! // A bad call gets an envelope the model can learn from, and never runs.
//! let bad = ToolUse { id: "call_2".into(), name: "add".into(), input: ToolInput::parse(r#"{"a": "two"}"#) };
//! let report = executor.execute(&bad, ctx.for_call("call_2"), &CallOptions::default()).await;
//! assert!(report.result.is_error && report.result.content.contains("invalid_args"));
//! # });
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod approval;
mod context;
mod doc;
pub mod elicitation;
mod events;
mod executor;
mod failure;
mod function;
mod hooks;
pub mod lint;
mod modes;
mod output_cap;
mod registry;
pub mod schema;
mod script_hooks;
mod search;
mod source;
mod spool;
mod tool;
mod typed;
mod validation;

pub use approval::{
    ApprovalDecision, ApprovalError, ApprovalPolicy, ApprovalQueue, ApprovalRequest, Approver, AutoApprove,
    DenyAll, InvalidApprovalPolicy,
};
pub use context::{ProgressSink, ToolContext, ToolProgress, TurnState, WaitClock, WaitGuard, WaitState};
pub use doc::ToolDoc;
pub use elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationKind, ElicitationPolicy, ElicitationQueue,
    ElicitationRequest, Elicitor, FormError, Question, TurnElicitor, elicit,
};
pub use events::EventSink;
pub use executor::{
    CallOptions, CallReport, ExecLimits, HookStop, NOBODY_TO_CONFIRM, Offloaded, OutputOffloader,
    ToolExecutor,
};
pub use failure::ToolFailure;
pub use function::{FnTool, IntoTool, IntoToolResult, tool_fn};
pub use hooks::{AnnotationMatch, ApprovalMode, HookAction, HookDecision, HookError, HookPolicy, HookRule};
pub use modes::{DEFAULT_EDIT_TOOLS, ModeError, ModeRules, PermissionMode};
pub use output_cap::{Capped, OutputCap, cap_full_output, cap_output, count_lines};
pub use registry::{RegistryError, ToolRegistry};
pub use script_hooks::{
    CommandHook, DEFAULT_HOOK_TIMEOUT_SECS, EventOutcome, HookEntry, HookEnv, HookEvent, HookHandler,
    HookJsonOutput, HookListing, HookMatcher, HookPayload, HookReply, HookScope, HookSpecificOutput,
    HookToolNames, HookVerdict, Permission, PreToolOutcome, ScriptHook, ScriptHookError, ScriptHooks,
    UnknownHookEvent, interpret, split_hooks,
};
pub use search::{BM25_B, BM25_K1, FieldWeights, Ranker, ToolSearchIndex, UnknownRanker};
pub use source::{StaticTools, ToolSource};
pub use spool::{DEFAULT_SPOOL_BYTES, FullOutput, FullPart, SPOOL_MEMORY_BYTES, Spool, SpoolBudget};
pub use tool::{Tool, ToolOutput};
pub use typed::{TypedTool, typed};
pub use validation::ArgsValidator;
