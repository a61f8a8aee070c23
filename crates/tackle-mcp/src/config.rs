//! Configuration of MCP servers: how to start or reach each one, and its time limits.
//!
//! In `tackle.toml` a server is a table under `[mcp.servers.<name>]`, with either `command`
//! (a child process speaking MCP over stdio) or `url` (a Streamable HTTP endpoint):
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { LOG_LEVEL = "warn" }
//! env_allow = ["NODE_OPTIONS"]   # passed from Tackle's environment besides PATH, HOME, LANG ...
//! start_timeout_secs = 20
//!
//! [mcp.servers.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer ..." }
//! enabled = false
//!
//! [mcp.servers.hosted]
//! url = "https://mcp.example.com/mcp"
//! protocol = "auto"              # or "2026-07-28", "2025-11-25", "2025-06-18"
//! [mcp.servers.hosted.oauth]     # optional: OAuth works without it (metadata discovery,
//! client_id = "tackle-cli"       # client ID metadata documents, dynamic registration)
//! client_secret_env = "HOSTED_CLIENT_SECRET"
//! scopes = ["files:read"]
//! ```
//!
//! Environment values, header values and client secrets are treated as secrets: `Debug` prints
//! only their names.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default time to spawn (or reach) a server and finish the MCP handshake.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time limit of one tool call (and of listing the tools).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Default time a person gets to finish signing in to a server in the browser.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The `[mcp]` table: every configured server by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Servers by name; the name becomes the namespace of their tools (`name__tool`).
    pub servers: BTreeMap<String, McpServerConfig>,
    /// Seconds a person gets to finish signing in to a server in the browser (`tackle mcp login`,
    /// or a sign-in a server asks for in the middle of `tackle run` / `tackle chat`).
    pub login_timeout_secs: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self { servers: BTreeMap::new(), login_timeout_secs: DEFAULT_LOGIN_TIMEOUT.as_secs() }
    }
}

/// One MCP server: its transport, whether it is used, and its time limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawServerConfig", into = "RawServerConfig")]
pub struct McpServerConfig {
    /// How to start or reach the server.
    pub transport: McpTransportConfig,
    /// Disabled servers are listed with [`crate::McpServerStatus::Disabled`] and never started.
    pub enabled: bool,
    /// Time to start the server and finish the MCP handshake (default 10 s).
    pub start_timeout: Duration,
    /// Time limit of one tool call (default 60 s).
    pub call_timeout: Duration,
    /// Which protocol revision to speak (default: negotiate, newest first).
    pub protocol: McpProtocol,
    /// OAuth client settings of a Streamable HTTP server (`[mcp.servers.<name>.oauth]`).
    pub oauth: Option<OAuthClientSettings>,
}

impl McpServerConfig {
    /// An enabled server over stdio with default time limits.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::with_transport(McpTransportConfig::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            env_allow: Vec::new(),
            cwd: None,
        })
    }

    /// An enabled server over Streamable HTTP with default time limits.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with_transport(McpTransportConfig::Http { url: url.into(), headers: BTreeMap::new() })
    }

    /// An enabled server with the given transport and default time limits.
    pub fn with_transport(transport: McpTransportConfig) -> Self {
        Self {
            transport,
            enabled: true,
            start_timeout: DEFAULT_START_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            protocol: McpProtocol::Auto,
            oauth: None,
        }
    }

    /// Replaces the protocol choice.
    pub fn with_protocol(mut self, protocol: McpProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Replaces the start timeout.
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Replaces the call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
}

/// How a server is started or reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransportConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// Program to run (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for the server. Values are secrets.
        env: BTreeMap<String, String>,
        /// Names of Tackle's own variables the server gets besides the base allowlist (`PATH`,
        /// `HOME`, `LANG`, `LC_*`, `TERM`, ...: `tackle_sandbox::BASE_ENV_ALLOWLIST`); a
        /// trailing `*` matches a prefix. Nothing else of Tackle's environment reaches it.
        env_allow: Vec<String>,
        /// Working directory; the current one when absent.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Endpoint URL, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request (values are secrets).
        headers: BTreeMap<String, String>,
    },
}

impl McpTransportConfig {
    /// Short transport name: `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Http { .. } => "http",
        }
    }

    /// A description safe to print: the command (without arguments or environment), or the URL
    /// with its credentials masked ([`tackle_protocol::mask_url`]).
    pub fn display_target(&self) -> String {
        match self {
            Self::Stdio { command, .. } => command.clone(),
            Self::Http { url, .. } => tackle_protocol::mask_url(url),
        }
    }
}

impl fmt::Debug for McpTransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, args, env, env_allow, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("env_allow", env_allow)
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &tackle_protocol::mask_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The MCP protocol revision a server is spoken to in.
///
/// `auto` asks with `server/discover` (revision 2026-07-28: stateless requests carrying their
/// own `_meta`) and falls back to the `initialize` handshake of 2025-11-25 (a server may answer
/// it with 2025-06-18) when the server does not know it. A pinned revision is used as is.
///
/// ```
/// use tackle_mcp::McpProtocol;
/// assert_eq!("2025-11-25".parse::<McpProtocol>().unwrap(), McpProtocol::V2025_11_25);
/// assert_eq!(McpProtocol::Auto.to_string(), "auto");
/// assert!("2024-01-01".parse::<McpProtocol>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum McpProtocol {
    /// Negotiate: 2026-07-28 when the server speaks it, else 2025-11-25 or 2025-06-18.
    #[default]
    Auto,
    /// Revision 2026-07-28 (`server/discover`, no handshake, no sessions).
    V2026_07_28,
    /// Revision 2025-11-25 (`initialize` handshake).
    V2025_11_25,
    /// Revision 2025-06-18 (`initialize` handshake).
    V2025_06_18,
}

impl McpProtocol {
    /// Every accepted spelling, for error messages and docs.
    pub const NAMES: [&'static str; 4] = ["auto", "2026-07-28", "2025-11-25", "2025-06-18"];

    /// The revision's date, or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::V2026_07_28 => "2026-07-28",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2025_06_18 => "2025-06-18",
        }
    }
}

impl fmt::Display for McpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for McpProtocol {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "auto" => Ok(Self::Auto),
            "2026-07-28" => Ok(Self::V2026_07_28),
            "2025-11-25" => Ok(Self::V2025_11_25),
            "2025-06-18" => Ok(Self::V2025_06_18),
            other => Err(ConfigError::UnknownProtocol(other.to_owned())),
        }
    }
}

/// `[mcp.servers.<name>.oauth]`: how Tackle identifies itself to the server's authorization
/// server. Everything is optional: without a `client_id`, Tackle uses a client ID metadata
/// document (when `client_metadata_url` is set and the server supports them) or registers
/// itself dynamically.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OAuthClientSettings {
    /// A client ID registered with the authorization server beforehand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret, for confidential clients (a secret: prefer `client_secret_env`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The environment variable holding the client secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// Scopes to ask for; empty: what the server's challenge or metadata names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// HTTPS URL of a client ID metadata document describing Tackle, used as the client ID by
    /// authorization servers that support them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// Loopback port the authorization code is received on (`http://127.0.0.1:PORT/callback`);
    /// unset: any free port. Set it when a pre-registered client allows one redirect URI only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
    /// How tokens are obtained: `authorization_code` (a person signs in in a browser),
    /// `client_credentials` (machine to machine, with the client's own secret or key; no person)
    /// `enterprise_managed` (the enterprise's identity provider vouches for the user: their ID
    /// token is exchanged for an ID-JAG, and that for the server's token; no browser) or
    /// `jwt_bearer` (workload identity federation: a JWT the platform issues to this workload is
    /// the grant; no person, no stored secret).
    #[serde(skip_serializing_if = "OAuthGrant::is_default")]
    pub grant: OAuthGrant,
    /// `client_credentials` with `private_key_jwt`: a PEM file holding the client's private key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<PathBuf>,
    /// ... or the environment variable holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_env: Option<String>,
    /// The key's signing algorithm: `ES256` (default), `ES384`, `RS256`, `RS384` or `RS512`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_algorithm: Option<SigningAlgorithm>,
    /// `enterprise_managed`: the issuer of the enterprise identity provider (IdP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_issuer: Option<String>,
    /// ... its token endpoint (unset: from the issuer's OpenID configuration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_token_endpoint: Option<String>,
    /// ... Tackle's client ID registered at the IdP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_client_id: Option<String>,
    /// ... the environment variable holding that client's secret (unset: a public client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_client_secret_env: Option<String>,
    /// ... the environment variable holding the user's ID token from the IdP (their single
    /// sign-on), exchanged for the server's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token_env: Option<String>,
    /// ... or a file holding it (kept fresh by the sign-on tool that writes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token_file: Option<PathBuf>,
    /// `jwt_bearer`: a file holding the workload's JWT (a Kubernetes projected service account
    /// token, a cloud identity token), read at each exchange since the platform rotates it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion_file: Option<PathBuf>,
    /// ... or the environment variable holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion_env: Option<String>,
}

/// The secrets of an `enterprise_managed` client, read from the environment or files.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnterpriseSecrets {
    /// The user's ID token from the IdP.
    pub id_token: String,
    /// Tackle's client secret at the IdP, if it is a confidential client there.
    pub idp_client_secret: Option<String>,
}

impl fmt::Debug for EnterpriseSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnterpriseSecrets { .. }")
    }
}

/// The algorithm a `private_key_jwt` client signs its assertions with (RFC 7523).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    #[default]
    ES256,
    /// ECDSA with P-384 and SHA-384.
    ES384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
}

/// A `signing_algorithm` that is none of those `private_key_jwt` supports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not one of ES256, ES384, RS256, RS384, RS512")]
pub struct UnknownSigningAlgorithm(pub String);

impl std::str::FromStr for SigningAlgorithm {
    type Err = UnknownSigningAlgorithm;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ES256" => Ok(Self::ES256),
            "ES384" => Ok(Self::ES384),
            "RS256" => Ok(Self::RS256),
            "RS384" => Ok(Self::RS384),
            "RS512" => Ok(Self::RS512),
            other => Err(UnknownSigningAlgorithm(other.to_owned())),
        }
    }
}

/// How OAuth tokens are obtained for a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person signs in in a browser (`tackle mcp login`).
    #[default]
    AuthorizationCode,
    /// The client's own credentials, no person (SEP-1046): for unattended use and servers.
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): the user's ID token from the enterprise IdP is
    /// exchanged for an ID-JAG (RFC 8693), and that for the server's token (RFC 7523).
    EnterpriseManaged,
    /// Workload identity federation (SEP-1933): the workload's JWT from its platform is the
    /// grant (RFC 7523 JWT bearer).
    JwtBearer,
}

impl OAuthGrant {
    fn is_default(&self) -> bool {
        *self == Self::AuthorizationCode
    }
}

impl OAuthClientSettings {
    /// The PEM private key of a `private_key_jwt` client: `private_key_file`, else the variable
    /// `private_key_env` names.
    pub fn private_key(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Vec<u8>>, ConfigError> {
        if let Some(path) = &self.private_key_file {
            return std::fs::read(path)
                .map(Some)
                .map_err(|e| ConfigError::Unreadable { key: "private_key_file", reason: e.to_string() });
        }
        match &self.private_key_env {
            None => Ok(None),
            Some(var) => match env(var).filter(|v| !v.is_empty()) {
                Some(pem) => Ok(Some(pem.into_bytes())),
                None => Err(ConfigError::MissingKeyEnv(var.clone())),
            },
        }
    }

    /// The secrets of an `enterprise_managed` client: the ID token (`id_token_file`, else the
    /// variable `id_token_env` names) and the IdP client secret; `None` for other grants.
    pub fn enterprise_secrets(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<EnterpriseSecrets>, ConfigError> {
        if self.grant != OAuthGrant::EnterpriseManaged {
            return Ok(None);
        }
        let id_token = match (&self.id_token_file, &self.id_token_env) {
            (Some(path), _) => std::fs::read_to_string(path)
                .map_err(|e| ConfigError::Unreadable { key: "id_token_file", reason: e.to_string() })?
                .trim()
                .to_owned(),
            (None, Some(var)) => env(var)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| ConfigError::MissingEnv { var: var.clone(), key: "id_token_env" })?
                .trim()
                .to_owned(),
            (None, None) => return Err(ConfigError::IncompleteEnterprise),
        };
        if id_token.is_empty() {
            return Err(ConfigError::Unreadable { key: "id_token_file", reason: "the file is empty".into() });
        }
        let idp_client_secret =
            match &self.idp_client_secret_env {
                None => None,
                Some(var) => Some(env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    ConfigError::MissingEnv { var: var.clone(), key: "idp_client_secret_env" }
                })?),
            };
        Ok(Some(EnterpriseSecrets { id_token, idp_client_secret }))
    }

    /// The workload's JWT of a `jwt_bearer` client: `assertion_file`, else the variable
    /// `assertion_env` names.
    pub fn assertion(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
        let text = match (&self.assertion_file, &self.assertion_env) {
            (Some(path), _) => std::fs::read_to_string(path)
                .map_err(|e| ConfigError::Unreadable { key: "assertion_file", reason: e.to_string() })?,
            (None, Some(var)) => {
                env(var).ok_or_else(|| ConfigError::MissingEnv { var: var.clone(), key: "assertion_env" })?
            }
            (None, None) => return Err(ConfigError::IncompleteJwtBearer),
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(ConfigError::Unreadable { key: "assertion_file", reason: "it is empty".into() });
        }
        Ok(text.to_owned())
    }

    /// The client secret: `client_secret`, else the variable `client_secret_env` names (read
    /// through `env`).
    pub fn secret(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
        if let Some(secret) = &self.client_secret {
            return Ok(Some(secret.clone()));
        }
        match &self.client_secret_env {
            None => Ok(None),
            Some(var) => match env(var).filter(|v| !v.is_empty()) {
                Some(secret) => Ok(Some(secret)),
                None => Err(ConfigError::MissingSecretEnv(var.clone())),
            },
        }
    }
}

impl fmt::Debug for OAuthClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClientSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("client_secret_env", &self.client_secret_env)
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_port", &self.redirect_port)
            .field("grant", &self.grant)
            .field("private_key_file", &self.private_key_file)
            .field("private_key_env", &self.private_key_env)
            .field("signing_algorithm", &self.signing_algorithm)
            .field("idp_issuer", &self.idp_issuer)
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("idp_client_id", &self.idp_client_id)
            .field("idp_client_secret_env", &self.idp_client_secret_env)
            .field("id_token_env", &self.id_token_env)
            .field("id_token_file", &self.id_token_file)
            .field("assertion_file", &self.assertion_file)
            .field("assertion_env", &self.assertion_env)
            .finish()
    }
}

/// Why a server table is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Neither `command` nor `url` was given.
    #[error(
        "an MCP server needs either `command` (a program speaking MCP over stdio) or `url` \
         (a Streamable HTTP endpoint)"
    )]
    MissingTransport,
    /// Both `command` and `url` were given.
    #[error("an MCP server takes either `command` or `url`, not both")]
    AmbiguousTransport,
    /// A key of the other transport was given (e.g. `headers` with `command`).
    #[error("`{key}` is only valid for {transport} servers")]
    MisplacedKey {
        /// The key.
        key: &'static str,
        /// The transport it belongs to.
        transport: &'static str,
    },
    /// `command` or `url` is empty.
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    /// A timeout is negative, zero or not finite.
    #[error("`{0}` must be a positive number of seconds")]
    BadTimeout(&'static str),
    /// `protocol` names no revision Tackle speaks.
    #[error("`protocol` {0:?} is not one of auto, 2026-07-28, 2025-11-25, 2025-06-18")]
    UnknownProtocol(String),
    /// `client_secret_env` names a variable that is not set.
    #[error("the environment variable {0} (`client_secret_env`) is not set")]
    MissingSecretEnv(String),
    /// `private_key_env` names a variable that is not set.
    #[error("the environment variable {0} (`private_key_env`) is not set")]
    MissingKeyEnv(String),
    /// Both `client_secret` and `client_secret_env` were given.
    #[error("`oauth` takes `client_secret` or `client_secret_env`, not both")]
    AmbiguousSecret,
    /// A file the configuration names cannot be read.
    #[error("`{key}` cannot be read: {reason}")]
    Unreadable {
        /// The key.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// `grant = "client_credentials"` without a client ID, or without a secret or key.
    #[error(
        "`grant = \"client_credentials\"` needs `client_id` and a `client_secret`/`client_secret_env` or a \
         `private_key_file`/`private_key_env`"
    )]
    IncompleteClientCredentials,
    /// Both `private_key_file` and `private_key_env` were given.
    #[error("`oauth` takes `private_key_file` or `private_key_env`, not both")]
    AmbiguousPrivateKey,
    /// A private key or signing algorithm without `grant = "client_credentials"`.
    #[error(
        "`private_key_file`, `private_key_env` and `signing_algorithm` need `grant = \"client_credentials\"`"
    )]
    KeyWithoutClientCredentials,
    /// A client secret without a client ID.
    #[error("`oauth.client_secret` needs `oauth.client_id` (a secret belongs to a registered client)")]
    SecretWithoutClientId,
    /// A variable a setting names is not set.
    #[error("the environment variable {var} (`{key}`) is not set")]
    MissingEnv {
        /// The variable.
        var: String,
        /// The setting naming it.
        key: &'static str,
    },
    /// `grant = "enterprise_managed"` without what the exchanges need.
    #[error(
        "`grant = \"enterprise_managed\"` needs `client_id` (at the server's authorization server), \
         `idp_issuer`, `idp_client_id` and the user's ID token in `id_token_env` or `id_token_file`"
    )]
    IncompleteEnterprise,
    /// `grant = "jwt_bearer"` without a client ID or the workload's JWT.
    #[error(
        "`grant = \"jwt_bearer\"` needs `client_id` and the workload's JWT in `assertion_file` or `assertion_env`"
    )]
    IncompleteJwtBearer,
    /// `assertion_*` without `grant = "jwt_bearer"`.
    #[error("`assertion_file` and `assertion_env` need `grant = \"jwt_bearer\"`")]
    AssertionWithoutJwtBearer,
    /// Identity provider settings without `grant = "enterprise_managed"`.
    #[error("`idp_*` and `id_token_*` settings need `grant = \"enterprise_managed\"`")]
    IdpWithoutEnterprise,
}

/// The TOML shape of a server table, checked into [`McpServerConfig`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    env_allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    #[serde(default = "default_true")]
    enabled: bool,
    #[serde(default, alias = "start_timeout", skip_serializing_if = "Option::is_none")]
    start_timeout_secs: Option<f64>,
    #[serde(default, alias = "call_timeout", skip_serializing_if = "Option::is_none")]
    call_timeout_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    oauth: Option<OAuthClientSettings>,
}

fn default_true() -> bool {
    true
}

fn seconds(value: Option<f64>, key: &'static str, default: Duration) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(secs) if secs.is_finite() && secs > 0.0 => {
            Duration::try_from_secs_f64(secs).map_err(|_| ConfigError::BadTimeout(key))
        }
        Some(_) => Err(ConfigError::BadTimeout(key)),
    }
}

impl TryFrom<RawServerConfig> for McpServerConfig {
    type Error = ConfigError;

    fn try_from(raw: RawServerConfig) -> Result<Self, Self::Error> {
        let transport = match (raw.command, raw.url) {
            (None, None) => return Err(ConfigError::MissingTransport),
            (Some(_), Some(_)) => return Err(ConfigError::AmbiguousTransport),
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(ConfigError::Empty("command"));
                }
                if !raw.headers.is_empty() {
                    return Err(ConfigError::MisplacedKey { key: "headers", transport: "http" });
                }
                if raw.oauth.is_some() {
                    return Err(ConfigError::MisplacedKey { key: "oauth", transport: "http" });
                }
                McpTransportConfig::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    env_allow: raw.env_allow,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if url.trim().is_empty() {
                    return Err(ConfigError::Empty("url"));
                }
                for (key, present) in [
                    ("args", !raw.args.is_empty()),
                    ("env", !raw.env.is_empty()),
                    ("env_allow", !raw.env_allow.is_empty()),
                    ("cwd", raw.cwd.is_some()),
                ] {
                    if present {
                        return Err(ConfigError::MisplacedKey { key, transport: "stdio" });
                    }
                }
                McpTransportConfig::Http { url, headers: raw.headers }
            }
        };
        if let Some(oauth) = &raw.oauth {
            if oauth.client_secret.is_some() && oauth.client_secret_env.is_some() {
                return Err(ConfigError::AmbiguousSecret);
            }
            if (oauth.client_secret.is_some() || oauth.client_secret_env.is_some())
                && oauth.client_id.is_none()
            {
                return Err(ConfigError::SecretWithoutClientId);
            }
            if oauth.private_key_file.is_some() && oauth.private_key_env.is_some() {
                return Err(ConfigError::AmbiguousPrivateKey);
            }
            let has_key = oauth.private_key_file.is_some() || oauth.private_key_env.is_some();
            let has_idp = oauth.idp_issuer.is_some()
                || oauth.idp_token_endpoint.is_some()
                || oauth.idp_client_id.is_some()
                || oauth.idp_client_secret_env.is_some()
                || oauth.id_token_env.is_some()
                || oauth.id_token_file.is_some();
            if has_idp && oauth.grant != OAuthGrant::EnterpriseManaged {
                return Err(ConfigError::IdpWithoutEnterprise);
            }
            let has_assertion = oauth.assertion_file.is_some() || oauth.assertion_env.is_some();
            if has_assertion && oauth.grant != OAuthGrant::JwtBearer {
                return Err(ConfigError::AssertionWithoutJwtBearer);
            }
            match oauth.grant {
                OAuthGrant::JwtBearer => {
                    if oauth.client_id.is_none() || !has_assertion {
                        return Err(ConfigError::IncompleteJwtBearer);
                    }
                    if has_key || oauth.signing_algorithm.is_some() {
                        return Err(ConfigError::KeyWithoutClientCredentials);
                    }
                }
                OAuthGrant::EnterpriseManaged => {
                    if oauth.client_id.is_none()
                        || oauth.idp_issuer.is_none()
                        || oauth.idp_client_id.is_none()
                        || (oauth.id_token_env.is_none() && oauth.id_token_file.is_none())
                    {
                        return Err(ConfigError::IncompleteEnterprise);
                    }
                    if has_key || oauth.signing_algorithm.is_some() {
                        return Err(ConfigError::KeyWithoutClientCredentials);
                    }
                }
                OAuthGrant::ClientCredentials => {
                    let has_secret = oauth.client_secret.is_some() || oauth.client_secret_env.is_some();
                    if oauth.client_id.is_none() || !(has_secret || has_key) {
                        return Err(ConfigError::IncompleteClientCredentials);
                    }
                }
                OAuthGrant::AuthorizationCode => {
                    if has_key || oauth.signing_algorithm.is_some() {
                        return Err(ConfigError::KeyWithoutClientCredentials);
                    }
                }
            }
        }
        Ok(Self {
            transport,
            enabled: raw.enabled,
            start_timeout: seconds(raw.start_timeout_secs, "start_timeout_secs", DEFAULT_START_TIMEOUT)?,
            call_timeout: seconds(raw.call_timeout_secs, "call_timeout_secs", DEFAULT_CALL_TIMEOUT)?,
            protocol: raw.protocol.as_deref().map(str::parse).transpose()?.unwrap_or_default(),
            oauth: raw.oauth,
        })
    }
}

impl From<McpServerConfig> for RawServerConfig {
    fn from(config: McpServerConfig) -> Self {
        let mut raw = RawServerConfig {
            enabled: config.enabled,
            start_timeout_secs: Some(config.start_timeout.as_secs_f64()),
            call_timeout_secs: Some(config.call_timeout.as_secs_f64()),
            protocol: Some(config.protocol.to_string()),
            oauth: config.oauth,
            ..RawServerConfig::default()
        };
        match config.transport {
            McpTransportConfig::Stdio { command, args, env, env_allow, cwd } => {
                raw.command = Some(command);
                raw.args = args;
                raw.env = env;
                raw.env_allow = env_allow;
                raw.cwd = cwd;
            }
            McpTransportConfig::Http { url, headers } => {
                raw.url = Some(url);
                raw.headers = headers;
            }
        }
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Settings {
        mcp: McpConfig,
    }

    fn parse(text: &str) -> Result<McpConfig, String> {
        toml::from_str::<Settings>(text).map(|s| s.mcp).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_stdio_and_http_servers() {
        let mcp = parse(
            r#"
            [mcp.servers.everything]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-everything"]
            env = { TOKEN = "s3cret" }
            cwd = "/tmp"
            start_timeout_secs = 2.5

            [mcp.servers.remote]
            url = "https://user:pw@example.com/mcp?key=abc"
            headers = { Authorization = "Bearer t0ken" }
            enabled = false
            call_timeout = 5
            "#,
        )
        .unwrap();
        let everything = &mcp.servers["everything"];
        assert!(everything.enabled);
        assert_eq!(everything.start_timeout, Duration::from_millis(2500));
        assert_eq!(everything.call_timeout, DEFAULT_CALL_TIMEOUT);
        match &everything.transport {
            McpTransportConfig::Stdio { command, args, env, cwd, .. } => {
                assert_eq!(command, "npx");
                assert_eq!(args.len(), 2);
                assert_eq!(env["TOKEN"], "s3cret");
                assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/tmp")));
            }
            other => panic!("unexpected {other:?}"),
        }
        let remote = &mcp.servers["remote"];
        assert!(!remote.enabled);
        assert_eq!(remote.start_timeout, DEFAULT_START_TIMEOUT);
        assert_eq!(remote.call_timeout, Duration::from_secs(5));
        assert_eq!(remote.transport.kind(), "http");
        // The password and the key are masked (tackle_protocol::mask_url), never shown.
        assert_eq!(
            remote.transport.display_target(),
            format!("https://user:{MASK}@example.com/mcp?key={MASK}", MASK = tackle_protocol::MASK)
        );
    }

    #[test]
    fn debug_never_prints_secret_values() {
        let mcp = parse(
            r#"
            [mcp.servers.a]
            command = "srv"
            env = { TOKEN = "s3cret" }
            [mcp.servers.b]
            url = "http://h/mcp?token=q1"
            headers = { Authorization = "Bearer t0ken" }
            "#,
        )
        .unwrap();
        let text = format!("{mcp:?}");
        assert!(text.contains("TOKEN") && text.contains("Authorization"), "{text}");
        for secret in ["s3cret", "t0ken", "q1"] {
            assert!(!text.contains(secret), "{secret} leaked in {text}");
        }
    }

    #[test]
    fn missing_transport_is_explained() {
        let err = parse("[mcp.servers.x]\nargs = [\"a\"]\n").unwrap_err();
        assert!(err.contains("either `command`"), "{err}");
        assert!(err.contains("`url`"), "{err}");
    }

    #[test]
    fn invalid_shapes_are_rejected() {
        let cases = [
            ("command = \"a\"\nurl = \"http://h\"", "not both"),
            ("command = \"\"", "must not be empty"),
            ("command = \"a\"\nheaders = { A = \"b\" }", "only valid for http"),
            ("url = \"http://h\"\nargs = [\"x\"]", "only valid for stdio"),
            ("command = \"a\"\nstart_timeout_secs = 0", "positive"),
            ("command = \"a\"\ncall_timeout_secs = -1", "positive"),
            ("command = \"a\"\ncomand = \"b\"", "unknown field"),
        ];
        for (body, needle) in cases {
            let err = parse(&format!("[mcp.servers.x]\n{body}\n")).unwrap_err();
            assert!(err.contains(needle), "{body}: {err}");
        }
    }

    #[test]
    fn enterprise_managed_settings_are_checked() {
        let server = |oauth: &str| {
            format!("[mcp.servers.x]\nurl = \"http://h/mcp\"\n[mcp.servers.x.oauth]\n{oauth}\n")
        };
        let full = "grant = \"enterprise_managed\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n\
                    idp_issuer = \"https://idp.example\"\nidp_client_id = \"tackle\"\nid_token_env = \"T\"";
        let oauth = parse(&server(full)).unwrap().servers["x"].oauth.clone().unwrap();
        assert_eq!(oauth.grant, OAuthGrant::EnterpriseManaged);
        let secrets =
            oauth.enterprise_secrets(&|v| (v == "T").then(|| " eyJ.id.token \n".into())).unwrap().unwrap();
        assert_eq!((secrets.id_token.as_str(), secrets.idp_client_secret.as_deref()), ("eyJ.id.token", None));
        assert!(!format!("{secrets:?}").contains("eyJ"), "never printed");
        let err = oauth.enterprise_secrets(&|_| None).unwrap_err();
        assert_eq!(err.to_string(), "the environment variable T (`id_token_env`) is not set");
        let cases = [
            (
                "grant = \"enterprise_managed\"\nclient_id = \"c\"\nidp_issuer = \"https://i\"",
                "needs `client_id`",
            ),
            ("idp_issuer = \"https://i\"", "need `grant = \"enterprise_managed\"`"),
            (
                "grant = \"client_credentials\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\nid_token_env = \"T\"",
                "need `grant",
            ),
            ("grant = \"jwt_bearer\"\nclient_id = \"c\"", "needs `client_id` and the workload's JWT"),
            ("assertion_env = \"W\"", "need `grant = \"jwt_bearer\"`"),
        ];
        let wif = parse(&server("grant = \"jwt_bearer\"\nclient_id = \"w\"\nassertion_env = \"W\""))
            .unwrap()
            .servers["x"]
            .oauth
            .clone()
            .unwrap();
        assert_eq!(wif.assertion(&|_| Some("eyJ.w\n".into())).unwrap(), "eyJ.w");
        assert!(wif.assertion(&|_| None).is_err());
        for (body, needle) in cases {
            let err = parse(&server(body)).unwrap_err();
            assert!(err.contains(needle), "{body}: {err}");
        }
    }

    #[test]
    fn client_credentials_settings_are_checked() {
        let server = |oauth: &str| {
            format!("[mcp.servers.x]\nurl = \"http://h/mcp\"\n[mcp.servers.x.oauth]\n{oauth}\n")
        };
        let ok = parse(&server(
            "grant = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_env = \"K\"\nsigning_algorithm = \"RS256\"",
        ))
        .unwrap();
        let oauth = ok.servers["x"].oauth.clone().unwrap();
        assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
        assert_eq!(oauth.signing_algorithm, Some(SigningAlgorithm::RS256));
        assert_eq!(oauth.private_key(&|_| Some("PEM".into())).unwrap().as_deref(), Some(&b"PEM"[..]));
        assert!(matches!(oauth.private_key(&|_| None), Err(ConfigError::MissingKeyEnv(v)) if v == "K"));
        parse(&server("grant = \"client_credentials\"\nclient_id = \"c\"\nclient_secret_env = \"S\""))
            .unwrap();
        let cases = [
            ("grant = \"client_credentials\"\nprivate_key_env = \"K\"", "needs `client_id`"),
            ("grant = \"client_credentials\"\nclient_id = \"c\"", "needs `client_id` and a"),
            ("grant = \"password\"", "unknown variant"),
            ("client_id = \"c\"\nprivate_key_env = \"K\"", "need `grant = \"client_credentials\"`"),
            (
                "grant = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_env = \"K\"\nprivate_key_file = \"/k\"",
                "not both",
            ),
            (
                "grant = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_env = \"K\"\nsigning_algorithm = \"HS256\"",
                "unknown variant",
            ),
        ];
        for (body, needle) in cases {
            let err = parse(&server(body)).unwrap_err();
            assert!(err.contains(needle), "{body}: {err}");
        }
    }

    #[test]
    fn round_trips_through_toml() {
        let mut config =
            McpServerConfig::stdio("node", ["server.js"]).with_call_timeout(Duration::from_secs(7));
        if let McpTransportConfig::Stdio { env, .. } = &mut config.transport {
            env.insert("A".into(), "b".into());
        }
        let text = toml::to_string(&config).unwrap();
        let back: McpServerConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, config);
    }
}
