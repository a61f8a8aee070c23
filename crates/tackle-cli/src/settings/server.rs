//! [`ServerSettings`]: the `[server]` table of `tackle.toml`, read by `tackle serve`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tackle_server::{ScrapeToken, ServerConfig, UserToken};
use tackle_tools::ApprovalPolicy;

use crate::UsageError;

/// Settings of `tackle serve`.
///
/// ```toml
/// [server]
/// bind = "0.0.0.0:8787"
/// models = ["gpt-4.1-mini"]
/// tokens_file = "/etc/tackle/tokens"  # user:token lines, chmod 600; hidden from commands
/// [[server.tokens]]
/// user = "alice"
/// token_env = "TACKLE_TOKEN_ALICE"   # or token = "..." (kept out of `tackle config` output)
/// [server.workspaces]
/// docs = "/srv/docs"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Address to listen on (`--bind` overrides it).
    pub bind: String,
    /// Bearer tokens, each mapped to a user. Without any, only loopback addresses are allowed.
    /// `TACKLE_SERVER_TOKENS=user:token,...` adds more.
    pub tokens: Vec<TokenSetting>,
    /// A file of `user:token` lines (mode 600), read at start and kept only as digests; the
    /// way to keep tokens out of the environment (`TACKLE_SERVER_TOKENS_FILE`).
    pub tokens_file: Option<PathBuf>,
    /// Named workspaces clients may choose; `default` is the serve command's workspace unless
    /// set here.
    pub workspaces: BTreeMap<String, PathBuf>,
    /// Extra models of the provider clients may choose per session and name at the
    /// OpenAI-compatible gateway (besides the configured model).
    pub models: Vec<String>,
    /// Let the gateway forward any model name instead of only the configured model and
    /// `models` (`TACKLE_SERVER_GATEWAY_ANY_MODEL=on`).
    pub gateway_any_model: bool,
    /// Model name under which `/v1/chat/completions` runs Tackle's agent.
    pub agent_model: String,
    /// Calls needing confirmation in sessions API turns: `wait` (10 minutes), `wait:SECONDS`,
    /// `deny` or `auto` (`TACKLE_SERVER_APPROVAL`).
    pub approval: ApprovalPolicy,
    /// Calls needing confirmation in the agent mode of `/v1/chat/completions`, whose clients
    /// cannot answer approvals: `deny` by default (`TACKLE_SERVER_OPENAI_APPROVAL`).
    pub openai_approval: ApprovalPolicy,
    /// Largest request body in bytes.
    pub body_limit_bytes: usize,
    /// Seconds between SSE heartbeats.
    pub heartbeat_secs: u64,
    /// Seconds running turns get to finish at shutdown before they are cancelled.
    pub shutdown_grace_secs: u64,
    /// The environment variable holding a token that opens `GET /metrics` and nothing else
    /// (for a Prometheus scraper). User tokens open `/metrics` too.
    pub metrics_token_env: Option<String>,
    /// Seconds a turn's lease on its session lasts without renewal: when the instance running
    /// it dies, another instance on the same database takes the session over after this.
    pub lease_secs: u64,
}

impl Default for ServerSettings {
    /// The server's own defaults ([`ServerConfig::new`]), so they are stated once.
    fn default() -> Self {
        let d = ServerConfig::new(PathBuf::new());
        Self {
            bind: d.bind.to_string(),
            tokens: Vec::new(),
            tokens_file: None,
            workspaces: BTreeMap::new(),
            models: d.models,
            gateway_any_model: d.gateway_any_model,
            agent_model: d.agent_model,
            approval: d.approval,
            openai_approval: d.openai_approval,
            body_limit_bytes: d.body_limit,
            heartbeat_secs: d.heartbeat.as_secs(),
            shutdown_grace_secs: d.shutdown_grace.as_secs(),
            metrics_token_env: None,
            lease_secs: d.lease.as_secs(),
        }
    }
}

impl ServerSettings {
    /// The server configuration: these settings, `--bind` (`bind`), the tokens they name and
    /// `TACKLE_SERVER_TOKENS` (read through `env`), workspaces relative to `workspace`.
    pub fn to_config(
        &self,
        workspace: &Path,
        bind: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, UsageError> {
        let mut config = ServerConfig::new(workspace.to_owned());
        let bind = bind.unwrap_or(&self.bind);
        config.bind = bind.parse::<SocketAddr>().map_err(|e| {
            UsageError(format!("invalid bind address {bind:?}: {e}; use HOST:PORT like 127.0.0.1:8787"))
        })?;
        for t in &self.tokens {
            let token = match (&t.token, &t.token_env) {
                (Some(token), _) => token.clone(),
                (None, Some(var)) => env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    UsageError(format!(
                        "the token of server user {:?} is read from ${var}, which is not set",
                        t.user
                    ))
                })?,
                (None, None) => {
                    return Err(UsageError(format!(
                        "server user {:?} has neither token nor token_env",
                        t.user
                    )));
                }
            };
            config.tokens.push(UserToken::new(t.user.clone(), &token));
        }
        if let Some(path) = self.tokens_file(workspace) {
            config
                .tokens
                .extend(ServerConfig::read_tokens_file(&path).map_err(|e| UsageError(e.to_string()))?);
        }
        if let Some(text) = env("TACKLE_SERVER_TOKENS") {
            config.tokens.extend(ServerConfig::parse_tokens(&text).map_err(|e| UsageError(e.to_string()))?);
        }
        for (name, path) in &self.workspaces {
            let path = if path.is_absolute() { path.clone() } else { workspace.join(path) };
            config.workspaces.insert(name.clone(), path);
        }
        config.models = self.models.clone();
        config.gateway_any_model = self.gateway_any_model;
        config.agent_model = self.agent_model.clone();
        config.approval = self.approval;
        config.openai_approval = self.openai_approval;
        config.body_limit = self.body_limit_bytes;
        config.heartbeat = Duration::from_secs(self.heartbeat_secs.max(1));
        config.shutdown_grace = Duration::from_secs(self.shutdown_grace_secs);
        config.lease = Duration::from_secs(self.lease_secs.max(1));
        if let Some(var) = &self.metrics_token_env {
            let token = env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                UsageError(format!(
                    "server.metrics_token_env names ${var}, which is not set; set it to the scrape token"
                ))
            })?;
            config.metrics_token = Some(ScrapeToken::new(&token));
        }
        Ok(config)
    }
}

impl ServerSettings {
    /// The tokens file (`tokens_file`, or `TACKLE_SERVER_TOKENS_FILE` like every setting), relative
    /// to `workspace`.
    pub fn tokens_file(&self, workspace: &Path) -> Option<PathBuf> {
        self.tokens_file.clone().map(|p| if p.is_absolute() { p } else { workspace.join(p) })
    }
}

/// A bearer token of one user: the secret itself or the environment variable holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSetting {
    /// The user the token authenticates.
    pub user: String,
    /// The secret (masked by `tackle config` unless `--show-secrets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Environment variable holding the secret.
    #[serde(default)]
    pub token_env: Option<String>,
}
