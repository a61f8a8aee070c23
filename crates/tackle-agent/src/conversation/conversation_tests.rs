use proptest::prelude::*;
use serde_json::json;
use tackle_context::{TokenCounter, cleared_stub, plan_clear, removal_message, summary_message};
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
        results(&["a"]),
        results(&["b"]),
        Message::assistant("done"),
        Message::user("more"),
        Message::user("and more"),
    ];
    let (out, repairs) = Conversation::repair(&msgs);
    assert!(repairs.is_empty(), "{repairs:?}");
    assert_eq!(out.messages(), msgs);
    assert_eq!(Conversation::new(msgs.clone()), Ok(out));
}

#[test]
fn invalid_messages_are_refused_with_the_rule_they_break() {
    let err = Conversation::new(vec![Message::user("hi"), assistant_calls(&["a"])]).unwrap_err();
    assert_eq!((err.index, err.reason), (1, "a tool use without its result"));
    let err = Conversation::new(vec![Message::user("hi"), results(&["a"])]).unwrap_err();
    assert_eq!(err.index, 1);
    assert!(err.to_string().contains("Conversation::repair"), "the error says how to fix it: {err}");
}

#[test]
fn missing_results_become_interrupted_errors() {
    let msgs =
        vec![Message::user("hi"), assistant_calls(&["a", "b"]), results(&["a"]), Message::user("next")];
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(repairs, vec![Repair::MissingResult { call_id: "b".into() }]);
    let r: Vec<_> = out.messages()[2].tool_results_iter().collect();
    assert_eq!(r.len(), 2);
    assert!(r[1].is_error && r[1].content.contains("interrupted"));
    assert_eq!(out.messages()[3].role, Role::User);
}

#[test]
fn a_trailing_unanswered_call_is_closed() {
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"])];
    let (out, _) = Conversation::repair(&msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out.messages()[2].role, Role::Tool);
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
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out.messages()[2].content.len(), 1);
    assert_eq!(repairs.iter().filter(|r| matches!(r, Repair::OrphanResult { .. })).count(), 3);
}

#[test]
fn empty_messages_and_leading_assistant_are_fixed() {
    let msgs =
        vec![Message::assistant("hello"), Message::user(""), Message { role: Role::User, content: vec![] }];
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(out.messages()[0].role, Role::User);
    assert_eq!(out.len(), 2);
    assert_eq!(repairs, [Repair::EmptyDropped, Repair::EmptyDropped, Repair::LeadingUserAdded]);
}

#[test]
fn text_in_a_tool_message_moves_after_it() {
    let mut m = results(&["a"]);
    m.content.push(ContentBlock::text("note"));
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"]), m];
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(out.messages()[2].role, Role::Tool);
    assert_eq!(out.messages()[3], Message::user("note"));
    assert_eq!(repairs, [Repair::TextMovedFromTool]);
}

#[test]
fn results_in_a_user_message_move_before_it() {
    let mut m = Message::user("here you go");
    m.content.insert(0, ContentBlock::ToolResult(ToolResult::ok("a", "1")));
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"]), m];
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(out.messages()[2], Message::tool_results([ToolResult::ok("a", "1")]));
    assert_eq!(out.messages()[3], Message::user("here you go"));
    assert_eq!(repairs, [Repair::ResultsMovedFromUser]);
}

#[test]
fn repairs_run_in_their_named_order() {
    let names: Vec<&str> = REPAIRS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "drop_empty",
            "sort_blocks_by_role",
            "pair_results",
            "merge_assistants",
            "dedupe_calls",
            "answer_open_calls",
            "lead_with_user"
        ]
    );
    // Pairing runs before merging: a run of orphan results between two assistant messages is
    // dropped first, then the two are merged, then both calls are answered.
    let msgs = vec![Message::user("hi"), assistant_calls(&["a"]), results(&["x"]), assistant_calls(&["b"])];
    let (out, repairs) = Conversation::repair(&msgs);
    assert_eq!(out.len(), 3);
    assert_eq!(out.messages()[1].tool_uses().count(), 2);
    assert_eq!(
        repairs,
        [
            Repair::OrphanResult { call_id: "x".into() },
            Repair::AssistantsMerged,
            Repair::MissingResult { call_id: "a".into() },
            Repair::MissingResult { call_id: "b".into() },
        ]
    );
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
        (id, 0usize..600).prop_map(|(i, n)| ContentBlock::ToolResult(ToolResult::ok(i, "r".repeat(n + 1)))),
    ];
    (
        prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::Tool)],
        prop::collection::vec(block, 0..4),
    )
        .prop_map(|(role, content)| Message { role, content })
}

/// Non-empty blocks of each type in `messages`.
fn census(messages: &[Message]) -> std::collections::BTreeMap<&'static str, i64> {
    let mut out = std::collections::BTreeMap::new();
    for block in messages.iter().flat_map(|m| &m.content).filter(|b| !b.is_empty()) {
        *out.entry(super::repairs::block_type(block)).or_insert(0) += 1;
    }
    out
}

/// The blocks a list of repairs says it dropped (negative) or added (positive), by type.
fn accounted(repairs: &[Repair]) -> std::collections::BTreeMap<&'static str, i64> {
    let mut out = std::collections::BTreeMap::new();
    for r in repairs {
        let (block, n) = match r {
            Repair::MisplacedBlock { block } => (*block, -1),
            Repair::OrphanResult { .. } => ("tool_result", -1),
            Repair::DuplicateCall { .. } => ("tool_use", -1),
            Repair::MissingResult { .. } => ("tool_result", 1),
            Repair::LeadingUserAdded => ("text", 1),
            _ => continue,
        };
        *out.entry(block).or_insert(0) += n;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// [conversation-valid] Any stored messages become a valid conversation; nothing is lost
    /// unreported (every block that goes is a reported repair); a valid conversation needs no
    /// repair; repairing twice changes nothing more.
    #[test]
    fn repair_yields_a_valid_conversation_and_reports_every_loss(msgs in prop::collection::vec(arb_message(), 0..12)) {
        let (once, repairs) = Conversation::repair(&msgs);
        prop_assert!(is_valid(once.messages()), "{:?}", check(once.messages()));
        prop_assert_eq!(is_valid(&msgs), repairs.is_empty(), "repairs {:?}", repairs);
        let mut expected = census(&msgs);
        for (block, n) in accounted(&repairs) {
            *expected.entry(block).or_insert(0) += n;
        }
        expected.retain(|_, n| *n != 0);
        prop_assert_eq!(census(once.messages()), expected, "repairs {:?}", repairs);
        // Text is never dropped: every non-empty text of the input is in the output.
        let texts: Vec<&str> = once.messages().iter().flat_map(Message::texts).collect();
        for text in msgs.iter().flat_map(Message::texts) {
            prop_assert!(texts.contains(&text), "lost {:?}", text);
        }
        let (twice, again) = Conversation::repair(once.messages());
        prop_assert!(again.is_empty(), "not idempotent: {:?}", again);
        prop_assert_eq!(&once, &twice);
    }

    /// [conversation-valid] Every compaction strategy takes a conversation and returns one:
    /// clearing results keeps every message and id; replacing a prefix (summary or removal)
    /// keeps everything after it as it was.
    #[test]
    fn compaction_of_any_repaired_conversation_stays_valid(
        msgs in prop::collection::vec(arb_message(), 0..16),
        protect_frac in 0.0f64..1.0,
        keep in 0usize..3,
        want_frac in 0.0f64..1.2,
    ) {
        let (conversation, _) = Conversation::repair(&msgs);
        let protected = (conversation.len() as f64 * protect_frac) as usize;

        let plan = plan_clear(conversation.messages(), protected, keep);
        let cleared = conversation.clear_results(&plan, |t, r| cleared_stub(&t.tool, r, "out_x"));
        prop_assert!(is_valid(cleared.messages()));
        prop_assert_eq!(cleared.len(), conversation.len());
        for (a, b) in conversation.messages().iter().zip(cleared.messages()) {
            let ids = |m: &Message| m.tool_results_iter().map(|r| r.tool_use_id.clone()).collect::<Vec<_>>();
            prop_assert_eq!((a.role, ids(a)), (b.role, ids(b)));
        }
        prop_assert_eq!(&cleared.messages()[protected..], &conversation.messages()[protected..]);

        let counter = TokenCounter::for_model("gpt-4o");
        let counts: Vec<u64> = cleared.messages().iter().map(|m| counter.count_message(m)).collect();
        let want = (counts.iter().sum::<u64>() as f64 * want_frac) as u64;
        if let Some(prefix) = cleared.prefix(&counts, protected, want) {
            prop_assert!(!prefix.is_empty() && prefix.len() <= protected);
            for note in [summary_message("short summary", prefix.len()), removal_message(prefix.len())] {
                let out = cleared.replace_prefix(&prefix, note.text());
                prop_assert!(out.is_ok(), "{:?}", out);
                let out = out.unwrap_or_default();
                prop_assert_eq!(out.messages()[0].text(), note.text());
                prop_assert_eq!(&out.messages()[1..], &cleared.messages()[prefix.len()..], "the rest is kept");
            }
        }
    }
}
