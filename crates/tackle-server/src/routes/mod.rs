//! Request handlers, one module per resource.

pub mod approvals;
pub mod chat_wire;
pub mod codex_bridge;
pub mod compat;
pub mod elicitations;
pub mod health;
pub mod messages;
pub mod metrics;
pub mod openai;
pub mod responses;
pub mod results;
pub mod rewind;
pub mod sessions;
pub mod web;
