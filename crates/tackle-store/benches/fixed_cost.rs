//! The store's part of a run's fixed cost: opening a fresh store (as `tackle run` does at
//! start), then a new session's rows, a turn's start, one tool step, the answer and the turn's
//! end, each iteration on a new SQLite file. Prints medians and p90s in microseconds.
//!
//! `cargo bench -p tackle-store --bench fixed_cost` (`-- 300` for 300 iterations).

use std::time::Instant;

use serde_json::json;
use tackle_protocol::{Message, ToolResult};
use tackle_store::{
    CallStart, NewSession, SessionStatus, SessionUpdate, StepCommit, StepRecord, Store, ToolCallFinish,
    ToolCallStatus,
};

fn main() {
    let iterations: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (mut open, mut run, mut total) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..iterations {
            let dir = tempfile::tempdir().unwrap();
            let start = Instant::now();
            let store = Store::open(&dir.path().join("tackle.db")).await.unwrap();
            let opened = Instant::now();
            one_run(&store).await;
            let done = Instant::now();
            store.close().await;
            open.push((opened - start).as_secs_f64() * 1e6);
            run.push((done - opened).as_secs_f64() * 1e6);
            total.push((done - start).as_secs_f64() * 1e6);
        }
    });
    for (name, mut v) in
        [("open a fresh store", open), ("session + turn + 1 tool step + answer", run), ("both", total)]
    {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
        println!("{name}: median {:.0} us, p90 {:.0} us ({} runs)", at(0.5), at(0.9), v.len());
    }
}

async fn one_run(store: &Store) {
    let session =
        store.sessions().create(NewSession { owner: "local".into(), ..Default::default() }).await.unwrap();
    let id = session.id.to_string();
    let _state = store.sessions().state(&id).await.unwrap();
    let running = SessionUpdate { status: Some(SessionStatus::Running), ..Default::default() };
    store.sessions().start_turn(&id, running, 1, &Message::user("add 2 and 3"), Some(5)).await.unwrap();
    let args = json!({"a": 2, "b": 3});
    let call = CallStart { call_id: "call_1", name: "add", args: &args };
    store.calls().append_with_calls(&id, 1, &Message::assistant("adding"), Some(3), &[call]).await.unwrap();
    let finish = ToolCallFinish {
        status: ToolCallStatus::Ok,
        result: ToolResult::ok("call_1", "5"),
        envelope: None,
        bytes: 1,
        truncated: false,
        locator: None,
        duration_ms: 0,
    };
    let step = StepRecord { turn: 1, step: 1, stop_reason: "tool_use".into(), ..Default::default() };
    let results = Message::user("5");
    let commit = StepCommit {
        turn: 1,
        message: Some((&results, Some(1))),
        finished: vec![("call_1".into(), finish)],
        step: &step,
        state: vec![("context.calibration", json!(1.1))],
    };
    store.steps().commit(&id, commit).await.unwrap();
    let answer = Message::assistant("5");
    let step = StepRecord { turn: 1, step: 2, stop_reason: "end_turn".into(), ..Default::default() };
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
