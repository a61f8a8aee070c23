//! One live connection to an MCP server, with reconnection after a crash.
//!
//! [`McpConnection`] starts the server (a child process over stdio, or a Streamable HTTP
//! endpoint) with its start timeout, lists its tools following pagination cursors, and calls
//! tools with the call timeout.
//!
//! When the server dies (the process exits, the connection closes), the next call fails at once
//! with [`McpError::Unavailable`] and a reconnect starts in the background. A call made while a
//! reconnect is under way waits for it (at most the start timeout) and then uses the new
//! connection. Failed reconnects back off exponentially (1 s up to 30 s).
//!
//! `notifications/tools/list_changed` only raises a flag ([`McpConnection::take_list_changed`]);
//! the runtime re-lists tools at a turn boundary, never in the middle of a turn. A successful
//! reconnect raises the flag too, since the restarted server may offer other tools.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    PaginatedRequestParams, ProtocolVersion, Tool as McpToolDef,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTransportConfig};
use crate::error::McpError;

/// Most pages of `tools/list` followed before giving up on a server that never ends its cursor.
const MAX_LIST_PAGES: usize = 1_000;
/// Longest stderr line of a server kept in the logs.
const MAX_STDERR_LINE: usize = 1_000;
/// How long a graceful shutdown may take before the connection is dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Longest wait between two reconnect attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

type Client = RunningService<RoleClient, Handler>;

/// A connection to one MCP server.
pub struct McpConnection {
    name: String,
    config: McpServerConfig,
    list_changed: Arc<AtomicBool>,
    link: Mutex<Link>,
    /// Held by the task that reconnects; calls wait on it instead of failing during a reconnect.
    reconnecting: Arc<tokio::sync::Mutex<()>>,
}

enum Link {
    Connected { client: Arc<Client>, pid: Option<u32> },
    Down { reason: String, failures: u32, retry_at: Instant },
    Shutdown,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.name)
            .field("transport", &self.config.transport)
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl McpConnection {
    /// Starts (or reaches) the server and completes the MCP handshake within the configured
    /// start timeout. Disabled servers are started too: checking `enabled` is the caller's job.
    pub async fn connect(name: impl Into<String>, config: McpServerConfig) -> Result<Arc<Self>, McpError> {
        let name = name.into();
        let list_changed = Arc::new(AtomicBool::new(false));
        let (client, pid) = open(&name, &config, &list_changed).await?;
        tracing::info!(server = %name, transport = config.transport.kind(), "MCP server connected");
        Ok(Arc::new(Self {
            name,
            config,
            list_changed,
            link: Mutex::new(Link::Connected { client: Arc::new(client), pid }),
            reconnecting: Arc::new(tokio::sync::Mutex::new(())),
        }))
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Whether the connection is up right now (a dead server is noticed here without a call).
    pub fn is_connected(&self) -> bool {
        matches!(&*self.lock(), Link::Connected { client, .. } if is_alive(client))
    }

    /// Why the server is down, when it is.
    pub fn down_reason(&self) -> Option<String> {
        match &*self.lock() {
            Link::Connected { client, .. } if is_alive(client) => None,
            Link::Connected { .. } => Some("the server closed the connection".to_owned()),
            Link::Down { reason, .. } => Some(reason.clone()),
            Link::Shutdown => Some("shut down".to_owned()),
        }
    }

    /// Process id of a stdio server while it is connected.
    pub fn server_pid(&self) -> Option<u32> {
        match &*self.lock() {
            Link::Connected { pid, .. } => *pid,
            _ => None,
        }
    }

    /// Returns whether the server announced a change of its tool list (or was reconnected) since
    /// the last call, and clears the flag.
    pub fn take_list_changed(&self) -> bool {
        self.list_changed.swap(false, Ordering::AcqRel)
    }

    /// Whether a tool-list change is waiting to be applied (without consuming it).
    pub fn list_changed_pending(&self) -> bool {
        self.list_changed.load(Ordering::Acquire)
    }

    /// Raises the list-changed flag again (e.g. after a failed re-listing).
    pub fn mark_list_changed(&self) {
        self.list_changed.store(true, Ordering::Release);
    }

    /// Every tool of the server, following `nextCursor` until the last page, within the call
    /// timeout.
    pub async fn list_tools(self: &Arc<Self>) -> Result<Vec<McpToolDef>, McpError> {
        let client = self.live_client().await?;
        let limit = self.config.call_timeout;
        let pages = async {
            let mut tools = Vec::new();
            let mut cursor: Option<String> = None;
            let mut seen = HashSet::new();
            loop {
                let params = PaginatedRequestParams::default().with_cursor(cursor.take());
                let page =
                    client.list_tools(Some(params)).await.map_err(|e| self.on_service_error(&client, e))?;
                tools.extend(page.tools);
                match page.next_cursor {
                    None => return Ok(tools),
                    Some(next) => {
                        if seen.len() >= MAX_LIST_PAGES || !seen.insert(next.clone()) {
                            return Err(McpError::Protocol("tools/list pagination does not end".to_owned()));
                        }
                        cursor = Some(next);
                    }
                }
            }
        };
        tokio::time::timeout(limit, pages).await.map_err(|_| McpError::Timeout(limit))?
    }

    /// Calls `tool` with `arguments` within the call timeout; stops early when `cancel` fires
    /// (the server is sent `notifications/cancelled`).
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        let client = self.live_client().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let limit = self.config.call_timeout;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(McpError::Cancelled),
            result = tokio::time::timeout(limit, client.call_tool(params)) => match result {
                Err(_) => Err(McpError::Timeout(limit)),
                Ok(Ok(result)) => Ok(result),
                Ok(Err(err)) => Err(self.on_service_error(&client, err)),
            },
        }
    }

    /// Closes the connection (a stdio server gets its stdin closed, then SIGTERM, then SIGKILL).
    /// Later calls fail with [`McpError::Shutdown`].
    pub async fn shutdown(&self) {
        let old = std::mem::replace(&mut *self.lock(), Link::Shutdown);
        if let Link::Connected { client, .. } = old {
            match Arc::try_unwrap(client) {
                Ok(mut client) => {
                    if let Err(err) = client.close_with_timeout(SHUTDOWN_GRACE).await {
                        tracing::warn!(server = %self.name, error = %err, "MCP server shutdown failed");
                    }
                }
                // A call still holds the client; it is closed when that call ends.
                Err(shared) => drop(shared),
            }
            tracing::info!(server = %self.name, "MCP server shut down");
        }
    }

    fn lock(&self) -> MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The connected client, or `Unavailable` (starting a reconnect when one is due).
    async fn live_client(self: &Arc<Self>) -> Result<Arc<Client>, McpError> {
        if self.reconnecting.try_lock().is_err() {
            let wait = self.config.start_timeout + Duration::from_secs(1);
            let _ = tokio::time::timeout(wait, self.reconnecting.lock()).await;
        }
        let (reason, due) = {
            let mut link = self.lock();
            match &*link {
                Link::Connected { client, .. } if is_alive(client) => return Ok(Arc::clone(client)),
                Link::Connected { .. } => {
                    let reason = "the server closed the connection".to_owned();
                    tracing::warn!(server = %self.name, "MCP server connection lost");
                    *link = Link::Down { reason: reason.clone(), failures: 0, retry_at: Instant::now() };
                    (reason, true)
                }
                Link::Down { reason, retry_at, .. } => (reason.clone(), *retry_at <= Instant::now()),
                Link::Shutdown => return Err(McpError::Shutdown),
            }
        };
        if due {
            self.schedule_reconnect();
        }
        Err(McpError::Unavailable(reason))
    }

    /// Maps a request error; a broken transport marks the server down and starts a reconnect.
    fn on_service_error(self: &Arc<Self>, client: &Arc<Client>, err: ServiceError) -> McpError {
        let broken = matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_));
        if broken || !is_alive(client) {
            let reason = format!("the connection broke: {err}");
            self.mark_down(client, &reason);
            self.schedule_reconnect();
            return McpError::Unavailable(reason);
        }
        match err {
            ServiceError::McpError(data) => McpError::Server(data.message.into_owned()),
            ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
            ServiceError::Cancelled { .. } => McpError::Cancelled,
            other => McpError::Protocol(other.to_string()),
        }
    }

    /// Marks the server down, unless `client` was already replaced by a newer connection.
    fn mark_down(&self, client: &Arc<Client>, reason: &str) {
        let mut link = self.lock();
        if let Link::Connected { client: current, .. } = &*link
            && Arc::ptr_eq(current, client)
        {
            tracing::warn!(server = %self.name, %reason, "MCP server connection lost");
            *link = Link::Down { reason: reason.to_owned(), failures: 0, retry_at: Instant::now() };
        }
    }

    /// Starts a background reconnect unless one is already running.
    fn schedule_reconnect(self: &Arc<Self>) {
        let Ok(guard) = Arc::clone(&self.reconnecting).try_lock_owned() else {
            return;
        };
        let this = Arc::clone(self);
        tokio::spawn(async move { this.reconnect(guard).await });
    }

    async fn reconnect(&self, _guard: OwnedMutexGuard<()>) {
        let failures = match &*self.lock() {
            Link::Down { failures, .. } => *failures,
            Link::Connected { client, .. } if is_alive(client) => return,
            Link::Connected { .. } => 0,
            Link::Shutdown => return,
        };
        tracing::info!(server = %self.name, attempt = failures + 1, "reconnecting MCP server");
        match open(&self.name, &self.config, &self.list_changed).await {
            Ok((client, pid)) => {
                let mut link = self.lock();
                if matches!(&*link, Link::Shutdown) {
                    return; // dropping the client closes it
                }
                *link = Link::Connected { client: Arc::new(client), pid };
                drop(link);
                self.list_changed.store(true, Ordering::Release);
                tracing::info!(server = %self.name, "MCP server reconnected");
            }
            Err(err) => {
                let failures = failures.saturating_add(1);
                let backoff = backoff(failures);
                tracing::warn!(server = %self.name, error = %err, ?backoff, "MCP server reconnect failed");
                let mut link = self.lock();
                if !matches!(&*link, Link::Shutdown) {
                    *link = Link::Down {
                        reason: format!("reconnect failed: {err}"),
                        failures,
                        retry_at: Instant::now() + backoff,
                    };
                }
            }
        }
    }
}

/// Wait before the next attempt after `failures` failed reconnects: 1 s, 2 s, 4 s ... 30 s.
fn backoff(failures: u32) -> Duration {
    let secs = 1u64.checked_shl(failures.saturating_sub(1)).unwrap_or(u64::MAX);
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

fn is_alive(client: &Client) -> bool {
    !client.is_closed() && !client.peer().is_transport_closed()
}

/// The client side of the protocol: records `tools/list_changed`.
#[derive(Clone)]
struct Handler {
    server: Arc<str>,
    list_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "MCP server tool list changed");
        self.list_changed.store(true, Ordering::Release);
    }

    fn get_info(&self) -> ClientConfig {
        // The last version with the `initialize` handshake: servers send `list_changed`
        // notifications unsolicited, without a `subscriptions/listen` stream.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tackle", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// Starts the transport and runs the handshake within the start timeout.
async fn open(
    name: &str,
    config: &McpServerConfig,
    list_changed: &Arc<AtomicBool>,
) -> Result<(Client, Option<u32>), McpError> {
    let handler = Handler { server: Arc::from(name), list_changed: Arc::clone(list_changed) };
    let start = async {
        match &config.transport {
            McpTransportConfig::Stdio { command, args, env, env_allow, cwd } => {
                // MCP servers are third-party programs: they get the allowlisted environment
                // (the same rule as the shell tool's), never Tackle's keys and tokens.
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(tackle_sandbox::child_env(
                    std::env::vars_os(),
                    env_allow,
                    env,
                ));
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (process, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| McpError::Spawn { command: command.clone(), reason: e.to_string() })?;
                let pid = process.id();
                if let Some(stderr) = stderr {
                    forward_stderr(name.to_owned(), stderr);
                }
                let client = handler.serve(process).await.map_err(|e| McpError::Handshake(e.to_string()))?;
                Ok((client, pid))
            }
            McpTransportConfig::Http { url, headers } => {
                let transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(header_map(headers)?);
                let transport = StreamableHttpClientTransport::from_config(transport_config);
                let client =
                    handler.serve(transport).await.map_err(|e| McpError::Handshake(e.to_string()))?;
                Ok((client, None))
            }
        }
    };
    let limit = config.start_timeout;
    tokio::time::timeout(limit, start).await.map_err(|_| McpError::StartTimeout(limit))?
}

/// Configured headers as HTTP headers, values marked sensitive (never shown, even on error).
fn header_map(headers: &BTreeMap<String, String>) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(name, value)| {
            let invalid = || McpError::InvalidHeader { name: name.clone() };
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| invalid())?;
            value.set_sensitive(true);
            Ok((header, value))
        })
        .collect()
}

/// Logs a server's stderr lines at debug level until the stream ends.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = match line.char_indices().nth(MAX_STDERR_LINE) {
                Some((cut, _)) => &line[..cut],
                None => line.as_str(),
            };
            tracing::debug!(target: "tackle_mcp::stderr", server = %server, "{line}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(6), MAX_BACKOFF);
        assert_eq!(backoff(200), MAX_BACKOFF);
    }

    #[test]
    fn invalid_headers_do_not_echo_values() {
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_owned(), "Bearer ok".to_owned());
        assert_eq!(header_map(&headers).unwrap().len(), 1);
        headers.insert("X-Bad".to_owned(), "line\nbreak-s3cret".to_owned());
        let err = header_map(&headers).unwrap_err().to_string();
        assert!(err.contains("X-Bad") && !err.contains("s3cret"), "{err}");
        headers.clear();
        headers.insert("bad name".to_owned(), "v".to_owned());
        assert!(header_map(&headers).is_err());
    }

    #[tokio::test]
    async fn spawn_failure_is_reported() {
        let config = McpServerConfig::stdio("/nonexistent/tackle-mcp-server", Vec::<String>::new());
        let err = McpConnection::connect("ghost", config).await.unwrap_err();
        assert!(matches!(err, McpError::Spawn { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn start_timeout_is_enforced() {
        // `sleep` never answers the handshake.
        let config = McpServerConfig::stdio("sleep", ["30"]).with_start_timeout(Duration::from_millis(200));
        let started = Instant::now();
        let err = McpConnection::connect("sleepy", config).await.unwrap_err();
        assert_eq!(err, McpError::StartTimeout(Duration::from_millis(200)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
