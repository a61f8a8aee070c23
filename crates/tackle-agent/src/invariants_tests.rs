use proptest::prelude::*;
use serde_json::json;
use tackle_protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};

use super::*;

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse { id: id.into(), name: "t".into(), input: json!({}).into() })
}

fn assistant_calls(ids: &[&str]) -> Message {
    Message { role: Role::Assistant, content: ids.iter().map(|i| call(i)).collect() }
}

fn results(ids: &[&str]) -> Message {
    Message::tool_results(ids.iter().map(|i| ToolResult::ok(*i, "ok")))
}

#[test]
fn a_valid_conversation_is_unchanged() {
    let msgs = vec![
        Message::user("hi"),
        assistant_calls(&["a", "b"]),
        results(&["a", "b"]),
        Message::assistant("done"),
    ];
    let (out, repairs) = enforce(&msgs);
    assert!(repairs.is_empty(), "{repairs:?}");
    assert_eq!(out, msgs);
}

#[test]
fn missing_results_become_interrupted_errors() {
    let msgs =
        vec![Message::user("hi"), assistant_calls(&["a", "b"]), results(&["a"]), Message::user("next")];
    let (out, repairs) = enforce(&msgs);
    assert_eq!(repairs, vec![Repair::MissingResult { call_id: "b".into() }]);
    let r: Vec<_> = out[2].tool_results_iter().collect();
    assert_eq!(r.len(), 2);
    assert!(r[1].is_error && r[1].content.contains("interrupted"));
    assert_eq!(out[3].role, Role::User);
}

#[test]
fn a_trailing_unanswered_call_is_closed() {
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"])];
    let (out, _) = enforce(&msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2].role, Role::Tool);
}

#[test]
fn orphan_and_duplicate_results_are_dropped() {
    let msgs = vec![
        Message::user("hi"),
        assistant_calls(&["a"]),
        Message::tool_results([
            ToolResult::ok("a", "1"),
            ToolResult::ok("zzz", "2"),
            ToolResult::ok("a", "3"),
        ]),
        results(&["a"]),
    ];
    let (out, repairs) = enforce(&msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2].content.len(), 1);
    assert_eq!(repairs.iter().filter(|r| matches!(r, Repair::OrphanResult { .. })).count(), 3);
}

#[test]
fn empty_messages_and_leading_assistant_are_fixed() {
    let msgs =
        vec![Message::assistant("hello"), Message::user(""), Message { role: Role::User, content: vec![] }];
    let (out, repairs) = enforce(&msgs);
    assert_eq!(out[0].role, Role::User);
    assert_eq!(out.len(), 2);
    assert!(repairs.contains(&Repair::LeadingUserAdded));
}

#[test]
fn text_in_a_tool_message_moves_after_it() {
    let mut m = results(&["a"]);
    m.content.push(ContentBlock::text("note"));
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"]), m];
    let (out, _) = enforce(&msgs);
    assert_eq!(out[2].role, Role::Tool);
    assert_eq!(out[3], Message::user("note"));
}

fn arb_message() -> impl Strategy<Value = Message> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c"), Just("d")];
    let block = prop_oneof![
        "[a-z ]{0,5}".prop_map(ContentBlock::text),
        Just(ContentBlock::Reasoning(tackle_protocol::Reasoning {
            format: "anthropic".into(),
            text: String::new(),
            data: json!({})
        })),
        id.clone().prop_map(call),
        id.prop_map(|i| ContentBlock::ToolResult(ToolResult::ok(i, "r"))),
    ];
    (
        prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::Tool)],
        prop::collection::vec(block, 0..4),
    )
        .prop_map(|(role, content)| Message { role, content })
}

proptest! {
    /// Any history becomes valid, and enforcing twice changes nothing more.
    #[test]
    fn enforce_always_yields_a_valid_conversation(msgs in prop::collection::vec(arb_message(), 0..12)) {
        let (once, first_repairs) = enforce(&msgs);
        prop_assert_eq!(is_valid(&msgs), first_repairs.is_empty(), "is_valid agrees with enforce");
        prop_assert!(is_valid(&once));
        let (twice, repairs) = enforce(&once);
        prop_assert!(repairs.is_empty(), "not idempotent: {:?}", repairs);
        prop_assert_eq!(&once, &twice);
        for (i, m) in once.iter().enumerate() {
            prop_assert!(!m.is_empty());
            if m.role == Role::Tool {
                prop_assert!(i > 0 && matches!(once[i - 1].role, Role::Assistant | Role::Tool));
            }
        }
    }
}
