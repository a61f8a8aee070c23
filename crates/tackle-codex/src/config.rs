//! `[codex]` in `tackle.toml`: how to start `codex app-server` and how patient to be with it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How Tackle runs and talks to `codex app-server`.
///
/// ```toml
/// [codex]
/// command = "codex"                 # or a full path; TACKLE_CODEX_COMMAND
/// args = ["app-server"]             # TACKLE_CODEX_ARGS (JSON array or comma-separated)
/// home = "/home/me/.codex"          # CODEX_HOME of the child; TACKLE_CODEX_HOME
/// pass_env = ["OPENAI_API_KEY"]     # secrets the child may see; TACKLE_CODEX_PASS_ENV
/// builtin_tools = false             # Codex's own shell, apply_patch, web search; TACKLE_CODEX_BUILTIN_TOOLS
/// bridge = true                     # tackle serve: models codex/<model>; TACKLE_CODEX_BRIDGE
/// models = ["gpt-5-codex"]          # listed by /v1/models; TACKLE_CODEX_MODELS
/// ```
///
/// ```
/// use tackle_codex::CodexConfig;
/// let c = CodexConfig::default();
/// assert_eq!(c.command, "codex");
/// assert!(!c.builtin_tools);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodexConfig {
    /// The Codex executable (looked up on `PATH` unless it is a path).
    pub command: String,
    /// Its arguments; `app-server` starts the JSON-RPC server on stdio.
    pub args: Vec<String>,
    /// `CODEX_HOME` of the child (where Codex keeps its login, config and threads); unset: the
    /// child inherits the variable, or Codex's default `~/.codex`.
    pub home: Option<PathBuf>,
    /// Variables passed to the child even though they look like secrets. Every other variable
    /// whose name looks like a secret (`*KEY*`, `*TOKEN*`, `OPENAI_*`, ...) is withheld; Codex
    /// reads its login from `CODEX_HOME`.
    pub pass_env: Vec<String>,
    /// Keep Codex's own tools (shell, apply_patch, web search, ...) next to Tackle's. Their
    /// approval requests follow Tackle's hook policy. Off by default: Tackle's tools replace
    /// them.
    pub builtin_tools: bool,
    /// Limit for every JSON-RPC request to the app-server (not for turns), in seconds.
    pub request_timeout_secs: u64,
    /// A tool call Codex asked for and nobody answered within this many seconds is answered
    /// with an error result, and its turn is interrupted.
    pub tool_call_timeout_secs: u64,
    /// A running turn that sends no event for this many seconds fails.
    pub idle_timeout_secs: u64,
    /// Times in a row Codex may try to reach its model backend again (its `Reconnecting...`
    /// notices) before Tackle stops the turn with an error, so a backend that is down fails the
    /// turn in seconds instead of after Codex's own retries (unbounded by default). Unset: the
    /// provider's `max_retries`.
    pub backend_retries: Option<u32>,
    /// Extra Codex configuration for every thread (`thread/start` `config`), e.g.
    /// `{ model_reasoning_effort = "high" }`.
    pub thread_config: BTreeMap<String, serde_json::Value>,
    /// Serve Codex on `tackle serve`'s `/v1/chat/completions` as models `codex/<model>` (on by
    /// itself with `--provider codex`).
    pub bridge: bool,
    /// Models `/v1/models` lists as `codex/<model>` besides `codex/default` (Codex's configured
    /// model); any other name is accepted too.
    pub models: Vec<String>,
}

/// Backend retries when neither `[codex] backend_retries` nor the provider's `max_retries` says.
const DEFAULT_BACKEND_RETRIES: u32 = 2;

impl Default for CodexConfig {
    fn default() -> Self {
        Self {
            command: "codex".into(),
            args: vec!["app-server".into()],
            home: None,
            pass_env: Vec::new(),
            builtin_tools: false,
            request_timeout_secs: 60,
            tool_call_timeout_secs: 900,
            idle_timeout_secs: 600,
            backend_retries: None,
            thread_config: BTreeMap::new(),
            bridge: false,
            models: Vec::new(),
        }
    }
}

/// A `[codex]` value that cannot work; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodexConfigError {
    /// No executable to start.
    #[error("[codex] command is empty; set it to the codex executable")]
    EmptyCommand,
    /// A timeout of zero seconds (the setting's name).
    #[error("[codex] {0} must be at least 1")]
    ZeroTimeout(&'static str),
}

impl CodexConfig {
    /// Checks values a file could set wrong; the message says what to change.
    pub fn validate(&self) -> Result<(), CodexConfigError> {
        if self.command.trim().is_empty() {
            return Err(CodexConfigError::EmptyCommand);
        }
        for (name, secs) in [
            ("request_timeout_secs", self.request_timeout_secs),
            ("tool_call_timeout_secs", self.tool_call_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
        ] {
            if secs == 0 {
                return Err(CodexConfigError::ZeroTimeout(name));
            }
        }
        Ok(())
    }

    /// [`CodexConfig::request_timeout_secs`] as a duration.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    /// [`CodexConfig::tool_call_timeout_secs`] as a duration.
    pub fn tool_call_timeout(&self) -> Duration {
        Duration::from_secs(self.tool_call_timeout_secs)
    }

    /// [`CodexConfig::idle_timeout_secs`] as a duration.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// [`CodexConfig::backend_retries`], or the default of Tackle's providers (2) when unset.
    pub fn backend_retries(&self) -> u32 {
        self.backend_retries.unwrap_or(DEFAULT_BACKEND_RETRIES)
    }

    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_rejects_unknown_keys_and_zero_limits() {
        let c: CodexConfig = toml::from_str("command = \"x\"\nrequest_timeout_secs = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("request_timeout_secs"));
        assert!(toml::from_str::<CodexConfig>("comand = \"x\"").is_err());
    }
}
