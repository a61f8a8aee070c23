//! `tackle mcp serve`: Tackle as an MCP server (the server itself is `tackle-mcp-server`; this
//! builds its agent from the settings, as `tackle run` and `tackle serve` do, and picks the
//! transport).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use tackle_mcp_server::{Authenticator, ClientApprovals, McpServeOptions, TackleMcp};
use tackle_tools::ApprovalMode;
use tokio_util::sync::CancellationToken;

use crate::UsageError;
use crate::cli::McpServeArgs;
use crate::runtime::{
    Approvals, ModelProvider, ServerQuestions, build_agent_with, env_lookup, open_store, provider_for,
    settings_for, workspace_dir,
};
use crate::settings::McpTransport;

pub async fn run(args: McpServeArgs) -> Result<ExitCode> {
    // Everything configured is checked before anything is created or bound. Standard output
    // is the protocol over stdio: nothing else may be printed there.
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let mut settings = settings_for(&workspace, &args.model)?;
    if args.tools {
        settings.mcp_serve.tools = true;
    }
    if let Some(addr) = &args.http {
        settings.mcp_serve.transport = McpTransport::Http;
        if !addr.is_empty() {
            settings.mcp_serve.bind.clone_from(addr);
        }
    }
    let http = match settings.mcp_serve.transport {
        McpTransport::Stdio => None,
        McpTransport::Http => {
            // The bind address and tokens are checked as `tackle serve` checks them.
            let config =
                settings.server.to_config(&workspace, Some(&settings.mcp_serve.bind), &env_lookup)?;
            config.validate().map_err(|e| {
                UsageError(e.to_string().replace("or bind to 127.0.0.1", "or pass --http 127.0.0.1:PORT"))
            })?;
            Some(config)
        }
    };
    // Confirmations and MCP servers' questions go to the client that runs the turn.
    let approvals = ClientApprovals::default();
    let ask = Approvals::Ask(Arc::new(approvals.clone()));
    let ModelProvider { provider, kind, .. } =
        provider_for(&settings, &workspace, &ask, ApprovalMode::Server)?;
    let store = open_store(&settings).await?;
    let questions =
        ServerQuestions { elicitor: Some(Arc::new(approvals.clone())), policy: None, sign_in: false };
    let agent =
        build_agent_with(&settings, &workspace, provider, kind, store, ask, ApprovalMode::Server, questions)
            .await?;
    let options = McpServeOptions {
        approval: settings.mcp_serve.approval,
        expose_tools: settings.mcp_serve.tools,
        models: settings.server.models.clone(),
    };
    let server = TackleMcp::new(agent.clone(), approvals, options);
    let served = match http {
        None => tackle_mcp_server::serve_stdio(server).await.map_err(anyhow::Error::new),
        Some(config) => serve_http(server, config).await,
    };
    agent.store().close().await;
    served?;
    Ok(ExitCode::SUCCESS)
}

async fn serve_http(server: TackleMcp, config: tackle_server::ServerConfig) -> Result<()> {
    let auth: Option<Authenticator> = if config.tokens.is_empty() {
        None
    } else {
        let tokens = config.tokens.clone();
        Some(Arc::new(move |presented: &str| tackle_server::auth::user_for_token(&tokens, presented)))
    };
    let shutdown = CancellationToken::new();
    let router = tackle_mcp_server::http_router(server, auth, shutdown.clone());
    let bind = config.bind;
    let listener = tokio::net::TcpListener::bind(bind).await.with_context(|| {
        format!("cannot listen on {bind}; is another server using the port? pass --http HOST:PORT")
    })?;
    let local = listener.local_addr()?;
    // The first line on stdout is the endpoint, so scripts (and tests) can use port 0.
    noticeln!("tackle mcp serving on http://{local}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            crate::serve::shutdown_signal().await;
            shutdown.cancel();
        })
        .await
        .context("the MCP HTTP server failed")?;
    Ok(())
}
