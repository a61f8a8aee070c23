//! The [`Tool`] trait and what a call returns.

use async_trait::async_trait;
use serde_json::Value;
use tackle_protocol::ToolSpec;

use crate::{FullOutput, ToolContext, ToolFailure};

/// A tool the model can call.
///
/// Implement it directly for tools whose schema is known only at run time (MCP tools), or
/// implement [`crate::TypedTool`] and wrap it with [`crate::typed`] to derive the schema from a
/// Rust argument type.
///
/// The executor validates `args` against `spec().input_schema` before `call` runs, applies hooks,
/// the timeout and the output cap; a tool only does its job and reports typed failures.
///
/// `call` runs in the turn's own task: blocking work belongs in `tokio::task::spawn_blocking`
/// (or a child process), since a call that blocks its thread holds the turn, and its timeout
/// cannot fire, until it returns.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Name, description, input schema and annotations. Must not change after registration.
    fn spec(&self) -> &ToolSpec;

    /// Runs the call. `args` already passed schema validation.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolFailure>;

    /// The schema arguments are validated against, when it differs from the one sent to the
    /// model (a tagged union is sent flattened but validated per variant).
    fn validation_schema(&self) -> Option<&Value> {
        None
    }
}

/// What a successful call returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// Structured data for front ends and logs (e.g. MCP `structuredContent`); not sent to the
    /// model unless the tool also renders it into `text`.
    pub data: Option<Value>,
    /// Deferred tools this output loads into the model's context (`tool_search` under native
    /// deferral).
    pub tool_references: Vec<String>,
    /// Everything the tool produced, when `text` is only a view of it (see [`crate::Spool`]):
    /// what the offloader stores and `read_result` restores.
    pub full: Option<FullOutput>,
}

impl ToolOutput {
    /// Output made of text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), data: None, tool_references: Vec::new(), full: None }
    }

    /// Loads these deferred tools (see [`ToolOutput::tool_references`]).
    pub fn with_tool_references(mut self, tools: Vec<String>) -> Self {
        self.tool_references = tools;
        self
    }

    /// Attaches the full output `text` is a view of.
    pub fn with_full(mut self, full: FullOutput) -> Self {
        self.full = Some(full);
        self
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}
