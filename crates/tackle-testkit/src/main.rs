//! `tackle-fake-model`: the scripted fake model server as a program, for benchmarking Tackle
//! and other frameworks against the same traffic.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use tackle_testkit::{FakeModel, Script, ScriptMode};

/// The fake's own cost is part of every measured framework's wall time, and most of it is
/// allocation (reading each request into a `Value`, validating it): mimalloc took it from
/// 0.10-0.12 to 0.08-0.10 ms per call for rig's requests and from 0.17-0.18 to 0.13-0.14 for
/// Tackle's in the peer benchmark (`bench/peers`, fake CPU per call; BENCHMARKS.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve a scripted fake model (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses).
///
/// `GET /_fake/stats` counts the model requests received (`POST /_fake/reset` zeroes it).
#[derive(Debug, Parser)]
#[command(name = "tackle-fake-model", version)]
struct Args {
    /// Script file (JSON: {"turns": [{"text": ..., "tool_calls": [{"name": ..., "arguments": ...}], "usage": {...}}]}).
    #[arg(long)]
    script: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    addr: SocketAddr,
    /// Match turns by counting tool results in each request (repeatable traffic).
    #[arg(long)]
    stateless: bool,
    /// Delay every answer by this many milliseconds.
    #[arg(long)]
    latency_ms: Option<u64>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.script)
        .with_context(|| format!("cannot read {}", args.script.display()))?;
    let mut script: Script = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a valid script", args.script.display()))?;
    if args.stateless {
        script.mode = ScriptMode::Stateless;
    }
    if args.latency_ms.is_some() {
        script.latency_ms = args.latency_ms;
    }
    let fake = FakeModel::start_on(args.addr, script)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    // Nothing reads recorded requests out of this process (counters are at /_fake/stats), and a
    // long benchmark would keep every body.
    fake.set_recording(false);
    println!("{}", fake.base_url());
    tokio::signal::ctrl_c().await.context("cannot wait for Ctrl-C")?;
    fake.shutdown().await;
    Ok(())
}
