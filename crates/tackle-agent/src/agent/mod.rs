//! [`Agent`]: the long-lived parts shared by every session (provider, tools, store).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tackle_protocol::ToolSpec;
use tackle_provider::Provider;
use tackle_store::{NewSession, Store};
use tackle_tools::{ToolExecutor, ToolSource};

use crate::session::Opening;
use crate::tools::{SkillLibrary, ToolSources};
use crate::{AgentError, Session, ToolCatalog, ToolChange, TurnInput, TurnOutcome};

mod builder;
mod config;
mod rewind;

pub use builder::{AgentBuilder, BuildError};
pub use config::{AgentConfig, TelemetryConfig};
pub use rewind::{
    ForkOptions, ForkReport, RewindOptions, RewindReport, ensure_idle, fork, rewind, rewind_preview,
};

// Cloned (every field is shared or cheap) to derive an agent with one part changed.
#[derive(Clone)]
pub(crate) struct AgentInner {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) executor: Arc<ToolExecutor>,
    pub(crate) store: Store,
    pub(crate) config: AgentConfig,
    /// Tools reached through `tool_search` (and `call_tool`) instead of the catalog, decided
    /// once when the agent was built.
    pub(crate) deferral: crate::tools::Deferral,
    /// When expired outputs were last purged (shared by agents made with `with_model`).
    pub(crate) last_purge: Arc<Mutex<Option<Instant>>>,
    /// Token counts of sessions' fixed parts (shared by agents made with `with_model`; keyed by
    /// vocabulary, so another model's counts never mix in).
    pub(crate) fixed_counts: Arc<crate::context::FixedCounts>,
    /// Tool sources whose lists can change (MCP servers), refreshed at turn starts.
    pub(crate) sources: Arc<ToolSources>,
    /// The catalog of the current tools, with the tool-source generation it was built for:
    /// every session opened meanwhile shares its `Arc<[ToolSpec]>` (so providers reuse one
    /// rendering of it) instead of freezing, fingerprinting and rendering its own copy.
    pub(crate) catalog: Arc<Mutex<Option<(u64, ToolCatalog)>>>,
    /// The workspace of sessions that name none.
    pub(crate) workspace: PathBuf,
    /// Skills per workspace, discovered once each.
    pub(crate) skills: Arc<SkillLibrary>,
    /// Workspace checkpoints before each turn, when on.
    pub(crate) checkpoints: Option<Arc<tackle_checkpoint::Checkpoints>>,
    /// Who answers questions tools ask (MCP elicitation), and what happens to them by default.
    pub(crate) elicitation: Elicitation,
    /// The configured sub-agents, when the `agent` tool is in the catalog.
    pub(crate) subagents: Option<Arc<crate::SubAgentRegistry>>,
    /// The MCP servers configured with [`crate::AgentBuilder::mcp`], for their prompts and
    /// resources.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<Arc<tackle_mcp::McpManager>>,
}

/// Who answers the questions tools ask in this agent's turns, and the default policy.
#[derive(Clone, Default)]
pub(crate) struct Elicitation {
    pub(crate) elicitor: Option<Arc<dyn tackle_tools::Elicitor>>,
    pub(crate) policy: Option<tackle_tools::ElicitationPolicy>,
}

/// Expired outputs are purged at most this often (a server opens a session per request).
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// An agent: a provider, a tool executor and a store, shared by its sessions. Cheap to clone.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.inner.provider.name())
            .field("config", &self.inner.config)
            .finish()
    }
}

/// A message of a stored session as loaded: its store sequence number (`None` when it comes
/// from a snapshot) and its token count if one was stored.
pub(crate) struct LoadedMessage {
    pub(crate) seq: Option<i64>,
    pub(crate) message: tackle_protocol::Message,
    pub(crate) tokens: Option<u64>,
}

/// What a new session needs.
#[derive(Debug, Clone, Default)]
pub struct NewSessionOptions {
    /// Title; derived from the first message when empty.
    pub title: Option<String>,
    /// Workspace root the tools work in; the agent's own when empty.
    pub workspace: PathBuf,
    /// Owner (user id) for multi-user servers; `local` otherwise.
    pub owner: Option<String>,
    /// An earlier conversation to start from (e.g. the prior messages of an OpenAI-compatible
    /// request), committed as turn 0.
    pub history: Vec<tackle_protocol::Message>,
}

impl Agent {
    /// A builder: provider first, then the model and whatever differs from the defaults.
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn tackle_provider::Provider>) -> Result<(), tackle_agent::BuildError> {
    /// let agent = tackle_agent::Agent::builder(provider).model("claude-sonnet-4-5").max_steps(10).build().await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(provider: impl tackle_provider::IntoProvider) -> AgentBuilder {
        AgentBuilder::new(provider)
    }

    /// An agent from parts the builder validated.
    pub(crate) fn from_parts(
        provider: Arc<dyn Provider>,
        executor: Arc<ToolExecutor>,
        store: Store,
        config: AgentConfig,
        workspace: PathBuf,
        skills: Arc<SkillLibrary>,
    ) -> Self {
        Self {
            inner: Arc::new(AgentInner {
                provider,
                executor,
                store,
                config,
                deferral: crate::tools::Deferral::Off,
                last_purge: Arc::default(),
                fixed_counts: Arc::default(),
                sources: Arc::default(),
                catalog: Arc::default(),
                workspace,
                skills,
                checkpoints: None,
                elicitation: Elicitation::default(),
                subagents: None,
                #[cfg(feature = "mcp")]
                mcp: None,
            }),
        }
    }

    /// The same agent recording workspace checkpoints before each turn.
    pub(crate) fn with_checkpoints(self, checkpoints: Option<Arc<tackle_checkpoint::Checkpoints>>) -> Self {
        self.derive(|inner| inner.checkpoints = checkpoints)
    }

    /// The workspace checkpoints, when they are on.
    pub fn checkpoints(&self) -> Option<&Arc<tackle_checkpoint::Checkpoints>> {
        self.inner.checkpoints.as_ref()
    }

    /// The same agent with its MCP servers reachable through [`Agent::mcp`].
    #[cfg(feature = "mcp")]
    pub(crate) fn with_mcp(self, mcp: Option<Arc<tackle_mcp::McpManager>>) -> Self {
        self.derive(|inner| inner.mcp = mcp)
    }

    /// The MCP servers the agent was built with (their prompts and resources; their tools are in
    /// the catalog already), when there are any.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> Option<&Arc<tackle_mcp::McpManager>> {
        self.inner.mcp.as_ref()
    }

    /// The same agent offering `registry`'s sub-agents through the `agent` tool (registered).
    pub(crate) fn with_subagents(self, registry: Option<Arc<crate::SubAgentRegistry>>) -> Self {
        self.derive(|inner| inner.subagents = registry)
    }

    /// The sub-agents the `agent` tool offers, when it is in the catalog.
    pub fn sub_agents(&self) -> Option<&Arc<crate::SubAgentRegistry>> {
        self.inner.subagents.as_ref()
    }

    /// The same agent with `elicitation` answering the questions tools ask.
    pub(crate) fn with_elicitation(self, elicitation: Elicitation) -> Self {
        self.derive(|inner| inner.elicitation = elicitation)
    }

    /// Runs one turn of `prompt` in a new session (in the default workspace) and returns how
    /// it ended; the session stays in the store. Events are not reported: use
    /// [`Agent::create_session`] and [`Session::run_turn`] to stream them.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<TurnOutcome, AgentError> {
        let mut session = self.create_session(NewSessionOptions::default()).await?;
        session
            .run_turn(
                TurnInput::new(prompt),
                &tackle_tools::EventSink::discard(),
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
    }

    /// Runs one turn of `prompt` in a new session, asking for a final answer of type `T`: its
    /// schema comes from schemars ([`crate::OutputSchema::of`]), is asked natively where the
    /// provider can (else through the final-answer tool), the answer is validated (one repair
    /// round) and read into `T`. The session stays in the store.
    ///
    /// ```no_run
    /// # async fn demo(agent: tackle_agent::Agent) -> Result<(), tackle_agent::RunTypedError> {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Release { version: String, breaking: bool }
    /// let release: Release = agent.run_typed("What does CHANGELOG.md say the last release is?").await?;
    /// println!("{} (breaking: {})", release.version, release.breaking);
    /// # Ok(()) }
    /// ```
    pub async fn run_typed<T>(&self, prompt: impl Into<String>) -> Result<T, crate::RunTypedError>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let mut session = self.create_session(NewSessionOptions::default()).await?;
        let input = TurnInput::new(prompt).with_output_schema(crate::OutputSchema::of::<T>());
        let outcome = session
            .run_turn(input, &tackle_tools::EventSink::discard(), &tokio_util::sync::CancellationToken::new())
            .await?;
        match outcome.output.clone() {
            Some(value) => serde_json::from_value(value).map_err(crate::RunTypedError::Decode),
            None => Err(crate::RunTypedError::Turn(Box::new(outcome))),
        }
    }

    /// The same agent with its tools deferred as `deferral` says (see
    /// [`crate::tools::Deferral::plan`]); the registry must hold `deferral`'s registry tools.
    pub(crate) fn with_deferral(self, deferral: crate::tools::Deferral) -> Self {
        // The catalog depends on what is deferred: a fresh cache.
        self.derive(|inner| {
            inner.deferral = deferral;
            inner.catalog = Arc::default();
        })
    }

    /// This agent with `change` applied to a copy of its parts.
    fn derive(&self, change: impl FnOnce(&mut AgentInner)) -> Self {
        let mut inner = (*self.inner).clone();
        change(&mut inner);
        Self { inner: Arc::new(inner) }
    }

    /// The same agent with a tool source whose list can change while sessions run (the MCP
    /// servers). Its current tools must already be in the registry. Changes are applied at the
    /// start of a turn, as a `catalog_changed` event.
    pub(crate) fn with_tool_source(self, source: Arc<dyn ToolSource>) -> Self {
        self.derive(|inner| {
            inner.sources = Arc::new(inner.sources.with(source));
            inner.catalog = Arc::default();
        })
    }

    /// Applies changes announced by tool sources (e.g. an MCP server's `list_changed`) to the
    /// registry and the deferred tools. Called at turn starts; sessions pick the change up at
    /// their next turn. Returns what changed, if anything.
    pub async fn refresh_tools(&self) -> Option<ToolChange> {
        self.inner.sources.refresh(&self.inner.executor, self.inner.deferral.tools().map(|d| &**d)).await
    }

    /// Number of tool-source changes applied so far (sessions compare it with theirs).
    pub(crate) fn tools_generation(&self) -> u64 {
        self.inner.sources.generation()
    }

    /// Drops the data of expired offloaded outputs (their metadata stays, so reads say
    /// "expired"), at most every ten minutes: sessions open often, expiry is measured in days.
    pub(crate) async fn purge_expired_if_due(&self) -> Result<(), AgentError> {
        {
            let mut last = self.inner.last_purge.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| t.elapsed() < PURGE_EVERY) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        let purged = self.inner.store.blobs().purge_expired(tackle_store::now_ms()).await?;
        if purged > 0 {
            tracing::info!(purged, "expired offloaded outputs removed");
        }
        Ok(())
    }

    /// The deferred tools, when tool definitions are over budget.
    pub fn deferred(&self) -> Option<&Arc<crate::DeferredTools>> {
        self.inner.deferral.tools()
    }

    /// How this agent's tools are deferred.
    pub(crate) fn deferral(&self) -> &crate::tools::Deferral {
        &self.inner.deferral
    }

    /// The same agent (provider, tools, store) answering with another model of its provider;
    /// used by servers whose clients pick a model per session.
    pub fn with_model(&self, model: impl Into<String>) -> Self {
        // Same tools, so the same catalog cache.
        self.derive(|inner| inner.config.model = model.into())
    }

    /// The same agent writing under `lease` ([`Store::fenced`]): a session opened with it checks
    /// every write of its turns against the lease, so a turn whose instance stalled while
    /// another took the session over stops at its next write ([`tackle_store::StoreError::LeaseLost`])
    /// and appends nothing after the new turn. Servers open each leased turn's session this way.
    pub fn under_lease(&self, lease: &tackle_store::Lease) -> Self {
        self.derive(|inner| inner.store = inner.store.fenced(lease))
    }

    /// The store sessions are kept in.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.inner.provider
    }

    /// The tool executor.
    pub fn executor(&self) -> &Arc<ToolExecutor> {
        &self.inner.executor
    }

    /// The loop settings.
    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// Tool definitions of the registry, in order.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.inner.executor.registry().specs()
    }

    /// The catalog a session opened now would freeze: the registry's tools in order, without
    /// deferred tools (then with `tool_search` and `call_tool`), or without those two when
    /// nothing is deferred. Under native deferral the deferred tools stay, marked
    /// `defer_loading`, and `call_tool` goes.
    pub fn catalog(&self) -> ToolCatalog {
        let _consistent = self.inner.sources.read_guard();
        let generation = self.inner.sources.generation();
        let mut cached = self.inner.catalog.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((built_for, catalog)) = cached.as_ref()
            && *built_for == generation
        {
            return catalog.clone();
        }
        let catalog = self.build_catalog();
        *cached = Some((generation, catalog.clone()));
        catalog
    }

    fn build_catalog(&self) -> ToolCatalog {
        self.inner.deferral.catalog(self.tool_specs())
    }

    /// The workspace of sessions that name none.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// Skills per workspace (what sessions offer and `activate_skill` accepts).
    pub fn skills(&self) -> &Arc<SkillLibrary> {
        &self.inner.skills
    }

    /// Whether sessions of this agent can run in `mode`: `bypass` needs an enforced sandbox,
    /// `plan` needs plan mode ([`AgentBuilder::plan_mode`]). The error says why not.
    pub fn mode_available(&self, mode: tackle_tools::PermissionMode) -> Result<(), crate::ModeUnavailable> {
        use tackle_tools::PermissionMode;
        match mode {
            PermissionMode::Bypass
                if self.inner.config.sandbox.as_ref().is_none_or(|s| s.enforced_by.is_none()) =>
            {
                Err(crate::ModeUnavailable::BypassNeedsSandbox)
            }
            PermissionMode::Plan if !self.inner.config.plan_mode => Err(crate::ModeUnavailable::PlanModeOff),
            _ => Ok(()),
        }
    }

    /// What rewinding session `id` to before `turn` would change (files and/or conversation);
    /// nothing is touched.
    pub async fn rewind_preview(
        &self,
        id: &str,
        turn: i64,
        options: RewindOptions,
    ) -> Result<RewindReport, AgentError> {
        rewind_preview(&self.inner.store, self.checkpoints().map(|c| &**c), id, turn, options).await
    }

    /// Rewinds session `id` to before `turn`: the workspace's files as its checkpoint recorded
    /// them, and/or the conversation. The session must not be running a turn.
    pub async fn rewind(
        &self,
        id: &str,
        turn: i64,
        options: RewindOptions,
    ) -> Result<RewindReport, AgentError> {
        ensure_idle(&self.inner.store, id).await?;
        rewind(&self.inner.store, self.checkpoints().map(|c| &**c), id, turn, options).await
    }

    /// A new session with the history of `id` up to a turn (optionally with a copy of its files);
    /// the original is untouched.
    pub async fn fork_session(&self, id: &str, options: ForkOptions) -> Result<ForkReport, AgentError> {
        fork(&self.inner.store, self.checkpoints().map(|c| &**c), id, options).await
    }

    /// The modes sessions of this agent can run in.
    pub fn modes(&self) -> Vec<tackle_tools::PermissionMode> {
        tackle_tools::PermissionMode::ALL.into_iter().filter(|m| self.mode_available(*m).is_ok()).collect()
    }

    /// The permission mode of session `id`, without opening it: its own, else the agent's
    /// default for new sessions.
    pub async fn session_mode(&self, id: &str) -> Result<tackle_tools::PermissionMode, AgentError> {
        let mode: Option<tackle_tools::PermissionMode> =
            self.inner.store.sessions().get_state(id, crate::tools::MODE_KEY).await?;
        Ok(mode.unwrap_or(self.inner.config.permission_mode))
    }

    /// Sets the permission mode of session `id` (from its next turn), refused as
    /// [`Agent::mode_available`] says.
    pub async fn set_session_mode(
        &self,
        id: &str,
        mode: tackle_tools::PermissionMode,
    ) -> Result<(), AgentError> {
        self.mode_available(mode).map_err(AgentError::Mode)?;
        self.inner.store.sessions().set_state(id, crate::tools::MODE_KEY, &mode).await?;
        Ok(())
    }

    /// Creates a session in the store.
    pub async fn create_session(&self, options: NewSessionOptions) -> Result<Session, AgentError> {
        let (session, history) = self.new_session(options)?;
        Session::start(self.clone(), Opening::New { session, history }).await
    }

    /// The row of a session this agent creates (its workspace checked, its provider and model
    /// this agent's), and the history it starts from.
    pub(crate) fn new_session(
        &self,
        options: NewSessionOptions,
    ) -> Result<(NewSession, Vec<tackle_protocol::Message>), AgentError> {
        let workspace = if options.workspace.as_os_str().is_empty() {
            self.inner.workspace.clone()
        } else {
            canonical_workspace(&options.workspace)?
        };
        let session = NewSession {
            owner: options.owner.unwrap_or_else(|| "local".to_owned()),
            title: options.title.unwrap_or_default(),
            provider: self.inner.provider.name().to_owned(),
            model: self.inner.config.model.clone(),
            workspace: workspace.display().to_string(),
            metadata: serde_json::Value::Null,
        };
        Ok((session, options.history))
    }

    /// Opens an existing session, reloading its history (latest snapshot plus later messages).
    pub async fn open_session(&self, id: &str) -> Result<Session, AgentError> {
        let record = self.inner.store.sessions().get(id).await?;
        let history = self.load_history(&record.id).await?;
        Session::start(self.clone(), Opening::Existing { record, loaded: history }).await
    }

    /// The conversation of session `id` as the model sees it, without opening the session
    /// (no tools, skills or token accounting): for front ends that only show it.
    pub async fn history(&self, id: &str) -> Result<Vec<tackle_protocol::Message>, AgentError> {
        Ok(self.load_history(id).await?.into_iter().map(|m| m.message).collect())
    }

    /// The latest snapshot plus later messages, with their store sequence numbers and stored
    /// token counts (`None` for snapshot-made messages).
    async fn load_history(&self, id: &str) -> Result<Vec<LoadedMessage>, AgentError> {
        let context = self.inner.store.messages().load_context(id).await?;
        let mut history: Vec<LoadedMessage> = context
            .snapshot
            .map(|s| {
                s.messages
                    .into_iter()
                    .map(|message| LoadedMessage { seq: None, message, tokens: None })
                    .collect()
            })
            .unwrap_or_default();
        history.extend(context.later.into_iter().map(|m| LoadedMessage {
            seq: Some(m.seq),
            message: m.message,
            tokens: m.token_count.and_then(|n| u64::try_from(n).ok()),
        }));
        Ok(history)
    }
}

pub(crate) fn canonical_workspace(path: &Path) -> Result<PathBuf, AgentError> {
    let err = |message: String| AgentError::Workspace { path: path.display().to_string(), message };
    let canonical =
        path.canonicalize().map_err(|e| err(format!("{e}; create it or pass an existing --workspace")))?;
    if !canonical.is_dir() {
        return Err(err("it is not a directory".into()));
    }
    Ok(canonical)
}
