//! [`ServerConfig`]: where the server listens, who may call it, and its limits.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tackle_tools::ApprovalPolicy;

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
    /// Models clients may choose per session and name at the OpenAI-compatible gateway (the
    /// agent's own model is always allowed).
    pub models: Vec<String>,
    /// Whether the gateway forwards any model name a client sends instead of only the allowed
    /// ones (for a server in front of a provider whose models the operator does not list).
    pub gateway_any_model: bool,
    /// The model name under which the OpenAI-compatible endpoint runs Tackle's own agent.
    pub agent_model: String,
    /// Calls needing confirmation in turns of the sessions API: by default they wait (at most
    /// 10 minutes) in the approval queue for `POST /v1/approvals/{id}`.
    pub approval: ApprovalPolicy,
    /// Calls needing confirmation in the agent mode of `/v1/chat/completions`, whose clients
    /// cannot see approvals: denied by default (the model is told), or `wait` for a client that
    /// knows Tackle (the session id is in the `x-tackle-session-id` header).
    pub openai_approval: ApprovalPolicy,
    /// Largest request body, in bytes (413 beyond).
    pub body_limit: usize,
    /// Interval of SSE heartbeat comments.
    pub heartbeat: Duration,
    /// How long shutdown waits for running turns before cancelling them.
    pub shutdown_grace: Duration,
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
            gateway_any_model: false,
            agent_model: "tackle-agent".to_owned(),
            approval: ApprovalPolicy::default(),
            openai_approval: ApprovalPolicy::Deny,
            body_limit: 2 * 1024 * 1024,
            heartbeat: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(30),
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
