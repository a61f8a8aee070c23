//! 1,000 concurrent streaming sessions against the zero-latency fake model.
//!
//! `cargo bench -p tackle-server --bench concurrent_sessions [-- SESSIONS]`
//!
//! Starts the real server on a socket (real store on disk, real tools registered), creates the
//! sessions, then sends one streaming message to every session at once and reads each SSE stream
//! to `turn_finished`. The same number of streaming requests sent straight to the fake model at
//! once is the baseline; "added latency" is what the server adds on top (session load, request
//! build, events, SQLite commits, SSE). Memory per idle session is the RSS growth per session
//! once every turn has finished.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tackle_agent::{Agent, AgentConfig};
use tackle_builtins::{BuiltinConfig, builtin_tools};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind, RetryPolicy};
use tackle_server::{AppState, ServerConfig, router};
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{ApprovalMode, ApprovalQueue, ExecLimits, HookPolicy, ToolExecutor, ToolRegistry};

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1000);
    let fake = FakeModel::start(Script::stateless(vec![Turn::text(
        "Hello from the fake model, streamed in pieces.",
    )]))
    .await
    .unwrap();
    let db = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
    let mut registry = ToolRegistry::new();
    for tool in builtin_tools(&BuiltinConfig::default()) {
        registry.register(tool).unwrap();
    }
    let approvals = ApprovalQueue::default();
    let executor = ToolExecutor::new(
        Arc::new(registry),
        HookPolicy::defaults(ApprovalMode::Server),
        Arc::new(approvals.clone()),
        ExecLimits::default(),
    );
    let config = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("sk-bench")
        .with_retry(RetryPolicy { max_retries: 0, ..RetryPolicy::default() });
    let provider = Arc::new(OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap());
    let agent = Agent::new(provider, Arc::new(executor), store.clone(), AgentConfig::new("model-x"));
    let mut server = ServerConfig::new(workspace.path().to_owned());
    server.heartbeat = Duration::from_secs(15);
    let state = AppState::new(agent, approvals, server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
    let client = reqwest::Client::builder().pool_max_idle_per_host(n).build().unwrap();

    // Warm up (tokenizer tables, connection pools, SQLite pages).
    let warm: serde_json::Value = client
        .post(format!("{base}/v1/sessions"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let warm_id = warm["id"].as_str().unwrap().to_owned();
    let _ = client
        .post(format!("{base}/v1/sessions/{warm_id}/messages"))
        .json(&serde_json::json!({"message": "warm up"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();

    // Baseline: the same streaming requests straight to the fake model.
    let body = serde_json::json!({"model": "model-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let direct: Vec<Duration> = join_all((0..n).map(|_| {
        let (client, url, body) =
            (client.clone(), format!("{}/v1/chat/completions", fake.base_url()), body.clone());
        async move {
            let t = Instant::now();
            let text = client
                .post(url)
                .bearer_auth("sk-bench")
                .json(&body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(text.contains("[DONE]"));
            t.elapsed()
        }
    }))
    .await;

    let rss_before = rss_kb();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let s: serde_json::Value = client
            .post(format!("{base}/v1/sessions"))
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(s["id"].as_str().unwrap().to_owned());
    }
    let started = Instant::now();
    let results: Vec<Result<Duration, String>> = join_all(ids.iter().map(|id| {
        let (client, url) = (client.clone(), format!("{base}/v1/sessions/{id}/messages"));
        async move {
            let t = Instant::now();
            let response = client
                .post(url)
                .json(&serde_json::json!({"message": "hello"}))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !response.status().is_success() {
                return Err(format!("status {}", response.status()));
            }
            let text = response.text().await.map_err(|e| e.to_string())?;
            if !text.contains("\"reason\":\"completed\"") {
                return Err(format!("turn did not complete: {}", &text[text.len().saturating_sub(300)..]));
            }
            Ok(t.elapsed())
        }
    }))
    .await;
    let wall = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = rss_kb();

    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let mut served: Vec<Duration> = results.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    served.sort();
    let mut direct = direct;
    direct.sort();
    println!("sessions: {n}, errors: {}", errors.len());
    if let Some(e) = errors.first() {
        println!("first error: {e}");
    }
    println!("wall time for all turns: {}  ({:.0} turns/s)", ms(wall), n as f64 / wall.as_secs_f64());
    for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        let (s, d) = (percentile(&served, p), percentile(&direct, p));
        println!(
            "{name}: through the server {}, straight to the model {}, added {}",
            ms(s),
            ms(d),
            ms(s.saturating_sub(d))
        );
    }
    println!(
        "memory per idle session: {:.1} KB (RSS {} KB -> {} KB)",
        (rss_after.saturating_sub(rss_before)) as f64 / n as f64,
        rss_before,
        rss_after
    );
    // Sequential added latency: one turn at a time, no queueing.
    let mut one: Vec<Duration> = Vec::new();
    for id in ids.iter().take(100) {
        let t = Instant::now();
        let _ = client
            .post(format!("{base}/v1/sessions/{id}/messages"))
            .json(&serde_json::json!({"message": "again"}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        one.push(t.elapsed());
    }
    let mut base_one: Vec<Duration> = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        let _ = client
            .post(format!("{}/v1/chat/completions", fake.base_url()))
            .bearer_auth("sk-bench")
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        base_one.push(t.elapsed());
    }
    one.sort();
    base_one.sort();
    println!(
        "one turn at a time (100 turns): p50 added {}, p99 added {}",
        ms(percentile(&one, 0.5).saturating_sub(percentile(&base_one, 0.5))),
        ms(percentile(&one, 0.99).saturating_sub(percentile(&base_one, 0.99)))
    );
    if !errors.is_empty() {
        std::process::exit(1);
    }
}
