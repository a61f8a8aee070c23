//! Helpers shared by the integration tests: locating the test server and the npm servers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tackle_mcp::McpServerConfig;
use tackle_testkit::peers;
use tackle_tools::{Tool, ToolContext, ToolFailure, ToolOutput};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Path of the `mcp_test_server` example binary, building it when it is missing.
pub fn test_server_path() -> PathBuf {
    tackle_testkit::example_binary("tackle-mcp", "mcp_test_server").unwrap()
}

/// Config of the 100-tool test server.
pub fn test_server_config() -> McpServerConfig {
    McpServerConfig::stdio(test_server_path().to_string_lossy(), Vec::<String>::new())
        .with_start_timeout(Duration::from_secs(20))
        .with_call_timeout(Duration::from_secs(20))
}

/// The `node_modules` directory holding the reference servers (installed by
/// scripts/test-deps.sh); `None` when they are missing and peers are optional, a failure when
/// `TACKLE_REQUIRE_PEERS` is set.
pub fn node_modules() -> Option<PathBuf> {
    for package in ["@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem"] {
        peers::or_skip(peers::npm_package(package))?;
    }
    Some(peers::node_modules())
}

/// Entry point of an npm MCP server package.
pub fn server_script(node_modules: &Path, package: &str) -> String {
    node_modules
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// Calls a tool with a fresh context.
pub async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolFailure> {
    let ctx = ToolContext::new("session", "call", std::env::temp_dir());
    tool.call(args, ctx).await
}

/// The tool named `name` among `tools`.
pub fn find<'a>(tools: &'a [std::sync::Arc<dyn Tool>], name: &str) -> &'a dyn Tool {
    tools.iter().find(|t| t.spec().name == name).map(|t| t.as_ref()).unwrap_or_else(|| {
        panic!("no tool {name}; have {:?}", tools.iter().map(|t| &t.spec().name).collect::<Vec<_>>())
    })
}
