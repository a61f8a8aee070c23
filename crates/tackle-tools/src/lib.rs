//! The Tackle tool framework.
//!
//! A [`Tool`] has a [`tackle_protocol::ToolSpec`] and an async `call`. [`TypedTool`] derives the
//! schema from a Rust type. Tools report [`ToolFailure`]s, which become the
//! [`tackle_protocol::ToolError`] envelope the model sees.

mod context;
mod doc;
mod events;
mod failure;
pub mod lint;
pub mod schema;
mod tool;
mod typed;

pub use context::{ProgressSink, ToolContext, ToolProgress, TurnState};
pub use doc::ToolDoc;
pub use events::EventSink;
pub use failure::ToolFailure;
pub use tool::{Tool, ToolOutput};
pub use typed::{TypedTool, typed};
