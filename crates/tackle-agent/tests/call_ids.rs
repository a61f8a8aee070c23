//! A model (or a proxy in front of it) that reuses tool-call ids: every call still runs exactly
//! once, and every later request stays provider-valid, in both wire formats.

use crate::common;

use std::collections::HashSet;

use common::{FORMATS, Harness};
use serde_json::Value;
use tackle_agent::TurnInput;
use tackle_protocol::AgentEvent;
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn};
use tokio_util::sync::CancellationToken;

/// A shell call that appends `word` to `runs.txt`: its side effect is counted on disk.
fn append(word: &str) -> String {
    format!(r#"{{"command": "echo {word} >> runs.txt"}}"#)
}

/// Every (tool use id, tool result id) of a recorded request body.
fn ids(kind: ProviderKind, body: &Value) -> (Vec<String>, Vec<String>) {
    let (mut uses, mut results) = (Vec::new(), Vec::new());
    if kind == ProviderKind::OpenaiResponses {
        for item in body["input"].as_array().unwrap() {
            let id = || item["call_id"].as_str().unwrap().to_owned();
            match item["type"].as_str() {
                Some("function_call") => uses.push(id()),
                Some("function_call_output") => results.push(id()),
                _ => {}
            }
        }
        return (uses, results);
    }
    for m in body["messages"].as_array().unwrap() {
        match kind {
            ProviderKind::Openai => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    uses.push(c["id"].as_str().unwrap().to_owned());
                }
                if m["role"] == "tool" {
                    results.push(m["tool_call_id"].as_str().unwrap().to_owned());
                }
            }
            _ => {
                for b in m["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str() {
                        Some("tool_use") => uses.push(b["id"].as_str().unwrap().to_owned()),
                        Some("tool_result") => results.push(b["tool_use_id"].as_str().unwrap().to_owned()),
                        _ => {}
                    }
                }
            }
        }
    }
    (uses, results)
}

#[tokio::test]
async fn reused_ids_across_steps_and_within_a_message_each_run_once() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::default().with_call_id("call_same", "shell", append("a")),
            // The same id again in the next step.
            Turn::default().with_call_id("call_same", "shell", append("b")),
            // Two calls with one id in one message, one of them the old id again.
            Turn::default().with_call_id("call_same", "shell", append("c")).with_call_id(
                "call_same",
                "shell",
                append("d"),
            ),
            Turn::text("done"),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let outcome = session
            .run_turn(TurnInput::new("append four words"), &h.sink(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.text, "done", "{kind}: {outcome:?}");

        let runs = std::fs::read_to_string(h.workspace.path().join("runs.txt")).unwrap();
        assert_eq!(runs, "a\nb\nc\nd\n", "{kind}: every call ran once, in order");

        // The last request carries all four calls with distinct ids, each answered once.
        let requests = h.fake.requests();
        let (uses, results) = ids(kind, &requests.last().unwrap().body);
        assert_eq!(uses.len(), 4, "{kind}: no tool use vanished: {uses:?}");
        assert_eq!(uses.iter().collect::<HashSet<_>>().len(), 4, "{kind}: ids are unique: {uses:?}");
        assert_eq!(uses, results, "{kind}: each use is answered by its own result");
        assert_eq!(uses[0], "call_same", "{kind}: the first use keeps the model's id");

        let reused = h
            .events()
            .iter()
            .filter(|e| matches!(e, AgentEvent::Warning { code, .. } if *code == "tool_call_id_reused"))
            .count();
        assert_eq!(reused, 3, "{kind}: each reuse is reported");

        // Resumed, the history is still provider-valid and nothing runs again.
        let resumed = h.agent.open_session(session.id()).await.unwrap();
        assert_eq!(resumed.history(), session.history());
        assert!(tackle_agent::conversation::is_valid(resumed.history()));
        assert_eq!(std::fs::read_to_string(h.workspace.path().join("runs.txt")).unwrap(), runs);
    }
}

#[tokio::test]
async fn an_id_reused_in_a_later_turn_runs_the_new_call() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::default().with_call_id("toolu_1", "shell", append("first")),
            Turn::text("one"),
            Turn::default().with_call_id("toolu_1", "shell", append("second")),
            Turn::text("two"),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        session.run_turn(TurnInput::new("first"), &h.sink(), &cancel).await.unwrap();
        let mut resumed = h.agent.open_session(session.id()).await.unwrap();
        let outcome = resumed.run_turn(TurnInput::new("second"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(outcome.text, "two");
        let runs = std::fs::read_to_string(h.workspace.path().join("runs.txt")).unwrap();
        assert_eq!(runs, "first\nsecond\n", "{kind}: the reused id did not return the old result");
    }
}

#[tokio::test]
async fn an_id_reused_after_compaction_runs_the_new_call() {
    let kind = ProviderKind::Openai;
    let script = Script::new(vec![
        Turn::default().with_call_id("call_x", "shell", append("before")),
        Turn::text("one"),
        Turn::text("two"),
        // The summary of turns one and two.
        Turn::text("Goal: append words. Files touched: runs.txt."),
        Turn::default().with_call_id("call_x", "shell", append("after")),
        Turn::text("three"),
    ]);
    let h = Harness::new(kind, script).await;
    let mut session = h.session().await;
    let cancel = CancellationToken::new();
    session.run_turn(TurnInput::new("first"), &h.sink(), &cancel).await.unwrap();
    session.run_turn(TurnInput::new("second"), &h.sink(), &cancel).await.unwrap();
    let report = session.compact_now(&h.sink()).await.unwrap();
    assert!(report.strategies.iter().any(|s| s == "summarize"), "{report:?}");
    assert!(
        !session.history().iter().any(|m| m.tool_uses().any(|u| u.id == "call_x")),
        "the first call left the history the model sees"
    );
    session.run_turn(TurnInput::new("third"), &h.sink(), &cancel).await.unwrap();
    let runs = std::fs::read_to_string(h.workspace.path().join("runs.txt")).unwrap();
    assert_eq!(runs, "before\nafter\n", "the audit, not the history, knew the id was taken");
}
