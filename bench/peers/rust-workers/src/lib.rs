//! The worker protocol of the peer benchmark (`bench/peers`), shared by the Rust workers.
//!
//! A worker is a persistent process running one system's tool loop against the fake model at
//! `FAKE_BASE` (e.g. `http://127.0.0.1:8089/v1`). The driver writes a line with a loop length N
//! on stdin; the worker runs one fresh session of N tool steps and answers one line
//! `RESULT {"ms": <wall time of the run>, "answer": <final text>}` on stdout. An empty line or
//! the end of stdin ends it. `<worker> --once N` runs once and exits (whole-process timings).
//!
//! ```no_run
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! tackle_peer_workers::serve(&runtime, |n| async move { Ok(format!("done after {n} tool calls")) }).unwrap();
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::future::Future;
use std::io::{BufRead, Write};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The fake model's base URL, with `/v1`.
pub fn fake_base() -> String {
    std::env::var("FAKE_BASE").unwrap_or_else(|_| "http://127.0.0.1:8089/v1".into())
}

/// The model name that asks the fake for a loop of `steps` tool calls.
pub fn model_for(steps: usize) -> String {
    format!("fake-steps-{steps}")
}

/// Runs the protocol on stdin/stdout (or `--once N` from the process arguments), each run of
/// `run` on `runtime`, timed from the call to its answer.
pub fn serve<F, Fut>(runtime: &tokio::runtime::Runtime, run: F) -> Result<()>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<String>>,
{
    serve_with_args(runtime, std::env::args().skip(1).collect(), run)
}

/// [`serve`] with the protocol's arguments given (`[]` or `["--once", "N"]`).
pub fn serve_with_args<F, Fut>(runtime: &tokio::runtime::Runtime, args: Vec<String>, mut run: F) -> Result<()>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<String>>,
{
    let mut once = None;
    match args.as_slice() {
        [] => {}
        [flag, n] if flag == "--once" => {
            once = Some(n.parse::<usize>().context("--once takes a loop length")?)
        }
        _ => bail!("usage: worker [--once N]  (or loop lengths on stdin, one per line)"),
    }
    let mut timed = |n: usize| -> Result<()> {
        let start = Instant::now();
        let answer = runtime.block_on(run(n))?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let line = serde_json::json!({"ms": ms, "answer": answer});
        let mut out = std::io::stdout().lock();
        writeln!(out, "RESULT {line}")?;
        out.flush()?;
        Ok(())
    };
    if let Some(n) = once {
        return timed(n);
    }
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        timed(line.parse().with_context(|| format!("not a loop length: {line:?}"))?)?;
    }
    Ok(())
}
