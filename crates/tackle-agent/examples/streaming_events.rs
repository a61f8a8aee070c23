//! Streaming a turn's events to the terminal as they happen: text as it arrives, each tool call
//! and its outcome, usage at the end. Ctrl-C cancels the turn (calls in flight are recorded as
//! interrupted).
//!
//! `OPENAI_API_KEY=... cargo run -p tackle-agent --example streaming_events -- "list the files here"`

use std::io::Write;

use tackle_agent::{Agent, NewSessionOptions, TurnInput};
use tackle_protocol::{AgentEvent, ToolOutcome};
use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
use tackle_tools::EventSink;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args().nth(1).unwrap_or_else(|| "What files are in this directory?".into());
    let provider = OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai))?;
    let agent = Agent::builder(provider).model("gpt-4.1-mini").build().await?;
    let mut session = agent.create_session(NewSessionOptions::default()).await?;

    let sink = EventSink::new(|event| match event {
        AgentEvent::TextDelta { text } => {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
        AgentEvent::ToolCall { name, args, .. } => println!("\n> {name} {args}"),
        AgentEvent::ToolResult { name, outcome: ToolOutcome::Ok { .. }, lines, .. } => {
            println!("  {name}: ok, {lines} lines")
        }
        AgentEvent::ToolResult { name, outcome: ToolOutcome::Error { envelope }, .. } => {
            println!("  {name}: {} {}", envelope.category, envelope.message)
        }
        AgentEvent::TurnFinished { steps, usage, .. } => {
            println!("\n[{steps} steps, {} input tokens, {} output]", usage.input_tokens, usage.output_tokens)
        }
        _ => {}
    });
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let outcome = session.run_turn(TurnInput::new(prompt), &sink, &cancel).await?;
    println!("session {} ended: {:?}", session.id(), outcome.end);
    Ok(())
}
