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

/// A fixed set of tools offered as a source: treated like an MCP server's tools (after the core
/// tools, deferred behind `tool_search` when over budget), but never changing.
///
/// ```
/// use std::sync::Arc;
/// use tackle_tools::{StaticTools, Tool, ToolSource};
/// let source = StaticTools::new("plugins", Vec::<Arc<dyn Tool>>::new());
/// assert_eq!(source.name(), "plugins");
/// ```
#[derive(Clone)]
pub struct StaticTools {
    name: String,
    tools: Vec<Arc<dyn Tool>>,
}

impl StaticTools {
    /// A source named `name` offering `tools`.
    pub fn new(name: impl Into<String>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self { name: name.into(), tools }
    }
}

impl std::fmt::Debug for StaticTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTools").field("name", &self.name).field("tools", &self.tools.len()).finish()
    }
}

#[async_trait]
impl ToolSource for StaticTools {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    async fn refresh(&self) -> bool {
        false
    }
}
