//! Dynamic tools without cache breaks: masks, provider strategies, skills, the kill switch.

use crate::common;

use std::sync::atomic::Ordering;

use common::{FORMATS, Harness, write_skill};
use serde_json::{Value, json};
use tackle_agent::{ToolMask, TurnInput};
use tackle_protocol::{AgentEvent, ErrorCategory, StepMetrics, ToolOutcome, TurnEnd};
use tackle_provider::ProviderKind;
use tackle_testkit::{Script, Turn};
use tokio_util::sync::CancellationToken;

fn mask(entries: &[(&str, bool)]) -> Option<ToolMask> {
    Some(ToolMask::new(entries.iter().map(|(n, b)| (n.to_string(), *b))))
}

fn envelopes(h: &Harness) -> Vec<tackle_protocol::ToolError> {
    h.events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { outcome: ToolOutcome::Error { envelope }, .. } => Some(envelope),
            _ => None,
        })
        .collect()
}

fn metrics(h: &Harness) -> Vec<StepMetrics> {
    h.events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::StepFinished { metrics, .. } => metrics,
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn tool_definitions_are_byte_identical_across_steps_and_masks() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("count", "{}"),
            Turn::text("one"),
            Turn::call("count", "{}"),
            Turn::text("two"),
        ]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        session.run_turn(TurnInput::new("a"), &h.sink(), &cancel).await.unwrap();
        session
            .run_turn(
                TurnInput::new("b").with_mask(mask(&[("shell", false), ("web_fetch", false)])),
                &h.sink(),
                &cancel,
            )
            .await
            .unwrap();
        let tools: Vec<Vec<u8>> = h
            .fake
            .requests()
            .iter()
            .map(|r| {
                // The exact bytes of the tools array as sent.
                let raw = String::from_utf8(r.raw_body.to_vec()).unwrap();
                let start = raw.find("\"tools\":").unwrap();
                let v: Value = serde_json::from_str(&raw).unwrap();
                let len = serde_json::to_string(&v["tools"]).unwrap().len();
                raw.as_bytes()[start..start + 8 + len].to_vec()
            })
            .collect();
        assert_eq!(tools.len(), 4);
        assert!(tools.windows(2).all(|w| w[0] == w[1]), "{kind}: tools bytes changed");
        let names: Vec<String> = serde_json::from_slice::<Value>(&tools[0][8..])
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t.get("name").or_else(|| t["function"].get("name")).unwrap().as_str().unwrap().to_owned()
            })
            .collect();
        insta::assert_json_snapshot!(format!("catalog_order_{kind}"), names);
        // Every step after the first shares the whole previous request.
        for m in metrics(&h).iter().skip(1) {
            assert_eq!((m.prefix_ratio, m.cache_break.clone()), (Some(1.0), None), "{kind}");
        }
    }
}

#[tokio::test]
async fn openai_carries_allowed_tools_only_when_masked() {
    let script = Script::new(vec![Turn::text("unmasked"), Turn::text("masked")]);
    let h = Harness::new(ProviderKind::Openai, script).await;
    let mut session = h.session().await;
    let cancel = CancellationToken::new();
    session.run_turn(TurnInput::new("a"), &h.sink(), &cancel).await.unwrap();
    session
        .run_turn(
            TurnInput::new("b").with_mask(mask(&[("read_file", true), ("list_files", true)])),
            &h.sink(),
            &cancel,
        )
        .await
        .unwrap();
    let requests = h.fake.requests();
    assert!(requests[0].body.get("tool_choice").is_none());
    assert_eq!(
        requests[1].body["tool_choice"],
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
            {"type": "function", "function": {"name": "read_file"}},
            {"type": "function", "function": {"name": "list_files"}}]}})
    );
    let resolved: Vec<String> = h
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolsResolved { strategy, .. } => Some(strategy.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(resolved, ["all", "allowed_tools"]);
}

#[tokio::test]
async fn a_call_to_an_inactive_tool_is_refused_with_the_active_list() {
    for kind in FORMATS {
        let script = Script::new(vec![Turn::call("count", "{}"), Turn::text("understood")]);
        let h = Harness::new(kind, script).await;
        let mut session = h.session().await;
        let input = TurnInput::new("count").with_mask(mask(&[("count", false), ("no_such_tool", false)]));
        let outcome = session.run_turn(input, &h.sink(), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.end, TurnEnd::Completed);
        assert_eq!(h.counter.load(Ordering::SeqCst), 0, "{kind}: the masked tool did not run");
        let e = &envelopes(&h)[0];
        assert_eq!(e.category, ErrorCategory::InactiveTool);
        assert!(e.hint.as_deref().unwrap().contains("read_file"), "{e:?}");
        assert!(h.events().iter().any(|e| matches!(e, AgentEvent::Warning { code, message } if code == "unknown_tool_in_mask" && message.contains("no_such_tool"))));
        let first = h.fake.requests()[0].body.to_string();
        match kind {
            ProviderKind::Anthropic => {
                assert!(
                    first.contains("Tools available in this step"),
                    "the tail note states the active set"
                );
                assert_eq!(h.fake.requests()[0].body["tool_choice"], json!({"type": "auto"}));
            }
            ProviderKind::Openai | ProviderKind::OpenaiResponses => {
                assert!(!first.contains("Tools available in this step"), "OpenAI enforces natively")
            }
            ProviderKind::Codex => unreachable!("FORMATS has the HTTP wire formats only"),
        }
    }
}

#[tokio::test]
async fn compatible_servers_fall_back_to_the_tail_note_with_a_warning() {
    let script = Script::new(vec![Turn::text("ok")]);
    let h = Harness::new(ProviderKind::Openai, script).await;
    // Same fake, but spoken to as an OpenAI-compatible server without allowed_tools.
    let config = tackle_provider::ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", h.fake.base_url()));
    let provider =
        tackle_provider::OpenAiChat::with_dialect(config, tackle_provider::OpenAiDialect::Compatible)
            .unwrap();
    let agent = tackle_agent::Agent::builder(provider)
        .config(h.agent.config().clone())
        .store(h.store.clone())
        .workspace(h.workspace.path())
        .build()
        .await
        .unwrap();
    let mut session = agent
        .create_session(tackle_agent::NewSessionOptions {
            workspace: h.workspace.path().to_owned(),
            ..Default::default()
        })
        .await
        .unwrap();
    session
        .run_turn(
            TurnInput::new("hi").with_mask(mask(&[("shell", false)])),
            &h.sink(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let body = &h.fake.requests()[0].body;
    assert!(body.get("tool_choice").is_none(), "no allowed_tools sent to a compatible server");
    assert!(body.to_string().contains("Tools available in this step"));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { code, .. } if code == "strategy_fallback"))
    );
}

#[tokio::test]
async fn skills_unlock_tools_evict_fifo_and_persist_across_resume() {
    for kind in FORMATS {
        let script = Script::new(vec![
            Turn::call("count", "{}"),
            Turn::call("activate_skill", r#"{"name": "counting"}"#),
            Turn::call("count", "{}"),
            Turn::text("counted"),
            Turn::call("activate_skill", r#"{"name": "a"}"#).with_call("activate_skill", r#"{"name": "b"}"#),
            Turn::call("activate_skill", r#"{"name": "c"}"#),
            Turn::call("count", "{}"),
            Turn::text("evicted"),
            Turn::call("activate_skill", r#"{"name": "nope"}"#),
            Turn::text("resumed"),
        ]);
        let h = Harness::with_workspace(
            kind,
            script,
            |c| c,
            |ws| {
                write_skill(ws, "counting", &["count"]);
                for s in ["a", "b", "c"] {
                    write_skill(ws, s, &[]);
                }
            },
        )
        .await;
        let mut session = h.session().await;
        let cancel = CancellationToken::new();
        let first = h.fake.requests();
        assert!(first.is_empty());
        session.run_turn(TurnInput::new("count please"), &h.sink(), &cancel).await.unwrap();
        // Before activation `count` is refused; after it, it runs.
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind}");
        assert_eq!(envelopes(&h)[0].category, ErrorCategory::InactiveTool);
        let sys = h.fake.requests()[0].body.to_string();
        assert!(sys.contains("counting: The counting skill."), "skills listed in the system prompt");
        let activation = h.fake.requests()[2].body.to_string();
        assert!(activation.contains("Instructions of counting"), "{kind}: instructions returned");

        session.run_turn(TurnInput::new("more skills"), &h.sink(), &cancel).await.unwrap();
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind}: counting was evicted by the fourth skill");
        let active: Vec<String> = session.active_skills().await.unwrap();
        assert_eq!(active, ["a", "b", "c"]);

        let mut resumed = h.agent.open_session(session.id()).await.unwrap();
        resumed.run_turn(TurnInput::new("unknown skill"), &h.sink(), &cancel).await.unwrap();
        let e = envelopes(&h).last().unwrap().clone();
        assert_eq!(e.category, ErrorCategory::NotFound);
        assert!(e.hint.unwrap().contains("a, b, c, counting"));
        let tools = resumed.step_tools(None, false).await.unwrap();
        assert!(!tools.active.contains(&"count".to_string()), "{kind}: active skills survive resume");
        // Prefix stayed intact through activations and evictions.
        for m in metrics(&h).iter().skip(1) {
            assert_eq!(m.cache_break, None, "{kind}");
        }
    }
}

#[tokio::test]
async fn the_kill_switch_ignores_masks_and_skills() {
    for kind in FORMATS {
        let script = Script::new(vec![Turn::call("count", "{}"), Turn::text("done")]);
        let h = Harness::with_workspace(
            kind,
            script,
            |mut c| {
                c.dynamic_tools = false;
                c
            },
            |ws| write_skill(ws, "counting", &["count"]),
        )
        .await;
        let mut session = h.session().await;
        session
            .run_turn(
                TurnInput::new("go").with_mask(mask(&[("count", false)])),
                &h.sink(),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(h.counter.load(Ordering::SeqCst), 1, "{kind}: everything is active");
        assert!(h.fake.requests()[0].body.get("tool_choice").is_none_or(|c| c == &json!({"type": "auto"})));
    }
}
