//! [`ServerSettings`]: the `[server]` table of `tackle.toml`, read by `tackle serve`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Settings of `tackle serve`.
///
/// ```toml
/// [server]
/// bind = "0.0.0.0:8787"
/// models = ["gpt-4.1-mini"]
/// [[server.tokens]]
/// user = "alice"
/// token_env = "TACKLE_TOKEN_ALICE"   # or token = "..." (kept out of `tackle config` output)
/// [server.workspaces]
/// docs = "/srv/docs"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Address to listen on (default `127.0.0.1:8787`).
    pub bind: Option<String>,
    /// Bearer tokens, each mapped to a user. Without any, only loopback addresses are allowed.
    /// `TACKLE_SERVER_TOKENS=user:token,...` adds more.
    pub tokens: Vec<TokenSetting>,
    /// Named workspaces clients may choose; `default` is the serve command's workspace unless
    /// set here.
    pub workspaces: BTreeMap<String, PathBuf>,
    /// Extra models of the provider clients may choose per session.
    pub models: Vec<String>,
    /// Model name under which `/v1/chat/completions` runs Tackle's agent.
    pub agent_model: String,
    /// Largest request body in bytes.
    pub body_limit_bytes: usize,
    /// Seconds between SSE heartbeats.
    pub heartbeat_secs: u64,
    /// Seconds running turns get to finish at shutdown before they are cancelled.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            bind: None,
            tokens: Vec::new(),
            workspaces: BTreeMap::new(),
            models: Vec::new(),
            agent_model: "tackle-agent".to_owned(),
            body_limit_bytes: 2 * 1024 * 1024,
            heartbeat_secs: 15,
            shutdown_grace_secs: 30,
        }
    }
}

/// A bearer token of one user: the secret itself or the environment variable holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSetting {
    /// The user the token authenticates.
    pub user: String,
    /// The secret (never printed by `tackle config`).
    #[serde(default, skip_serializing)]
    pub token: Option<String>,
    /// Environment variable holding the secret.
    #[serde(default)]
    pub token_env: Option<String>,
}
