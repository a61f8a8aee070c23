//! Wire-neutral types shared by every Tackle crate.
//!
//! This crate holds the vocabulary of a conversation with a model and of an agent run, with no IO:
//! [`Message`]s made of [`ContentBlock`]s, [`ToolSpec`]s and [`ToolChoice`], the [`ModelRequest`]
//! sent to a provider, the [`StreamEvent`]s a provider yields, [`Usage`] and [`StopReason`], the
//! [`ToolError`] envelope a model sees when a tool fails, and the [`AgentEvent`] stream every
//! front end consumes.
//!
//! Provider crates translate these types to and from their wire formats; nothing here knows about
//! HTTP, JSON field names of a particular provider, or storage.
//!
//! ```
//! use tackle_protocol::{ContentBlock, Message, ToolInput, ToolResult, ToolUse};
//! let call = ToolUse { id: "call_1".into(), name: "read_file".into(), input: ToolInput::parse(r#"{"path": "a.txt"}"#) };
//! let assistant = Message { role: tackle_protocol::Role::Assistant, content: vec![ContentBlock::ToolUse(call)] };
//! let results = Message::tool_results(vec![ToolResult::ok("call_1", "hello")]);
//! assert!(tackle_protocol::Message::user("read a.txt").tool_uses().next().is_none());
//! assert_eq!(assistant.tool_uses().next().unwrap().id, "call_1");
//! assert_eq!(results.tool_results_iter().next().unwrap().content, "hello");
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod envelope;
mod event;
mod failure;
mod front_matter;
mod ids;
mod message;
mod request;
mod response;
mod secrets;
mod tool;

pub use envelope::{ErrorCategory, ToolError};
pub use event::{AgentEvent, ContextReport, SandboxInfo, StepMetrics, ToolOutcome, TurnEnd, WarningCode};
pub use failure::{ErrorCode, FailureReport};
pub use front_matter::split_front_matter;
pub use ids::{ApprovalId, ElicitationId, SessionId, ToolCallId};
pub use message::{ContentBlock, Message, Reasoning, Role, ToolInput, ToolResult, ToolUse};
pub use request::{CacheBreakpoint, CachePolicy, ModelRequest, OutputFormat, SystemSection};
pub use response::{ModelResponse, ResponseAccumulator, StopReason, StreamEvent, Usage};
pub use secrets::{MASK, is_secret_key, mask_url};
pub use tool::{AllowedToolsMode, ToolAnnotations, ToolChoice, ToolSpec, is_valid_tool_name};
