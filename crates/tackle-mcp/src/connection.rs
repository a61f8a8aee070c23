//! One live connection to an MCP server, with reconnection after a crash.
//!
//! [`McpConnection`] starts the server (a child process over stdio, or a Streamable HTTP
//! endpoint) within its start timeout, in the protocol revision its configuration asks for
//! ([`McpProtocol`]: by default `server/discover` of 2026-07-28, falling back to the
//! `initialize` handshake of 2025-11-25 / 2025-06-18), lists its tools, resources and prompts
//! following pagination cursors, and calls tools with the call timeout.
//!
//! A tool call carries its [`ToolContext`]: the server's questions (`elicitation/create`, or
//! the `input_required` rounds of 2026-07-28) are asked through the turn's elicitation policy,
//! its progress notifications become the call's progress, and cancelling the context (or the
//! call timeout) sends `notifications/cancelled`. Time spent waiting for a person's answer does
//! not count against the call timeout.
//!
//! When the server dies (the process exits, the connection closes), the next call fails at once
//! with [`McpError::Unavailable`] and a reconnect starts in the background. A call made while a
//! reconnect is under way waits for it (at most the start timeout) and then uses the new
//! connection. Failed reconnects back off exponentially (1 s up to 30 s).
//!
//! List changes (`notifications/tools/list_changed`, or a `subscriptions/listen` stream on
//! 2026-07-28) only raise a flag ([`McpConnection::take_list_changed`]); the runtime re-lists
//! tools at a turn boundary, never in the middle of a turn. A successful reconnect raises the
//! flag too, since the restarted server may offer other tools.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
#[allow(deprecated)]
use rmcp::model::ListRootsResult;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    GetPromptRequestParams, GetPromptResult, Implementation, InputRequest, InputRequests, InputResponses,
    JsonObject, PaginatedRequestParams, ProgressNotificationParam, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, ServerResult,
    SubscriptionFilter, Tool as McpToolDef, UrlElicitationCapability,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, InboundStreamOrigin, NotificationContext,
    PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceError};
use serde_json::Value;
use tackle_tools::{ElicitationAnswer, ElicitationKind, Question, ToolContext};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::config::{McpProtocol, McpServerConfig, McpTransportConfig};
use crate::error::McpError;
use crate::oauth::store::CredentialFile;
use crate::oauth::{Authorizer, OAuthHttpClient};
use crate::options::McpOptions;
use crate::routes::{CallRoute, Routes};

/// Most pages of a list followed before giving up on a server that never ends its cursor.
const MAX_LIST_PAGES: usize = 1_000;
/// Longest stderr line of a server kept in the logs.
const MAX_STDERR_LINE: usize = 1_000;
/// How long a graceful shutdown may take before the connection is dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Longest wait between two reconnect attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Rounds of `input_required` answered for one call before giving up (a server that keeps
/// asking is broken).
const MAX_INPUT_ROUNDS: usize = 10;

type Client = RunningService<RoleClient, Handler>;

tokio::task_local! {
    /// The call a prompt or resource request made from this task answers questions for.
    static CURRENT_ROUTE: CallRoute;
}

/// A connection to one MCP server.
pub struct McpConnection {
    name: String,
    config: McpServerConfig,
    shared: Shared,
    link: Mutex<Link>,
    /// Held by the task that reconnects; calls wait on it instead of failing during a reconnect.
    reconnecting: Arc<tokio::sync::Mutex<()>>,
}

/// What survives reconnects: flags, the calls in flight, the OAuth state.
#[derive(Clone)]
struct Shared {
    list_changed: Arc<AtomicBool>,
    routes: Arc<Routes>,
    authorizer: Option<Arc<Authorizer>>,
}

enum Link {
    Connected { client: Arc<Client>, pid: Option<u32>, protocol: String },
    Down { reason: String, failures: u32, retry_at: Instant },
    Shutdown,
}

/// What a tool call returned, with what the model should be told besides.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// The server's result.
    pub result: CallToolResult,
    /// Notes about the call (questions the server asked that were declined, and why).
    pub notes: Vec<String>,
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
    /// start timeout, without OAuth credentials on disk and without interactive sign-in.
    /// Disabled servers are started too: checking `enabled` is the caller's job.
    pub async fn connect(name: impl Into<String>, config: McpServerConfig) -> Result<Arc<Self>, McpError> {
        Self::connect_with(name, config, &McpOptions::default()).await
    }

    /// Like [`Self::connect`], with where OAuth credentials live and how a person signs in.
    pub async fn connect_with(
        name: impl Into<String>,
        config: McpServerConfig,
        options: &McpOptions,
    ) -> Result<Arc<Self>, McpError> {
        let name = name.into();
        let authorizer = authorizer_for(&name, &config, options)?;
        let shared =
            Shared { list_changed: Arc::new(AtomicBool::new(false)), routes: Arc::default(), authorizer };
        let (client, pid) = open(&name, &config, &shared, options.fresh_sign_in).await?;
        let protocol = negotiated(&client);
        tracing::info!(server = %name, transport = config.transport.kind(), %protocol, "MCP server connected");
        let connection = Arc::new(Self {
            name,
            config,
            shared,
            link: Mutex::new(Link::Connected { client: Arc::new(client), pid, protocol }),
            reconnecting: Arc::new(tokio::sync::Mutex::new(())),
        });
        connection.listen_for_changes();
        Ok(connection)
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The protocol revision spoken with the server while it is connected.
    pub fn protocol(&self) -> Option<String> {
        match &*self.lock() {
            Link::Connected { protocol, .. } => Some(protocol.clone()),
            _ => None,
        }
    }

    /// The server's name and version, as it announced them.
    pub fn server_info(&self) -> Option<(String, String)> {
        match &*self.lock() {
            Link::Connected { client, .. } => client
                .peer_info()
                .and_then(|info| info.server_info.clone())
                .map(|i| (i.name.clone(), i.version.clone())),
            _ => None,
        }
    }

    /// The server's instructions for using it, when it gave some.
    pub fn instructions(&self) -> Option<String> {
        match &*self.lock() {
            Link::Connected { client, .. } => client.peer_info().and_then(|info| info.instructions.clone()),
            _ => None,
        }
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
        self.shared.list_changed.swap(false, Ordering::AcqRel)
    }

    /// Whether a tool-list change is waiting to be applied (without consuming it).
    pub fn list_changed_pending(&self) -> bool {
        self.shared.list_changed.load(Ordering::Acquire)
    }

    /// Raises the list-changed flag again (e.g. after a failed re-listing).
    pub fn mark_list_changed(&self) {
        self.shared.list_changed.store(true, Ordering::Release);
    }

    /// Every tool of the server, following `nextCursor` until the last page, within the call
    /// timeout.
    pub async fn list_tools(self: &Arc<Self>) -> Result<Vec<McpToolDef>, McpError> {
        let client = self.live_client().await?;
        self.paginate("tools/list", |cursor| {
            let client = Arc::clone(&client);
            async move {
                let page =
                    client.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.tools, page.next_cursor))
            }
        })
        .await
    }

    /// Every resource of the server (empty when it offers none).
    pub async fn list_resources(self: &Arc<Self>) -> Result<Vec<Resource>, McpError> {
        let client = self.live_client().await?;
        if !offers(&client, |c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        self.paginate("resources/list", |cursor| {
            let client = Arc::clone(&client);
            async move {
                let page = client
                    .list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                    .await?;
                Ok((page.resources, page.next_cursor))
            }
        })
        .await
    }

    /// Every resource template of the server (empty when it offers none).
    pub async fn list_resource_templates(self: &Arc<Self>) -> Result<Vec<ResourceTemplate>, McpError> {
        let client = self.live_client().await?;
        if !offers(&client, |c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        self.paginate("resources/templates/list", |cursor| {
            let client = Arc::clone(&client);
            async move {
                let page = client
                    .list_resource_templates(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                    .await?;
                Ok((page.resource_templates, page.next_cursor))
            }
        })
        .await
    }

    /// Every prompt of the server (empty when it offers none).
    pub async fn list_prompts(self: &Arc<Self>) -> Result<Vec<Prompt>, McpError> {
        let client = self.live_client().await?;
        if !offers(&client, |c| c.prompts.is_some()) {
            return Ok(Vec::new());
        }
        self.paginate("prompts/list", |cursor| {
            let client = Arc::clone(&client);
            async move {
                let page =
                    client.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.prompts, page.next_cursor))
            }
        })
        .await
    }

    /// Every skill the server serves (the skills extension, SEP-2640; empty when it does not
    /// declare it). Listing reads no skill file: those are read when a skill is activated.
    pub async fn list_skills(self: &Arc<Self>) -> Result<Vec<rmcp::model::Skill>, McpError> {
        let client = self.live_client().await?;
        if !offers(&client, |c| c.supports_skills()) {
            return Ok(Vec::new());
        }
        self.paginate("skills/list", |cursor| {
            let client = Arc::clone(&client);
            async move {
                let page =
                    client.list_skills(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.skills, page.next_cursor))
            }
        })
        .await
    }

    /// Reads the resource `uri`; questions the server asks go through `ctx`.
    pub async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        ctx: &ToolContext,
    ) -> Result<ReadResourceResult, McpError> {
        let client = self.live_client().await?;
        let route = CallRoute::new(ctx.clone(), format!("{}:{uri}", self.name));
        let read = CURRENT_ROUTE.scope(route, client.read_resource(ReadResourceRequestParams::new(uri)));
        self.bounded(&client, read, &ctx.cancel).await
    }

    /// Gets the prompt `name` with `arguments`; questions the server asks go through `ctx`.
    pub async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Option<JsonObject>,
        ctx: &ToolContext,
    ) -> Result<GetPromptResult, McpError> {
        let client = self.live_client().await?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        let route = CallRoute::new(ctx.clone(), format!("{}:{name}", self.name));
        let get = CURRENT_ROUTE.scope(route, client.get_prompt(params));
        self.bounded(&client, get, &ctx.cancel).await
    }

    /// Runs a request within the call timeout, stopping early when `cancel` fires.
    async fn bounded<T>(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: impl Future<Output = Result<T, ServiceError>>,
        cancel: &CancellationToken,
    ) -> Result<T, McpError> {
        let limit = self.config.call_timeout;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(McpError::Cancelled),
            result = tokio::time::timeout(limit, request) => match result {
                Err(_) => Err(McpError::Timeout(limit)),
                Ok(Ok(value)) => Ok(value),
                Ok(Err(err)) => Err(self.on_service_error(client, err)),
            },
        }
    }

    async fn paginate<T, F, Fut>(self: &Arc<Self>, what: &str, mut page: F) -> Result<Vec<T>, McpError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let client = self.live_client().await?;
        let limit = self.config.call_timeout;
        let pages = async {
            let mut items = Vec::new();
            let mut cursor: Option<String> = None;
            let mut seen = HashSet::new();
            loop {
                let (batch, next) =
                    page(cursor.take()).await.map_err(|e| self.on_service_error(&client, e))?;
                items.extend(batch);
                match next {
                    None => return Ok(items),
                    Some(next) => {
                        if seen.len() >= MAX_LIST_PAGES || !seen.insert(next.clone()) {
                            return Err(McpError::Protocol(format!("{what} pagination does not end")));
                        }
                        cursor = Some(next);
                    }
                }
            }
        };
        tokio::time::timeout(limit, pages).await.map_err(|_| McpError::Timeout(limit))?
    }

    /// Calls `tool` with `arguments` within the call timeout (time waiting for a person's answer
    /// aside). `ctx` is the call's context: the server's questions are asked through its turn,
    /// its progress reported, and when its token fires the server is sent
    /// `notifications/cancelled`. `display` is the tool's name as the model knows it.
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        arguments: Option<JsonObject>,
        ctx: &ToolContext,
        display: &str,
    ) -> Result<CallOutcome, McpError> {
        let client = self.live_client().await?;
        let route = CallRoute::new(ctx.clone(), display);
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let limit = self.config.call_timeout;
        let mut clock = ctx.wait_clock.subscribe();
        let began = tokio::time::Instant::now();
        for _round in 0..MAX_INPUT_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let handle = client
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(|e| self.on_service_error(&client, e))?;
            let _registered =
                self.shared.routes.register(handle.id.clone(), handle.progress_token.clone(), route.clone());
            let peer = handle.peer.clone();
            let id = handle.id.clone();
            let mut response = std::pin::pin!(handle.await_response());
            let outcome = loop {
                let state = *clock.borrow_and_update();
                let deadline = (state.pauses == 0).then(|| began + limit + state.waited);
                let expired = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => break Err(McpError::Cancelled),
                    r = &mut response => break r.map_err(|e| self.on_service_error(&client, e)),
                    _ = expired => break Err(McpError::Timeout(limit)),
                    Ok(()) = clock.changed() => continue,
                }
            };
            let result = match outcome {
                Ok(result) => result,
                Err(err) => {
                    if matches!(err, McpError::Cancelled | McpError::Timeout(_)) {
                        let reason =
                            if matches!(err, McpError::Cancelled) { "cancelled" } else { "timed out" };
                        send_cancelled(&peer, id, reason).await;
                    }
                    return Err(err);
                }
            };
            match result {
                ServerResult::CallToolResult(result) => {
                    return Ok(CallOutcome { result, notes: route.take_notes() });
                }
                ServerResult::InputRequiredResult(asked) => {
                    let requests = asked.input_requests.unwrap_or_default();
                    if requests.is_empty() && asked.request_state.is_none() {
                        return Err(McpError::Protocol(
                            "input_required without requests or state".to_owned(),
                        ));
                    }
                    let responses = answer_input_requests(&self.name, &route, requests).await;
                    params.input_responses = (!responses.is_empty()).then_some(responses);
                    params.request_state = asked.request_state;
                }
                ServerResult::CreateTaskResult(_) => {
                    return Err(McpError::Protocol(
                        "the server answered with a task, which Tackle did not ask for".to_owned(),
                    ));
                }
                _ => return Err(McpError::Protocol("unexpected answer to tools/call".to_owned())),
            }
        }
        Err(McpError::Protocol(format!("the server asked for input more than {MAX_INPUT_ROUNDS} times")))
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

    /// On 2026-07-28 a server sends list changes only on a `subscriptions/listen` stream: one is
    /// kept open for the tools (and prompts and resources) while connected.
    fn listen_for_changes(self: &Arc<Self>) {
        let Link::Connected { client, .. } = &*self.lock() else { return };
        let Some(info) = client.peer_info() else { return };
        if info.protocol_version.has_initialize() {
            return; // the notifications come unsolicited
        }
        let capabilities = &info.capabilities;
        let mut filter = SubscriptionFilter::builder();
        let mut any = false;
        if capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true)) {
            filter = filter.tools_list_changed();
            any = true;
        }
        if !any {
            return;
        }
        let filter = filter.build();
        let client = Arc::downgrade(client);
        let flag = Arc::clone(&self.shared.list_changed);
        let server = self.name.clone();
        tokio::spawn(async move {
            let Some(strong) = client.upgrade() else { return };
            let mut subscription = match strong.listen(filter).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%server, error = %e, "cannot listen for MCP list changes");
                    return;
                }
            };
            drop(strong);
            while let Ok(Some(_notification)) = subscription.next().await {
                tracing::debug!(%server, "MCP server list changed");
                flag.store(true, Ordering::Release);
            }
        });
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
        if let Some(auth) = self.shared.authorizer.as_ref().and_then(|a| a.last_failure())
            && is_auth_error(&err)
        {
            return McpError::Auth(auth.to_string());
        }
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

    async fn reconnect(self: &Arc<Self>, _guard: OwnedMutexGuard<()>) {
        let failures = match &*self.lock() {
            Link::Down { failures, .. } => *failures,
            Link::Connected { client, .. } if is_alive(client) => return,
            Link::Connected { .. } => 0,
            Link::Shutdown => return,
        };
        tracing::info!(server = %self.name, attempt = failures + 1, "reconnecting MCP server");
        match open(&self.name, &self.config, &self.shared, false).await {
            Ok((client, pid)) => {
                let protocol = negotiated(&client);
                // The transport learns from a listing which arguments the server wants mirrored
                // into headers (`x-mcp-header`); the manager re-lists at the next turn anyway.
                if let Err(e) = client.list_all_tools().await {
                    tracing::debug!(server = %self.name, error = %e, "listing tools after a reconnect failed");
                }
                {
                    let mut link = self.lock();
                    if matches!(&*link, Link::Shutdown) {
                        return; // dropping the client closes it
                    }
                    *link = Link::Connected { client: Arc::new(client), pid, protocol };
                }
                self.shared.list_changed.store(true, Ordering::Release);
                self.listen_for_changes();
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

fn negotiated(client: &Client) -> String {
    client.peer_info().map(|info| info.protocol_version.to_string()).unwrap_or_default()
}

fn offers(client: &Client, what: impl Fn(&rmcp::model::ServerCapabilities) -> bool) -> bool {
    client.peer_info().is_some_and(|info| what(&info.capabilities))
}

fn is_auth_error(err: &ServiceError) -> bool {
    let text = err.to_string().to_ascii_lowercase();
    text.contains("auth") || text.contains("scope")
}

async fn send_cancelled(peer: &rmcp::Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    if let Err(e) = peer.notify_cancelled(params).await {
        tracing::debug!(error = %e, "could not send notifications/cancelled");
    }
}

/// Answers the `inputRequests` of an `input_required` result (revision 2026-07-28): questions
/// through the call's turn; roots with none; sampling is not offered (no capability is declared),
/// so a server asking for it gets an error result.
async fn answer_input_requests(server: &str, route: &CallRoute, requests: InputRequests) -> InputResponses {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = match request {
            InputRequest::Elicitation(request) => {
                serde_json::to_value(ask(server, route, request.params).await).unwrap_or(Value::Null)
            }
            // Tackle declares no roots capability; a server asking anyway learns there are none.
            #[allow(deprecated)]
            InputRequest::ListRoots(_) => {
                serde_json::to_value(ListRootsResult::default()).unwrap_or(Value::Null)
            }
            InputRequest::CreateMessage(_) => serde_json::json!({
                "error": {"code": -32601, "message": "Tackle does not offer sampling"}
            }),
            _ => continue,
        };
        responses.insert(key, response);
    }
    responses
}

/// Asks the person behind `route`'s call the server's question, and turns the answer into
/// MCP's result. A decline's reason is kept for the model.
async fn ask(server: &str, route: &CallRoute, params: ElicitRequestParams) -> ElicitResult {
    let question = match params {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => Question {
            tool: route.tool.clone(),
            server: server.to_owned(),
            message,
            kind: ElicitationKind::Form {
                schema: serde_json::to_value(&requested_schema).unwrap_or(Value::Null),
            },
        },
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => Question {
            tool: route.tool.clone(),
            server: server.to_owned(),
            message,
            kind: ElicitationKind::Url { url },
        },
        _ => {
            route
                .note(format!("`{server}` asked a question of a kind Tackle does not know; it was declined"));
            return ElicitResult::new(ElicitationAction::Decline);
        }
    };
    let message = question.message.clone();
    match tackle_tools::elicit(&route.ctx, question).await {
        ElicitationAnswer::Accept { content } => {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        }
        ElicitationAnswer::Decline { reason } => {
            let why = reason.unwrap_or_else(|| "the user declined".to_owned());
            route.note(format!("`{server}` asked \"{message}\" and it was declined: {why}"));
            ElicitResult::new(ElicitationAction::Decline)
        }
        ElicitationAnswer::Cancel => {
            route.note(format!("`{server}` asked \"{message}\" and the user cancelled"));
            ElicitResult::new(ElicitationAction::Cancel)
        }
    }
}

/// The client side of the protocol: records list changes, routes questions and progress to the
/// call they belong to.
#[derive(Clone)]
struct Handler {
    server: Arc<str>,
    shared: Shared,
    protocol: ProtocolVersion,
}

impl ClientHandler for Handler {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let route = match CURRENT_ROUTE.try_with(Clone::clone) {
            Ok(route) => Some(route),
            Err(_) => {
                let origin = match context.extensions.get::<InboundStreamOrigin>() {
                    Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
                    _ => None,
                };
                self.shared.routes.for_question(origin.as_ref()).await
            }
        };
        match route {
            Some(route) => Ok(ask(&self.server, &route, request).await),
            None => {
                tracing::warn!(server = %self.server, "an MCP server asked a question no call can answer; declined");
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(route) = self.shared.routes.for_progress(&params.progress_token) else { return };
        let amount = match params.total {
            Some(total) if total > 0.0 => format!("{}/{}", trim_number(params.progress), trim_number(total)),
            _ => trim_number(params.progress),
        };
        let message = match params.message {
            Some(m) if !m.trim().is_empty() => format!("{m} ({amount})"),
            _ => amount,
        };
        route.ctx.progress.report(&route.ctx.call_id, message);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "MCP server tool list changed");
        self.shared.list_changed.store(true, Ordering::Release);
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::default()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::default()),
        );
        ClientConfig::new(capabilities, Implementation::new("tackle", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(self.protocol.clone())
    }
}

fn trim_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { format!("{n:.1}") }
}

/// The OAuth authorizer of an HTTP server, unless it sends its own `Authorization` header.
fn authorizer_for(
    name: &str,
    config: &McpServerConfig,
    options: &McpOptions,
) -> Result<Option<Arc<Authorizer>>, McpError> {
    let McpTransportConfig::Http { url, headers } = &config.transport else { return Ok(None) };
    if headers.keys().any(|h| h.eq_ignore_ascii_case("authorization")) {
        return Ok(None);
    }
    let settings = config.oauth.clone().unwrap_or_default();
    let secret = settings
        .secret(&|var| std::env::var(var).ok())
        .map_err(|e| McpError::Auth(format!("`{name}`: {e}")))?;
    let private_key = settings
        .private_key(&|var| std::env::var(var).ok())
        .map_err(|e| McpError::Auth(format!("`{name}`: {e}")))?;
    let enterprise = settings
        .enterprise_secrets(&|var| std::env::var(var).ok())
        .map_err(|e| McpError::Auth(format!("`{name}`: {e}")))?;
    let store = options.credentials_dir.as_deref().map(|dir| CredentialFile::new(dir, name, url));
    let authorizer = Authorizer::new(name, url, settings, secret, store, options.sign_in.clone())
        .with_private_key(private_key)
        .with_enterprise(enterprise);
    Ok(Some(Arc::new(authorizer)))
}

/// The lifecycles to try for `protocol`, in order: `auto` probes with `server/discover` and
/// falls back (rmcp's `Auto`), and when the probe fails in a way rmcp does not take for a legacy
/// server (an HTTP error without a JSON-RPC body, an empty result), Tackle tries the plain
/// `initialize` handshake on a fresh transport.
fn lifecycles(protocol: McpProtocol) -> Vec<(ClientLifecycleMode, ProtocolVersion)> {
    match protocol {
        McpProtocol::Auto => vec![
            (
                ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                },
                ProtocolVersion::V_2026_07_28,
            ),
            (ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25),
        ],
        McpProtocol::V2026_07_28 => vec![(
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
            ProtocolVersion::V_2026_07_28,
        )],
        McpProtocol::V2025_11_25 => vec![(ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25)],
        McpProtocol::V2025_06_18 => vec![(ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_06_18)],
    }
}

/// Starts the transport and runs the handshake within the start timeout.
async fn open(
    name: &str,
    config: &McpServerConfig,
    shared: &Shared,
    fresh_sign_in: bool,
) -> Result<(Client, Option<u32>), McpError> {
    let start = async {
        let attempts = lifecycles(config.protocol);
        let last = attempts.len() - 1;
        let mut first_error = None;
        for (i, (lifecycle, version)) in attempts.into_iter().enumerate() {
            let handler = Handler { server: Arc::from(name), shared: shared.clone(), protocol: version };
            match start_once(name, config, shared, handler, lifecycle, fresh_sign_in && i == 0).await {
                Ok(started) => return Ok(started),
                Err((err, retryable)) => {
                    if !retryable || i == last {
                        return Err(first_error.unwrap_or(err));
                    }
                    tracing::debug!(server = %name, error = %err, "server/discover failed; trying initialize");
                    first_error.get_or_insert(err);
                }
            }
        }
        Err(McpError::Handshake("no protocol revision to try".to_owned()))
    };
    let limit = config.start_timeout;
    // A person signing in in a browser is not held to the start timeout.
    let limit = match &shared.authorizer {
        Some(a) if a.interactive() => limit.max(a.sign_in_timeout()) + limit,
        _ => limit,
    };
    tokio::time::timeout(limit, start).await.map_err(|_| McpError::StartTimeout(limit))?
}

/// One attempt at starting the server in one lifecycle; the error says whether another lifecycle
/// may be tried.
async fn start_once(
    name: &str,
    config: &McpServerConfig,
    shared: &Shared,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    fresh_sign_in: bool,
) -> Result<(Client, Option<u32>), (McpError, bool)> {
    match &config.transport {
        McpTransportConfig::Stdio { command, args, env, env_allow, cwd } => {
            // MCP servers are third-party programs: they get the allowlisted environment
            // (the same rule as the shell tool's), never Tackle's keys and tokens.
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().envs(tackle_sandbox::child_env(std::env::vars_os(), env_allow, env));
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let (process, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| (McpError::Spawn { command: command.clone(), reason: e.to_string() }, false))?;
            let pid = process.id();
            if let Some(stderr) = stderr {
                forward_stderr(name.to_owned(), stderr);
            }
            let client = handler
                .serve_with_lifecycle(process, lifecycle)
                .await
                .map_err(|e| handshake_error(name, shared, e))?;
            Ok((client, pid))
        }
        McpTransportConfig::Http { url, headers } => {
            let transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers).map_err(|e| (e, false))?);
            let client = match &shared.authorizer {
                None => {
                    let transport = StreamableHttpClientTransport::from_config(transport_config);
                    handler.serve_with_lifecycle(transport, lifecycle).await
                }
                Some(authorizer) => {
                    let http = OAuthHttpClient::new(Arc::clone(authorizer), fresh_sign_in)
                        .await
                        .map_err(|e| (McpError::Auth(e.to_string()), false))?;
                    let transport = StreamableHttpClientTransport::with_client(http, transport_config);
                    handler.serve_with_lifecycle(transport, lifecycle).await
                }
            };
            Ok((client.map_err(|e| handshake_error(name, shared, e))?, None))
        }
    }
}

/// A failed handshake as an error, and whether another lifecycle may be tried: not after an
/// authorization failure (signing in again would not help) or a process that could not run.
fn handshake_error(name: &str, shared: &Shared, err: ClientInitializeError) -> (McpError, bool) {
    if err.is_authorization_required() || err.auth_challenge().is_some() {
        let reason = shared
            .authorizer
            .as_ref()
            .and_then(|a| a.last_failure())
            .map(|f| f.to_string())
            .unwrap_or_else(|| format!("`{name}` needs you to sign in: run `tackle mcp login {name}`"));
        return (McpError::Auth(reason), false);
    }
    let retryable = !matches!(err, ClientInitializeError::Cancelled);
    (McpError::Handshake(err.to_string()), retryable)
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

    #[test]
    fn auto_probes_then_falls_back_and_pinned_revisions_are_used_as_is() {
        let auto = lifecycles(McpProtocol::Auto);
        assert!(matches!(auto[0].0, ClientLifecycleMode::Auto { .. }));
        assert!(matches!(auto[1].0, ClientLifecycleMode::Initialize));
        assert_eq!(lifecycles(McpProtocol::V2025_06_18)[0].1, ProtocolVersion::V_2025_06_18);
        assert!(matches!(lifecycles(McpProtocol::V2026_07_28)[0].0, ClientLifecycleMode::Discover { .. }));
        assert_eq!(lifecycles(McpProtocol::V2026_07_28).len(), 1);
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
