//! The peer benchmark's `add` loop with Tackle used as a library, the way an embedder would:
//! `Agent::builder` with one typed tool and no builtins, the SQLite store on disk, an agent per
//! loop length, and a fresh session for every run.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Result, bail};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_agent::{Agent, NewSessionOptions, Streaming, TurnInput};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind};
use tackle_store::Store;
use tackle_tools::{AutoApprove, EventSink, ToolContext, ToolFailure, ToolOutput, TypedTool, typed};
use tokio_util::sync::CancellationToken;

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

/// Adds two integers.
struct Add;

#[async_trait]
impl TypedTool for Add {
    type Args = AddArgs;
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> String {
        "Add two integers.".into()
    }
    async fn run(&self, args: AddArgs, _: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let sum = args.a.checked_add(args.b).ok_or_else(|| ToolFailure::invalid_args("the sum overflows"))?;
        Ok(ToolOutput::text(sum.to_string()))
    }
}

/// The whole wiring of an embedder: one agent running `model` with the `add` tool and no
/// builtins, on the given store.
async fn build_agent(base_url: &str, model: String, max_steps: u32, store: Store) -> Result<Agent> {
    let provider = ProviderConfig::new(ProviderKind::Openai).with_base_url(base_url).with_api_key("sk-bench");
    let provider = OpenAiChat::with_dialect(provider, OpenAiDialect::OpenAi)?;
    Ok(Agent::builder(provider)
        .model(model)
        .without_builtins()
        .tool(typed(Add))
        .approver(AutoApprove)
        .max_steps(max_steps)
        .streaming(streaming())
        .store(store)
        .build()
        .await?)
}

/// Diagnostic variants, to see where the time goes (`bench/peers/README.md`):
/// `TACKLE_PEER_RUNTIME=current_thread` runs the worker on one thread (the default is a
/// multi-threaded runtime, as rig's worker has); `TACKLE_PEER_DELIVERY=stream` streams
/// answers (`Streaming::Always`, the driver's `tackle_stream`) where the library's default asks
/// for whole ones, since the worker's turns are unwatched; `TACKLE_PEER_STORE=memory` (the
/// driver's `tackle_memory`) keeps the store in memory instead of a file on disk (what
/// persisting costs).
fn variant(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == value)
}

/// How the worker's agent asks for answers: the library's default unless
/// `TACKLE_PEER_DELIVERY=stream`.
fn streaming() -> Streaming {
    if variant("TACKLE_PEER_DELIVERY", "stream") { Streaming::Always } else { Streaming::default() }
}

fn main() -> Result<()> {
    let runtime = if variant("TACKLE_PEER_RUNTIME", "current_thread") {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()?
    };
    let dir = std::env::temp_dir().join(format!("tackle-peer-worker-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = if variant("TACKLE_PEER_STORE", "memory") {
        runtime.block_on(Store::open_in_memory())?
    } else {
        runtime.block_on(Store::open(&dir.join("tackle.db")))?
    };
    let base = tackle_peer_workers::fake_base();
    let workspace: PathBuf = dir.clone();
    let mut agents: HashMap<usize, Agent> = HashMap::new();
    let served = tackle_peer_workers::serve(&runtime, |n| {
        let agent = match agents.get(&n) {
            Some(agent) => Ok(agent.clone()),
            None => u32::try_from(n + 1).map_err(anyhow::Error::from).and_then(|steps| {
                let model = tackle_peer_workers::model_for(n);
                let agent = runtime.block_on(build_agent(&base, model, steps, store.clone()))?;
                agents.insert(n, agent.clone());
                Ok(agent)
            }),
        };
        let workspace = workspace.clone();
        async move {
            let options = NewSessionOptions { workspace, ..NewSessionOptions::default() };
            let mut session = agent?.create_session(options).await?;
            let outcome = session
                .run_turn(TurnInput::new("go"), &EventSink::discard(), &CancellationToken::new())
                .await?;
            if outcome.steps as usize != n + 1 {
                bail!("the turn took {} steps, not {}: {:?}", outcome.steps, n + 1, outcome.error);
            }
            Ok(outcome.text)
        }
    });
    drop(agents);
    runtime.block_on(store.close());
    let _ = std::fs::remove_dir_all(&dir);
    served
}
