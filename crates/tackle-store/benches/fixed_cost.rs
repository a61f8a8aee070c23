//! The store's part of a run's fixed cost, as the agent's loop makes the calls
//! (`Session::start` for a new session, `Session::run_turn`):
//!
//! - **cold**: opening a fresh store (as `tackle run` does at start), then a new session's rows,
//!   a turn's start, one tool step, the answer and the turn's end, each iteration on a new SQLite
//!   file (so every statement is prepared for the first time);
//! - **warm**: one store opened once, then a new session and a turn of 5 tool steps and the
//!   answer per iteration, as the peer benchmark's worker runs them (`bench/peers`: an agent per
//!   loop length, a fresh session per run, the statements already prepared).
//!
//! Prints medians and p90s in microseconds. `cargo bench -p tackle-store --bench fixed_cost`
//! (`-- 300` for 300 iterations of each, `-- 300 warm` for the warm part only).

use std::time::Instant;

use serde_json::json;
use tackle_protocol::{ContentBlock, Message, ToolInput, ToolResult, ToolUse};
use tackle_store::{
    CallStart, NewSession, SessionStatus, SessionUpdate, StepCommit, StepRecord, Store, ToolCallFinish,
    ToolCallStatus,
};

/// Tool steps of a warm run (the peer benchmark's shortest loop).
const WARM_STEPS: i64 = 5;

fn main() {
    let iterations: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    // `-- 200 warm` times the warm part only (for callgrind's instruction counts of it).
    let cold = std::env::args().nth(2).is_none_or(|part| part != "warm");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (mut open, mut run, mut total, mut warm) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..if cold { iterations } else { 0 } {
            let dir = tempfile::tempdir().unwrap();
            let start = Instant::now();
            let store = Store::open(&dir.path().join("tackle.db")).await.unwrap();
            let opened = Instant::now();
            one_run(&store, 1).await;
            let done = Instant::now();
            store.close().await;
            open.push((opened - start).as_secs_f64() * 1e6);
            run.push((done - opened).as_secs_f64() * 1e6);
            total.push((done - start).as_secs_f64() * 1e6);
        }
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("tackle.db")).await.unwrap();
        // Warm-up: the statements prepared, the file's first pages allocated.
        for _ in 0..20 {
            one_run(&store, WARM_STEPS).await;
        }
        for _ in 0..iterations {
            let start = Instant::now();
            one_run(&store, WARM_STEPS).await;
            warm.push(start.elapsed().as_secs_f64() * 1e6);
        }
        store.close().await;
    });
    for (name, mut v) in [
        ("cold: open a fresh store", open),
        ("cold: session + turn + 1 tool step + answer", run),
        ("cold: both", total),
        ("warm: session + turn + 5 tool steps + answer", warm),
    ] {
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
        println!("{name}: median {:.0} us, p90 {:.0} us ({} runs)", at(0.5), at(0.9), v.len());
    }
}

/// A new session and one turn of `steps` tool steps and the answer, with the store calls the
/// agent makes for them (`Session::start` of a new session, then `Session::run_turn`).
async fn one_run(store: &Store, steps: i64) {
    // The new session's row with its first state (the token counts' vocabulary).
    let new = NewSession { owner: "local".into(), workspace: "/tmp".into(), ..Default::default() };
    let session = store
        .sessions()
        .create_with_state(new, &[("context.count_encoding", json!("o200k_base"))])
        .await
        .unwrap();
    let id = session.id.to_string();
    // The turn's start: the session marked running (titled) and the user's message.
    let running = SessionUpdate {
        status: Some(SessionStatus::Running),
        title: Some("add 2 and 3".into()),
        ..Default::default()
    };
    store.sessions().start_turn(&id, running, 1, &Message::user("add 2 and 3"), Some(5)).await.unwrap();
    for step in 1..=steps {
        let call_id = format!("call_{step}");
        let args = json!({"a": step, "b": 1});
        let call = CallStart { call_id: &call_id, name: "add", args: &args };
        let mut calling = Message::assistant("adding");
        let input = ToolInput::from(args.clone());
        calling.content.push(ContentBlock::ToolUse(ToolUse {
            id: call_id.as_str().into(),
            name: "add".into(),
            input,
        }));
        store.calls().append_with_calls(&id, 1, &calling, Some(3), &[call]).await.unwrap();
        let sum = (step + 1).to_string();
        let finish = ToolCallFinish {
            status: ToolCallStatus::Ok,
            result: ToolResult::ok(call_id.as_str(), sum.as_str()),
            envelope: None,
            bytes: 1,
            truncated: false,
            locator: None,
            duration_ms: 0,
        };
        let record = StepRecord { turn: 1, step, stop_reason: "tool_use".into(), ..Default::default() };
        let results = Message::tool_results([ToolResult::ok(call_id.as_str(), sum.as_str())]);
        let commit = StepCommit {
            turn: 1,
            message: Some((&results, Some(1))),
            finished: vec![(call_id, finish)],
            step: &record,
            state: vec![("context.calibration", json!(1.1))],
        };
        store.steps().commit(&id, commit).await.unwrap();
    }
    let answer = Message::assistant("5");
    let step = StepRecord { turn: 1, step: steps + 1, stop_reason: "end_turn".into(), ..Default::default() };
    // The answer ends the turn in the same commit, as the agent's loop does.
    let last = StepCommit {
        turn: 1,
        message: Some((&answer, Some(1))),
        finished: vec![],
        step: &step,
        state: vec![],
    };
    store.steps().commit_last(&id, last, SessionStatus::Idle).await.unwrap();
}
