//! Embedding Tackle's HTTP server in an existing axum application: the app keeps its own
//! routes, and Tackle's API (sessions, SSE turns, the OpenAI-compatible endpoint, the web page)
//! is nested under `/agent`.
//!
//! `OPENAI_API_KEY=... cargo run -p tackle-server --example embed_server -- 127.0.0.1:3000`
//! then open <http://127.0.0.1:3000/agent>.

use axum::Router;
use axum::routing::get;
use tackle_agent::Agent;
use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
use tackle_server::{AppState, ServerConfig};
use tackle_tools::{ApprovalMode, ApprovalQueue};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".into());
    let workspace = std::env::current_dir()?;

    // Confirmations of destructive calls are answered over HTTP (POST /agent/v1/approvals/{id}).
    let approvals = ApprovalQueue::default();
    let provider = OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai))?;
    let agent = Agent::builder(provider)
        .model("gpt-4.1-mini")
        .workspace(&workspace)
        .hooks(Vec::new(), ApprovalMode::Server)
        .approver(approvals.clone())
        .build()
        .await?;
    let tackle = tackle_server::router(AppState::new(agent, approvals, ServerConfig::new(workspace)));

    let app =
        Router::new().route("/hello", get(|| async { "hello from the host app" })).nest("/agent", tackle);
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async { tokio::signal::ctrl_c().await.unwrap_or(()) })
        .await?;
    Ok(())
}
