//! Codex's `app-server` as a model behind Tackle.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod config;
mod error;
pub mod rpc;
pub mod wire;

pub use config::CodexConfig;
pub use error::CodexError;
