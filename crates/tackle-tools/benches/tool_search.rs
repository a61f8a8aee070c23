//! `tool_search` over 1,000 tool definitions.
//!
//! `cargo bench -p tackle-tools --bench tool_search` — BM25 over names, descriptions and parameter
//! names of 1,000 tools; prints the time per query (median of 2,000 queries). Target: <= 1 ms.

use std::time::{Duration, Instant};

use serde_json::json;
use tackle_protocol::ToolSpec;
use tackle_tools::ToolSearchIndex;

fn main() {
    let words = [
        "file", "read", "write", "issue", "repo", "search", "fetch", "url", "image", "query", "database",
        "table", "row", "user", "email", "calendar", "event", "message", "channel", "deploy",
    ];
    let tools: Vec<ToolSpec> = (0..1_000)
        .map(|i| {
            let w = |k: usize| words[(i * 7 + k * 13) % words.len()];
            ToolSpec::new(
                format!("srv{}__{}_{}_{i}", i % 10, w(0), w(1)),
                format!("Does {} with the {} and {} of a {}. Use it to {} {}.", w(2), w(3), w(4), w(5), w(8), w(9)),
                json!({"type": "object", "properties": {w(6): {"type": "string"}, w(7): {"type": "integer"}}}),
            )
        })
        .collect();
    let started = Instant::now();
    let index = ToolSearchIndex::new(&tools);
    let build = started.elapsed();
    let queries =
        ["read file", "search issue in repo", "send email to user", "deploy table rows", "nothing matches"];
    let mut times: Vec<Duration> = Vec::with_capacity(2_000);
    let mut hits = 0;
    for r in 0..2_000 {
        let t = Instant::now();
        hits += index.search(queries[r % queries.len()], 10).len();
        times.push(t.elapsed());
    }
    times.sort();
    println!("index build for 1000 tools: {build:?}");
    println!(
        "search over 1000 tools: median {:?}, p99 {:?} ({hits} hits)",
        times[times.len() / 2],
        times[times.len() * 99 / 100]
    );
}
