//! Sessions are stored: a second agent (another process, after a restart) opens the session by
//! id and continues it with the whole conversation.
//!
//! `OPENAI_API_KEY=... cargo run -p tackle-agent --example resume_session -- /tmp/tackle-example.db`

use tackle_agent::{Agent, NewSessionOptions, TurnInput};
use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
use tackle_tools::EventSink;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let db = std::env::args().nth(1).unwrap_or_else(|| "tackle-example.db".into());
    let (sink, cancel) = (EventSink::discard(), CancellationToken::new());
    let provider = || OpenAiChat::new(ProviderConfig::from_env(ProviderKind::Openai));

    let first = Agent::builder(provider()?).model("gpt-4.1-mini").store_path(&db).build().await?;
    let mut session = first.create_session(NewSessionOptions::default()).await?;
    let id = session.id().clone();
    let answer = session.run_turn(TurnInput::new("Remember the number 42."), &sink, &cancel).await?;
    println!("first: {}", answer.text);
    drop((session, first));

    // Later, elsewhere: the same store, the same session.
    let second = Agent::builder(provider()?).model("gpt-4.1-mini").store_path(&db).build().await?;
    let mut resumed = second.open_session(&id).await?;
    let answer =
        resumed.run_turn(TurnInput::new("Which number did I ask you to remember?"), &sink, &cancel).await?;
    println!("resumed: {}", answer.text);
    println!("session {id}: {} messages", resumed.history().len());
    Ok(())
}
