//! MCP servers as Tackle tool sources.
//!
//! - [`config`]: `[mcp.servers.<name>]` tables ([`McpServerConfig`], [`McpTransportConfig`]).
//! - [`McpConnection`]: one server over stdio or Streamable HTTP (rmcp client), with start and
//!   call timeouts, pagination, crash detection and reconnection, and the `list_changed` flag.
//! - [`McpTool`]: an MCP tool as a [`tackle_tools::Tool`] under a namespaced name
//!   ([`namespaced_name`]); [`map_call_result`] turns MCP content into what the model reads.
//! - [`McpManager`]: every configured server, started in parallel, failures reported and skipped.
//! - [`skills`]: the skills servers serve (SEP-2640), read on activation and verified against
//!   their listing ([`McpSkill`], [`verify_skill_md`]).
//!
//! ```
//! let config: tackle_mcp::McpConfig = toml::from_str(r#"
//!     [servers.files]
//!     command = "npx"
//!     args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
//! "#).unwrap();
//! assert!(config.servers.contains_key("files"));
//! assert_eq!(tackle_mcp::namespaced_name("files", "read_file"), "files__read_file");
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

pub mod attach;
pub mod config;
mod connection;
mod content;
mod error;
mod manager;
mod naming;
pub mod oauth;
mod options;
mod routes;
pub mod skills;
mod tool;

pub use config::{
    ConfigError, McpConfig, McpProtocol, McpServerConfig, McpTransportConfig, OAuthClientSettings,
    OAuthGrant, SigningAlgorithm, UnknownSigningAlgorithm,
};
pub use connection::{CallOutcome, McpConnection};
pub use content::{block_text, map_call_result, prompt_message_text, resource_text};
pub use error::McpError;
pub use manager::{McpManager, McpServerInfo, McpServerStatus};
pub use naming::{MAX_TOOL_NAME_LEN, NAMESPACE_SEPARATOR, namespace_all, namespaced_name, sanitize};
pub use options::McpOptions;
pub use skills::{McpSkill, SkillLoadError, verify_skill_md};
pub use tool::{McpTool, failure_from_error, map_annotations, spec_from_mcp};
