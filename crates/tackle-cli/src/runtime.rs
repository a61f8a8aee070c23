//! Building an agent and a session from settings and command-line flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tackle_agent::{
    ActivateSkill, Agent, AgentConfig, CallTool, CompactContext, DeferredTools, NewSessionOptions,
    ReadResult, Session, SkillSet, StoreOffloader, TodoTool, ToolMask, ToolSearch, plan_deferral,
};
use tackle_builtins::builtin_tools;
use tackle_mcp::McpManager;
use tackle_provider::{OpenAiChat, Provider, ProviderConfig, ProviderKind, build_provider};
use tackle_store::Store;
use tackle_tools::{
    ApprovalMode, Approver, AutoApprove, DenyAll, ExecLimits, HookPolicy, ToolExecutor, ToolRegistry, typed,
};

use crate::UsageError;
use crate::cli::ModelArgs;
use crate::settings::{Settings, user_config_dir};

/// Reads environment variables of the process.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Settings of `workspace` with the command-line overrides applied.
pub fn settings_for(workspace: &Path, args: &ModelArgs) -> Result<Settings> {
    let mut settings = Settings::load(workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    if let Some(p) = args.provider {
        settings.provider = Some(p);
    }
    if let Some(m) = &args.model {
        settings.model = Some(m.clone());
    }
    if let Some(u) = &args.base_url {
        settings.base_url = Some(u.clone());
    }
    if let Some(n) = args.max_steps {
        if n == 0 {
            return Err(UsageError("--max-steps must be at least 1".into()).into());
        }
        settings.max_steps = n;
    }
    Ok(settings)
}

/// The workspace directory: `--workspace` or the current directory.
pub fn workspace_dir(arg: Option<&PathBuf>) -> Result<PathBuf> {
    let dir = match arg {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "workspace {} is not a directory; pass an existing --workspace",
            dir.display()
        ))
        .into());
    }
    Ok(dir)
}

/// Opens the store in the configured data directory.
pub async fn open_store(settings: &Settings) -> Result<Store> {
    let path = settings.database_path().map_err(|e| UsageError(e.to_string()))?;
    Store::open(&path).await.with_context(|| format!("cannot open the session store {}", path.display()))
}

/// The provider the settings name.
pub fn provider_for(settings: &Settings) -> Result<(Arc<dyn Provider>, ProviderKind)> {
    let config: ProviderConfig =
        settings.provider_config(&env_lookup).map_err(|e| UsageError(e.to_string()))?;
    let kind = config.kind;
    let provider: Arc<dyn Provider> = match (kind, settings.openai_dialect) {
        (ProviderKind::Openai, Some(dialect)) => Arc::new(OpenAiChat::with_dialect(config, dialect)?),
        _ => build_provider(config)?,
    };
    Ok((provider, kind))
}

/// The tools of an agent: the registry, the deferred subset and the MCP servers they come from.
pub struct Tools {
    pub registry: ToolRegistry,
    pub deferred: Option<Arc<DeferredTools>>,
    /// The MCP servers, whose `list_changed` notifications are applied at turn boundaries.
    pub mcp: Option<Arc<McpManager>>,
}

/// The tool registry: builtins, the todo tool, `activate_skill` when the workspace or the user
/// config dir has skills, and the tools of configured MCP servers, deferred behind
/// `tool_search` / `call_tool` when their definitions are over budget.
pub async fn tools(settings: &Settings, store: &Store, workspace: &Path, model: &str) -> Result<Tools> {
    let mut registry = ToolRegistry::new();
    for tool in builtin_tools(&settings.builtins) {
        registry.register(tool)?;
    }
    registry.register(typed(TodoTool::new(store.clone())))?;
    registry.register(typed(ReadResult::new(store.clone())))?;
    registry.register(typed(CompactContext))?;
    let mut roots = vec![workspace.to_owned()];
    roots.extend(user_config_dir());
    let (skills, _) = SkillSet::discover(&roots);
    if !skills.is_empty() {
        registry.register(typed(ActivateSkill::new(skills, store.clone())))?;
    }
    let mut deferred = None;
    let mut mcp = None;
    if !settings.mcp.servers.is_empty() {
        let manager = Arc::new(McpManager::connect(&settings.mcp.servers).await);
        let mut mcp_names = Vec::new();
        for tool in manager.tools() {
            mcp_names.push(tool.spec().name.clone());
            if let Err(e) = registry.register(tool) {
                tracing::warn!(error = %e, "MCP tool skipped");
            }
        }
        deferred = plan_deferral(&registry.specs(), &mcp_names, model, &settings.context, &settings.deferral);
        if let Some(d) = &deferred {
            registry.register(typed(ToolSearch::new(d.clone(), store.clone())))?;
            registry.register(typed(CallTool))?;
        }
        mcp = Some(manager);
    }
    Ok(Tools { registry, deferred, mcp })
}

/// Who decides on confirmations.
pub enum Approvals {
    /// Everything is approved (`--yes`, or the demo's throwaway workspace).
    Auto,
    /// Nothing is approved; the model is told to ask the user to re-run with `--yes`.
    Deny,
    /// A person decides.
    Ask(Arc<dyn Approver>),
}

/// Builds the agent.
pub async fn build_agent(
    settings: &Settings,
    workspace: &Path,
    provider: Arc<dyn Provider>,
    kind: ProviderKind,
    store: Store,
    approvals: Approvals,
    mode: ApprovalMode,
) -> Result<Agent> {
    let model = settings.model_for(kind);
    let Tools { registry, deferred, mcp } = tools(settings, &store, workspace, &model).await?;
    let approver: Arc<dyn Approver> = match approvals {
        Approvals::Auto => Arc::new(AutoApprove),
        Approvals::Deny => {
            Arc::new(DenyAll::new("this call needs approval; the user can re-run with --yes to allow it"))
        }
        Approvals::Ask(a) => a,
    };
    let limits = ExecLimits {
        timeout: Duration::from_secs(settings.tools.timeout_secs),
        max_output_bytes: settings.tools.max_output_bytes,
        max_output_lines: settings.tools.max_output_lines,
        ..ExecLimits::default()
    };
    let hooks = HookPolicy::new(settings.hooks.clone(), mode).map_err(UsageError)?;
    let mut executor = ToolExecutor::new(Arc::new(registry), hooks, approver, limits);
    if settings.recoverable_compression {
        let ttl = std::time::Duration::from_secs(settings.context.offload_ttl_days * 24 * 3600);
        executor = executor.with_offloader(Arc::new(StoreOffloader::new(
            store.clone(),
            settings.context.offload_bytes,
            ttl,
        )));
    }
    let mut config = AgentConfig::new(settings.model_for(kind));
    config.max_steps = settings.max_steps;
    config.max_output_tokens = settings.max_output_tokens;
    config.loop_guard = settings.loop_guard.clone();
    config.dynamic_tools = settings.dynamic_tools;
    config.user_config_dir = user_config_dir();
    config.context = settings.context.clone();
    if let Some(max) = settings.max_output_tokens {
        config.context.reserved_output = u64::from(max);
    }
    let mut agent = Agent::new(provider, Arc::new(executor), store, config).with_deferred(deferred);
    if let Some(mcp) = mcp {
        agent = agent.with_tool_source(mcp);
    }
    Ok(agent)
}

/// Opens `--session` (by id or unique prefix) or creates a new session in `workspace`.
pub async fn open_or_create(agent: &Agent, session: Option<&str>, workspace: &Path) -> Result<Session> {
    match session {
        Some(prefix) => {
            let record =
                agent.store().find_session_by_prefix(prefix).await.map_err(|e| UsageError(e.to_string()))?;
            Ok(agent.open_session(&record.id).await?)
        }
        None => Ok(agent
            .create_session(NewSessionOptions {
                workspace: workspace.to_owned(),
                ..NewSessionOptions::default()
            })
            .await?),
    }
}

/// The `--tool-mask` flag, parsed.
pub fn tool_mask(arg: Option<&str>) -> Result<Option<ToolMask>> {
    match arg {
        Some(text) => Ok(ToolMask::parse_cli(text).map_err(UsageError)?),
        None => Ok(None),
    }
}
