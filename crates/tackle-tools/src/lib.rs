//! The Tackle tool framework.
//!
//! A [`Tool`] has a [`tackle_protocol::ToolSpec`] and an async `call`; [`TypedTool`] derives
//! the schema from a Rust type. The [`ToolRegistry`] keeps tools in order; the
//! [`ToolExecutor`] runs a call through validation, the [`HookPolicy`], approvals, a timeout
//! and the output cap, and turns every failure into the [`tackle_protocol::ToolError`]
//! envelope the model sees. [`ToolSearchIndex`] ranks tool definitions for a free-text query
//! (BM25), for tools deferred behind `tool_search`.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod approval;
mod context;
mod doc;
mod events;
mod executor;
mod failure;
mod function;
mod hooks;
pub mod lint;
mod output_cap;
mod registry;
pub mod schema;
mod search;
mod source;
mod tool;
mod typed;
mod validation;

pub use approval::{
    ApprovalDecision, ApprovalError, ApprovalQueue, ApprovalRequest, Approver, AutoApprove, DenyAll,
};
pub use context::{ProgressSink, ToolContext, ToolProgress, TurnState};
pub use doc::ToolDoc;
pub use events::EventSink;
pub use executor::{CallOptions, CallReport, ExecLimits, Offloaded, OutputOffloader, ToolExecutor};
pub use failure::ToolFailure;
pub use function::{FnTool, IntoTool, tool_fn};
pub use hooks::{AnnotationMatch, ApprovalMode, HookAction, HookDecision, HookError, HookPolicy, HookRule};
pub use output_cap::{Capped, OutputCap, cap_output, count_lines};
pub use registry::{RegistryError, ToolRegistry};
pub use search::{BM25_B, BM25_K1, ToolSearchIndex};
pub use source::{StaticTools, ToolSource};
pub use tool::{Tool, ToolOutput};
pub use typed::{TypedTool, typed};
