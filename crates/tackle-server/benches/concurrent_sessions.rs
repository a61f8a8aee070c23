//! 1,000 concurrent streaming sessions against the zero-latency fake model.
//!
//! `cargo bench -p tackle-server --bench concurrent_sessions [-- SESSIONS]`
//! (`TACKLE_BENCH_DATABASE_URL=postgres://...` for a PostgreSQL store; SQLite on disk otherwise)
//!
//! Starts the real server on a socket (real store on disk, real tools registered), then:
//!
//! 1. one session after another: create it and run one streaming turn; "added latency" is the
//!    turn's time minus a streaming request straight to the fake model, and "memory per idle
//!    session" is the RSS growth over all of them (each session has had a turn and is idle);
//! 2. a burst: one streaming message to every session at once, each SSE stream read to
//!    `turn_finished`; errors and the time the burst takes, against the same burst of requests
//!    sent straight to the fake model. On 2 cores the client, the server and the fake model share
//!    the CPU, so burst latencies are mostly queueing.

use std::time::{Duration, Instant};

use futures::future::join_all;
use tackle_agent::Agent;
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind, RetryPolicy};
use tackle_server::{AppState, ServerConfig};
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script, Turn};
use tackle_tools::{ApprovalMode, ApprovalQueue};

/// One timed request, boxed so turns and direct calls can be paced alike.
type TurnFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Duration, String>> + Send>>;

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
    // `TACKLE_BENCH_DATABASE_URL=postgres://...` runs the same phases on PostgreSQL.
    let store = match std::env::var("TACKLE_BENCH_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Store::connect(&url).await.unwrap(),
        _ => Store::open(&db.path().join("tackle.db")).await.unwrap(),
    };
    println!("store: {}", store.backend().as_str());
    let approvals = ApprovalQueue::default();
    let config = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("sk-bench")
        .with_retry(RetryPolicy { max_retries: 0, ..RetryPolicy::default() });
    let provider = OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap();
    let agent = Agent::builder(provider)
        .model("model-x")
        .store(store.clone())
        .workspace(workspace.path())
        .hooks(Vec::new(), ApprovalMode::Server)
        .approver(approvals.clone())
        .offload(false)
        .build()
        .await
        .unwrap();
    let mut server = ServerConfig::new(workspace.path().to_owned());
    server.heartbeat = Duration::from_secs(15);
    let state = AppState::new(agent, approvals, server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(tackle_server::serve_on(listener, state, std::future::pending()));
    let client = reqwest::Client::builder().pool_max_idle_per_host(n).build().unwrap();
    let model_url = format!("{}/v1/chat/completions", fake.base_url());
    let direct_body = serde_json::json!({"model": "model-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let straight = |client: reqwest::Client| {
        let (url, body) = (model_url.clone(), direct_body.clone());
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
    };
    let create = |client: reqwest::Client| {
        let url = format!("{base}/v1/sessions");
        async move {
            let s: serde_json::Value =
                client.post(url).json(&serde_json::json!({})).send().await.unwrap().json().await.unwrap();
            s["id"].as_str().unwrap().to_owned()
        }
    };
    let turn = |client: reqwest::Client, id: String| {
        let url = format!("{base}/v1/sessions/{id}/messages");
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
            Ok::<_, String>(t.elapsed())
        }
    };

    // Warm up (tokenizer tables, connection pools, SQLite pages).
    let warm = create(client.clone()).await;
    turn(client.clone(), warm).await.unwrap();
    let _ = straight(client.clone()).await;

    // 1. One at a time: added latency, and memory of idle sessions.
    let rss_before = rss_kb();
    let mut ids = Vec::with_capacity(n);
    let mut one = Vec::with_capacity(n);
    let mut base_one = Vec::with_capacity(n);
    for _ in 0..n {
        let id = create(client.clone()).await;
        one.push(turn(client.clone(), id.clone()).await.unwrap());
        base_one.push(straight(client.clone()).await);
        ids.push(id);
    }
    let rss_after = rss_kb();
    let mean = |d: &[Duration]| d.iter().sum::<Duration>() / d.len().max(1) as u32;
    let tenth = n / 10;
    println!(
        "one turn at a time: mean turn of the first {tenth} {}, of the last {tenth} {}",
        ms(mean(&one[..tenth])),
        ms(mean(&one[n - tenth..]))
    );
    one.sort();
    base_one.sort();
    println!("sessions: {n}");
    println!(
        "one turn at a time: added latency p50 {}, p90 {}, p99 {} (turn p99 {}, model alone p99 {})",
        ms(percentile(&one, 0.5).saturating_sub(percentile(&base_one, 0.5))),
        ms(percentile(&one, 0.9).saturating_sub(percentile(&base_one, 0.9))),
        ms(percentile(&one, 0.99).saturating_sub(percentile(&base_one, 0.99))),
        ms(percentile(&one, 0.99)),
        ms(percentile(&base_one, 0.99)),
    );
    println!(
        "memory per idle session: {:.1} KB (RSS {rss_before} KB -> {rss_after} KB)",
        rss_after.saturating_sub(rss_before) as f64 / n as f64
    );

    // 2. The burst.
    let mut direct: Vec<Duration> = join_all((0..n).map(|_| straight(client.clone()))).await;
    let started = Instant::now();
    let results = join_all(ids.iter().map(|id| turn(client.clone(), id.clone()))).await;
    let wall = started.elapsed();
    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let mut served: Vec<Duration> = results.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    served.sort();
    direct.sort();
    println!(
        "burst of {n} turns at once: errors {}, wall time {} ({:.0} turns/s)",
        errors.len(),
        ms(wall),
        n as f64 / wall.as_secs_f64()
    );
    if let Some(e) = errors.first() {
        println!("first error: {e}");
    }
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        println!(
            "burst {name}: through the server {}, straight to the model {}",
            ms(percentile(&served, p)),
            ms(percentile(&direct, p))
        );
    }

    // 3. Paced: every session sends one message, the starts spread over 5 s (200 turns/s, under
    //    the burst throughput), so streams overlap without a queue; the same pacing straight to
    //    the model is the baseline.
    let pace = Duration::from_secs(5) / n as u32;
    let paced = |f: Vec<TurnFuture>| async move {
        let started = Instant::now();
        let tasks: Vec<_> = f
            .into_iter()
            .enumerate()
            .map(|(i, fut)| {
                tokio::spawn(async move {
                    tokio::time::sleep_until((started + pace * i as u32).into()).await;
                    fut.await
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
        }
        out
    };
    let through =
        paced(ids.iter().map(|id| Box::pin(turn(client.clone(), id.clone())) as TurnFuture).collect()).await;
    let alone = paced(
        (0..n)
            .map(|_| {
                let f = straight(client.clone());
                Box::pin(async move { Ok(f.await) }) as TurnFuture
            })
            .collect(),
    )
    .await;
    let paced_errors = through.iter().filter(|r| r.is_err()).count();
    let mut through: Vec<Duration> = through.into_iter().filter_map(Result::ok).collect();
    let mut alone: Vec<Duration> = alone.into_iter().filter_map(Result::ok).collect();
    through.sort();
    alone.sort();
    println!(
        "paced ({n} turns over 5 s): errors {paced_errors}, added latency p50 {}, p99 {} (turn p99 {}, model alone p99 {})",
        ms(percentile(&through, 0.5).saturating_sub(percentile(&alone, 0.5))),
        ms(percentile(&through, 0.99).saturating_sub(percentile(&alone, 0.99))),
        ms(percentile(&through, 0.99)),
        ms(percentile(&alone, 0.99)),
    );
    if !errors.is_empty() || paced_errors > 0 {
        std::process::exit(1);
    }
}
