//! Configuration: `tackle.toml` in the user config dir and the workspace, then the environment.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tackle_builtins::BuiltinConfig;
use tackle_provider::{OpenAiDialect, ProviderConfig, ProviderKind, ResponsesConfig};
use tackle_tools::{HookEntry, PermissionMode};
use thiserror::Error;

use tackle_agent::{ContextConfig, DeferralConfig, LoopGuardConfig, TelemetryConfig};

pub use mcp_serve::{McpServeSettings, McpTransport};
pub use server::ServerSettings;
pub use subagents::{AgentTable, AgentTables, SubAgentsSettings, sub_agent_registry};

mod env;
mod mcp_serve;
mod server;
mod subagents;

/// The configuration file name, looked up in the user config dir and the workspace.
pub const CONFIG_FILE: &str = "tackle.toml";

/// Effective configuration of an agent.
///
/// Later sources override earlier ones: built-in defaults, `~/.config/tackle/tackle.toml`,
/// `<workspace>/tackle.toml`, then environment variables (`TACKLE_HOME`, `TACKLE_PROVIDER`,
/// `TACKLE_MODEL`, `TACKLE_RESPONSES_STORE`, `TACKLE_RESPONSES_REASONING_EFFORT`,
/// `TACKLE_RESPONSES_REASONING_SUMMARY`, and the SDK variables `OPENAI_*` / `ANTHROPIC_*` for keys and
/// base URLs), then command-line flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Model provider (`openai`, `openai-responses`, `anthropic`); when unset, the one whose
    /// API key is present (`openai-responses` is chosen only by name).
    pub provider: Option<ProviderKind>,
    /// Model name; defaults per provider.
    pub model: Option<String>,
    /// Base URL of the provider (e.g. a local OpenAI-compatible server).
    pub base_url: Option<String>,
    /// Chat Completions dialect; detected from the base URL when unset.
    pub openai_dialect: Option<OpenAiDialect>,
    /// Steps (model calls) per turn; the last one runs without tools.
    pub max_steps: u32,
    /// Output token limit per model call.
    pub max_output_tokens: Option<u32>,
    /// Retries of a failed model request.
    pub max_retries: u32,
    /// Whether model answers stream: `auto` (the default: when the turn's events are watched,
    /// as every front end of `tackle` does), `always`, or `never` (whole JSON answers).
    pub streaming: tackle_agent::Streaming,
    /// Seconds to establish a connection to the provider.
    pub connect_timeout_secs: u64,
    /// Seconds any single read of a streamed answer may take (a stalled stream fails instead
    /// of hanging); each retry gets as long again.
    pub read_timeout_secs: u64,
    /// Seconds a whole (non-streamed) answer may take, from the request to its last byte; each
    /// retry gets as long again.
    pub whole_answer_timeout_secs: u64,
    /// Where sessions are stored (`TACKLE_HOME` overrides it).
    pub data_dir: Option<PathBuf>,
    /// Tool execution limits.
    pub tools: ToolSettings,
    /// Limits and policies of the builtin tools.
    pub builtins: BuiltinConfig,
    /// `[[hooks]]` tables: rules (`action`, first match wins) and script hooks (`event` and
    /// `command`, run in order at lifecycle events).
    pub hooks: Vec<HookEntry>,
    /// Permission modes (`[permissions]`): the mode of new sessions, what counts as an edit.
    pub permissions: PermissionSettings,
    /// Workspace checkpoints before each turn, for `tackle rewind` (`[checkpoints]`).
    pub checkpoints: tackle_checkpoint::CheckpointConfig,
    /// Doom-loop thresholds.
    #[serde(rename = "loop")]
    pub loop_guard: LoopGuardConfig,
    /// Per-step tool availability (masks, skills). `TACKLE_DYNAMIC_TOOLS=off` turns it off: the
    /// kill switch, every tool always active.
    pub dynamic_tools: bool,
    /// Context window management (`[context]`).
    pub context: ContextConfig,
    /// Offloading large tool outputs to the store behind a locator.
    /// `TACKLE_RECOVERABLE_COMPRESSION=off` turns it off (outputs are capped instead).
    pub recoverable_compression: bool,
    /// `tackle serve` (`[server]`).
    pub server: ServerSettings,
    /// MCP servers as tool sources (`[mcp.servers.<name>]`).
    pub mcp: tackle_mcp::McpConfig,
    /// Deferring tools whose definitions would take too much of the window (`[deferral]`).
    pub deferral: DeferralConfig,
    /// Codex's app-server as the model (`--provider codex`, `[codex]`, `TACKLE_CODEX_*`).
    pub codex: tackle_codex::CodexConfig,
    /// The OpenAI Responses provider (`[responses]`: `store`, `reasoning_effort`,
    /// `reasoning_summary`).
    pub responses: ResponsesConfig,
    /// What the GenAI trace spans may carry (`[telemetry]`: `record_content`). Where traces go
    /// is set by the standard `OTEL_*` variables (docs/operations.md).
    pub telemetry: TelemetryConfig,
    /// The sandbox shell commands run in (`[sandbox]`; `TACKLE_SANDBOX_MODE`,
    /// `TACKLE_SANDBOX_NETWORK`, `TACKLE_SANDBOX_BACKEND`).
    pub sandbox: tackle_sandbox::SandboxConfig,
    /// Chat channels `tackle serve` starts (`[channels]`, `[channels.telegram]`).
    pub channels: tackle_channels::ChannelsConfig,
    /// Where sessions are stored (`[store]`): the SQLite file in the data directory unless
    /// `url` names a PostgreSQL database.
    pub store: StoreSettings,
    /// `tackle mcp serve`: Tackle as an MCP server (`[mcp_serve]`).
    pub mcp_serve: McpServeSettings,
    /// Sub-agents: whether the `agent` tool is offered and how deep they nest (`[subagents]`).
    pub subagents: SubAgentsSettings,
    /// Sub-agents defined here (`[agents.NAME]`: `description`, `instructions`, `tools`,
    /// `model`), beside the `agents/NAME.md` files of the user config dir and the workspace.
    pub agents: AgentTables,
}

/// `[permissions]`: how much sessions may do without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionSettings {
    /// The mode of new sessions: `default`, `accept-edits`, `plan` or `bypass` (only with an
    /// enforced sandbox). `--mode` overrides it; `/mode` and Shift-Tab change it in `tackle chat`.
    pub mode: PermissionMode,
    /// Globs of the tools `accept-edits` runs without asking.
    pub edit_tools: Vec<String>,
}

impl Default for PermissionSettings {
    fn default() -> Self {
        Self {
            mode: PermissionMode::Default,
            edit_tools: tackle_tools::DEFAULT_EDIT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        }
    }
}

/// `[store]`: the database behind every session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE` to keep sessions in PostgreSQL (several
    /// `tackle serve` instances may share it), or `sqlite:PATH`; unset: `tackle.db` in the data
    /// directory. Also `TACKLE_DATABASE_URL`.
    pub url: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: None,
            model: None,
            base_url: None,
            openai_dialect: None,
            max_steps: 25,
            max_output_tokens: None,
            max_retries: 2,
            streaming: tackle_agent::Streaming::Auto,
            connect_timeout_secs: tackle_provider::Timeouts::default().connect.as_secs(),
            read_timeout_secs: tackle_provider::Timeouts::default().read.as_secs(),
            whole_answer_timeout_secs: tackle_provider::Timeouts::default().whole.as_secs(),
            data_dir: None,
            tools: ToolSettings::default(),
            builtins: BuiltinConfig::default(),
            hooks: Vec::new(),
            permissions: PermissionSettings::default(),
            checkpoints: tackle_checkpoint::CheckpointConfig::default(),
            loop_guard: LoopGuardConfig::default(),
            dynamic_tools: true,
            context: ContextConfig::default(),
            recoverable_compression: true,
            server: ServerSettings::default(),
            mcp: tackle_mcp::McpConfig::default(),
            deferral: DeferralConfig::default(),
            codex: tackle_codex::CodexConfig::default(),
            responses: ResponsesConfig::default(),
            telemetry: TelemetryConfig::default(),
            sandbox: tackle_sandbox::SandboxConfig::default(),
            channels: tackle_channels::ChannelsConfig::default(),
            store: StoreSettings::default(),
            mcp_serve: McpServeSettings::default(),
            subagents: SubAgentsSettings::default(),
            agents: AgentTables::default(),
        }
    }
}

/// Limits applied by the tool executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// Default time limit of a tool call, in seconds.
    pub timeout_secs: u64,
    /// Largest output the model sees from one call, in bytes (head and tail are kept).
    pub max_output_bytes: usize,
    /// Largest output the model sees from one call, in lines.
    pub max_output_lines: usize,
    /// Most bytes of a call's full output stored for `read_result` (64 MiB); beyond it the
    /// output is dropped and the model told how much (`TACKLE_TOOLS_MAX_STORED_OUTPUT_BYTES`).
    pub max_stored_output_bytes: usize,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            timeout_secs: 120,
            max_output_bytes: 16 * 1024,
            max_output_lines: 400,
            max_stored_output_bytes: tackle_tools::DEFAULT_SPOOL_BYTES,
        }
    }
}

/// A configuration problem; the message names the file or variable and what to change.
#[derive(Debug, Error)]
pub enum SettingsError {
    /// A configuration file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A configuration file is not valid TOML or has unknown or mistyped keys.
    #[error("invalid configuration in {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An environment variable has a value Tackle cannot use.
    #[error("invalid value of {var}: {message}")]
    InvalidEnv {
        /// The variable.
        var: String,
        /// What is wrong.
        message: String,
    },
    /// No provider could be chosen.
    #[error(
        "no model provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, pass --base-url for a local \
         OpenAI-compatible server, or try `tackle demo`"
    )]
    NoProvider,
    /// No data directory could be determined.
    #[error("cannot determine a data directory: set TACKLE_HOME")]
    NoDataDir,
    /// The data directory is a file.
    #[error("the data directory {} is not a directory; point TACKLE_HOME (or data_dir) at a directory", path.display())]
    DataDirNotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The provider's base URL is unusable (from `--base-url`, `base_url`, or the SDK variable).
    #[error(transparent)]
    BaseUrl(#[from] tackle_provider::BaseUrlError),
}

/// Settings with where they came from.
#[derive(Debug, Clone)]
pub struct LoadedSettings {
    /// The merged settings.
    pub settings: Settings,
    /// Files that were read, in order.
    pub sources: Vec<PathBuf>,
}

/// Reads environment variables; a function so tests need not touch the process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Settings {
    /// Loads the user and workspace configuration files and applies the environment.
    pub fn load(workspace: &Path) -> Result<LoadedSettings, SettingsError> {
        let user = user_config_dir().map(|d| d.join(CONFIG_FILE));
        Self::load_from(user.as_deref(), workspace, &|k| std::env::var(k).ok())
    }

    /// Like [`Settings::load`] with an explicit user config path and environment.
    pub fn load_from(
        user_file: Option<&Path>,
        workspace: &Path,
        env: EnvLookup<'_>,
    ) -> Result<LoadedSettings, SettingsError> {
        let mut merged = toml::Table::new();
        let mut sources = Vec::new();
        let workspace_file = workspace.join(CONFIG_FILE);
        for path in user_file.into_iter().chain(std::iter::once(workspace_file.as_path())) {
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(path)
                .map_err(|source| SettingsError::Read { path: path.to_owned(), source })?;
            let table: toml::Table = text.parse().map_err(|e: toml::de::Error| SettingsError::Invalid {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
            // Validate each file on its own so an error names the file that has it.
            Settings::deserialize(toml::Value::Table(table.clone()))
                .map_err(|e| SettingsError::Invalid { path: path.to_owned(), message: e.to_string() })?;
            deep_merge(&mut merged, table);
            sources.push(path.to_owned());
        }
        // Files first, then the environment: every setting has a TACKLE_* variable.
        Settings::deserialize(toml::Value::Table(merged.clone())).map_err(|e| SettingsError::Invalid {
            path: sources.last().cloned().unwrap_or_default(),
            message: e.to_string(),
        })?;
        let shape = Settings::env_shape();
        let accepts = |table: &toml::Table| {
            Settings::deserialize(toml::Value::Table(table.clone())).map(drop).map_err(|e| e.to_string())
        };
        env::apply(&mut merged, &shape, env, &accepts)?;
        let settings =
            Settings::deserialize(toml::Value::Table(merged)).map_err(|e| SettingsError::Invalid {
                path: sources.last().cloned().unwrap_or_default(),
                message: e.to_string(),
            })?;
        Ok(LoadedSettings { settings, sources })
    }

    /// The data directory: `TACKLE_HOME`, the configured one, or the platform data dir. A leading
    /// `~/` is the home directory, as in a shell (never a directory named `~`).
    pub fn data_dir(&self) -> Result<PathBuf, SettingsError> {
        let dir = match &self.data_dir {
            Some(d) => tackle_sandbox::expand_home(d, dirs::home_dir().as_deref()),
            None => dirs::data_dir().map(|d| d.join("tackle")).ok_or(SettingsError::NoDataDir)?,
        };
        // Checked before anything is created in it.
        if dir.exists() && !dir.is_dir() {
            return Err(SettingsError::DataDirNotADirectory { path: dir });
        }
        Ok(dir)
    }

    /// The shape the `TACKLE_*` variables are found from: the defaults, with the tables that are
    /// off unless configured (`[channels.telegram]`) filled in, so each of their keys has a
    /// variable too (setting one configures the table).
    fn env_shape() -> serde_json::Value {
        let mut shape = Settings::default();
        shape.channels.telegram.get_or_insert_with(tackle_channels::telegram::TelegramConfig::default);
        serde_json::to_value(shape).unwrap_or_default()
    }

    /// The SQLite database file inside the data directory.
    pub fn database_path(&self) -> Result<PathBuf, SettingsError> {
        Ok(self.data_dir()?.join("tackle.db"))
    }

    /// Where sessions are stored, for people to read: `[store] url` with its password masked,
    /// else the SQLite file in the data directory.
    pub fn store_display(&self) -> String {
        match &self.store.url {
            Some(url) => tackle_protocol::mask_url(url),
            None => self.database_path().map(|p| p.display().to_string()).unwrap_or_default(),
        }
    }

    /// The provider to use: the configured one, else the one whose key is set (Anthropic first
    /// when both are), else OpenAI-compatible when a base URL is given.
    pub fn provider_config(&self, env: EnvLookup<'_>) -> Result<ProviderConfig, SettingsError> {
        let has = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
        let kind = match self.provider {
            Some(k) => k,
            None if has("ANTHROPIC_API_KEY") => ProviderKind::Anthropic,
            None if has("OPENAI_API_KEY") => ProviderKind::Openai,
            None if self.base_url.is_some() || has("OPENAI_BASE_URL") => ProviderKind::Openai,
            None => return Err(SettingsError::NoProvider),
        };
        let mut config = ProviderConfig::from_lookup(kind, |k| env(k));
        if let Some(url) = &self.base_url {
            config.base_url = url.clone();
        }
        // Codex speaks to a child process, not to a URL.
        if kind.env_vars().is_some() {
            config.check_base_url()?;
        }
        config.retry.max_retries = self.max_retries;
        let mut timeouts = tackle_provider::Timeouts::default();
        timeouts.connect = std::time::Duration::from_secs(self.connect_timeout_secs.max(1));
        timeouts.read = std::time::Duration::from_secs(self.read_timeout_secs.max(1));
        timeouts.whole = std::time::Duration::from_secs(self.whole_answer_timeout_secs.max(1));
        config.timeouts = timeouts;
        Ok(config)
    }

    /// The model to use with `kind`.
    pub fn model_for(&self, kind: ProviderKind) -> String {
        self.model.clone().unwrap_or_else(|| default_model(kind).to_owned())
    }
}

/// The user's Tackle config directory (`~/.config/tackle` on Linux).
pub fn user_config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("tackle"))
}

/// Model used when none is configured.
pub fn default_model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "gpt-4.1",
        ProviderKind::OpenaiResponses => "gpt-5",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        // The model configured in Codex (CODEX_HOME/config.toml).
        ProviderKind::Codex => "default",
    }
}

fn deep_merge(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn workspace_overrides_user_and_env_overrides_both() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(&user, "model = \"a\"\nmax_steps = 3\n[tools]\ntimeout_secs = 5\n").unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join(CONFIG_FILE), "model = \"b\"\n[tools]\nmax_output_lines = 7\n").unwrap();
        let vars = [("TACKLE_MODEL", "c"), ("TACKLE_HOME", "/tmp/th")];
        let loaded = Settings::load_from(Some(&user), &ws, &env(&vars)).unwrap();
        let s = loaded.settings;
        assert_eq!(s.model.as_deref(), Some("c"));
        assert_eq!(s.max_steps, 3);
        assert_eq!(s.tools.timeout_secs, 5, "tables merge key by key");
        assert_eq!(s.tools.max_output_lines, 7);
        assert_eq!(s.data_dir().unwrap(), PathBuf::from("/tmp/th"));
        assert!(s.dynamic_tools);
        assert_eq!(loaded.sources.len(), 2);
    }

    #[test]
    fn kill_switches_read_on_and_off() {
        let dir = tempfile::tempdir().unwrap();
        let vars = [("TACKLE_DYNAMIC_TOOLS", "off"), ("TACKLE_RECOVERABLE_COMPRESSION", "OFF")];
        let s = Settings::load_from(None, dir.path(), &env(&vars)).unwrap().settings;
        assert!(!s.dynamic_tools && !s.recoverable_compression);
        let err =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_DYNAMIC_TOOLS", "maybe")])).unwrap_err();
        assert!(err.to_string().contains("TACKLE_DYNAMIC_TOOLS"));
    }

    #[test]
    fn responses_settings_from_the_file_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "provider = \"openai-responses\"\n[responses]\nreasoning_effort = \"low\"\n",
        )
        .unwrap();
        let vars = [("TACKLE_RESPONSES_STORE", "on"), ("TACKLE_RESPONSES_REASONING_SUMMARY", "auto")];
        let s = Settings::load_from(None, dir.path(), &env(&vars)).unwrap().settings;
        assert_eq!(s.provider, Some(ProviderKind::OpenaiResponses));
        assert!(s.responses.store);
        assert_eq!(s.responses.reasoning_effort, Some(tackle_provider::ReasoningEffort::Low));
        assert_eq!(s.responses.reasoning_summary, Some(tackle_provider::ReasoningSummary::Auto));
        let c = s.provider_config(&env(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
        assert_eq!(
            (c.kind, c.base_url.as_str()),
            (ProviderKind::OpenaiResponses, "https://api.openai.com/v1")
        );
        assert_eq!(s.model_for(c.kind), "gpt-5");
        let err =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_RESPONSES_REASONING_EFFORT", "max")]))
                .unwrap_err();
        assert!(
            err.to_string().contains("TACKLE_RESPONSES_REASONING_EFFORT")
                && err.to_string().contains("xhigh"),
            "{err}"
        );
        std::fs::write(dir.path().join(CONFIG_FILE), "[responses]\nstored = true\n").unwrap();
        let err = Settings::load_from(None, dir.path(), &env(&[])).unwrap_err();
        assert!(err.to_string().contains("stored"), "{err}");
    }

    #[test]
    fn the_sandbox_reads_its_table_and_variables() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[sandbox]\nmode = \"read-only\"\nhidden = [\"~/.ssh\"]\n",
        )
        .unwrap();
        let s = Settings::load_from(None, dir.path(), &env(&[])).unwrap().settings;
        assert_eq!(s.sandbox.mode, tackle_sandbox::SandboxMode::ReadOnly);
        assert!(!s.sandbox.network, "network is off by default");
        let vars = [
            ("TACKLE_SANDBOX_MODE", "off"),
            ("TACKLE_SANDBOX_NETWORK", "on"),
            ("TACKLE_SANDBOX_BACKEND", "landlock"),
        ];
        let s = Settings::load_from(None, dir.path(), &env(&vars)).unwrap().settings;
        assert_eq!(s.sandbox.mode, tackle_sandbox::SandboxMode::Off);
        assert!(s.sandbox.network);
        assert_eq!(s.sandbox.backend, tackle_sandbox::BackendChoice::Landlock);
        let err =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_SANDBOX_MODE", "danger")])).unwrap_err();
        assert!(
            err.to_string().contains("TACKLE_SANDBOX_MODE") && err.to_string().contains("workspace-write")
        );
    }

    #[test]
    fn streaming_reads_auto_always_never() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Settings::load_from(None, dir.path(), &env(&[])).unwrap().settings.streaming,
            tackle_agent::Streaming::Auto
        );
        std::fs::write(dir.path().join(CONFIG_FILE), "streaming = \"always\"\n").unwrap();
        let s = Settings::load_from(None, dir.path(), &env(&[])).unwrap().settings;
        assert_eq!(s.streaming, tackle_agent::Streaming::Always);
        let s =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_STREAMING", "never")])).unwrap().settings;
        assert_eq!(s.streaming, tackle_agent::Streaming::Never, "the variable overrides the file");
        let err =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_STREAMING", "sometimes")])).unwrap_err();
        assert!(err.to_string().contains("TACKLE_STREAMING"), "{err}");
        std::fs::write(dir.path().join(CONFIG_FILE), "streaming = true\n").unwrap();
        let err = Settings::load_from(None, dir.path(), &env(&[])).unwrap_err();
        assert!(err.to_string().contains("streaming"), "{err}");
    }

    #[test]
    fn unknown_keys_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "max_step = 3\n").unwrap();
        let err = Settings::load_from(None, dir.path(), &env(&[])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("tackle.toml") && text.contains("max_step"), "{text}");
    }

    #[test]
    fn channels_come_from_the_file_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[channels]\napproval_timeout_secs = 60\n[channels.telegram]\ntoken_file = \"tg.token\"\nallowed_users = [1, 2]\n",
        )
        .unwrap();
        let vars = [
            ("TACKLE_CHANNELS_TELEGRAM_MODE", "webhook"),
            ("TACKLE_CHANNELS_TELEGRAM_WEBHOOK_URL", "https://bot.example/x"),
        ];
        let s = Settings::load_from(None, dir.path(), &env(&vars)).unwrap().settings;
        let t = s.channels.telegram.as_ref().unwrap();
        assert_eq!(t.allowed_users, vec![1, 2]);
        assert_eq!(t.mode, tackle_channels::telegram::TelegramMode::Webhook);
        assert_eq!(s.channels.approval_timeout_secs, 60);
        let err = Settings::load_from(
            None,
            dir.path(),
            &env(&[("TACKLE_CHANNELS_TELEGRAM_ALLOWED_USERS", "1,bob")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("TACKLE_CHANNELS_TELEGRAM_ALLOWED_USERS"), "{err}");
        // No [channels.telegram] and no variable: no bot. A variable alone configures one.
        let empty = tempfile::tempdir().unwrap();
        assert!(
            Settings::load_from(None, empty.path(), &env(&[])).unwrap().settings.channels.telegram.is_none()
        );
        let vars = [("TACKLE_CHANNELS_TELEGRAM_ALLOWED_USERS", "7,8")];
        let s = Settings::load_from(None, empty.path(), &env(&vars)).unwrap().settings;
        assert_eq!(s.channels.telegram.unwrap().allowed_users, vec![7, 8]);
        std::fs::write(empty.path().join(CONFIG_FILE), "[channels.telegram]\ntoken = \"x\"\n").unwrap();
        let err = Settings::load_from(None, empty.path(), &env(&[])).unwrap_err();
        assert!(err.to_string().contains("unknown field `token`"), "a token in the file is refused: {err}");
    }

    #[test]
    fn provider_is_chosen_by_key() {
        let s = Settings::default();
        assert!(matches!(s.provider_config(&env(&[])), Err(SettingsError::NoProvider)));
        let c = s.provider_config(&env(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!(c.kind, ProviderKind::Openai);
        let c = s.provider_config(&env(&[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "a")])).unwrap();
        assert_eq!(c.kind, ProviderKind::Anthropic);
        let s = Settings { base_url: Some("http://localhost:11434/v1".into()), ..Settings::default() };
        let c = s.provider_config(&env(&[])).unwrap();
        assert_eq!((c.kind, c.base_url.as_str()), (ProviderKind::Openai, "http://localhost:11434/v1"));
        assert!(SettingsError::NoProvider.to_string().contains("tackle demo"));
    }

    /// A value for the setting at `path` that differs from its default, as a variable's text.
    fn sample(var: &env::Variable, default: &serde_json::Value) -> String {
        let fixed = [
            ("provider", "anthropic"),
            ("model", "model-sample"),
            ("base_url", "http://127.0.0.1:9/v1"),
            ("openai_dialect", "compatible"),
            ("max_output_tokens", "1234"),
            ("streaming", "never"),
            ("data_dir", "/tmp/tackle-sample"),
            ("context.window", "64000"),
            ("server.bind", "0.0.0.0:9999"),
            ("hooks", r#"[{"tools": "shell", "action": "deny"}]"#),
            ("loop.per_tool_cap", r#"{"shell": 3}"#),
            ("server.workspaces", r#"{"docs": "/srv/docs"}"#),
            ("mcp.servers", r#"{"files": {"command": "mcp-files"}}"#),
            ("codex.thread_config", r#"{"model_reasoning_effort": "high"}"#),
            ("codex.backend_retries", "3"),
            ("responses.reasoning_effort", "high"),
            ("builtins.shell_env", r#"{"LOG_LEVEL": "warn"}"#),
            ("sandbox.mode", "read-only"),
            ("server.approval", "wait:30"),
            ("channels.telegram.mode", "webhook"),
            ("channels.telegram.allowed_users", "1, 2"),
            ("server.openai_approval", "auto"),
            ("sandbox.backend", "landlock"),
            ("responses.reasoning_summary", "auto"),
            ("store.url", "postgres://tackle@db.internal:5432/tackle"),
            ("deferral.ranker", "bm25"),
            ("permissions.mode", "plan"),
            ("mcp_serve.transport", "http"),
            ("mcp_serve.approval", "auto"),
            ("subagents.enabled", "on"),
            ("agents", r#"{"tester": {"description": "Runs tests", "tools": ["shell"]}}"#),
        ];
        if let Some((_, text)) = fixed.iter().find(|(p, _)| *p == var.path) {
            return (*text).to_owned();
        }
        match (var.kind, default) {
            (env::Kind::Switch, serde_json::Value::Bool(b)) => (if *b { "off" } else { "on" }).to_owned(),
            (env::Kind::Integer, v) => (v.as_i64().unwrap_or(0) + 1).to_string(),
            (env::Kind::Number, v) => (v.as_f64().unwrap_or(1.0) / 2.0).to_string(),
            (env::Kind::List, _) => "alpha, beta".to_owned(),
            _ => format!("sample-{}", var.path),
        }
    }

    fn at<'a>(value: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
        path.split('.').fold(value, |v, k| &v[k])
    }

    /// Walks every setting: its TACKLE_* variable changes it, and docs/configuration.md names
    /// both. A setting added without a way to reach it fails here.
    #[test]
    fn every_setting_is_reachable_from_the_environment_and_documented() {
        let dir = tempfile::tempdir().unwrap();
        let defaults = Settings::env_shape();
        let docs =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md"))
                .unwrap_or_default();
        let mut unreachable = Vec::new();
        let mut undocumented = Vec::new();
        let vars = env::variables(&defaults);
        assert!(vars.len() > 40, "the walk found the settings: {vars:?}");
        for var in &vars {
            let text = sample(var, at(&defaults, &var.path));
            let pairs = [(var.name.as_str(), text.as_str())];
            match Settings::load_from(None, dir.path(), &env(&pairs)) {
                Ok(loaded) => {
                    let got = serde_json::to_value(&loaded.settings).unwrap();
                    if at(&got, &var.path) == at(&defaults, &var.path) {
                        unreachable.push(format!("{} did not change {}", var.name, var.path));
                    }
                }
                Err(e) => unreachable.push(format!("{}={text:?}: {e}", var.name)),
            }
            let key = format!("`{}`", var.path);
            if !docs.contains(&key) || !docs.contains(&var.name) {
                undocumented.push(format!("{key} / {}", var.name));
            }
        }
        assert!(
            unreachable.is_empty(),
            "settings not reachable from the environment:\n{}",
            unreachable.join("\n")
        );
        assert!(
            undocumented.is_empty(),
            "settings missing from docs/configuration.md:\n{}",
            undocumented.join("\n")
        );
    }

    #[test]
    fn variables_name_the_setting_they_failed_to_set() {
        let dir = tempfile::tempdir().unwrap();
        let err = Settings::load_from(None, dir.path(), &env(&[("TACKLE_MAX_STEPS", "many")])).unwrap_err();
        assert!(
            err.to_string().contains("TACKLE_MAX_STEPS") && err.to_string().contains("whole number"),
            "{err}"
        );
        let err = Settings::load_from(None, dir.path(), &env(&[("TACKLE_PROVIDER", "openia")])).unwrap_err();
        assert!(err.to_string().contains("TACKLE_PROVIDER"), "{err}");
        let s =
            Settings::load_from(None, dir.path(), &env(&[("TACKLE_HOME", "/a"), ("TACKLE_DATA_DIR", "/b")]))
                .unwrap()
                .settings;
        assert_eq!(s.data_dir.as_deref(), Some(Path::new("/b")), "the variable named by the rule wins");
        let s = Settings::load_from(None, dir.path(), &env(&[("TACKLE_SERVER_MODELS", "[\"a\", \"b\"]")]))
            .unwrap()
            .settings;
        assert_eq!(s.server.models, ["a", "b"]);
    }
}
