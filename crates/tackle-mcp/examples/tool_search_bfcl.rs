//! `tool_search` on real data: the BFCL v4 pooled catalogue (1,233 functions, served as one MCP
//! server named `bfcl`, so indexed under their namespaced, provider-valid names) and its 2,135
//! user requests. Run it with `bench/tool-search/run.sh` (it installs the pinned wheel and builds
//! this in release); prints the Markdown tables quoted in BENCHMARKS.md.
//!
//! `tool_search_bfcl DATA.json` measures the shipped ranker and the plain lexical one: recall@1,
//! recall@5 and MRR (all requests, and the tuning and held-out halves), search latency p50/p99
//! over every request, index build time and the index's heap size.
//! `tool_search_bfcl DATA.json --tune` reruns the weight search on the tuning half only and
//! reports the best weights on both halves.
//! `tool_search_bfcl DATA.json --dump OUT.json` writes the shipped ranker's best 100 tools (with
//! their scores) for every request, so that other rankers can be tried on top of it
//! (`bench/tool-search/embedding_probe.py`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tackle_protocol::ToolSpec;
use tackle_testkit::bfcl::{Bfcl, BfclQuery, Recall};
use tackle_tools::{FieldWeights, Ranker, ToolSearchIndex};

/// Rounds of all 2,135 searches timed for the latency figures.
const LATENCY_ROUNDS: usize = 5;
/// Index builds timed.
const BUILDS: usize = 30;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!(
            "usage: tool_search_bfcl DATA.json [--tune | --dump OUT.json]  (bench/tool-search/run.sh makes DATA.json)"
        );
        std::process::exit(2);
    };
    let mode = args.next();
    let tune = mode.as_deref() == Some("--tune");
    let dump = if mode.as_deref() == Some("--dump") {
        match args.next() {
            Some(out) => Some(out),
            None => {
                eprintln!("--dump needs the file to write: tool_search_bfcl DATA.json --dump OUT.json");
                std::process::exit(2);
            }
        }
    } else {
        None
    };
    let data: Bfcl = match std::fs::read(&path).map_err(|e| e.to_string()).and_then(|bytes| {
        serde_json::from_slice(&bytes).map_err(|e| format!("{path} is not bfcl.py export output: {e}"))
    }) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let (specs, to_namespaced) = namespaced(&data);
    let queries: Vec<Query> = data
        .queries
        .iter()
        .map(|q| Query {
            source: q,
            relevant: q.relevant.iter().filter_map(|r| to_namespaced.get(r).cloned()).collect(),
            tuning: is_tuning_half(&q.id),
        })
        .collect();
    let tuning = queries.iter().filter(|q| q.tuning).count();
    println!(
        "BFCL v4 single-turn catalogue: {} tools, {} requests ({} tuning half, {} held-out half)\n",
        specs.len(),
        queries.len(),
        tuning,
        queries.len() - tuning
    );
    if tune {
        search_weights(&specs, &queries);
        return;
    }
    if let Some(out) = dump {
        if let Err(e) = dump_rankings(&specs, &queries, &out) {
            eprintln!("cannot write {out}: {e}");
            std::process::exit(1);
        }
        return;
    }
    // The hybrid ranker's word table is parsed once per process, on the first hybrid index.
    let start = Instant::now();
    let first = ToolSearchIndex::with_ranker(&specs[..1], Ranker::Hybrid);
    let table_load = start.elapsed();
    println!(
        "word table (hybrid): loaded in {:.1} ms on first use, {:.2} MB of heap for its lookup\n",
        table_load.as_secs_f64() * 1e3,
        first.shared_heap_bytes() as f64 / 1e6
    );
    println!(
        "| ranker | recall@1 | recall@5 | MRR | recall@1 / @5, held-out half | search p50 / p99 | index build (median of {BUILDS}) | index heap (+ word table) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for ranker in [Ranker::Bm25f, Ranker::Hybrid, Ranker::Bm25] {
        let build = || ToolSearchIndex::with_ranker(&specs, ranker);
        let index = build();
        let all = recall(&index, queries.iter());
        let held_out = recall(&index, queries.iter().filter(|q| !q.tuning));
        let (p50, p99) = latency(&index, &queries);
        let builds = median_build(build);
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} / {:.3} | {} / {} | {:.1} ms | {:.2} MB |",
            ranker,
            all.at1,
            all.at5,
            all.mrr,
            held_out.at1,
            held_out.at5,
            micros(p50),
            micros(p99),
            builds.as_secs_f64() * 1e3,
            (index.heap_bytes() + index.shared_heap_bytes()) as f64 / 1e6,
        );
    }
    println!("\nBy category, shipped ranker ({}):\n", Ranker::default());
    println!("| category | requests | recall@1 | recall@5 |");
    println!("|---|---|---|---|");
    let index = ToolSearchIndex::new(&specs);
    let mut categories: Vec<&str> = queries.iter().map(|q| q.source.category.as_str()).collect();
    categories.dedup();
    for category in categories {
        let r = recall(&index, queries.iter().filter(|q| q.source.category == category));
        println!("| {category} | {} | {:.3} | {:.3} |", r.queries, r.at1, r.at5);
    }
}

/// The shipped ranker's best 100 tools for every request, as JSON: `names` (the catalogue in
/// index order) and one row per request (`id`, `category`, `relevant`, `hits` as [name, score]).
fn dump_rankings(specs: &[ToolSpec], queries: &[Query], out: &str) -> std::io::Result<()> {
    let index = ToolSearchIndex::new(specs);
    let rows: Vec<serde_json::Value> = queries
        .iter()
        .map(|q| {
            serde_json::json!({
                "id": q.source.id,
                "category": q.source.category,
                "relevant": q.relevant,
                "hits": index.search(&q.source.query, 100),
            })
        })
        .collect();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let json = serde_json::json!({ "ranker": Ranker::default().to_string(), "names": names, "rows": rows });
    std::fs::write(out, serde_json::to_vec(&json)?)
}

struct Query<'a> {
    source: &'a BfclQuery,
    /// Relevant tools under their namespaced names.
    relevant: Vec<String>,
    tuning: bool,
}

/// The catalogue as one MCP server `bfcl` offers it: names made provider-valid exactly as
/// Tackle's MCP client does (`tackle_mcp::namespace_all`).
fn namespaced(data: &Bfcl) -> (Vec<ToolSpec>, HashMap<String, String>) {
    let pairs: Vec<(&str, &str)> = data.tools.iter().map(|t| ("bfcl", t.name.as_str())).collect();
    let names = tackle_mcp::namespace_all(&pairs);
    let specs = data
        .tools
        .iter()
        .zip(&names)
        .map(|(t, name)| ToolSpec::new(name.clone(), t.description.clone(), t.input_schema.clone()))
        .collect();
    let map = data.tools.iter().zip(names).map(|(t, name)| (t.name.clone(), name)).collect();
    (specs, map)
}

/// The half of the requests weights may be tuned on: even FNV-1a hash of the id.
fn is_tuning_half(id: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.is_multiple_of(2)
}

fn recall<'a>(index: &ToolSearchIndex, queries: impl Iterator<Item = &'a Query<'a>>) -> Recall {
    Recall::measure(queries.map(|q| {
        let ranked = index.search(&q.source.query, 10).into_iter().map(|(name, _)| name).collect();
        (q.relevant.as_slice(), ranked)
    }))
}

fn latency(index: &ToolSearchIndex, queries: &[Query]) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(queries.len() * LATENCY_ROUNDS);
    for _ in 0..LATENCY_ROUNDS {
        for q in queries {
            let start = Instant::now();
            let hits = index.search(&q.source.query, 5);
            times.push(start.elapsed());
            std::hint::black_box(hits);
        }
    }
    times.sort_unstable();
    let at = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    (at(0.50), at(0.99))
}

fn median_build(build: impl Fn() -> ToolSearchIndex) -> Duration {
    let mut times: Vec<Duration> = (0..BUILDS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(build());
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[BUILDS / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// Grid search of the BM25F weights on the tuning half; the best by recall@1 + recall@5 there,
/// then reported on the held-out half it never saw.
fn search_weights(specs: &[ToolSpec], queries: &[Query]) {
    let mut results: Vec<(f64, FieldWeights, Recall)> = Vec::new();
    for name in [2.0, 3.0, 4.0] {
        for description in [1.0, 2.0, 3.0] {
            for parameter_names in [0.5, 1.0] {
                for parameter_descriptions in [0.25, 0.5, 1.0] {
                    for enum_values in [0.0, 0.5] {
                        for b in [0.3, 0.5, 0.75] {
                            let w = FieldWeights {
                                name,
                                description,
                                parameter_names,
                                parameter_descriptions,
                                enum_values,
                                b,
                                ..FieldWeights::default()
                            };
                            let index = ToolSearchIndex::with_weights(specs, w);
                            let r = recall(&index, queries.iter().filter(|q| q.tuning));
                            results.push((r.at1 + r.at5, w, r));
                        }
                    }
                }
            }
        }
    }
    results.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("{} weight sets tried on the tuning half; the best five:\n", results.len());
    println!(
        "| name | description | param names | param descriptions | enums | b | tuning recall@1 / @5 | held-out recall@1 / @5 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (_, w, r) in results.iter().take(5) {
        let index = ToolSearchIndex::with_weights(specs, *w);
        let h = recall(&index, queries.iter().filter(|q| !q.tuning));
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} |",
            w.name,
            w.description,
            w.parameter_names,
            w.parameter_descriptions,
            w.enum_values,
            w.b,
            r.at1,
            r.at5,
            h.at1,
            h.at5
        );
    }
    let shipped = FieldWeights::default();
    let index = ToolSearchIndex::with_weights(specs, shipped);
    let t = recall(&index, queries.iter().filter(|q| q.tuning));
    let h = recall(&index, queries.iter().filter(|q| !q.tuning));
    println!(
        "\nshipped (FieldWeights::default): tuning {:.3} / {:.3}, held-out {:.3} / {:.3}",
        t.at1, t.at5, h.at1, h.at5
    );
}
