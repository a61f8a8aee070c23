//! [`ServerConfig`]: where the server listens, who may call it, and its limits.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use subtle::ConstantTimeEq;
use tackle_tools::ApprovalPolicy;

use crate::ServerError;

/// Shortest token accepted: tokens are bearer secrets and must not be guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// A bearer token and the user it authenticates. Only a BLAKE3 digest of the token is kept:
/// the server's memory does not hold the secret, and tokens are compared as digests in
/// constant time.
///
/// ```
/// use tackle_server::UserToken;
/// let token = UserToken::new("alice", "tok-alice-0123456789");
/// assert!(token.matches("tok-alice-0123456789"));
/// assert!(!token.matches("tok-alice"));
/// assert!(!format!("{token:?}").contains("0123456789"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct UserToken {
    /// User id; sessions, approvals and stored outputs belong to it.
    pub user: String,
    digest: [u8; 32],
    len: usize,
}

impl UserToken {
    /// The token `token` of `user`; the token itself is not kept.
    pub fn new(user: impl Into<String>, token: &str) -> Self {
        Self { user: user.into(), digest: *blake3::hash(token.as_bytes()).as_bytes(), len: token.len() }
    }

    /// Whether `presented` is this token. The time taken depends only on the length of
    /// `presented`, never on how much of it matches.
    pub fn matches(&self, presented: &str) -> bool {
        bool::from(blake3::hash(presented.as_bytes()).as_bytes().ct_eq(&self.digest))
    }

    /// Length of the token in bytes (checked against [`MIN_TOKEN_LEN`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the token is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for UserToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserToken").field("user", &self.user).field("token", &"***").finish()
    }
}

/// A secret that only opens `GET /metrics` (for a Prometheus scraper). Kept and compared as a
/// digest, like [`UserToken`]; never printed.
///
/// ```
/// use tackle_server::ScrapeToken;
/// let token = ScrapeToken::new("scrape-0123456789abcdef");
/// assert!(token.matches("scrape-0123456789abcdef") && !token.matches("scrape"));
/// assert!(!format!("{token:?}").contains("0123"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ScrapeToken(UserToken);

impl ScrapeToken {
    /// The scrape token `token`; the token itself is not kept.
    pub fn new(token: &str) -> Self {
        Self(UserToken::new("metrics scraper", token))
    }

    /// Whether `presented` is this token, in constant time (see [`UserToken::matches`]).
    pub fn matches(&self, presented: &str) -> bool {
        self.0.matches(presented)
    }
}

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
    /// A token that opens `/metrics` and nothing else, so a scraper holds no user's powers.
    /// User tokens open `/metrics` too; with no token of either kind it is open, like every
    /// route of a server without tokens (which binds loopback only).
    pub metrics_token: Option<ScrapeToken>,
    /// How long a turn's lease on its session lasts without renewal. The instance running the
    /// turn renews it every third of this; if the instance dies, another one may take the
    /// session over once it has expired.
    pub lease: Duration,
}

impl ServerConfig {
    /// Defaults: `127.0.0.1:8787`, no tokens, `workspace` as `default`, 2 MiB bodies, heartbeats
    /// every 15 s, 30 s of grace at shutdown, 30 s turn leases.
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
            metrics_token: None,
            lease: Duration::from_secs(30),
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
    /// config.tokens.push(UserToken::new("alice", "a-long-random-secret"));
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), ServerError> {
        if self.tokens.is_empty() && !self.bind.ip().is_loopback() {
            return Err(ServerError::Config(format!(
                "refusing to listen on {} without authentication: configure bearer tokens \
                 ([server] tokens_file, TACKLE_SERVER_TOKENS_FILE, [[server.tokens]] in tackle.toml or \
                 TACKLE_SERVER_TOKENS=user:token,...) or bind to 127.0.0.1",
                self.bind
            )));
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.user.trim().is_empty() {
                return Err(ServerError::Config(format!("server token #{} has an empty user", i + 1)));
            }
            if t.len() < MIN_TOKEN_LEN {
                return Err(ServerError::Config(format!(
                    "the token of user {:?} is shorter than {MIN_TOKEN_LEN} characters; use a long random \
                     secret (e.g. `openssl rand -hex 32`)",
                    t.user
                )));
            }
            if self.tokens[..i].iter().any(|o| o.digest == t.digest) {
                return Err(ServerError::Config(format!(
                    "user {:?} shares a token with another user",
                    t.user
                )));
            }
        }
        if let Some(ScrapeToken(token)) = &self.metrics_token {
            if token.len() < MIN_TOKEN_LEN {
                return Err(ServerError::Config(format!(
                    "the metrics token is shorter than {MIN_TOKEN_LEN} characters; use a long random secret \
                     (e.g. `openssl rand -hex 32`)"
                )));
            }
            if self.tokens.iter().any(|t| t.digest == token.digest) {
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
    /// assert!(tokens[1].matches("s3cret-bob-0000000"));
    /// ```
    pub fn parse_tokens(text: &str) -> Result<Vec<UserToken>, ServerError> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|pair| {
                let (user, token) = pair.split_once(':').ok_or_else(|| {
                    ServerError::Config("TACKLE_SERVER_TOKENS must look like user:token,user:token".into())
                })?;
                Ok(UserToken::new(user.trim(), token.trim()))
            })
            .collect()
    }

    /// Reads a tokens file: one `user:token` per line; blank lines and lines starting with `#`
    /// are ignored. The file must be readable by its owner only (`chmod 600`), like an SSH key:
    /// a token file others can read is not a secret.
    ///
    /// ```
    /// use std::os::unix::fs::PermissionsExt;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("tokens");
    /// std::fs::write(&path, "# users\nalice:s3cret-alice-000000\n\nbob:s3cret-bob-0000000\n").unwrap();
    /// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    /// let tokens = tackle_server::ServerConfig::read_tokens_file(&path).unwrap();
    /// assert_eq!(tokens.len(), 2);
    /// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    /// assert!(tackle_server::ServerConfig::read_tokens_file(&path).unwrap_err().to_string().contains("chmod 600"));
    /// ```
    pub fn read_tokens_file(path: &Path) -> Result<Vec<UserToken>, ServerError> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|e| ServerError::Config(format!("cannot read the tokens file {shown}: {e}")))?;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(ServerError::Config(format!(
                "the tokens file {shown} can be read by other users (mode {:o}); run `chmod 600 {shown}`",
                mode & 0o777
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| ServerError::Config(format!("cannot read the tokens file {shown}: {e}")))?;
        text.lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .map(|(n, line)| {
                let (user, token) = line.split_once(':').ok_or_else(|| {
                    ServerError::Config(format!("{shown}:{n}: a line must look like user:token"))
                })?;
                Ok(UserToken::new(user.trim(), token.trim()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn tokens_file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        (dir, path)
    }

    #[test]
    fn only_digests_are_kept_and_compared() {
        let token = UserToken::new("alice", "a-long-random-secret-0451");
        assert!(token.matches("a-long-random-secret-0451"));
        for wrong in
            ["", "a-long-random-secret-045", "a-long-random-secret-04511", "A-long-random-secret-0451"]
        {
            assert!(!token.matches(wrong), "{wrong}");
        }
        assert!(!format!("{token:?}").contains("0451"));
        assert_eq!(token.len(), 25);
    }

    #[test]
    fn short_and_shared_tokens_are_refused_by_length_and_digest() {
        let mut config = ServerConfig::new(".".into());
        config.tokens = vec![UserToken::new("a", "fifteen-chars!!")];
        assert!(config.validate().unwrap_err().to_string().contains("shorter than 16"));
        config.tokens =
            vec![UserToken::new("a", "same-secret-for-both"), UserToken::new("b", "same-secret-for-both")];
        assert!(config.validate().unwrap_err().to_string().contains("shares a token"));
    }

    #[test]
    fn a_tokens_file_must_be_well_formed_and_private() {
        let (_dir, path) =
            tokens_file("alice:s3cret-alice-000000\n  # comment\n\nbob : s3cret-bob-0000000  \n");
        let tokens = ServerConfig::read_tokens_file(&path).unwrap();
        assert_eq!(tokens.iter().map(|t| t.user.as_str()).collect::<Vec<_>>(), ["alice", "bob"]);
        assert!(tokens[1].matches("s3cret-bob-0000000"));

        let (_dir, path) = tokens_file("alice:ok-token-0000000000\njust-a-token-line\n");
        let err = ServerConfig::read_tokens_file(&path).unwrap_err().to_string();
        assert!(err.contains(":2: a line must look like user:token"), "{err}");
        assert!(!err.contains("just-a-token-line"), "the secret is not echoed: {err}");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = ServerConfig::read_tokens_file(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600") && err.contains("640"), "{err}");

        let err = ServerConfig::read_tokens_file(Path::new("/no/such/tokens")).unwrap_err().to_string();
        assert!(err.contains("/no/such/tokens"), "{err}");
    }
}
