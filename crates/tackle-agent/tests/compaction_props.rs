//! Property: any compaction of any valid conversation is provider-valid, not larger, and leaves
//! the current turn untouched.

use proptest::prelude::*;
use serde_json::json;
use tackle_agent::conversation::is_valid;
use tackle_context::{
    TokenCounter, apply_clear, cleared_stub, plan_clear, plan_prefix, removal_message, replace_prefix,
    summary_message,
};
use tackle_protocol::{ContentBlock, Message, Role, ToolResult, ToolUse};

/// One exchange: a user message, then tool steps (1..3 calls each, with their results), then
/// optionally a final text answer. Providers reject two assistant messages in a row, so a text
/// answer can only close a turn.
fn arb_turn(turn: usize) -> impl Strategy<Value = Vec<Message>> {
    (prop::collection::vec((1usize..3, 0usize..2000), 0..4), any::<bool>()).prop_map(
        move |(steps, answer)| {
            let mut out = vec![Message::user(format!("question {turn}"))];
            for (s, (calls, size)) in steps.iter().enumerate() {
                let ids: Vec<String> = (0..*calls).map(|c| format!("t{turn}s{s}c{c}")).collect();
                out.push(Message {
                    role: Role::Assistant,
                    content: ids
                        .iter()
                        .map(|id| {
                            ContentBlock::ToolUse(ToolUse {
                                id: id.clone().into(),
                                name: "shell".into(),
                                input: json!({}).into(),
                            })
                        })
                        .collect(),
                });
                out.push(Message::tool_results(ids.iter().map(|id| ToolResult::ok(id, output(*size)))));
            }
            if answer || steps.is_empty() {
                out.push(Message::assistant(format!("answer {turn}")));
            }
            out
        },
    )
}

/// Tool output of about `bytes` bytes that tokenizes like real output (a run of one repeated
/// character tokenizes far more compactly than anything a tool prints).
fn output(bytes: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    while out.len() <= bytes {
        n += 1;
        out.push_str(&format!("src/module_{n}.rs:{}: warning: unused variable `value_{n}`\n", n * 7));
    }
    out
}

fn arb_history() -> impl Strategy<Value = Vec<Message>> {
    (1usize..8).prop_flat_map(|turns| (0..turns).map(arb_turn).collect::<Vec<_>>()).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn compaction_keeps_conversations_valid(history in arb_history(), keep in 0usize..4, want_frac in 0.0f64..1.5) {
        prop_assert!(is_valid(&history));
        let counter = TokenCounter::for_model("gpt-4o");
        let counts: Vec<u64> = history.iter().map(|m| counter.count_message(m)).collect();
        let protected = history.iter().rposition(|m| m.role == Role::User).unwrap();
        let tail = history[protected..].to_vec();
        let before: u64 = counts.iter().sum();

        // (a) clear old results.
        let mut cleared = history.clone();
        let plan = plan_clear(&cleared, protected, keep);
        apply_clear(&mut cleared, &plan, |t, r| cleared_stub(&t.tool, r, "out_x"));
        prop_assert!(is_valid(&cleared));
        let cleared_counts: Vec<u64> = cleared.iter().map(|m| counter.count_message(m)).collect();
        prop_assert!(cleared_counts.iter().sum::<u64>() <= before);
        prop_assert_eq!(&cleared[protected..], &tail[..]);

        // (b) summarize / (c) truncate a prefix.
        let want = (before as f64 * want_frac) as u64;
        if let Some(range) = plan_prefix(&cleared, &cleared_counts, protected, want) {
            prop_assert_eq!(range.start, 0);
            prop_assert!(range.end <= protected);
            for replacement in [summary_message("short summary", range.len()), removal_message(range.len())] {
                let out = replace_prefix(cleared.clone(), range.clone(), replacement);
                prop_assert!(is_valid(&out), "invalid after replacing {:?}", range);
                prop_assert!(out.len() <= cleared.len());
                let after: u64 = out.iter().map(|m| counter.count_message(m)).sum();
                prop_assert!(after <= before + 64, "not larger (a summary message may cost a few tokens)");
                prop_assert_eq!(&out[out.len() - tail.len()..], &tail[..], "the current turn is kept");
            }
        }
    }
}
