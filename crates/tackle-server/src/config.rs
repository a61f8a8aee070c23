//! [`ServerConfig`]: where the server listens, who may call it, and its limits.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::ServerError;

/// A bearer token and the user it authenticates.
#[derive(Clone, PartialEq, Eq)]
pub struct UserToken {
    /// User id; sessions, approvals and stored outputs belong to it.
    pub user: String,
    /// The secret. Never logged: `Debug` prints it masked.
    pub token: String,
}

impl std::fmt::Debug for UserToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserToken").field("user", &self.user).field("token", &"***").finish()
    }
}

/// A secret that only opens `GET /metrics` (for a Prometheus scraper). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ScrapeToken(pub String);

impl std::fmt::Debug for ScrapeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScrapeToken(***)")
    }
}

/// Settings of `tackle serve`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Accepted bearer tokens. Empty: no authentication, and only a loopback `bind` is allowed.
    pub tokens: Vec<UserToken>,
    /// Workspaces clients may choose by name when creating a session; `default` is used when
    /// they name none. Clients never send paths.
    pub workspaces: BTreeMap<String, PathBuf>,
    /// Models clients may choose per session (the agent's own model is always allowed).
    pub models: Vec<String>,
    /// The model name under which the OpenAI-compatible endpoint runs Tackle's own agent.
    pub agent_model: String,
    /// Largest request body, in bytes (413 beyond).
    pub body_limit: usize,
    /// Interval of SSE heartbeat comments.
    pub heartbeat: Duration,
    /// How long shutdown waits for running turns before cancelling them.
    pub shutdown_grace: Duration,
    /// A token that opens `/metrics` and nothing else, so a scraper holds no user's powers.
    /// User tokens open `/metrics` too; with no token of either kind it is open, like every
    /// route of a server without tokens (which binds loopback only).
    pub metrics_token: Option<ScrapeToken>,
}

impl ServerConfig {
    /// Defaults: `127.0.0.1:8787`, no tokens, `workspace` as `default`, 2 MiB bodies, heartbeats
    /// every 15 s, 30 s of grace at shutdown.
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8787)),
            tokens: Vec::new(),
            workspaces: BTreeMap::from([("default".to_owned(), workspace)]),
            models: Vec::new(),
            agent_model: "tackle-agent".to_owned(),
            body_limit: 2 * 1024 * 1024,
            heartbeat: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(30),
            metrics_token: None,
        }
    }

    /// Checks the configuration before binding: without tokens only loopback is allowed (there
    /// is no default secret), tokens and users must be non-empty and tokens unique.
    ///
    /// ```
    /// use tackle_server::{ServerConfig, UserToken};
    /// let mut config = ServerConfig::new(".".into());
    /// config.bind = "0.0.0.0:8787".parse().unwrap();
    /// assert!(config.validate().is_err());
    /// config.tokens.push(UserToken { user: "alice".into(), token: "a-long-random-secret".into() });
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), ServerError> {
        if self.tokens.is_empty() && !self.bind.ip().is_loopback() {
            return Err(ServerError::Config(format!(
                "refusing to listen on {} without authentication: configure bearer tokens \
                 ([[server.tokens]] in tackle.toml or TACKLE_SERVER_TOKENS=user:token,...) or bind to 127.0.0.1",
                self.bind
            )));
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.user.trim().is_empty() {
                return Err(ServerError::Config(format!("server token #{} has an empty user", i + 1)));
            }
            if t.token.len() < 16 {
                return Err(ServerError::Config(format!(
                    "the token of user {:?} is shorter than 16 characters; use a long random secret \
                     (e.g. `openssl rand -hex 32`)",
                    t.user
                )));
            }
            if self.tokens[..i].iter().any(|o| o.token == t.token) {
                return Err(ServerError::Config(format!(
                    "user {:?} shares a token with another user",
                    t.user
                )));
            }
        }
        if let Some(ScrapeToken(token)) = &self.metrics_token {
            if token.len() < 16 {
                return Err(ServerError::Config(
                    "the metrics token is shorter than 16 characters; use a long random secret \
                     (e.g. `openssl rand -hex 32`)"
                        .into(),
                ));
            }
            if self.tokens.iter().any(|t| t.token == *token) {
                return Err(ServerError::Config(
                    "the metrics token is also a user's token; give the scraper its own".into(),
                ));
            }
        }
        if !self.workspaces.contains_key("default") {
            return Err(ServerError::Config("no `default` workspace is configured".into()));
        }
        Ok(())
    }

    /// Parses `user:token,user:token` (the `TACKLE_SERVER_TOKENS` variable).
    ///
    /// ```
    /// let tokens = tackle_server::ServerConfig::parse_tokens("alice:s3cret-alice-000000,bob:s3cret-bob-0000000").unwrap();
    /// assert_eq!(tokens[1].user, "bob");
    /// ```
    pub fn parse_tokens(text: &str) -> Result<Vec<UserToken>, ServerError> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|pair| {
                let (user, token) = pair.split_once(':').ok_or_else(|| {
                    ServerError::Config("TACKLE_SERVER_TOKENS must look like user:token,user:token".into())
                })?;
                Ok(UserToken { user: user.trim().to_owned(), token: token.trim().to_owned() })
            })
            .collect()
    }
}
