//! Protocol failures of an app-server process end in typed errors, never a hang: a malformed
//! line, a request no client knows, the process exiting mid-turn, a turn that goes silent.
//! The peer is `examples/fake_app_server.rs`, a scripted process speaking the same JSON lines.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tackle_codex::wire::{DynamicToolCallResponse, DynamicToolSpec, UserInput};
use tackle_codex::{
    Answer, CodexConfig, CodexError, CodexServer, CodexThread, DenyNativeTools, ThreadOptions, TurnEnd,
    TurnEvent,
};

/// Bounds every wait of these tests: a hang fails instead of stalling the suite.
const LIMIT: Duration = Duration::from_secs(20);

fn server(scenario: &str, log: &Path, idle_secs: u64) -> CodexServer {
    let binary = tackle_testkit::example_binary("tackle-codex", "fake_app_server").unwrap();
    // The fake reads its scenario from the environment; the child gets it through a wrapper
    // command line (Tackle passes the parent's environment minus secrets).
    let config = CodexConfig {
        command: "/usr/bin/env".into(),
        args: vec![
            format!("FAKE_CODEX_SCENARIO={scenario}"),
            format!("FAKE_CODEX_LOG={}", log.display()),
            binary.display().to_string(),
        ],
        request_timeout_secs: 10,
        idle_timeout_secs: idle_secs,
        ..CodexConfig::default()
    };
    CodexServer::new(config)
}

fn options() -> ThreadOptions {
    ThreadOptions {
        model: None,
        cwd: None,
        instructions: None,
        tools: vec![DynamicToolSpec::Function {
            name: "echo".into(),
            description: "Echo.".into(),
            input_schema: json!({"type": "object"}),
        }],
        ephemeral: true,
        approvals: Arc::new(DenyNativeTools),
    }
}

/// A thread with a turn started.
async fn started(server: &CodexServer) -> CodexThread {
    let mut thread = server.start_thread(options()).await.unwrap();
    thread.start_turn(vec![UserInput::text("go")]).await.unwrap();
    thread
}

/// Runs the turn to its end (or error), collecting text.
async fn drain(thread: &mut CodexThread) -> (String, Result<TurnEnd, CodexError>) {
    let mut text = String::new();
    loop {
        match tokio::time::timeout(LIMIT, thread.next_event()).await.expect("the turn hung") {
            Ok(TurnEvent::TextDelta(t)) => text.push_str(&t),
            Ok(TurnEvent::Ended(end)) => return (text, Ok(end)),
            Ok(TurnEvent::ToolCalls(calls)) => {
                for call in calls {
                    let said = call.arguments["text"].as_str().unwrap_or_default().to_uppercase();
                    let answer =
                        thread.answer(&call.call_id, DynamicToolCallResponse::text(said, true)).unwrap();
                    assert_eq!(answer, Answer::Delivered);
                }
            }
            Ok(_) => {}
            Err(e) => return (text, Err(e)),
        }
    }
}

fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn a_tool_call_round_trip_works_with_the_scripted_peer() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let server = server("tool_call", &log, 20);
    let mut thread = started(&server).await;
    let (text, end) = drain(&mut thread).await;
    assert_eq!((text.as_str(), end), ("tool said: HI", Ok(TurnEnd::Completed)));
    let lines = logged(&log);
    assert_eq!(lines[0]["method"], "initialize");
    assert_eq!(lines[0]["params"]["capabilities"]["experimentalApi"], true);
    assert_eq!(lines[1]["method"], "initialized");
}

#[tokio::test]
async fn a_malformed_line_ends_the_turn_with_a_typed_error_and_the_next_use_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let server = server("malformed", &log, 20);
    let mut thread = started(&server).await;
    let (text, end) = drain(&mut thread).await;
    assert_eq!(text, "partial");
    let err = end.unwrap_err();
    assert!(
        matches!(&err, CodexError::Malformed { excerpt, .. } if excerpt.contains("this is not json")),
        "{err:?}"
    );
    assert!(!thread.is_connected());
    // A new process serves the next thread.
    let mut again = server.start_thread(options()).await.unwrap();
    assert!(again.is_connected());
    again.start_turn(vec![UserInput::text("go")]).await.unwrap();
    let inits = logged(&log).iter().filter(|l| l["method"] == "initialize").count();
    assert_eq!(inits, 2, "a second process was started and initialized");
}

#[tokio::test]
async fn an_unknown_request_is_answered_with_an_error_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let server = server("unknown_request", &log, 20);
    let mut thread = started(&server).await;
    let (text, end) = drain(&mut thread).await;
    assert_eq!((text.as_str(), end), ("answered with error -32601", Ok(TurnEnd::Completed)));
}

#[tokio::test]
async fn an_unknown_method_of_ours_is_a_typed_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let server = server("text", &dir.path().join("log"), 20);
    // The fake, like Codex, answers unknown methods with -32600 "Invalid request: unknown variant".
    let err = server.request("thread/definitelyNot", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, CodexError::Rejected { code: -32600, message, .. } if message.contains("unknown variant")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_process_exiting_mid_turn_is_a_typed_error_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let server = server("exit_mid_turn", &dir.path().join("log"), 20);
    let mut thread = started(&server).await;
    let (text, end) = drain(&mut thread).await;
    assert_eq!(text, "half an ans");
    let err = end.unwrap_err();
    match &err {
        CodexError::Exited { status, stderr } => {
            assert!(status.contains('3'), "{status}");
            assert!(stderr.contains("exiting mid-turn"), "{stderr}");
        }
        other => panic!("expected Exited, got {other:?}"),
    }
    assert!(tackle_provider::ProviderError::from(err).is_retryable());
}

#[tokio::test]
async fn a_silent_turn_fails_after_the_idle_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = server("silent", &dir.path().join("log"), 1);
    let mut thread = started(&server).await;
    let (_, end) = drain(&mut thread).await;
    assert_eq!(end.unwrap_err(), CodexError::Idle { secs: 1 });
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_spawn_error_that_says_what_to_do() {
    let server =
        CodexServer::new(CodexConfig { command: "/nonexistent/codex".into(), ..CodexConfig::default() });
    let err = server.start_thread(options()).await.unwrap_err();
    assert!(matches!(err, CodexError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("npm install -g @openai/codex"), "{err}");
}
