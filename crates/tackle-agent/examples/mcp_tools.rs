//! An MCP server as a tool source: its tools join the agent's (namespaced `server__tool`), and
//! are deferred behind `tool_search` when their definitions would take too much of the window.
//!
//! `OPENAI_API_KEY=... cargo run -p tackle-agent --example mcp_tools -- npx -y @modelcontextprotocol/server-everything`

use tackle_agent::Agent;
use tackle_mcp::{McpConfig, McpServerConfig};
use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut command = std::env::args().skip(1);
    let program = command.next().ok_or_else(|| anyhow::anyhow!("usage: mcp_tools COMMAND [ARGS...]"))?;
    let mut mcp = McpConfig::default();
    mcp.servers.insert("everything".into(), McpServerConfig::stdio(program, command));

    let provider = OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai))?;
    let agent = Agent::builder(provider).model("gpt-4.1-mini").without_builtins().mcp(mcp).build().await?;
    let names: Vec<String> = agent.tool_specs().into_iter().map(|t| t.name).collect();
    println!("tools: {}", names.join(", "));
    let outcome = agent.run("Echo the word 'tackle' with the echo tool.").await?;
    println!("{}", outcome.text);
    Ok(())
}
