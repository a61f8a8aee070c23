//! `[codex]` in `tackle.toml`: how to start `codex app-server` and how patient to be with it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A `TACKLE_CODEX_*` variable with a value Tackle cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value of {var}: {message}")]
pub struct InvalidEnv {
    /// The variable.
    pub var: String,
    /// What is wrong.
    pub message: String,
}

/// How Tackle runs and talks to `codex app-server`.
///
/// ```toml
/// [codex]
/// command = "codex"                 # or a full path; TACKLE_CODEX_COMMAND
/// args = ["app-server"]             # TACKLE_CODEX_ARGS (space-separated)
/// codex_home = "/home/me/.codex"    # CODEX_HOME of the child; TACKLE_CODEX_HOME
/// pass_env = ["OPENAI_API_KEY"]     # secrets the child may see; TACKLE_CODEX_PASS_ENV
/// builtin_tools = false             # Codex's own shell, apply_patch, web search; TACKLE_CODEX_BUILTIN_TOOLS
/// bridge = true                     # tackle serve: models codex/<model>; TACKLE_CODEX_BRIDGE
/// models = ["gpt-5-codex"]          # listed by /v1/models; TACKLE_CODEX_MODELS (comma-separated)
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
    pub codex_home: Option<PathBuf>,
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

impl Default for CodexConfig {
    fn default() -> Self {
        Self {
            command: "codex".into(),
            args: vec!["app-server".into()],
            codex_home: None,
            pass_env: Vec::new(),
            builtin_tools: false,
            request_timeout_secs: 60,
            tool_call_timeout_secs: 900,
            idle_timeout_secs: 600,
            thread_config: BTreeMap::new(),
            bridge: false,
            models: Vec::new(),
        }
    }
}

impl CodexConfig {
    /// Applies `TACKLE_CODEX_*` variables read through `env`; the error names the variable.
    ///
    /// ```
    /// use tackle_codex::CodexConfig;
    /// let mut c = CodexConfig::default();
    /// let env = |k: &str| (k == "TACKLE_CODEX_ARGS").then(|| "app-server --listen stdio://".to_owned());
    /// c.apply_env(&env).unwrap();
    /// assert_eq!(c.args, ["app-server", "--listen", "stdio://"]);
    /// ```
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), InvalidEnv> {
        let bad = |var: &str, message: String| InvalidEnv { var: var.to_owned(), message };
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = get("TACKLE_CODEX_COMMAND") {
            self.command = v;
        }
        if let Some(v) = get("TACKLE_CODEX_ARGS") {
            self.args = v.split_whitespace().map(str::to_owned).collect();
        }
        if let Some(v) = get("TACKLE_CODEX_HOME") {
            self.codex_home = Some(PathBuf::from(v));
        }
        if let Some(v) = get("TACKLE_CODEX_PASS_ENV") {
            self.pass_env =
                v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        }
        for (var, flag) in [
            ("TACKLE_CODEX_BUILTIN_TOOLS", &mut self.builtin_tools),
            ("TACKLE_CODEX_BRIDGE", &mut self.bridge),
        ] {
            if let Some(v) = get(var) {
                *flag = match v.trim().to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => true,
                    "off" | "false" | "0" | "no" => false,
                    _ => return Err(bad(var, format!("{v:?} is not on or off"))),
                };
            }
        }
        if let Some(v) = get("TACKLE_CODEX_MODELS") {
            self.models = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        }
        for (var, field) in [
            ("TACKLE_CODEX_REQUEST_TIMEOUT_SECS", &mut self.request_timeout_secs),
            ("TACKLE_CODEX_TOOL_CALL_TIMEOUT_SECS", &mut self.tool_call_timeout_secs),
            ("TACKLE_CODEX_IDLE_TIMEOUT_SECS", &mut self.idle_timeout_secs),
        ] {
            if let Some(v) = get(var) {
                *field = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad(var, format!("{v:?} is not a positive number of seconds")))?;
            }
        }
        if let Some(v) = get("TACKLE_CODEX_THREAD_CONFIG") {
            self.thread_config = serde_json::from_str(&v)
                .map_err(|e| bad("TACKLE_CODEX_THREAD_CONFIG", format!("not a JSON object ({e})")))?;
        }
        Ok(())
    }

    /// Checks values a file could set wrong; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.command.trim().is_empty() {
            return Err("[codex] command is empty; set it to the codex executable".into());
        }
        for (name, secs) in [
            ("request_timeout_secs", self.request_timeout_secs),
            ("tool_call_timeout_secs", self.tool_call_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
        ] {
            if secs == 0 {
                return Err(format!("[codex] {name} must be at least 1"));
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
    fn env_overrides_and_bad_values_name_the_variable() {
        let vars = [
            ("TACKLE_CODEX_COMMAND", "/opt/codex"),
            ("TACKLE_CODEX_HOME", "/tmp/ch"),
            ("TACKLE_CODEX_PASS_ENV", "OPENAI_API_KEY, OTHER"),
            ("TACKLE_CODEX_BUILTIN_TOOLS", "on"),
            ("TACKLE_CODEX_TOOL_CALL_TIMEOUT_SECS", "5"),
            ("TACKLE_CODEX_THREAD_CONFIG", r#"{"model_reasoning_effort":"high"}"#),
        ];
        let env = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned());
        let mut c = CodexConfig::default();
        c.apply_env(&env).unwrap();
        assert_eq!(c.command, "/opt/codex");
        assert_eq!(c.codex_home, Some(PathBuf::from("/tmp/ch")));
        assert_eq!(c.pass_env, ["OPENAI_API_KEY", "OTHER"]);
        assert!(c.builtin_tools);
        assert_eq!(c.tool_call_timeout(), Duration::from_secs(5));
        assert_eq!(c.thread_config["model_reasoning_effort"], "high");

        for (var, value) in [
            ("TACKLE_CODEX_IDLE_TIMEOUT_SECS", "0"),
            ("TACKLE_CODEX_BUILTIN_TOOLS", "maybe"),
            ("TACKLE_CODEX_THREAD_CONFIG", "[1]"),
        ] {
            let env = |k: &str| (k == var).then(|| value.to_owned());
            let err = CodexConfig::default().apply_env(&env).unwrap_err();
            assert_eq!(err.var, var, "{err}");
        }
    }

    #[test]
    fn toml_rejects_unknown_keys_and_zero_limits() {
        let c: CodexConfig = toml::from_str("command = \"x\"\nrequest_timeout_secs = 0\n").unwrap();
        assert!(c.validate().unwrap_err().contains("request_timeout_secs"));
        assert!(toml::from_str::<CodexConfig>("comand = \"x\"").is_err());
    }
}
