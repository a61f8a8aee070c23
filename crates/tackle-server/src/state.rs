//! [`AppState`]: what every request handler shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tackle_agent::Agent;
use tackle_codex::CodexBridge;
use tackle_store::SessionRecord;
use tackle_telemetry::Metrics;
use tackle_tools::{ApprovalQueue, ElicitationQueue};
use tokio_util::sync::CancellationToken;

use crate::turns::RunningTurns;
use tokio_util::task::TaskTracker;

use crate::{ApiError, ServerConfig};

/// Shared state of the server. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<StateInner>,
}

pub(crate) struct StateInner {
    pub(crate) agent: Agent,
    pub(crate) approvals: ApprovalQueue,
    /// Questions MCP servers ask in this instance's turns (see [`AppState::with_elicitations`]).
    pub(crate) elicitations: ElicitationQueue,
    pub(crate) config: ServerConfig,
    pub(crate) turns: RunningTurns,
    /// Agents for models other than the default one, made on first use.
    pub(crate) agents: Mutex<HashMap<String, Agent>>,
    /// Cancelled when shutdown begins: new turns are refused.
    pub(crate) shutdown: CancellationToken,
    /// Running turns, waited for at shutdown.
    pub(crate) tasks: TaskTracker,
    /// Codex behind `/v1/chat/completions` (models `codex/<model>`), when configured.
    pub(crate) codex: Option<Arc<CodexBridge>>,
    /// What `/metrics` serves, when the process feeds a registry.
    pub(crate) metrics: Option<Metrics>,
    /// Parts served beside the API (chat channels), stopped at shutdown.
    pub(crate) addons: Mutex<Vec<Arc<dyn crate::ServerAddon>>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("running", &self.inner.turns.len()).finish()
    }
}

impl AppState {
    /// State for `agent`, whose executor must ask `approvals` for confirmations (so the
    /// approval routes can answer them).
    pub fn new(agent: Agent, approvals: ApprovalQueue, config: ServerConfig) -> Self {
        Self {
            inner: Arc::new(StateInner {
                agent,
                approvals,
                elicitations: ElicitationQueue::default(),
                config,
                turns: RunningTurns::default(),
                agents: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                tasks: TaskTracker::new(),
                codex: None,
                metrics: None,
                addons: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Serves models `codex/<model>` of `/v1/chat/completions` through `bridge`. Call it
    /// before serving (while this state is not shared yet); later calls change nothing.
    pub fn with_codex_bridge(mut self, bridge: Arc<CodexBridge>) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.codex = Some(bridge),
            None => tracing::warn!("the Codex bridge was added after the state was shared; it is not served"),
        }
        self
    }

    /// Answers the questions MCP servers ask in this server's turns through `queue`: the agent's
    /// elicitor must wait in it (a [`crate::SharedElicitations`] over it), so the
    /// `/v1/elicitations` routes, the web page and the chat channels answer them. Call it before
    /// serving, like [`AppState::with_codex_bridge`].
    pub fn with_elicitations(mut self, queue: ElicitationQueue) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.elicitations = queue,
            None => tracing::warn!("the question queue was added after the state was shared; it is not used"),
        }
        self
    }

    /// The queue questions of this server's turns wait in.
    pub fn elicitations(&self) -> &ElicitationQueue {
        &self.inner.elicitations
    }

    /// Serves `metrics` at `/metrics`. The process must feed them: install
    /// [`Metrics::layer`] in its `tracing` subscriber (`tackle serve` does). Without this,
    /// `/metrics` answers 404 rather than zeros that would look like an idle server. Call it
    /// before serving, like [`AppState::with_codex_bridge`].
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.metrics = Some(metrics),
            None => tracing::warn!("metrics were added after the state was shared; /metrics is not served"),
        }
        self
    }

    /// The registry served at `/metrics`, if any.
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_ref()
    }

    /// Serves `addon` beside the API: its routes are merged (outside bearer authentication: it
    /// authenticates its own callers) and it is shut down with the server, before the store
    /// closes. Add addons before building the router or serving.
    pub fn add_addon(&self, addon: Arc<dyn crate::ServerAddon>) {
        self.inner.addons.lock().unwrap_or_else(|p| p.into_inner()).push(addon);
    }

    pub(crate) fn addons(&self) -> Vec<Arc<dyn crate::ServerAddon>> {
        self.inner.addons.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The default agent.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// SSE comments (`: heartbeat`) every `[server] heartbeat_secs` on a stream that may stay
    /// silent a while (a turn's tool steps, a structured answer sent whole at its end), so a
    /// client's read timeout does not end it. SDKs skip comments.
    pub(crate) fn heartbeat(&self) -> axum::response::sse::KeepAlive {
        axum::response::sse::KeepAlive::new().interval(self.inner.config.heartbeat).text("heartbeat")
    }

    /// Turns running now.
    pub fn running_turns(&self) -> usize {
        self.inner.turns.len()
    }

    /// The agent answering with `model` (the default agent for its own model).
    pub(crate) fn agent_for(&self, model: &str) -> Agent {
        if model == self.inner.agent.config().model {
            return self.inner.agent.clone();
        }
        let mut agents = self.inner.agents.lock().unwrap_or_else(|p| p.into_inner());
        agents.entry(model.to_owned()).or_insert_with(|| self.inner.agent.with_model(model)).clone()
    }

    /// The session `id` if it belongs to `user`; 404 otherwise (also for other users' sessions,
    /// so ids cannot be probed).
    pub(crate) async fn owned_session(&self, id: &str, user: &str) -> Result<SessionRecord, ApiError> {
        self.inner.agent.store().sessions().get_for_owner(id, user).await.map_err(|e| match e {
            tackle_store::StoreError::NotFound { .. } => ApiError::not_found("session", id),
            other => other.into(),
        })
    }

    /// Marks `session` busy here and takes its lease in the store; 409 when a turn runs on it,
    /// here or on another instance on the same database.
    pub(crate) async fn start_turn(&self, session: &str) -> Result<crate::turns::TurnGuard, ApiError> {
        let inner = &self.inner;
        inner.turns.start(session, inner.agent.store(), inner.config.lease, &inner.approvals).await
    }

    /// Begins shutdown: new turns are refused from now on.
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Cancels every running turn (the end of the shutdown grace period).
    pub fn cancel_all_turns(&self) {
        self.inner.turns.cancel_all();
    }

    /// Waits until every running turn has finished.
    pub async fn wait_for_turns(&self) {
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}
