//! [`CodexServer`]: one `codex app-server` process shared by many threads, started on first
//! use and started again after it dies.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::approvals::CodexApprovals;
use crate::connection::{Connection, Inbound, ServerRequest};
use crate::wire::{self, DynamicToolSpec, ThreadId};
use crate::{CodexConfig, CodexError};

/// What a thread receives from the connection.
#[derive(Debug)]
pub(crate) enum ThreadEvent {
    /// A notification about the thread.
    Notification {
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// A request about the thread (a tool call, an approval).
    Request(ServerRequest),
    /// The process is gone.
    Closed(CodexError),
}

/// How to open a thread.
#[derive(Clone)]
pub struct ThreadOptions {
    /// Model (Codex's configured default when unset).
    pub model: Option<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// System prompt replacing Codex's (`baseInstructions`).
    pub instructions: Option<String>,
    /// Tools Codex calls back.
    pub tools: Vec<DynamicToolSpec>,
    /// Keep the thread in memory only (not resumable).
    pub ephemeral: bool,
    /// Who decides on the approval requests of Codex's own tools.
    pub approvals: Arc<dyn CodexApprovals>,
}

impl std::fmt::Debug for ThreadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadOptions")
            .field("model", &self.model)
            .field("cwd", &self.cwd)
            .field("tools", &self.tools.iter().map(DynamicToolSpec::name).collect::<Vec<_>>())
            .field("ephemeral", &self.ephemeral)
            .finish_non_exhaustive()
    }
}

/// A live connection and the generation number that identifies it.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    pub(crate) conn: Arc<Connection>,
    pub(crate) generation: u64,
}

/// Routes of one connection: thread id → the thread's channel.
type Routes = Arc<Mutex<HashMap<ThreadId, (u64, mpsc::UnboundedSender<ThreadEvent>)>>>;

pub(crate) struct ServerInner {
    pub(crate) config: CodexConfig,
    live: tokio::sync::Mutex<Option<Live>>,
    routes: Routes,
    generation: AtomicU64,
}

/// One `codex app-server` process (started on first use, restarted after it dies) serving many
/// threads. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), tackle_codex::CodexError> {
/// use tackle_codex::{CodexConfig, CodexServer, DenyNativeTools, ThreadOptions};
/// let server = CodexServer::new(CodexConfig::default());
/// let mut thread = server
///     .start_thread(ThreadOptions {
///         model: None,
///         cwd: None,
///         instructions: None,
///         tools: Vec::new(),
///         ephemeral: true,
///         approvals: std::sync::Arc::new(DenyNativeTools),
///     })
///     .await?;
/// thread.start_turn(vec![tackle_codex::wire::UserInput::text("hello")]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CodexServer {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for CodexServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexServer").field("command", &self.inner.config.command_line()).finish()
    }
}

impl CodexServer {
    /// A server for `config`; nothing starts until the first thread.
    pub fn new(config: CodexConfig) -> Self {
        Self {
            inner: Arc::new(ServerInner {
                config,
                live: tokio::sync::Mutex::new(None),
                routes: Routes::default(),
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CodexConfig {
        &self.inner.config
    }

    /// The running connection, starting (and initializing) a process if there is none or the
    /// last one died.
    pub(crate) async fn live(&self) -> Result<Live, CodexError> {
        let mut slot = self.inner.live.lock().await;
        if let Some(live) = slot.as_ref().filter(|l| !l.conn.is_closed()) {
            return Ok(live.clone());
        }
        let generation = self.inner.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let (conn, inbound) = Connection::spawn(&self.inner.config)?;
        tokio::spawn(route(inbound, self.inner.routes.clone(), generation));
        let init = wire::InitializeParams {
            client_info: wire::ClientInfo {
                name: "tackle".into(),
                title: Some("Tackle".into()),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            capabilities: wire::InitializeCapabilities { experimental_api: true },
        };
        let answer = conn.request(wire::method::INITIALIZE, to_value(&init)?).await;
        if let Err(e) = answer {
            conn.shut_down(e.clone());
            return Err(e);
        }
        conn.notify(wire::method::INITIALIZED, None)?;
        tracing::info!(generation, command = %self.inner.config.command_line(), "codex app-server started");
        let live = Live { conn, generation };
        *slot = Some(live.clone());
        Ok(live)
    }

    /// A server whose connection is an in-memory pipe; returns the peer's ends.
    #[cfg(test)]
    pub(crate) async fn in_memory(
        config: CodexConfig,
    ) -> (Self, impl tokio::io::AsyncBufRead + Unpin, impl tokio::io::AsyncWrite + Unpin) {
        let server = Self::new(config);
        let (conn, inbound, from_client, to_client) =
            crate::connection::in_memory(server.inner.config.request_timeout());
        tokio::spawn(route(inbound, server.inner.routes.clone(), 1));
        *server.inner.live.lock().await = Some(Live { conn, generation: 1 });
        (server, from_client, to_client)
    }

    /// Kills the process (threads fail with `Exited`; the next use starts a new one).
    pub async fn shutdown(&self) {
        if let Some(live) = self.inner.live.lock().await.take() {
            live.conn.shut_down(CodexError::Exited {
                status: "shut down by Tackle".into(),
                stderr: String::new(),
            });
        }
    }

    /// The process id of the running app-server (none before the first use or after it died).
    pub async fn pid(&self) -> Option<u32> {
        self.inner.live.lock().await.as_ref().filter(|l| !l.conn.is_closed()).and_then(|l| l.conn.pid())
    }

    /// Sends any request (for methods without a typed call here, e.g. `account/read`).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, CodexError> {
        self.live().await?.conn.request(method, params).await
    }

    /// Routes the messages of thread `id` on process `generation` to the returned receiver,
    /// until [`Self::detach`].
    pub(crate) fn route(&self, id: ThreadId, generation: u64) -> mpsc::UnboundedReceiver<ThreadEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner.routes.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (generation, tx));
        rx
    }

    /// Stops routing to `id` (its pending requests are answered by their drop).
    pub(crate) fn detach(&self, id: &ThreadId, generation: u64) {
        let mut routes = self.inner.routes.lock().unwrap_or_else(|p| p.into_inner());
        if routes.get(id).is_some_and(|(g, _)| *g == generation) {
            routes.remove(id);
        }
    }

    pub(crate) fn approval_policy(&self) -> &'static str {
        // With Codex's own tools, every command asks, and Tackle's hook policy answers.
        if self.inner.config.builtin_tools { "untrusted" } else { "never" }
    }

    pub(crate) fn sandbox(&self) -> &'static str {
        if self.inner.config.builtin_tools { "workspace-write" } else { "read-only" }
    }

    /// Per-thread configuration: Codex's own tools off unless configured, then the user's.
    pub(crate) fn thread_config(&self) -> serde_json::Map<String, Value> {
        let mut config = serde_json::Map::new();
        if !self.inner.config.builtin_tools {
            config.insert(
                "features".into(),
                json!({"shell_tool": false, "unified_exec": false, "multi_agent": false, "goals": false,
                       "image_generation": false, "apps": false, "plugins": false}),
            );
            config.insert("web_search".into(), json!("disabled"));
        }
        for (k, v) in &self.inner.config.thread_config {
            config.insert(k.clone(), v.clone());
        }
        config
    }
}

pub(crate) fn to_value(v: &impl serde::Serialize) -> Result<Value, CodexError> {
    serde_json::to_value(v)
        .map_err(|e| CodexError::Unexpected { method: "(encoding)".into(), message: e.to_string() })
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(method: &str, value: Value) -> Result<T, CodexError> {
    serde_json::from_value(value)
        .map_err(|e| CodexError::Unexpected { method: method.into(), message: e.to_string() })
}

/// Hands each message of one connection to the thread it is about; answers the requests no
/// thread takes.
async fn route(mut inbound: mpsc::UnboundedReceiver<Inbound>, routes: Routes, generation: u64) {
    while let Some(message) = inbound.recv().await {
        match message {
            Inbound::Notification { method, params } => {
                if let Some(tx) = target(&routes, &params, generation) {
                    let _ = tx.send(ThreadEvent::Notification { method, params });
                }
            }
            Inbound::Request(request) => match target(&routes, &request.params, generation) {
                Some(tx) => {
                    if let Err(mpsc::error::SendError(ThreadEvent::Request(back))) =
                        tx.send(ThreadEvent::Request(request))
                    {
                        answer_unrouted(back);
                    }
                }
                None => answer_unrouted(request),
            },
            Inbound::Closed(error) => {
                let routes = routes.lock().unwrap_or_else(|p| p.into_inner());
                for (g, tx) in routes.values() {
                    if *g == generation {
                        let _ = tx.send(ThreadEvent::Closed(error.clone()));
                    }
                }
                return;
            }
        }
    }
}

fn target(routes: &Routes, params: &Value, generation: u64) -> Option<mpsc::UnboundedSender<ThreadEvent>> {
    let id = wire::thread_of(params)?;
    let routes = routes.lock().unwrap_or_else(|p| p.into_inner());
    routes.get(&id).filter(|(g, _)| *g == generation).map(|(_, tx)| tx.clone())
}

/// Requests about no thread Tackle holds: the clock is answered, the rest refused (never left
/// waiting).
fn answer_unrouted(request: ServerRequest) {
    let method = request.method.clone();
    let result = match wire::ServerRequestMethod::parse(&method) {
        Some(wire::ServerRequestMethod::CurrentTimeRead) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            request.answer(&wire::CurrentTimeReadResponse { current_time_at: now })
        }
        None if method == wire::method::TOOL_CALL => request.answer(&wire::DynamicToolCallResponse::text(
            "no Tackle session holds this thread any more; the call was not run",
            false,
        )),
        _ => crate::approvals::unhandled(request),
    };
    if let Err(e) = result {
        tracing::debug!(%method, error = %e, "could not answer an app-server request");
    }
}
