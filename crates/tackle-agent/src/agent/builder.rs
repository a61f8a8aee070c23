//! [`AgentBuilder`]: everything an agent needs, validated once, in one place.

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "builtins")]
use tackle_builtins::BuiltinConfig;
#[cfg(feature = "mcp")]
use tackle_mcp::{McpConfig, McpManager, McpOptions};
#[cfg(feature = "builtins")]
use tackle_protocol::SandboxInfo;
use tackle_provider::{IntoProvider, Provider};
#[cfg(feature = "sandbox")]
use tackle_sandbox::Sandbox;
use tackle_store::Store;
use tackle_tools::{
    ApprovalMode, Approver, DEFAULT_EDIT_TOOLS, DenyAll, ExecLimits, HookEnv, HookHandler, HookMatcher,
    HookPolicy, HookRule, IntoTool, ModeRules, PermissionMode, RegistryError, ScriptHook, ScriptHooks, Tool,
    ToolExecutor, ToolRegistry, ToolSource, typed,
};
use thiserror::Error;

use crate::context::{CompactContext, ReadResult, StoreOffloader};
use crate::tools::Deferral;
use crate::tools::{ActivateSkill, PROPOSE_PLAN, ProposePlan, SkillLibrary, TodoTool};
use crate::{Agent, AgentConfig, ContextConfig, DeferralConfig, LoopGuardConfig};

/// Why an agent could not be built. Each message names the part and what to change.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No model was named.
    #[error("no model is set: call AgentBuilder::model with the provider's model name")]
    NoModel,
    /// The session store could not be opened.
    #[error("cannot open the session store {path}: {message}")]
    Store {
        /// The database file (or `:memory:`).
        path: String,
        /// Why.
        message: String,
    },
    /// The default workspace is not a usable directory.
    #[error("workspace {path} is not usable: {message}")]
    Workspace {
        /// The path given.
        path: String,
        /// Why, and what to do.
        message: String,
    },
    /// Two tools share a name, or a tool has an invalid name or schema.
    #[error("tool setup failed: {0}")]
    Tool(#[from] RegistryError),
    /// A hook rule is invalid.
    #[error("invalid hook rule in [[hooks]]: {0}")]
    Hook(#[from] tackle_tools::HookError),
    /// A script hook is invalid.
    #[error("invalid script hook in [[hooks]]: {0}")]
    ScriptHook(#[from] tackle_tools::ScriptHookError),
    /// An edit-tool glob ([`AgentBuilder::edit_tools`]) is invalid.
    #[error("invalid edit_tools in [permissions]: {0}")]
    EditTools(#[from] tackle_tools::ModeError),
    /// The permission mode cannot be used with this agent.
    #[error("permission mode: {0}, or choose another mode")]
    Mode(#[from] crate::ModeUnavailable),
    /// A sub-agent names a tool the agent does not have.
    #[error("{0}")]
    SubAgent(#[from] crate::SubAgentError),
    /// A limit that must be positive is zero.
    #[error("{0} must be at least 1")]
    Limit(&'static str),
}

/// Where sessions are stored.
#[derive(Debug, Clone)]
enum StoreChoice {
    /// SQLite under `TACKLE_HOME` when it is set, else a throwaway store.
    Default,
    InMemory,
    Path(PathBuf),
    Given(Store),
}

/// Builds an [`Agent`]: a provider, a model, tools, a store and the rules around them.
///
/// Everything has a working default: the builtin tools (shell, files, web fetch) in the
/// current directory, the agent's own tools (`todo`, `read_result`, `compact_context`, skills
/// when the workspace has any), confirmations denied with a message the model can relay,
/// large outputs offloaded to the store, and a throwaway store (a SQLite file in a temporary
/// directory, removed with the agent; SQLite under `TACKLE_HOME` when that is set).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use tackle_agent::Agent;
/// use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
///
/// let provider = OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai))?;
/// let agent = Agent::builder(provider).model("gpt-4.1-mini").build().await?;
/// let outcome = agent.run("What is in this directory?").await?;
/// println!("{}", outcome.text);
/// # Ok(()) }
/// ```
#[must_use = "call build() to get the agent"]
pub struct AgentBuilder {
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    store: StoreChoice,
    workspace: Option<PathBuf>,
    workspaces: Vec<PathBuf>,
    #[cfg(feature = "builtins")]
    builtins: Option<BuiltinConfig>,
    #[cfg(feature = "sandbox")]
    sandbox: Sandbox,
    tools: Vec<Arc<dyn Tool>>,
    #[cfg(feature = "mcp")]
    mcp: McpConfig,
    #[cfg(feature = "mcp")]
    mcp_options: McpOptions,
    elicitation: super::Elicitation,
    sources: Vec<Arc<dyn ToolSource>>,
    skills: bool,
    skill_roots: Vec<PathBuf>,
    hooks: Vec<HookRule>,
    script_hooks: Vec<ScriptHook>,
    hook_handlers: Vec<(HookMatcher, Arc<dyn HookHandler>, std::time::Duration)>,
    edit_tools: Vec<String>,
    approval_mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    limits: ExecLimits,
    offload: bool,
    checkpoints: Option<tackle_checkpoint::CheckpointConfig>,
    checkpoint_exclude: Vec<PathBuf>,
    subagents: Option<crate::SubAgentRegistry>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("provider", &self.provider.name())
            .field("config", &self.config)
            .field("store", &self.store)
            .field("workspace", &self.workspace)
            .field("tools", &self.tools.iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// A builder for an agent answering with `provider`.
    pub fn new(provider: impl IntoProvider) -> Self {
        Self {
            provider: provider.into_provider(),
            config: AgentConfig::new(""),
            store: StoreChoice::Default,
            workspace: None,
            workspaces: Vec::new(),
            #[cfg(feature = "builtins")]
            builtins: Some(BuiltinConfig::default()),
            #[cfg(feature = "sandbox")]
            sandbox: Sandbox::off(),
            tools: Vec::new(),
            #[cfg(feature = "mcp")]
            mcp: McpConfig::default(),
            #[cfg(feature = "mcp")]
            mcp_options: McpOptions::default(),
            elicitation: super::Elicitation::default(),
            sources: Vec::new(),
            skills: true,
            skill_roots: Vec::new(),
            hooks: Vec::new(),
            script_hooks: Vec::new(),
            hook_handlers: Vec::new(),
            edit_tools: DEFAULT_EDIT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            approval_mode: ApprovalMode::Headless,
            approver: None,
            limits: ExecLimits::default(),
            offload: true,
            checkpoints: None,
            checkpoint_exclude: Vec::new(),
            subagents: None,
        }
    }

    /// The model name sent to the provider (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.config.model = model.into();
        self
    }

    /// Sessions are stored in this store.
    pub fn store(mut self, store: Store) -> Self {
        self.store = StoreChoice::Given(store);
        self
    }

    /// Sessions are stored in the SQLite database at `path` (created if missing).
    pub fn store_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = StoreChoice::Path(path.into());
        self
    }

    /// Sessions live in a throwaway store (a SQLite file in a temporary directory) and are gone
    /// when the agent is dropped.
    pub fn in_memory(mut self) -> Self {
        self.store = StoreChoice::InMemory;
        self
    }

    /// The directory tools work in when a session names none (default: the current directory).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Further workspaces sessions may be created in (a server's named workspaces); their skills
    /// are discovered up front so `activate_skill` is offered when any of them has skills.
    pub fn workspaces(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        self.workspaces.extend(dirs);
        self
    }

    /// The builtin tools with these limits (they are on by default).
    #[cfg(feature = "builtins")]
    pub fn builtins(mut self, config: BuiltinConfig) -> Self {
        self.builtins = Some(config);
        self
    }

    /// The sandbox the builtin shell's commands run in (none unless set: building one needs a
    /// helper executable, see `tackle_sandbox::Sandbox::builder`). It is reported in every
    /// `session_started` event.
    #[cfg(feature = "sandbox")]
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// No builtin tools (shell, files, web fetch): only the agent's own and those added
    /// (without the `builtins` feature there are none to leave out).
    #[cfg_attr(not(feature = "builtins"), allow(unused_mut))]
    pub fn without_builtins(mut self) -> Self {
        #[cfg(feature = "builtins")]
        {
            self.builtins = None;
        }
        self
    }

    /// Adds a tool: a [`tackle_tools::TypedTool`], a [`tackle_tools::tool_fn`] closure, or an
    /// `Arc<dyn Tool>`. Tools are offered in the order added, after the builtins.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Adds several tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// MCP servers whose tools join the agent (started in parallel at `build`; a server that
    /// fails to start is reported and skipped). Their tools are deferred behind `tool_search`
    /// when their definitions are over budget (see [`AgentBuilder::deferral`]).
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, config: McpConfig) -> Self {
        self.mcp = config;
        self
    }

    /// Where the MCP servers' OAuth credentials are kept and whether a person can sign in when a
    /// server asks for it (default: nothing on disk, never interactively).
    #[cfg(feature = "mcp")]
    pub fn mcp_options(mut self, options: McpOptions) -> Self {
        self.mcp_options = options;
        self
    }

    /// Who answers the questions tools ask in this agent's turns (MCP elicitation): a terminal
    /// form, a queue a web page or an API answers. Without one, questions are declined.
    pub fn elicitor(mut self, elicitor: Arc<dyn tackle_tools::Elicitor>) -> Self {
        self.elicitation.elicitor = Some(elicitor);
        self
    }

    /// What happens to questions by default (a turn may set its own); unset: the policy matching
    /// the turn's approval policy.
    pub fn elicitation_policy(mut self, policy: tackle_tools::ElicitationPolicy) -> Self {
        self.elicitation.policy = Some(policy);
        self
    }

    /// A source of tools whose list can change while sessions run; its current tools are
    /// registered, and changes are applied at turn starts (`catalog_changed`).
    pub fn tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Whether skills (`skills/*/SKILL.md` in the workspace and the extra roots) are offered
    /// (default: on).
    pub fn skills(mut self, on: bool) -> Self {
        self.skills = on;
        self
    }

    /// Another directory searched for `skills/` after the workspace (e.g. `~/.config/tackle`).
    pub fn skill_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.skill_roots.push(dir.into());
        self
    }

    /// When tool definitions are over budget, which tools are deferred and how.
    pub fn deferral(mut self, config: DeferralConfig) -> Self {
        self.config.deferral = config;
        self
    }

    /// Hook rules (first match wins), applied in `mode`.
    pub fn hooks(mut self, rules: Vec<HookRule>, mode: ApprovalMode) -> Self {
        self.hooks = rules;
        self.approval_mode = mode;
        self
    }

    /// A script hook: a command run at a lifecycle event, speaking Claude Code's hook protocol
    /// (JSON on stdin; exit code 2 blocks; JSON on stdout decides). Hooks run in the order
    /// added, under the shell's sandbox and environment rules.
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn tackle_provider::Provider>) -> Result<(), tackle_agent::BuildError> {
    /// use tackle_tools::{HookEvent, ScriptHook};
    /// let agent = tackle_agent::Agent::builder(provider)
    ///     .model("gpt-4.1")
    ///     .hook(ScriptHook::command(HookEvent::PreToolUse, "python3 hooks/no_rm_rf.py").for_tools("shell"))
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn hook(mut self, hook: ScriptHook) -> Self {
        self.script_hooks.push(hook);
        self
    }

    /// An in-process hook answering like a hook command would (an exit code, output), after
    /// the command hooks.
    pub fn hook_handler(
        mut self,
        matcher: HookMatcher,
        handler: impl HookHandler + 'static,
        timeout: std::time::Duration,
    ) -> Self {
        self.hook_handlers.push((matcher, Arc::new(handler), timeout));
        self
    }

    /// The permission mode of new sessions (default: `default`). `bypass` needs an enforced
    /// sandbox; `plan` turns plan mode on.
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.config.permission_mode = mode;
        if mode == PermissionMode::Plan {
            self.config.plan_mode = true;
        }
        self
    }

    /// Whether sessions may enter plan mode: adds the `propose_plan` tool (off by default, so
    /// an agent's tool list is only what it was given).
    pub fn plan_mode(mut self, on: bool) -> Self {
        self.config.plan_mode = on;
        self
    }

    /// Globs of the tools `accept-edits` runs without asking (default: `write_file`,
    /// `edit_file`).
    pub fn edit_tools(mut self, globs: impl IntoIterator<Item = String>) -> Self {
        self.edit_tools = globs.into_iter().collect();
        self
    }

    /// Who decides on calls that need a confirmation (default: nobody, so they are denied
    /// with a message the model relays).
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Like [`AgentBuilder::approver`] for an approver already shared.
    pub fn shared_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Time and output limits of tool calls.
    pub fn limits(mut self, limits: ExecLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether outputs over the offload threshold go to the store behind a locator
    /// (default: on); off, they are capped instead.
    pub fn offload(mut self, on: bool) -> Self {
        self.offload = on;
        self
    }

    /// Record the workspace before each turn (off by default), so
    /// [`crate::Agent::rewind`] can restore it, whatever changed it (shell commands included).
    /// A config with `enabled = false` turns it off.
    pub fn checkpoints(mut self, config: tackle_checkpoint::CheckpointConfig) -> Self {
        self.checkpoints = config.enabled.then_some(config);
        self
    }

    /// Paths checkpoints never record nor touch (absolute): e.g. the store's directory when it
    /// lies inside a workspace.
    pub fn checkpoint_exclude(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.checkpoint_exclude.extend(paths);
        self
    }

    /// Offers the `agent` tool: a task run to completion in a child session (its own context
    /// and tool mask, this agent's workspace, sandbox, approver and store), with `registry`'s
    /// sub-agents to choose from (an empty one: general-purpose children only). Off unless set.
    pub fn sub_agents(mut self, registry: crate::SubAgentRegistry) -> Self {
        self.subagents = Some(registry);
        self
    }

    /// How deep sub-agents nest (default 2; see [`crate::SubAgentSettings`]).
    pub fn sub_agent_depth(mut self, max_depth: u32) -> Self {
        self.config.subagents.max_depth = max_depth;
        self
    }

    /// Steps (model calls) per turn.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.config.max_steps = steps;
        self
    }

    /// Output token limit per model call (also the context budget's reserve).
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.config.max_output_tokens = Some(tokens);
        self.config.context.reserved_output = u64::from(tokens);
        self
    }

    /// Whether model answers stream ([`crate::Streaming`]): `Auto` (the default) streams when the
    /// turn's sink watches and asks for whole answers when it discards every event
    /// ([`tackle_tools::EventSink::discard`]); `Always` and `Never` decide for every turn.
    pub fn streaming(mut self, streaming: crate::Streaming) -> Self {
        self.config.streaming = streaming;
        self
    }

    /// Context window management (window, thresholds, offloading).
    pub fn context(mut self, context: ContextConfig) -> Self {
        let reserved = self.config.max_output_tokens.map(u64::from);
        self.config.context = context;
        if let Some(r) = reserved {
            self.config.context.reserved_output = r;
        }
        self
    }

    /// Doom-loop thresholds.
    pub fn loop_guard(mut self, guard: LoopGuardConfig) -> Self {
        self.config.loop_guard = guard;
        self
    }

    /// Per-step tool availability (masks, skills); `false` makes every tool always callable.
    pub fn dynamic_tools(mut self, on: bool) -> Self {
        self.config.dynamic_tools = on;
        self
    }

    /// Sets every loop setting at once (keeps the model unless `config` names one).
    pub fn config(mut self, config: AgentConfig) -> Self {
        let model = std::mem::take(&mut self.config.model);
        self.config = config;
        if self.config.model.is_empty() {
            self.config.model = model;
        }
        self
    }

    /// Whether the sandbox set with [`AgentBuilder::sandbox`] is enforced (never without the
    /// `sandbox` feature).
    fn sandbox_enforced(&self) -> bool {
        #[cfg(feature = "sandbox")]
        {
            matches!(self.sandbox.status(), tackle_sandbox::SandboxStatus::Enforced { .. })
        }
        #[cfg(not(feature = "sandbox"))]
        {
            false
        }
    }

    /// Validates the parts, opens the store, connects MCP servers and registers the tools.
    pub async fn build(self) -> Result<Agent, BuildError> {
        if self.config.model.trim().is_empty() {
            return Err(BuildError::NoModel);
        }
        if self.config.max_steps == 0 {
            return Err(BuildError::Limit("max_steps"));
        }
        let sandbox_enforced = self.sandbox_enforced();
        let hooks = HookPolicy::new(self.hooks, self.approval_mode)?;
        if self.config.permission_mode == PermissionMode::Bypass && !sandbox_enforced {
            return Err(BuildError::Mode(crate::ModeUnavailable::BypassNeedsSandbox));
        }
        #[cfg(feature = "builtins")]
        let hook_env = HookEnv {
            allow: self.builtins.as_ref().map(|b| b.shell_env_allow.clone()).unwrap_or_default(),
            set: self.builtins.as_ref().map(|b| b.shell_env.clone()).unwrap_or_default(),
            base: None,
        };
        #[cfg(not(feature = "builtins"))]
        let hook_env = HookEnv::default();
        #[cfg(feature = "sandbox")]
        let mut script_hooks = ScriptHooks::from_config(&self.script_hooks, &self.sandbox, &hook_env)?;
        #[cfg(not(feature = "sandbox"))]
        let mut script_hooks = ScriptHooks::from_config_unsandboxed(&self.script_hooks, &hook_env)?;
        for (matcher, handler, timeout) in self.hook_handlers {
            script_hooks.push(matcher, handler, timeout);
        }
        let workspace = match self.workspace {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(|e| BuildError::Workspace {
                path: ".".into(),
                message: format!("cannot read the current directory: {e}; set AgentBuilder::workspace"),
            })?,
        };
        let workspace = crate::agent::canonical_workspace(&workspace).map_err(|e| match e {
            crate::AgentError::Workspace { path, message } => BuildError::Workspace { path, message },
            other => {
                BuildError::Workspace { path: workspace.display().to_string(), message: other.to_string() }
            }
        })?;
        let store = open_store(self.store).await?;

        // MCP servers start first: the skills they serve join the library (the tools they
        // offer are registered after Tackle's own, below).
        #[cfg(feature = "mcp")]
        let mcp = if self.mcp.servers.is_empty() {
            None
        } else {
            Some(Arc::new(McpManager::connect_with(&self.mcp.servers, &self.mcp_options).await))
        };
        #[cfg(feature = "mcp")]
        let served = mcp.as_ref().map(|m| m.skills().iter().map(crate::tools::Skill::from_mcp).collect());
        #[cfg(not(feature = "mcp"))]
        let served: Option<Vec<crate::tools::Skill>> = None;
        let skills = Arc::new(SkillLibrary::new(self.skill_roots).with_served(served.unwrap_or_default()));
        let any_skills = self.skills
            && std::iter::once(&workspace)
                .chain(&self.workspaces)
                .any(|w| w.canonicalize().is_ok_and(|w| !skills.for_workspace(&w).skills.is_empty()));

        // The order tools are offered in: builtins, todo, the embedder's, skills, the context
        // tools, then tools from sources (MCP), then the deferral tools.
        let mut registry = ToolRegistry::new();
        #[cfg_attr(not(feature = "builtins"), allow(unused_mut))]
        let mut config = self.config;
        #[cfg(feature = "builtins")]
        if let Some(builtins) = &self.builtins {
            #[cfg(feature = "sandbox")]
            let tools = tackle_builtins::builtin_tools_in(builtins, &self.sandbox);
            #[cfg(not(feature = "sandbox"))]
            let tools = tackle_builtins::builtin_tools(builtins);
            for tool in tools {
                registry.register(tool)?;
            }
            // What `session_started` reports: the sandbox the shell's commands run in.
            #[cfg(feature = "sandbox")]
            let info = SandboxInfo {
                mode: self.sandbox.mode().to_string(),
                network: self.sandbox.network(),
                enforced_by: self.sandbox.backend().map(|b| b.to_string()),
            };
            #[cfg(not(feature = "sandbox"))]
            let info = SandboxInfo { mode: "off".to_owned(), network: true, enforced_by: None };
            config.sandbox = Some(info);
        }
        registry.register(typed(TodoTool::new(store.clone())))?;
        for tool in self.tools {
            registry.register(tool)?;
        }
        if any_skills {
            let activate = ActivateSkill::new(skills.clone(), store.clone());
            #[cfg(feature = "mcp")]
            let activate = activate.with_mcp(mcp.clone());
            registry.register(typed(activate))?;
        }
        registry.register(typed(ReadResult::new(store.clone())))?;
        registry.register(typed(CompactContext))?;
        if config.plan_mode {
            registry.register(typed(ProposePlan::new(store.clone())))?;
        }
        // Depth 0: no session may start a sub-agent, so the tool is not offered at all.
        let subagents = self.subagents.filter(|_| config.subagents.max_depth > 0).map(Arc::new);
        if let Some(agents) = &subagents {
            registry.register(typed(crate::subagent::AgentTool::new(agents)))?;
        }

        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
        let mut sources = self.sources;
        #[cfg(feature = "mcp")]
        if let Some(manager) = &mcp {
            sources.push(Arc::clone(manager) as Arc<dyn ToolSource>);
        }
        let mut deferrable = Vec::new();
        for source in &sources {
            for tool in source.tools() {
                let name = tool.spec().name.clone();
                match registry.register(tool) {
                    Ok(()) => deferrable.push(name),
                    Err(e) => tracing::warn!(source = source.name(), error = %e, "tool skipped"),
                }
            }
        }
        if let Some(agents) = &subagents {
            agents.check_tools(&registry.names())?;
        }
        let deferral = Deferral::plan(
            &registry.specs(),
            &deferrable,
            &config.model,
            &config.context,
            &config.deferral,
            self.provider.capabilities().deferred_tools,
        );
        for tool in deferral.registry_tools(&store) {
            registry.register(tool)?;
        }

        let approver = self.approver.unwrap_or_else(|| {
            Arc::new(DenyAll::new(
                "this call needs a person's confirmation and none can be asked here; tell the user what you \
                 wanted to do",
            ))
        });
        // Plan mode runs tools that read, and tools that change only the session (the agent's
        // own todo items, skills, deferred-tool search and compaction, and any tool that says
        // so in its annotations): each declares it, none is named here.
        let mut modes = ModeRules::new(&self.edit_tools, &[] as &[&str])?;
        if config.plan_mode {
            modes = modes.with_plan_approval(PROPOSE_PLAN);
        }
        let mut executor = ToolExecutor::new(Arc::new(registry), hooks, approver, self.limits)
            .with_script_hooks(script_hooks)
            .with_mode_rules(modes);
        if self.offload {
            let context = &config.context;
            let ttl = std::time::Duration::from_secs(context.offload_ttl_days.saturating_mul(24 * 3600));
            executor = executor.with_offloader(Arc::new(StoreOffloader::new(
                store.clone(),
                context.offload_bytes,
                ttl,
            )));
        }
        let checkpoints = self.checkpoints.map(|c| {
            Arc::new(tackle_checkpoint::Checkpoints::new(store.clone(), c).exclude(self.checkpoint_exclude))
        });
        let mut agent =
            Agent::from_parts(self.provider, Arc::new(executor), store, config, workspace, skills)
                .with_deferral(deferral)
                .with_checkpoints(checkpoints)
                .with_elicitation(self.elicitation)
                .with_subagents(subagents);
        #[cfg(feature = "mcp")]
        {
            agent = agent.with_mcp(mcp);
        }
        for source in sources {
            agent = agent.with_tool_source(source);
        }
        Ok(agent)
    }
}

async fn open_store(choice: StoreChoice) -> Result<Store, BuildError> {
    let open = |path: PathBuf| async move {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| BuildError::Store {
                path: path.display().to_string(),
                message: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        Store::open(&path)
            .await
            .map_err(|e| BuildError::Store { path: path.display().to_string(), message: e.to_string() })
    };
    match choice {
        StoreChoice::Given(store) => Ok(store),
        StoreChoice::Path(path) => open(path).await,
        StoreChoice::Default => match std::env::var_os("TACKLE_HOME").filter(|h| !h.is_empty()) {
            Some(home) => open(Path::new(&home).join("tackle.db")).await,
            None => in_memory().await,
        },
        StoreChoice::InMemory => in_memory().await,
    }
}

async fn in_memory() -> Result<Store, BuildError> {
    Store::open_in_memory()
        .await
        .map_err(|e| BuildError::Store { path: ":memory:".into(), message: e.to_string() })
}
