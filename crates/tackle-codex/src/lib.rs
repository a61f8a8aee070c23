//! Codex's `app-server` as a model behind Tackle.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

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
pub use config::{CodexConfig, InvalidEnv};
pub use connection::ServerRequest;
pub use error::CodexError;
pub use provider::{ApprovalsFactory, CodexProvider};
pub use server::{CodexServer, ThreadOptions};
pub use thread::{Answer, CodexThread, ToolCall, TurnEnd, TurnEvent};
