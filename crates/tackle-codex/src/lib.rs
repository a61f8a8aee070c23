//! Codex's `app-server` (JSON-RPC over a child process) as a model behind Tackle.
//!
//! - [`CodexServer`]: one `codex app-server` process for many threads, started on first use
//!   and again after it dies; [`CodexThread`]: one conversation, driven turn by turn, its
//!   `item/tool/call` requests handed out in batches and always answered.
//! - [`CodexProvider`]: Codex as the model of Tackle's agent (`--provider codex`): the
//!   session's tools are the thread's dynamic tools, and Tackle's executor runs the calls.
//! - [`CodexBridge`]: Codex behind `/v1/chat/completions` with the client's tools.
//! - [`wire`] and [`rpc`]: the messages, checked against the schema the pinned binary
//!   generates (`schema/app-server.schema.json`).
//!
//! Nothing starts until a thread is needed:
//!
//! ```
//! use tackle_codex::{CodexConfig, CodexProvider, CodexServer};
//! use tackle_protocol::{Message, ModelRequest};
//! use tackle_provider::Provider;
//!
//! let provider = CodexProvider::new(CodexServer::new(CodexConfig::default()), None);
//! assert_eq!(provider.name(), "codex");
//! assert!(provider.capabilities().parallel_tool_calls);
//! let encoded = provider.encode(&ModelRequest::new("gpt-5-codex", vec![Message::user("hi")])).unwrap();
//! assert_eq!(encoded.path, "codex:turn");
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod approvals;
mod bridge;
mod config;
mod connection;
pub mod convert;
mod error;
mod provider;
pub mod rpc;
mod server;
mod thread;
pub mod wire;

pub use approvals::{CodexApprovals, DenyNativeTools, HookApprovals, NativeToolRequest};
pub use bridge::{BridgeError, BridgeRequest, CodexBridge, tools_for};
pub use config::{CodexConfig, CodexConfigError};
pub use connection::ServerRequest;
pub use error::CodexError;
pub use provider::{ApprovalsFactory, CodexProvider};
pub use server::{CodexServer, ThreadOptions};
pub use thread::{Answer, CodexThread, ToolCall, TurnEnd, TurnEvent};
