//! rig 0.44's `add` loop, a persistent worker of the peer benchmark (protocol in
//! bench/peers/README.md): one agent per loop length, a fresh prompt for every run.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use rig_agent::prelude::*;
use rig_agent::tool::{ToolContext, ToolExecutionError};
use rig_core::providers::openai::{OpenAIConfig, Route};
use serde::Deserialize;

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = i64;
    type Error = ToolExecutionError;

    fn description(&self) -> String {
        "Add two integers.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                           "required": ["a", "b"]})
    }

    async fn call(&self, _: &mut ToolContext, args: AddArgs) -> Result<i64, Self::Error> {
        Ok(args.a + args.b)
    }
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let base = std::env::var("FAKE_BASE").unwrap_or_else(|_| "http://127.0.0.1:8089/v1".into());
    // Chat Completions: rig's OpenAI dialect defaults to the Responses API.
    let client = OpenAIConfig::new("sk-bench").with_base_url(base).with_route(Route::Chat).client();
    let mut agents: HashMap<usize, Agent> = HashMap::new();
    let mut run = |n: usize| -> Result<()> {
        let agent = agents
            .entry(n)
            .or_insert_with(|| {
                AgentBuilder::new(client.completion(format!("fake-steps-{n}")))
                    .preamble("Use the add tool.")
                    .tool(Add)
                    .build()
            })
            .clone();
        let start = Instant::now();
        let answer = runtime.block_on(async { agent.prompt("go").max_turns(n + 1).await })?.output();
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let mut out = std::io::stdout().lock();
        writeln!(out, "RESULT {}", serde_json::json!({"ms": ms, "answer": answer}))?;
        out.flush()?;
        Ok(())
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, n] if flag == "--once" => return run(n.parse().context("--once takes a loop length")?),
        _ => bail!("usage: rig-peer-worker [--once N]  (or loop lengths on stdin, one per line)"),
    }
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            break;
        }
        run(line.trim().parse().with_context(|| format!("not a loop length: {line:?}"))?)?;
    }
    Ok(())
}
