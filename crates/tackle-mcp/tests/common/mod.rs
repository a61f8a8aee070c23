//! Helpers shared by the integration tests: locating the test server and the npm servers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tackle_mcp::McpServerConfig;
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

/// The `node_modules` directory holding the reference servers, installing them with
/// `tests/npm-servers.sh` when missing. `None` (with the reason printed) when node or npm is
/// absent or the install fails.
pub fn node_modules() -> Option<PathBuf> {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("SKIP: `node` is not installed; the npm MCP server tests need it");
        return None;
    }
    let dir = match std::env::var_os("TACKLE_MCP_NODE_MODULES") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("target/mcp-servers/node_modules"),
    };
    let installed = |dir: &Path| {
        ["server-everything", "server-filesystem"]
            .iter()
            .all(|p| dir.join("@modelcontextprotocol").join(p).join("package.json").exists())
    };
    if !installed(&dir) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npm-servers.sh");
        let prefix = dir.parent().unwrap_or(&dir).to_path_buf();
        let status = Command::new("bash").arg(&script).arg(&prefix).status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!(
                    "SKIP: {} failed ({s}); is npm installed and the registry reachable?",
                    script.display()
                );
                return None;
            }
            Err(e) => {
                eprintln!("SKIP: could not run {}: {e}", script.display());
                return None;
            }
        }
    }
    installed(&dir).then_some(dir)
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
