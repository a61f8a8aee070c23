//! [`McpServeSettings`]: the `[mcp_serve]` table of `tackle.toml`, read by `tackle mcp serve`.

use serde::{Deserialize, Serialize};
use tackle_tools::ApprovalPolicy;

/// How `tackle mcp serve` serves Tackle to MCP clients. Its HTTP transport authenticates with
/// the `[server]` tokens and offers the `[server] models`, like `tackle serve`.
///
/// ```toml
/// [mcp_serve]
/// transport = "http"        # or "stdio" (the default); `--http [ADDR]` chooses HTTP
/// bind = "127.0.0.1:8788"
/// tools = true              # also list Tackle's own tools (`--tools`)
/// approval = "deny"         # calls needing confirmation when the client cannot be asked
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServeSettings {
    /// `stdio` (the client starts `tackle mcp serve` as its child) or `http` (Streamable HTTP at
    /// `http://BIND/mcp`) (`TACKLE_MCP_SERVE_TRANSPORT`).
    pub transport: McpTransport,
    /// Address the HTTP transport listens on, HOST:PORT (`--http ADDR` overrides it). Without
    /// `[server]` tokens only loopback addresses are allowed.
    pub bind: String,
    /// List Tackle's own tools (files, shell, search, its MCP servers' tools) besides `tackle`
    /// and `tackle_reply`, each call through the same executor as in a run (`--tools`).
    pub tools: bool,
    /// Calls needing confirmation when the client did not declare elicitation (nobody can be
    /// asked): `deny` (the default), `auto`, or `wait:SECONDS` (`TACKLE_MCP_SERVE_APPROVAL`).
    /// Clients that declared it are asked through an elicitation form instead.
    pub approval: ApprovalPolicy,
}

/// The transport of `tackle mcp serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// JSON-RPC lines on standard input and output.
    #[default]
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl Default for McpServeSettings {
    fn default() -> Self {
        Self {
            transport: McpTransport::Stdio,
            bind: "127.0.0.1:8788".to_owned(),
            tools: false,
            approval: ApprovalPolicy::Deny,
        }
    }
}
