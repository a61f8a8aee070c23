//! `tackle serve`: the HTTP server.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tackle_agent::Settings;
use tackle_server::{AppState, ServerConfig, UserToken};
use tackle_tools::{ApprovalMode, ApprovalQueue};

use crate::UsageError;
use crate::cli::ServeArgs;
use crate::runtime::{
    Approvals, build_agent, env_lookup, open_store, provider_for, settings_for, workspace_dir,
};

pub async fn run(args: ServeArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let config = server_config(&settings, &workspace, args.bind.as_deref())?;
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    let (provider, kind) = provider_for(&settings)?;
    let store = open_store(&settings).await?;
    let approvals = ApprovalQueue::default();
    let agent = build_agent(
        &settings,
        &workspace,
        provider,
        kind,
        store,
        Approvals::Ask(Arc::new(approvals.clone())),
        ApprovalMode::Server,
    )
    .await?;
    let bind = config.bind;
    let state = AppState::new(agent, approvals, config);
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind}; is another server using the port? pass --bind"))?;
    let local = listener.local_addr()?;
    // The first line on stdout is the address, so scripts (and tests) can use port 0.
    println!("tackle serving on http://{local}");
    tackle_server::serve_on(listener, state, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// The server configuration from settings, `TACKLE_SERVER_TOKENS` and `--bind`.
fn server_config(
    settings: &Settings,
    workspace: &std::path::Path,
    bind: Option<&str>,
) -> Result<ServerConfig> {
    let s = &settings.server;
    let mut config = ServerConfig::new(workspace.to_owned());
    let bind = bind.or(s.bind.as_deref());
    if let Some(b) = bind {
        config.bind = b.parse::<SocketAddr>().map_err(|e| {
            UsageError(format!("invalid bind address {b:?}: {e}; use HOST:PORT like 127.0.0.1:8787"))
        })?;
    }
    for t in &s.tokens {
        let token = match (&t.token, &t.token_env) {
            (Some(token), _) => token.clone(),
            (None, Some(var)) => env_lookup(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                UsageError(format!(
                    "the token of server user {:?} is read from ${var}, which is not set",
                    t.user
                ))
            })?,
            (None, None) => {
                return Err(
                    UsageError(format!("server user {:?} has neither token nor token_env", t.user)).into()
                );
            }
        };
        config.tokens.push(UserToken { user: t.user.clone(), token });
    }
    if let Some(text) = env_lookup("TACKLE_SERVER_TOKENS") {
        config.tokens.extend(ServerConfig::parse_tokens(&text).map_err(|e| UsageError(e.to_string()))?);
    }
    for (name, path) in &s.workspaces {
        let path = if path.is_absolute() { path.clone() } else { workspace.join(path) };
        config.workspaces.insert(name.clone(), path);
    }
    config.models = s.models.clone();
    config.agent_model = s.agent_model.clone();
    config.body_limit = s.body_limit_bytes;
    config.heartbeat = Duration::from_secs(s.heartbeat_secs.max(1));
    config.shutdown_grace = Duration::from_secs(s.shutdown_grace_secs);
    Ok(config)
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
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
