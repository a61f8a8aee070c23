//! The real `codex app-server` (npm `@openai/codex`, pinned) against the testkit's fake
//! Responses server: dynamic tools reach the model, parallel calls come out as one batch,
//! answers reach the model as function_call_output, Codex's own tools stay off.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tackle_codex::wire::{DynamicToolCallResponse, DynamicToolSpec, UserInput};
use tackle_codex::{Answer, CodexServer, DenyNativeTools, ThreadOptions, TurnEnd, TurnEvent};
use tackle_protocol::Usage;
use tackle_testkit::{FakeModel, Script, Turn};

fn lookup() -> DynamicToolSpec {
    DynamicToolSpec::Function {
        name: "lookup".into(),
        description: "Look a ticket up by id.".into(),
        input_schema: json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
    }
}

#[tokio::test]
async fn parallel_dynamic_tool_calls_round_trip_through_the_real_binary() {
    let Some(binary) = common::codex_binary() else {
        return common::missing_peer("codex (npm @openai/codex)");
    };
    let usage =
        |i, c, o| Usage { input_tokens: i, output_tokens: o, cache_read_tokens: c, ..Usage::default() };
    let fake = FakeModel::start(Script::new(vec![
        Turn::default()
            .with_call_id("call-a", "lookup", r#"{"id":"A-1"}"#)
            .with_call_id("call-b", "lookup", r#"{"id":"B-2"}"#)
            .with_usage(usage(120, 40, 9)),
        Turn::text("A-1 is open, B-2 is closed.").with_usage(usage(200, 120, 11)),
    ]))
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    common::codex_home(home.path(), &fake.base_url());
    let server = CodexServer::new(common::config(&binary, home.path()));
    let mut thread = server
        .start_thread(ThreadOptions {
            model: Some("mock-model".into()),
            cwd: Some(home.path().to_owned()),
            instructions: Some("You are a test.".into()),
            tools: vec![lookup()],
            ephemeral: true,
            approvals: Arc::new(DenyNativeTools),
        })
        .await
        .unwrap();
    thread.start_turn(vec![UserInput::text("look up A-1 and B-2")]).await.unwrap();

    let mut text = String::new();
    let mut usages = Vec::new();
    let mut batches = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(60), thread.next_event()).await.unwrap().unwrap() {
            TurnEvent::TextDelta(t) => text.push_str(&t),
            TurnEvent::Usage(u) => usages.push(u),
            TurnEvent::ToolCalls(calls) => {
                batches.push(calls.iter().map(|c| c.call_id.to_string()).collect::<Vec<_>>());
                // Answer in reverse order: Codex matches answers by request, not by order.
                for call in calls.iter().rev() {
                    let id = call.arguments["id"].as_str().unwrap();
                    let result = DynamicToolCallResponse::text(format!("ticket {id}: fine"), true);
                    assert_eq!(thread.answer(&call.call_id, result).unwrap(), Answer::Delivered);
                }
            }
            TurnEvent::Ended(end) => {
                assert_eq!(end, TurnEnd::Completed);
                break;
            }
            TurnEvent::ReasoningDelta(_) => {}
        }
    }
    assert_eq!(batches, [vec!["call-a".to_owned(), "call-b".to_owned()]], "one batch of both calls");
    assert_eq!(text, "A-1 is open, B-2 is closed.");
    assert_eq!(usages, [usage(120, 40, 9), usage(200, 120, 11)], "cached input tokens per response");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"lookup"), "{tools:?}");
    for builtin in ["exec_command", "shell", "apply_patch", "web_search", "write_stdin"] {
        assert!(!tools.contains(&builtin), "Codex's own {builtin} is off: {tools:?}");
    }
    let lookup_def =
        requests[0].body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "lookup").unwrap();
    assert_eq!(lookup_def["parameters"]["required"], json!(["id"]));
    let outputs: Vec<(String, String)> = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| (i["call_id"].as_str().unwrap().to_owned(), output_text(&i["output"])))
        .collect();
    assert_eq!(
        outputs,
        [
            ("call-a".to_owned(), "ticket A-1: fine".to_owned()),
            ("call-b".to_owned(), "ticket B-2: fine".to_owned())
        ]
    );
    let developer = requests[0].body["input"][0].to_string();
    assert!(developer.contains("You are a test."), "baseInstructions replace Codex's prompt: {developer}");
}

fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
