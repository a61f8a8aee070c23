//! The agent loop against the scripted fake model, in both wire formats.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{FORMATS, Harness};
use serde_json::{Value, json};
use tackle_agent::{TurnFailure, TurnInput};
use tackle_protocol::{AgentEvent, ContentBlock, ErrorCategory, ErrorCode, Role, ToolOutcome, TurnEnd};
use tackle_store::{BeginOutcome, MessageFilter, ToolCallFinish, ToolCallStatus};
use tackle_testkit::{Fault, Script, Turn};
use tokio_util::sync::CancellationToken;

fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

fn tool_choice(body: &Value) -> Value {
    body.get("tool_choice").cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_multi_step_run_writes_reads_and_answers() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::text("Writing.")
                .with_call("write_file", r#"{"path": "notes.md", "content": "alpha\nbeta\n"}"#),
            Turn::call("read_file", r#"{"path": "notes.md"}"#),
            Turn::text("The file has two lines."),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let outcome = session
            .run_turn(TurnInput::new("make notes"), &h.sink(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert_eq!(outcome.steps, 3);
        assert_eq!(outcome.text, "The file has two lines.");
        assert_eq!(std::fs::read_to_string(h.workspace.path().join("notes.md")).unwrap(), "alpha\nbeta\n");
        let names = h.event_names();
        assert_eq!(names.first(), Some(&"session_started"));
        assert_eq!(names.last(), Some(&"turn_finished"));
        assert_eq!(names.iter().filter(|n| **n == "step_finished").count(), 3);
        // Every message is stored, in order, and the read result reached the model.
        let stored = h.store.messages().load(session.id(), MessageFilter::default()).await.unwrap();
        let roles: Vec<Role> = stored.iter().map(|m| m.message.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::Tool, Role::Assistant]
        );
        let third = &h.fake.requests()[2].body;
        assert!(third.to_string().contains("alpha"), "{kind}");
        let calls = h.store.calls().list(session.id()).await.unwrap();
        assert_eq!(
            calls.iter().map(|c| c.status).collect::<Vec<_>>(),
            [ToolCallStatus::Ok, ToolCallStatus::Ok]
        );
    }
}

#[tokio::test]
async fn read_only_calls_of_a_step_run_concurrently() {
    for kind in FORMATS {
        // `meet` only returns when two calls overlap; run one after the other they would time out.
        let script =
            Script::new(vec![Turn::call("meet", "{}").with_call("meet", "{}"), Turn::text("both met")]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let outcome =
            session.run_turn(TurnInput::new("go"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed);
        let oks = h
            .events()
            .iter()
            .filter(|e| matches!(e, AgentEvent::ToolResult { outcome: ToolOutcome::Ok { .. }, .. }))
            .count();
        assert_eq!(oks, 2, "{kind}");
    }
}

#[tokio::test]
async fn the_last_step_keeps_the_tools_and_says_none() {
    for kind in FORMATS {
        let looping = (0..3)
            .map(|i| Turn::call("count", format!(r#"{{"label": "{i}"}}"#)))
            .chain([Turn::text("stopping here")]);
        let h = Harness::new(kind, Script::new(looping.collect())).await;
        let mut session = h.session().await;
        let mut input = TurnInput::new("count forever");
        input.max_steps = Some(3);
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::MaxSteps, "{kind}");
        let note = outcome.error.as_ref().unwrap();
        // The fake still calls a tool on the last step (tool choice `none`): answered, not run.
        assert!(matches!(note, TurnFailure::MaxSteps { limit: 3, calls_pending: true }), "{note:?}");
        assert!(note.to_string().contains("step limit (3)"));
        let requests = h.fake.requests();
        assert_eq!(requests.len(), 3);
        let tools: Vec<String> = requests.iter().map(|r| r.body["tools"].to_string()).collect();
        assert!(tools.windows(2).all(|w| w[0] == w[1]), "tool definitions never change");
        match kind {
            tackle_provider::ProviderKind::Openai | tackle_provider::ProviderKind::OpenaiResponses => {
                assert_eq!(tool_choice(&requests[0].body), Value::Null);
                assert_eq!(tool_choice(&requests[2].body), json!("none"));
            }
            tackle_provider::ProviderKind::Anthropic => {
                assert_eq!(tool_choice(&requests[2].body), json!({"type": "none"}));
            }
            tackle_provider::ProviderKind::Codex => unreachable!("FORMATS has the HTTP wire formats only"),
        }
        // The third model answer (a call despite `none`) must not run.
        assert_eq!(h.counter.load(Ordering::SeqCst), 2, "{kind}");
    }
}

#[tokio::test]
async fn misspelled_and_unknown_tools_are_repaired_or_explained() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("Read_File", r#"{"path": "a.txt"}"#),
            Turn::call("reed_fiel", r#"{"path": "a.txt"}"#),
            Turn::text("ok"),
        ]);
        let h = Harness::new(kind, script).await;
        std::fs::write(h.workspace.path().join("a.txt"), "content").unwrap();
        let mut session = h.session().await;
        session.run_turn(TurnInput::new("read"), &h.sink(), &CancellationToken::new()).await.unwrap();
        let events = h.events();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::Warning { code, .. } if code == "tool_name_repaired"))
        );
        let envelopes: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolResult { outcome: ToolOutcome::Error { envelope }, .. } => {
                    Some(envelope.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(envelopes.len(), 1, "{kind}: the repaired call succeeded");
        assert_eq!(envelopes[0].category, ErrorCategory::UnknownTool);
        assert!(
            envelopes[0].hint.as_deref().unwrap().contains("did you mean `read_file`"),
            "{:?}",
            envelopes[0]
        );
    }
}

#[tokio::test]
async fn repeated_identical_failures_get_a_reminder_then_stop_the_turn() {
    for kind in FORMATS {
        let same = || Turn::call("read_file", r#"{"path": "missing.txt"}"#);
        let h =
            Harness::new(kind, Script::new(vec![same(), same(), same(), Turn::text("never reached")])).await;
        let mut session = h.session().await;
        let outcome =
            session.run_turn(TurnInput::new("read it"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind}");
        let failure = outcome.error.as_ref().unwrap();
        assert!(matches!(failure, TurnFailure::LoopGuard(_)), "{outcome:?}");
        assert!(failure.to_string().contains("failed 3 times"), "{outcome:?}");
        assert_eq!(h.fake.requests().len(), 3);
        // The reminder sits at the tail of the third request, after the second failure.
        let third = h.fake.requests()[2].body.to_string();
        assert!(third.contains("has now failed 2 times"), "{kind}");
        assert!(h.events().iter().any(|e| matches!(e, AgentEvent::Error { code: ErrorCode::LoopGuard, .. })));
    }
}

#[tokio::test]
async fn the_model_learns_from_an_envelope_and_corrects_its_arguments() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("read_file", r#"{"path": 42}"#),
            Turn::text("I passed a number; retrying with a string.")
                .with_call("read_file", r#"{"path": "data.txt"}"#),
            Turn::text("It says 42."),
        ]);
        let h = Harness::new(kind, script).await;
        std::fs::write(h.workspace.path().join("data.txt"), "42").unwrap();
        let mut session = h.session().await;
        let outcome = session
            .run_turn(TurnInput::new("read data"), &h.sink(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed);
        let second = h.fake.requests()[1].body.to_string();
        assert!(
            second.contains("invalid_args") && second.contains("/path: expected string"),
            "{kind}: the model saw the envelope"
        );
        if kind == tackle_provider::ProviderKind::Anthropic {
            assert!(second.contains(r#""is_error":true"#));
        }
    }
}

#[tokio::test]
async fn cancellation_during_the_model_call_ends_the_turn() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("too late")])).await;
        h.fake.push_fault(Fault::Latency { ms: 5_000 });
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        let started = std::time::Instant::now();
        let outcome = session.run_turn(TurnInput::new("hi"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Cancelled, "{kind}");
        assert!(started.elapsed() < Duration::from_secs(4), "cancellation does not wait for the model");
        // The session is usable afterwards.
        let outcome =
            session.run_turn(TurnInput::new("again"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.text, "too late");
    }
}

#[tokio::test]
async fn cancellation_mid_stream_keeps_the_text_seen_so_far() {
    for kind in FORMATS {
        let long = "word ".repeat(200);
        let h = Harness::new(kind, Script::new(vec![Turn::text(long), Turn::text("next")])).await;
        h.fake.push_fault(Fault::Trickle { ms: 20 });
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let events = h.events.clone();
        tokio::spawn(async move {
            // Cancel once some text has streamed.
            loop {
                if events.lock().unwrap().iter().filter(|e| matches!(e, AgentEvent::TextDelta { .. })).count()
                    >= 3
                {
                    trigger.cancel();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        let outcome = session.run_turn(TurnInput::new("talk"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Cancelled, "{kind}");
        assert!(outcome.text.starts_with("word word"), "{kind}: {:?}", outcome.text);
        assert!(outcome.text.len() < 1000, "the stream was cut short");
        let last = session.history().last().unwrap().text();
        assert!(last.ends_with("[cancelled]"), "{kind}: partial text is kept: {last}");
        // The next turn's request is still valid for the provider.
        let outcome =
            session.run_turn(TurnInput::new("go on"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.text, "next", "{kind}");
    }
}

#[tokio::test]
async fn a_provider_failure_then_resume_does_not_rerun_finished_tools() {
    for kind in FORMATS {
        let script = Script::new(vec![Turn::call("count", "{}"), Turn::text("counted once")]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        // Step 2 fails: the first attempt and both retries get a 500.
        h.fake.push_fault(Fault::Pass);
        for _ in 0..3 {
            h.fake.push_fault(Fault::status(500));
        }
        let outcome =
            session.run_turn(TurnInput::new("count"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind}: {outcome:?}");
        assert_eq!(h.counter.load(Ordering::SeqCst), 1);

        // Resume from the store, as a new process would.
        let mut resumed = h.agent.open_session(session.id()).await.unwrap();
        assert_eq!(resumed.history().len(), session.history().len());
        let outcome =
            resumed.run_turn(TurnInput::new("go on"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.text, "counted once", "{kind}");
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind}: the finished call did not run again");
    }
}

#[tokio::test]
async fn a_call_that_finished_before_a_crash_is_answered_from_the_audit() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("resumed fine")])).await;
        let session = h.session().await;
        let sid = session.id().to_owned();
        // A previous process stored the call and ran it, then died before storing the result.
        h.store.messages().append(&sid, 1, &tackle_protocol::Message::user("count")).await.unwrap();
        let call = tackle_protocol::ToolUse {
            id: "call_crash".into(),
            name: "count".into(),
            input: json!({}).into(),
        };
        h.store
            .messages()
            .append(
                &sid,
                1,
                &tackle_protocol::Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse(call)],
                },
            )
            .await
            .unwrap();
        assert_eq!(
            h.store.calls().begin(&sid, "call_crash", "count", &json!({})).await.unwrap(),
            BeginOutcome::Started
        );
        let result = tackle_protocol::ToolResult::ok("call_crash", "count is 1 (from before the crash)");
        h.store
            .calls()
            .finish(
                &sid,
                "call_crash",
                ToolCallFinish {
                    status: ToolCallStatus::Ok,
                    result,
                    envelope: None,
                    bytes: 1,
                    truncated: false,
                    locator: None,
                    duration_ms: 1,
                },
            )
            .await
            .unwrap();
        drop(session);

        let mut resumed = h.agent.open_session(&sid).await.unwrap();
        let outcome =
            resumed.run_turn(TurnInput::new("continue"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert_eq!(h.counter.load(Ordering::SeqCst), 0, "the call was not run again");
        let sent = h.fake.requests()[0].body.to_string();
        assert!(sent.contains("from before the crash"), "{kind}: the recorded result was sent");
    }
}

#[tokio::test]
async fn an_interrupted_call_becomes_an_interrupted_result_on_resume() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("ok")])).await;
        let session = h.session().await;
        let sid = session.id().to_owned();
        h.store.messages().append(&sid, 1, &tackle_protocol::Message::user("go")).await.unwrap();
        let call = tackle_protocol::ToolUse {
            id: "call_lost".into(),
            name: "shell".into(),
            input: json!({"command": "make"}).into(),
        };
        h.store
            .messages()
            .append(
                &sid,
                1,
                &tackle_protocol::Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse(call)],
                },
            )
            .await
            .unwrap();
        h.store.calls().begin(&sid, "call_lost", "shell", &json!({"command": "make"})).await.unwrap();
        let mut resumed = h.agent.open_session(&sid).await.unwrap();
        resumed.run_turn(TurnInput::new("continue"), &h.sink(), &CancellationToken::new()).await.unwrap();
        let sent = h.fake.requests()[0].body.to_string();
        assert!(sent.contains("interrupted"), "{kind}");
        let record = h.store.calls().get(&sid, "call_lost").await.unwrap().unwrap();
        assert_eq!(record.status, ToolCallStatus::Interrupted);
    }
}

/// [conversation-valid] A stored history no provider would accept (here a result of a call
/// never made, as an import or an older version may leave) is repaired before the request, and
/// the repair is reported, never silent.
#[tokio::test]
async fn an_invalid_stored_history_is_repaired_and_reported() {
    for kind in FORMATS {
        let h = Harness::new(kind, Script::new(vec![Turn::text("ok")])).await;
        let session = h.session().await;
        let sid = session.id().to_owned();
        h.store.messages().append(&sid, 1, &tackle_protocol::Message::user("hello")).await.unwrap();
        h.store.messages().append(&sid, 1, &tackle_protocol::Message::assistant("hi")).await.unwrap();
        let orphan = tackle_protocol::ToolResult::ok("call_ghost", "from nowhere");
        h.store.messages().append(&sid, 1, &tackle_protocol::Message::tool_results([orphan])).await.unwrap();
        let mut resumed = h.agent.open_session(&sid).await.unwrap();
        let outcome =
            resumed.run_turn(TurnInput::new("continue"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        let sent = h.fake.requests()[0].body.to_string();
        assert!(!sent.contains("from nowhere") && sent.contains("continue"), "{kind}: {sent}");
        let warnings: Vec<String> = h
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Warning { code, message } if code == "history_repaired" => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(warnings.len(), 1, "{kind}: {warnings:?}");
        assert!(
            warnings[0].contains("dropped the result of unknown call call_ghost"),
            "{kind}: {warnings:?}"
        );
    }
}

#[tokio::test]
async fn todo_items_are_recited_at_the_tail_only_when_they_change() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("todo", r#"{"action": "add", "text": "write tests"}"#),
            Turn::call("count", "{}"),
            Turn::call("todo", r#"{"action": "complete", "id": 1}"#),
            Turn::text("done"),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        session.run_turn(TurnInput::new("plan"), &h.sink(), &CancellationToken::new()).await.unwrap();
        let notes: Vec<String> = session
            .history()
            .iter()
            .map(|m| m.text())
            .filter(|t| t.starts_with("[runtime note] Current state:"))
            .collect();
        assert_eq!(notes.len(), 2, "{kind}: {notes:#?}");
        assert!(notes[0].contains("1. write tests"));
        // Requests only ever grow at the end: each one starts with the previous one's messages
        // (cache_control markers aside: they only steer caching and move with the tail).
        let requests = h.fake.requests();
        for w in requests.windows(2) {
            let a = canonical_json(&without_cache_control(common::conversation(&w[0].body)));
            let b = canonical_json(&without_cache_control(common::conversation(&w[1].body)));
            assert!(b.starts_with(&a[..a.len() - 1]), "{kind}: history was edited, not appended\n{a}\n{b}");
        }
        // The list survives a resume.
        let resumed = h.agent.open_session(session.id()).await.unwrap();
        assert_eq!(h.store.todos().list(resumed.id(), 0, 10).await.unwrap().total_count, 1);
    }
}

#[tokio::test]
async fn a_mid_stream_failure_retries_the_step_once() {
    for kind in FORMATS {
        let h =
            Harness::new(kind, Script::stateless(vec![Turn::text("a long answer that streams in pieces")]))
                .await;
        h.fake.push_fault(Fault::CutAfter { events: 3 });
        let mut session = h.session().await;
        let outcome =
            session.run_turn(TurnInput::new("hi"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed, "{kind}: {outcome:?}");
        assert!(h.events().iter().any(|e| matches!(e, AgentEvent::Retry { .. })));
        assert_eq!(h.fake.requests().len(), 2);
    }
}

/// JSON with object keys sorted, to compare values whatever their key order.
fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// An answer the provider cut off (Responses `incomplete`, Chat `length`, Anthropic
/// `max_tokens`) does not end the turn `completed`: it fails saying why, and what was said stays.
#[tokio::test]
async fn an_answer_cut_off_by_the_output_limit_does_not_end_completed() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::text("The first half of an answ").with_stop(tackle_protocol::StopReason::MaxTokens),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let outcome =
            session.run_turn(TurnInput::new("explain"), &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Failed, "{kind}: {outcome:?}");
        assert_eq!(outcome.text, "The first half of an answ", "{kind}");
        let failure = outcome.error.unwrap();
        assert_eq!(failure.code(), ErrorCode::OutputTruncated, "{kind}");
        let error = failure.to_string();
        assert!(error.contains("cut off") && error.contains("max_tokens"), "{kind}: {error}");
        let finished = h.events().into_iter().find_map(|e| match e {
            AgentEvent::TurnFinished { reason, .. } => Some(reason),
            _ => None,
        });
        assert_eq!(finished, Some(TurnEnd::Failed), "{kind}");
        assert_eq!(
            session.history().last().map(|m| m.text()),
            Some("The first half of an answ".into()),
            "{kind}"
        );
    }
}
