//! `tackle run --provider codex`: the real binary drives the real `codex app-server` (npm
//! `@openai/codex`, pinned), which talks to the testkit's fake Responses server. Tackle's
//! builtins are Codex's tools; the session resumes its Codex thread.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

fn missing_peer(what: &str) {
    assert!(
        std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(),
        "{what} is not installed: run scripts/test-deps.sh"
    );
    eprintln!("skipped: {what} is not installed (run scripts/test-deps.sh)");
}

/// `tackle` with a clean environment and Codex configured through `TACKLE_CODEX_*`.
fn tackle(home: &Path, codex: &Path, codex_home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("TACKLE_CODEX_COMMAND", codex)
        .env("TACKLE_CODEX_ARGS", tackle_testkit::codex::APP_SERVER_ARGS.join(","))
        .env("TACKLE_CODEX_HOME", codex_home)
        .stdin(Stdio::null());
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test]
async fn tackle_run_with_codex_completes_a_multi_step_task_with_tackles_builtins() {
    let Some(codex) = tackle_testkit::codex::binary() else {
        return missing_peer("codex (npm @openai/codex)");
    };
    let fake = FakeModel::start(Script::new(vec![
        Turn::text("Writing it.").with_call_id(
            "call-w",
            "write_file",
            r#"{"path":"todo.md","content":"- ship\n"}"#,
        ),
        Turn::default().with_call_id("call-s", "shell", r#"{"command":"wc -l todo.md"}"#).with_call_id(
            "call-r",
            "read_file",
            r#"{"path":"todo.md"}"#,
        ),
        Turn::text("todo.md has one line: - ship"),
        Turn::text("Yes, still one line."),
    ]))
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let codex_home = tempfile::tempdir().unwrap();
    tackle_testkit::codex::write_home(codex_home.path(), &fake.base_url()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let events = home.path().join("events.jsonl");

    let mut cmd = tackle(home.path(), &codex, codex_home.path());
    cmd.args([
        "run",
        "write todo.md and check it",
        "--provider",
        "codex",
        "--model",
        "mock-model",
        "--yes",
        "--json",
    ])
    .arg("--workspace")
    .arg(ws.path())
    .arg("--events")
    .arg(&events);
    let out = output(cmd).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["end"], "completed", "{outcome}");
    assert_eq!(outcome["text"], "todo.md has one line: - ship");
    assert_eq!(outcome["steps"], 3);
    assert_eq!(std::fs::read_to_string(ws.path().join("todo.md")).unwrap(), "- ship\n");

    // The calls ran through Tackle's executor (its events) and Codex got their results.
    let lines: Vec<Value> =
        std::fs::read_to_string(&events).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let started = lines.iter().find(|e| e["type"] == "session_started").unwrap();
    assert_eq!(started["provider"], "codex");
    let mut results: Vec<&str> =
        lines.iter().filter(|e| e["type"] == "tool_result").map(|e| e["id"].as_str().unwrap()).collect();
    results.sort_unstable();
    assert_eq!(results, ["call-r", "call-s", "call-w"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    for name in ["read_file", "write_file", "edit_file", "list_files", "shell", "todo"] {
        assert!(tools.contains(&name), "the fake saw Tackle's {name} as a dynamic tool: {tools:?}");
    }
    let outputs = requests[2].body["input"].to_string();
    assert!(outputs.contains("1 todo.md"), "the shell result reached the model: {outputs}");

    // Resuming the session continues the same Codex thread.
    let session = outcome["session_id"].as_str().unwrap();
    let mut cmd = tackle(home.path(), &codex, codex_home.path());
    cmd.args([
        "run",
        "still one line?",
        "--provider",
        "codex",
        "--model",
        "mock-model",
        "--json",
        "--session",
        session,
    ])
    .arg("--workspace")
    .arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["text"], "Yes, still one line.");
    let requests = fake.requests();
    assert_eq!(requests[3].body["prompt_cache_key"], requests[0].body["prompt_cache_key"], "the same thread");
    assert!(requests[3].body["input"].to_string().contains("write todo.md and check it"));
}

#[tokio::test]
async fn a_missing_codex_binary_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tackle(home.path(), Path::new("/nonexistent/codex"), home.path());
    cmd.args(["run", "hi", "--provider", "codex"]);
    let out = output(cmd).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("npm install -g @openai/codex"), "{stderr}");
}
