//! `tackle serve`: the HTTP server.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use tackle_server::AppState;
use tackle_tools::{ApprovalMode, ApprovalQueue, ElicitationQueue};

use crate::UsageError;
use crate::cli::ServeArgs;
use crate::runtime::{
    Approvals, ModelProvider, ServerQuestions, build_agent_with, env_lookup, open_store, provider_for,
    settings_for, workspace_dir,
};

pub async fn run(args: ServeArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let config = settings.server.to_config(&workspace, args.bind.as_deref(), &env_lookup)?;
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    let approvals = ApprovalQueue::default();
    let ask = Approvals::Ask(Arc::new(approvals.clone()));
    let ModelProvider { provider, kind, codex } =
        provider_for(&settings, &workspace, &ask, ApprovalMode::Server)?;
    let store = open_store(&settings).await?;
    // The agent's approvals are shared through the store, so any instance on the same database
    // lists and decides them.
    let shared =
        Approvals::Ask(Arc::new(tackle_server::SharedApprovals::new(approvals.clone(), store.clone())));
    // So are the questions MCP servers ask; nobody signs in to a server from here (`tackle mcp
    // login` stores the credentials the server uses and refreshes).
    let elicitations = ElicitationQueue::default();
    let questions = ServerQuestions::for_approvals(
        &shared,
        Some(Arc::new(tackle_server::SharedElicitations::new(elicitations.clone(), store.clone()))),
    );
    let agent = build_agent_with(
        &settings,
        &workspace,
        provider,
        kind,
        store,
        shared,
        ApprovalMode::Server,
        questions,
    )
    .await?;
    let channels = tackle_channels::registry_from_config(
        &settings.channels,
        agent.clone(),
        approvals.clone(),
        Some(elicitations.clone()),
        &workspace,
        &env_lookup,
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let bind = config.bind;
    let mut state = AppState::new(agent, approvals, config).with_elicitations(elicitations);
    // Codex on /v1/chat/completions (models codex/<model>), on the agent's app-server if it
    // runs on Codex.
    if settings.codex.bridge || codex.is_some() {
        settings.codex.validate().map_err(|e| UsageError(e.to_string()))?;
        let server =
            codex.unwrap_or_else(|| tackle_codex::CodexServer::new(crate::runtime::codex_config(&settings)));
        state = state
            .with_codex_bridge(Arc::new(tackle_codex::CodexBridge::new(server, Some(workspace.clone()))));
    }
    if let Some(metrics) = crate::METRICS.get() {
        state = state.with_metrics(metrics.clone());
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}; is another server using the port? pass --bind"))?;
    let local = listener.local_addr()?;
    if !channels.is_empty() {
        channels.start().await.map_err(|e| match e {
            tackle_channels::ChannelError::Config(m) => anyhow::Error::new(UsageError(m)),
            other => anyhow::Error::new(other).context("cannot start the chat channels"),
        })?;
        state.add_addon(Arc::new(ChannelsAddon(channels.clone())));
    }
    // The first line on stdout is the address, so scripts (and tests) can use port 0. Whoever
    // reads it may close the pipe after it: the server keeps serving (`noticeln!`).
    noticeln!("tackle serving on http://{local}");
    for status in channels.status() {
        let bot = status.bot.as_deref().map(|b| format!(" @{b}")).unwrap_or_default();
        noticeln!("{} bot{bot} receiving by {}", status.channel, status.mode);
    }
    tackle_server::serve_on(listener, state, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// The chat channels as a server addon: webhook routes, stopped with the server.
struct ChannelsAddon(tackle_channels::ChannelRegistry);

#[async_trait::async_trait]
impl tackle_server::ServerAddon for ChannelsAddon {
    fn routes(&self) -> axum::Router {
        self.0.routes()
    }

    async fn shutdown(&self, grace: std::time::Duration) {
        self.0.stop(grace).await;
    }
}

/// Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
