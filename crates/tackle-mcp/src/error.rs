//! Errors of connecting to MCP servers and calling them.

use std::time::Duration;

/// Why connecting to, listing or calling an MCP server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server process could not be started.
    #[error("could not start `{command}`: {reason}")]
    Spawn {
        /// The program (without arguments).
        command: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A configured HTTP header is not a valid header (the value is never shown).
    #[error("invalid HTTP header `{name}`")]
    InvalidHeader {
        /// Header name as configured.
        name: String,
    },
    /// The server needs OAuth authorization that could not be obtained (the message says what
    /// to do, e.g. run `tackle mcp login NAME`).
    #[error("{0}")]
    Auth(String),
    /// The MCP handshake failed.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// Starting the server and the handshake took longer than the start timeout.
    #[error("the server did not start within {0:?}")]
    StartTimeout(Duration),
    /// A request ran past its time limit.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server is not connected (it crashed, closed the connection, or never started);
    /// a reconnect is under way.
    #[error("server unavailable: {0}")]
    Unavailable(String),
    /// The call was cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error.
    #[error("{0}")]
    Server(String),
    /// The server broke the protocol (e.g. an unexpected response or an endless cursor loop).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The connection was shut down on purpose.
    #[error("the connection was shut down")]
    Shutdown,
}
