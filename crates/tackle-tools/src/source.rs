//! [`ToolSource`]: a source of tools whose list can change while the runtime runs.

use std::sync::Arc;

use async_trait::async_trait;

use crate::Tool;

/// Tools that come from outside the process and can change while sessions run, such as an MCP
/// server that sends `notifications/tools/list_changed`.
///
/// Changes are pulled, never pushed: the agent calls [`ToolSource::refresh`] at a turn boundary,
/// so a tool list never changes in the middle of a turn (and never between two steps, which
/// would break the provider's prompt cache for nothing).
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// A short name for logs and events (`mcp`).
    fn name(&self) -> &str;

    /// The tools the source offers now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Applies the changes the source announced since the last call; true when its tools
    /// changed (then [`ToolSource::tools`] returns the new list).
    async fn refresh(&self) -> bool;
}
