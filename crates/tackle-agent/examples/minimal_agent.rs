//! A minimal agent with one custom tool, in under 20 lines.
//!
//! `OPENAI_API_KEY=... cargo run -p tackle-agent --example minimal_agent` (or set
//! `OPENAI_BASE_URL` for any OpenAI-compatible server).

use schemars::JsonSchema;
use serde::Deserialize;
use tackle_agent::Agent;
use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
use tackle_tools::tool_fn;

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First term.
    a: i64,
    /// Second term.
    b: i64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let add = tool_fn("add", "Add two integers.", |x: AddArgs| async move { (x.a + x.b).to_string() });
    let provider = OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai))?;
    let agent = Agent::builder(provider).model("gpt-4.1-mini").tool(add).build().await?;
    println!("{}", agent.run("What is 2 + 3? Use the add tool.").await?.text);
    Ok(())
}
