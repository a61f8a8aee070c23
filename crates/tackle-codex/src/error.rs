//! Typed failures of the app-server connection, and how they map onto provider errors.

use tackle_provider::ProviderError;
use thiserror::Error;

/// Why a Codex operation failed.
///
/// Every failure of the app-server ends in one of these: a binary that cannot start, a process
/// that exits, a line that is not JSON-RPC, an error answer, a request left unanswered. None of
/// them hangs: requests are bounded by [`crate::CodexConfig::request_timeout_secs`] and a
/// process that dies fails everything waiting on it at once.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum CodexError {
    /// The configured command could not be started.
    #[error(
        "cannot start `{command}`: {message}; install Codex (`npm install -g @openai/codex`) or set \
         [codex] command / TACKLE_CODEX_COMMAND"
    )]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        message: String,
    },
    /// The app-server process exited or closed its output.
    #[error("codex app-server exited ({status}){}", stderr_suffix(.stderr))]
    Exited {
        /// Exit status, or how the pipe closed.
        status: String,
        /// The last lines it wrote to stderr (Codex logs there).
        stderr: String,
    },
    /// The app-server wrote a line that is not a JSON-RPC message; the connection is dropped
    /// (nothing after it can be trusted) and the next use starts a new process.
    #[error("codex app-server sent a malformed line ({error}): {excerpt}")]
    Malformed {
        /// The start of the line.
        excerpt: String,
        /// Why it does not parse.
        error: String,
    },
    /// The app-server answered a request with a JSON-RPC error.
    #[error("codex app-server rejected {method}: {message} (code {code})")]
    Rejected {
        /// The method called.
        method: String,
        /// JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// A request got no answer in time.
    #[error("codex app-server did not answer {method} within {secs} s (raise [codex] request_timeout_secs)")]
    Timeout {
        /// The method called.
        method: String,
        /// The limit.
        secs: u64,
    },
    /// A turn saw no event for too long.
    #[error("the Codex turn sent nothing for {secs} s (raise [codex] idle_timeout_secs)")]
    Idle {
        /// The limit.
        secs: u64,
    },
    /// An answer did not have the shape the protocol promises.
    #[error("unexpected answer to {method}: {message}")]
    Unexpected {
        /// The method called.
        method: String,
        /// What was wrong.
        message: String,
    },
    /// Codex could not reach its model backend and kept trying: the turn was stopped.
    #[error(
        "Codex cannot reach its model backend ({message}); the turn was stopped after {retries} retries \
         (raise [codex] backend_retries or [provider] max_retries to wait longer)"
    )]
    BackendUnreachable {
        /// Codex's last message about it.
        message: String,
        /// Retries Codex made before the turn was stopped.
        retries: u32,
    },
    /// The turn ended with an error reported by Codex (model failure, usage limit, ...).
    #[error("the Codex turn failed: {message}")]
    TurnFailed {
        /// Codex's message.
        message: String,
        /// Codex's error class (`contextWindowExceeded`, `usageLimitExceeded`, ...), if given.
        kind: Option<String>,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() { String::new() } else { format!("; its last stderr lines:\n{stderr}") }
}

impl CodexError {
    /// Whether the process is gone (the next use starts a new one).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, Self::Exited { .. } | Self::Malformed { .. })
    }
}

impl From<CodexError> for ProviderError {
    fn from(e: CodexError) -> Self {
        let message = e.to_string();
        match e {
            // A lost process is restarted and the thread resumed on the next call: retryable.
            CodexError::Exited { .. } | CodexError::Spawn { .. } => ProviderError::Network { message },
            // Retried already as often as allowed; a retried step fails at Codex's next notice.
            CodexError::BackendUnreachable { .. } => ProviderError::Network { message },
            CodexError::Malformed { .. } | CodexError::Unexpected { .. } => {
                ProviderError::Protocol { message }
            }
            CodexError::Timeout { .. } | CodexError::Idle { .. } => ProviderError::Timeout { message },
            CodexError::Rejected { code: -32001, .. } => ProviderError::Overloaded { message },
            CodexError::Rejected { .. } => ProviderError::BadRequest { message },
            CodexError::TurnFailed { kind, .. } => match kind.as_deref() {
                Some("contextWindowExceeded") => ProviderError::ContextExceeded { message },
                Some("usageLimitExceeded" | "rateLimitExceeded" | "sessionBudgetExceeded") => {
                    ProviderError::RateLimited { retry_after: None, message }
                }
                Some("serverOverloaded" | "flexUnavailable" | "policyCapacityUnavailable") => {
                    ProviderError::Overloaded { message }
                }
                Some("unauthorized") => ProviderError::Auth { message },
                Some(
                    "httpConnectionFailed"
                    | "responseStreamConnectionFailed"
                    | "responseStreamDisconnected"
                    | "responseTooManyFailedAttempts",
                ) => ProviderError::Network { message },
                Some("badRequest" | "modelNotFound") => ProviderError::BadRequest { message },
                _ => ProviderError::Server { status: 502, message },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_provider_errors_that_say_what_to_do() {
        let exited = CodexError::Exited { status: "signal 9".into(), stderr: "boom\n".into() };
        assert!(exited.to_string().contains("boom"));
        let p = ProviderError::from(exited);
        assert!(p.is_retryable(), "a lost process is retried (restart + resume)");
        let spawn = CodexError::Spawn { command: "codex app-server".into(), message: "not found".into() };
        assert!(spawn.to_string().contains("TACKLE_CODEX_COMMAND"));
        let failed =
            CodexError::TurnFailed { message: "too long".into(), kind: Some("contextWindowExceeded".into()) };
        assert!(matches!(ProviderError::from(failed), ProviderError::ContextExceeded { .. }));
        let rejected =
            CodexError::Rejected { method: "turn/start".into(), code: -32600, message: "bad".into() };
        assert!(!ProviderError::from(rejected).is_retryable());
    }
}
