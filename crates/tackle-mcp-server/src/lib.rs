//! `tackle mcp serve`: Tackle as an MCP server, so any MCP host (Claude Code, codex, Cursor, an
//! SDK) can hand a task to a Tackle agent.
//!
//! One entry point, [`TackleMcp`]: an rmcp [`ServerHandler`](rmcp::ServerHandler) over an
//! [`Agent`](tackle_agent::Agent), served over stdio ([`serve_stdio`]) or Streamable HTTP
//! ([`http_router`], behind a bearer-token layer). Its tools:
//! - `tackle`: runs a task in a new session to its final answer, through the same
//!   [`Session::run_turn`](tackle_agent::Session::run_turn) every front end uses, so the session
//!   is in the configured store (`tackle sessions show ID`);
//! - `tackle_reply`: one more turn in such a session;
//! - both take an optional `output_schema` (a JSON Schema): the turn's final answer must match
//!   it ([`OutputSchema`](tackle_agent::OutputSchema), as `tackle run --output-schema` asks), and
//!   the result's `structuredContent.output` carries it;
//! - with [`McpServeOptions::expose_tools`], Tackle's own tools, each call through the agent's
//!   executor (hooks, approvals, sandbox, output caps), as in a run.
//!
//! While a turn runs, a client that sent a `progressToken` gets `notifications/progress`; a
//! `notifications/cancelled` for the call cancels the turn; a call that needs confirmation is
//! asked of the client through elicitation when it declared that capability
//! ([`ClientApprovals`]), else [`McpServeOptions::approval`] decides.
//!
//! ```no_run
//! # async fn demo(agent: tackle_agent::Agent) -> Result<(), tackle_mcp_server::ServeError> {
//! use tackle_mcp_server::{ClientApprovals, McpServeOptions, TackleMcp};
//! // The agent was built with `approvals` as its approver (`Agent::builder(..).shared_approver(..)`).
//! let approvals = ClientApprovals::default();
//! let server = TackleMcp::new(agent, approvals, McpServeOptions::default());
//! tackle_mcp_server::serve_stdio(server).await
//! # }
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod approvals;
mod handler;
mod http;
mod progress;

pub use approvals::ClientApprovals;
pub use handler::{McpServeOptions, TackleMcp};
pub use http::{Authenticator, http_router};

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not start (the client's `initialize` failed) or broke.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// Listening or serving HTTP failed.
    #[error("cannot serve MCP over HTTP: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves `server` on this process's standard input and output until the client closes them.
pub async fn serve_stdio(server: TackleMcp) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let running =
        server.serve(rmcp::transport::stdio()).await.map_err(|e| ServeError::Session(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}
