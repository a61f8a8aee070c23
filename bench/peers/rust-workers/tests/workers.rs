//! The Rust workers speak the peer benchmark's protocol and make exactly the requests a loop of
//! N steps needs, against the fake model in loop mode (as bench/peers/driver.py checks).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;
use tackle_testkit::{FakeModel, Script, ScriptMode, Turn};

async fn loop_fake() -> FakeModel {
    let mut script = Script::new(vec![
        Turn::call("add", r#"{"a": {k}, "b": 1}"#),
        Turn::text("done after {k} tool calls"),
    ]);
    script.mode = ScriptMode::Loop;
    FakeModel::start(script).await.unwrap()
}

/// Runs `worker` over stdin for each loop length and returns its answers.
fn drive(worker: &mut Command, fake: &FakeModel, lengths: &[usize]) -> Vec<Value> {
    let mut child = worker
        .env("FAKE_BASE", format!("{}/v1", fake.base_url()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut results = Vec::new();
    for n in lengths {
        writeln!(stdin, "{n}").unwrap();
        let line = lines.next().unwrap().unwrap();
        results.push(serde_json::from_str(line.strip_prefix("RESULT ").unwrap()).unwrap());
    }
    writeln!(stdin).unwrap();
    assert!(child.wait().unwrap().success());
    results
}

#[tokio::test(flavor = "multi_thread")]
async fn every_worker_runs_n_steps_with_n_plus_one_requests() {
    let workers: [(&str, &[&str]); 3] = [
        (env!("CARGO_BIN_EXE_tackle-peer-worker"), &[]),
        (env!("CARGO_BIN_EXE_floor-peer-worker"), &["json"]),
        (env!("CARGO_BIN_EXE_floor-peer-worker"), &["stream"]),
    ];
    for (binary, args) in workers {
        let fake = loop_fake().await;
        let mut worker = Command::new(binary);
        worker.args(args);
        let results = tokio::task::block_in_place(|| drive(&mut worker, &fake, &[3, 1]));
        for (result, n) in results.iter().zip([3, 1]) {
            assert_eq!(result["answer"], format!("done after {n} tool calls"), "{binary} {args:?}");
            assert!(result["ms"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(fake.stats().requests, 4 + 2, "{binary} {args:?}: N+1 requests per run");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn once_runs_one_loop_and_exits() {
    let fake = loop_fake().await;
    let out = tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_tackle-peer-worker"))
            .args(["--once", "2"])
            .env("FAKE_BASE", format!("{}/v1", fake.base_url()))
            .output()
            .unwrap()
    });
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("RESULT ") && stdout.contains("done after 2 tool calls"), "{stdout}");
    assert_eq!(fake.stats().requests, 3);
}
