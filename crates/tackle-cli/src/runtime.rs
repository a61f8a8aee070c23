//! Building an agent and a session from settings and command-line flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tackle_agent::{Agent, AgentConfig, BuildError, NewSessionOptions, Session, ToolMask};
use tackle_codex::{ApprovalsFactory, CodexApprovals, CodexProvider, CodexServer, HookApprovals};
use tackle_provider::{OpenAiChat, OpenAiResponses, Provider, ProviderConfig, ProviderKind, build_provider};
use tackle_sandbox::Sandbox;
use tackle_store::Store;
use tackle_tools::{ApprovalMode, Approver, AutoApprove, DenyAll, ExecLimits, HookPolicy};

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
    // Sub-agent files are read now, so a bad one stops the command before anything happens.
    crate::settings::sub_agent_registry(&settings, workspace).map_err(|e| UsageError(e.to_string()))?;
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

/// Opens the store in the configured data directory (created readable by this user only: it
/// holds every conversation and tool output).
pub async fn open_store(settings: &Settings) -> Result<Store> {
    if let Some(url) = &settings.store.url {
        // Checked before connecting; neither message repeats the password.
        tackle_store::StoreUrl::parse(url)
            .map_err(|e| UsageError(format!("[store] url / TACKLE_DATABASE_URL: {e}")))?;
        return Store::connect(url)
            .await
            .with_context(|| format!("cannot open the session store {}", settings.store_display()));
    }
    let path = settings.database_path().map_err(|e| UsageError(e.to_string()))?;
    if let Some(dir) = path.parent().filter(|d| !d.exists()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                UsageError(format!(
                    "cannot create the data directory {}: {e}; point TACKLE_HOME (or data_dir) at a directory this user can write",
                    dir.display()
                ))
            })?;
    }
    Store::open(&path).await.with_context(|| format!("cannot open the session store {}", path.display()))
}

/// `[codex]` as Codex runs with it: unless `backend_retries` is set, Codex may retry its model
/// backend as often as Tackle retries a provider (`[provider] max_retries`).
pub fn codex_config(settings: &Settings) -> tackle_codex::CodexConfig {
    let mut codex = settings.codex.clone();
    if codex.backend_retries.is_none()
        && let Ok(provider) = settings.provider_config(&env_lookup)
    {
        codex.backend_retries = Some(provider.retry.max_retries);
    }
    codex
}

/// The model provider of a command.
pub struct ModelProvider {
    pub provider: Arc<dyn Provider>,
    pub kind: ProviderKind,
    /// The Codex app-server the provider runs on, when it is Codex.
    pub codex: Option<CodexServer>,
}

/// The provider the settings name. With Codex, the approval requests of Codex's own tools
/// (when `[codex] builtin_tools` is on) follow the hook policy of `mode` and ask `approvals`.
pub fn provider_for(
    settings: &Settings,
    workspace: &Path,
    approvals: &Approvals,
    mode: ApprovalMode,
) -> Result<ModelProvider> {
    let config: ProviderConfig =
        settings.provider_config(&env_lookup).map_err(|e| UsageError(e.to_string()))?;
    let kind = config.kind;
    // An official API without a key refuses every request: say so before anything is created
    // (a session) or sent. A server of one's own (another base URL) may need no key.
    if kind != ProviderKind::Codex
        && config.api_key.is_none()
        && config.base_url.trim_end_matches('/') == kind.default_base_url()
    {
        let (key, url) = match kind {
            ProviderKind::Anthropic => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            _ => ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
        };
        return Err(UsageError(format!(
            "the {} provider has no API key: set {key} (or point {url} at a server that needs none)",
            kind.as_str()
        ))
        .into());
    }
    let mut codex = None;
    let provider: Arc<dyn Provider> = match (kind, settings.openai_dialect) {
        (ProviderKind::Codex, _) => {
            settings.codex.validate().map_err(|e| UsageError(e.to_string()))?;
            let server = CodexServer::new(codex_config(settings));
            let (rules, _) = tackle_tools::split_hooks(&settings.hooks);
            let hooks = HookPolicy::new(rules, mode).map_err(|e| UsageError(e.to_string()))?;
            let approver = approver_for(approvals);
            let factory: ApprovalsFactory = Arc::new(move |session: &str| {
                Arc::new(HookApprovals::new(hooks.clone(), approver.clone(), session))
                    as Arc<dyn CodexApprovals>
            });
            codex = Some(server.clone());
            Arc::new(CodexProvider::new(server, Some(workspace.to_owned())).with_approvals(factory))
        }
        (ProviderKind::Openai, Some(dialect)) => Arc::new(OpenAiChat::with_dialect(config, dialect)?),
        (ProviderKind::OpenaiResponses, _) => {
            Arc::new(OpenAiResponses::with_options(config, settings.responses.clone())?)
        }
        _ => build_provider(config)?,
    };
    Ok(ModelProvider { provider, kind, codex })
}

/// What commands must never read: Tackle's data directory (the store), its user configuration
/// file, the server's tokens file, and the server's other workspaces (each session sees only
/// its own).
pub fn always_hidden(settings: &Settings, workspace: &Path) -> Vec<PathBuf> {
    let mut hidden: Vec<PathBuf> = settings.data_dir().ok().into_iter().collect();
    hidden.extend(user_config_dir().map(|d| d.join(crate::settings::CONFIG_FILE)));
    hidden.extend(settings.server.tokens_file(workspace));
    hidden.extend(settings.server.workspaces.values().map(|p| workspace.join(p)));
    hidden
}

/// The workspace checkpoints of `[checkpoints]` over `store`, for commands that rewind or fork
/// without building an agent; `None` when they are off.
pub fn checkpoints_for(
    settings: &Settings,
    store: &Store,
    workspace: &Path,
) -> Option<tackle_checkpoint::Checkpoints> {
    settings.checkpoints.enabled.then(|| {
        tackle_checkpoint::Checkpoints::new(store.clone(), settings.checkpoints.clone())
            .exclude(always_hidden(settings, workspace))
    })
}

/// The sandbox of shell commands: `[sandbox]`, with this executable as the helper, the backend
/// this machine supports, and [`always_hidden`] paths.
pub fn sandbox_for(settings: &Settings, workspace: &Path) -> Sandbox {
    let mut builder = Sandbox::builder(settings.sandbox.clone())
        .home(std::env::var_os("HOME").map(PathBuf::from))
        .hide(always_hidden(settings, workspace));
    match std::env::current_exe() {
        Ok(exe) => builder = builder.helper(exe),
        Err(e) => tracing::warn!(error = %e, "cannot locate the tackle executable for the sandbox"),
    }
    let sandbox = builder.detect();
    if let tackle_sandbox::SandboxStatus::Unavailable { reason } = sandbox.status() {
        eprintln!(
            "warning: the {} sandbox is unavailable here ({reason}); shell commands will be refused. \
             Run `tackle sandbox check`, or set [sandbox] mode = \"off\" (TACKLE_SANDBOX_MODE=off) to run \
             them unsandboxed.",
            sandbox.mode()
        );
    }
    sandbox
}

/// Who decides on confirmations.
#[derive(Clone)]
pub enum Approvals {
    /// Everything is approved (`--yes`, or the demo's throwaway workspace).
    Auto,
    /// Nothing is approved; the model is told to ask the user to re-run with `--yes`.
    Deny,
    /// A person decides.
    Ask(Arc<dyn Approver>),
}

/// What a person can do about calls refused because nobody could confirm them.
pub const YES_HINT: &str = "nobody could be asked to confirm this call (standard input is not a terminal); \
                            pass --yes to allow such calls";

/// The approver behind `approvals`.
fn approver_for(approvals: &Approvals) -> Arc<dyn Approver> {
    match approvals {
        Approvals::Auto => Arc::new(AutoApprove),
        Approvals::Deny => {
            Arc::new(DenyAll::new("this call needs approval; the user can re-run with --yes to allow it"))
        }
        Approvals::Ask(a) => a.clone(),
    }
}

/// Who answers what MCP servers ask in a front end: their questions (elicitation) and their
/// sign-ins (OAuth).
#[derive(Clone, Default)]
pub struct ServerQuestions {
    /// Who is asked (a terminal form, a queue the web page answers).
    pub elicitor: Option<Arc<dyn tackle_tools::Elicitor>>,
    /// What happens to questions by default.
    pub policy: Option<tackle_tools::ElicitationPolicy>,
    /// Whether a person can sign in to a server in a browser from here.
    pub sign_in: bool,
}

impl ServerQuestions {
    /// What matches a front end's approvals: `--yes` takes a form's defaults, nobody at a
    /// terminal declines, a person is asked through `elicitor`.
    pub fn for_approvals(approvals: &Approvals, elicitor: Option<Arc<dyn tackle_tools::Elicitor>>) -> Self {
        let policy = match approvals {
            Approvals::Auto => Some(tackle_tools::ElicitationPolicy::Defaults),
            Approvals::Deny => Some(tackle_tools::ElicitationPolicy::Decline(
                "the MCP server asked the user a question and nobody is at a terminal to answer; the user can \
                 re-run with --yes to accept the server's defaults"
                    .to_owned(),
            )),
            Approvals::Ask(_) => None,
        };
        Self { elicitor, policy, sign_in: false }
    }
}

impl ServerQuestions {
    /// A context for MCP requests made outside a turn (a resource attached to the prompt): the
    /// server's questions go where a turn's would.
    pub fn context(&self, workspace: &Path) -> tackle_tools::ToolContext {
        let ctx = tackle_tools::ToolContext::new("cli", "attach", workspace.to_owned());
        if let Some(policy) = &self.policy {
            ctx.turn.insert(policy.clone());
        }
        if let Some(elicitor) = &self.elicitor {
            ctx.turn.insert(tackle_tools::TurnElicitor(elicitor.clone()));
        }
        ctx
    }
}

/// `message` with the MCP resources it mentions (`@server:uri`) attached; an unreadable one is a
/// usage error naming it.
pub async fn attach_resources(
    agent: &Agent,
    message: String,
    ctx: &tackle_tools::ToolContext,
) -> Result<String> {
    let Some(mcp) = agent.mcp() else { return Ok(message) };
    if tackle_mcp::attach::mentions(&message, &mcp.server_names()).is_empty() {
        return Ok(message);
    }
    mcp.attach_resources(&message, &[], ctx)
        .await
        .map_err(|(m, e)| UsageError(format!("cannot attach @{}:{}: {e}", m.server, m.uri)).into())
}

/// Builds the agent the settings describe: builtins, the agent's own tools, skills of the
/// workspace (and the server's named workspaces), MCP servers (deferred when over budget).
/// MCP servers' questions follow `approvals` ([`ServerQuestions::for_approvals`]), and nobody
/// signs in interactively.
pub async fn build_agent(
    settings: &Settings,
    workspace: &Path,
    provider: Arc<dyn Provider>,
    kind: ProviderKind,
    store: Store,
    approvals: Approvals,
    mode: ApprovalMode,
) -> Result<Agent> {
    let questions = ServerQuestions::for_approvals(&approvals, None);
    build_agent_with(settings, workspace, provider, kind, store, approvals, mode, questions).await
}

/// [`build_agent`] with who answers the MCP servers' questions and sign-ins.
#[allow(clippy::too_many_arguments)]
pub async fn build_agent_with(
    settings: &Settings,
    workspace: &Path,
    provider: Arc<dyn Provider>,
    kind: ProviderKind,
    store: Store,
    approvals: Approvals,
    mode: ApprovalMode,
    questions: ServerQuestions,
) -> Result<Agent> {
    let approver = approver_for(&approvals);
    let limits = ExecLimits {
        timeout: Duration::from_secs(settings.tools.timeout_secs),
        max_output_bytes: settings.tools.max_output_bytes,
        max_output_lines: settings.tools.max_output_lines,
        max_spool_bytes: settings.tools.max_stored_output_bytes,
        ..ExecLimits::default()
    };
    let mut config = AgentConfig::new(settings.model_for(kind));
    config.max_steps = settings.max_steps;
    config.loop_guard = settings.loop_guard.clone();
    config.dynamic_tools = settings.dynamic_tools;
    config.context = settings.context.clone();
    config.deferral = settings.deferral.clone();
    config.telemetry = settings.telemetry.clone();
    config.subagents.max_depth = settings.subagents.max_depth;
    let (rules, scripts) = tackle_tools::split_hooks(&settings.hooks);
    let mut builder = Agent::builder(provider)
        .config(config)
        .store(store)
        .workspace(workspace)
        .workspaces(settings.server.workspaces.values().map(|p| workspace.join(p)))
        .builtins(settings.builtins.clone())
        .sandbox(sandbox_for(settings, workspace))
        .mcp(settings.mcp.clone())
        .mcp_options(crate::mcp_sign_in::mcp_options(settings, questions.sign_in))
        .hooks(rules, mode)
        .plan_mode(true)
        .permission_mode(settings.permissions.mode)
        .edit_tools(settings.permissions.edit_tools.clone())
        .checkpoints(settings.checkpoints.clone())
        .checkpoint_exclude(always_hidden(settings, workspace))
        .shared_approver(approver)
        .limits(limits)
        .offload(settings.recoverable_compression);
    for hook in scripts {
        builder = builder.hook(hook);
    }
    if let Some(dir) = user_config_dir() {
        builder = builder.skill_root(dir);
    }
    if let Some(elicitor) = questions.elicitor {
        builder = builder.elicitor(elicitor);
    }
    if let Some(policy) = questions.policy {
        builder = builder.elicitation_policy(policy);
    }
    if let Some(max) = settings.max_output_tokens {
        builder = builder.max_output_tokens(max);
    }
    builder = builder.streaming(settings.streaming);
    if let Some(agents) =
        crate::settings::sub_agent_registry(settings, workspace).map_err(|e| UsageError(e.to_string()))?
    {
        builder = builder.sub_agents(agents);
    }
    let agent = builder.build().await.map_err(|e| match e {
        BuildError::Hook(_)
        | BuildError::ScriptHook(_)
        | BuildError::EditTools(_)
        | BuildError::Mode(_)
        | BuildError::Workspace { .. }
        | BuildError::NoModel
        | BuildError::Limit(_)
        | BuildError::SubAgent(_) => UsageError(e.to_string()).into(),
        other => anyhow::Error::new(other),
    })?;
    // A server that could not be reached is said on stderr whatever the log level (terminal
    // logs are quiet by default): the run goes on without its tools, and the person learns why
    // (for instance which `tackle mcp login` to run).
    if let Some(mcp) = agent.mcp() {
        for info in mcp.statuses() {
            if let tackle_mcp::McpServerStatus::Failed { error } = &info.status {
                eprintln!("warning: MCP server `{}` is unavailable: {error}", info.name);
            }
        }
    }
    Ok(agent)
}

/// Opens `--session` (by id or unique prefix) or creates a new session in `workspace`.
pub async fn open_or_create(agent: &Agent, session: Option<&str>, workspace: &Path) -> Result<Session> {
    match session {
        Some(prefix) => {
            let record = agent
                .store()
                .sessions()
                .find_by_prefix(prefix)
                .await
                .map_err(|e| UsageError(e.to_string()))?;
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
        Some(text) => Ok(ToolMask::parse_cli(text).map_err(|e| UsageError(e.to_string()))?),
        None => Ok(None),
    }
}
