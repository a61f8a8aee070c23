//! Compaction planning: what to clear, summarize or drop so a conversation fits its budget,
//! without splitting a tool call from its result. Pure functions over messages; the agent runs
//! the plan (offloading, the summary request) and persists the outcome.

use std::ops::Range;

use tackle_protocol::{ContentBlock, Message, Role, ToolResult};

/// Prefix of a tool result whose output was cleared from the context (and stored).
pub const CLEARED_PREFIX: &str = "[output cleared from the context";

/// Results smaller than this are not worth clearing.
pub const MIN_CLEAR_BYTES: usize = 256;

/// Groups of messages that must stay together: an assistant message with the tool messages that
/// answer it; any other message alone.
///
/// ```
/// use tackle_protocol::{Message, ToolResult};
/// let msgs = vec![Message::user("a"), Message::assistant("b"), Message::tool_results([ToolResult::ok("x", "y")]), Message::user("c")];
/// assert_eq!(tackle_context::units(&msgs), vec![0..1, 1..3, 3..4]);
/// ```
pub fn units(history: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < history.len() {
        let mut end = i + 1;
        if history[i].role == Role::Assistant {
            while end < history.len() && history[end].role == Role::Tool {
                end += 1;
            }
        }
        out.push(i..end);
        i = end;
    }
    out
}

/// A tool result chosen to be cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClearTarget {
    /// Index of the message.
    pub message: usize,
    /// Index of the block in it.
    pub block: usize,
    /// The call it answers.
    pub tool_use_id: tackle_protocol::ToolCallId,
    /// The tool that produced it.
    pub tool: String,
}

/// Tool results before `protected_from` except the last `keep` of them, skipping small and
/// already-cleared ones: step (a) of the chain.
pub fn plan_clear(history: &[Message], protected_from: usize, keep: usize) -> Vec<ClearTarget> {
    let mut all = Vec::new();
    for (i, m) in history.iter().enumerate().take(protected_from.min(history.len())) {
        for (j, block) in m.content.iter().enumerate() {
            if let ContentBlock::ToolResult(r) = block {
                all.push((i, j, r));
            }
        }
    }
    let cut = all.len().saturating_sub(keep);
    all.into_iter()
        .take(cut)
        .filter(|(_, _, r)| r.content.len() >= MIN_CLEAR_BYTES && !r.content.starts_with(CLEARED_PREFIX))
        .map(|(i, j, r)| ClearTarget {
            message: i,
            block: j,
            tool_use_id: r.tool_use_id.clone(),
            tool: tool_name(history, i, &r.tool_use_id).unwrap_or_else(|| "tool".to_owned()),
        })
        .collect()
}

/// The name of the tool whose call `id` is answered at message `at`.
fn tool_name(history: &[Message], at: usize, id: &str) -> Option<String> {
    history[..at]
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)?
        .tool_uses()
        .find(|u| u.id == id)
        .map(|u| u.name.clone())
}

/// The stub that replaces a cleared result.
pub fn cleared_stub(tool: &str, result: &ToolResult, locator: &str) -> String {
    let lines = result.content.lines().count();
    format!(
        "{CLEARED_PREFIX} to save space: `{tool}` returned {} bytes, {lines} lines]\nlocator: {locator}\n\
         (call read_result with this locator to read it again)",
        result.content.len()
    )
}

/// Replaces the planned results with the stubs `stub` makes. Ids and error flags are kept, so
/// every call still has its result.
pub fn apply_clear(
    history: &mut [Message],
    plan: &[ClearTarget],
    mut stub: impl FnMut(&ClearTarget, &ToolResult) -> String,
) {
    for target in plan {
        if let Some(ContentBlock::ToolResult(r)) =
            history.get_mut(target.message).and_then(|m| m.content.get_mut(target.block))
        {
            let text = stub(target, r);
            r.content = text;
        }
    }
}

/// The oldest whole units before `protected_from` holding at least `want` tokens (`counts` per
/// message), always starting at 0: what to summarize (b) or drop (c). `None` when nothing
/// before the protected part can go.
pub fn plan_prefix(
    history: &[Message],
    counts: &[u64],
    protected_from: usize,
    want: u64,
) -> Option<Range<usize>> {
    let mut end = 0;
    let mut tokens = 0;
    for unit in units(history) {
        if unit.end > protected_from || tokens >= want {
            break;
        }
        tokens += unit.clone().map(|i| counts.get(i).copied().unwrap_or(0)).sum::<u64>();
        end = unit.end;
    }
    (end > 0).then_some(0..end)
}

/// `history` with `range` replaced by one message (a summary or a removal note).
pub fn replace_prefix(mut history: Vec<Message>, range: Range<usize>, replacement: Message) -> Vec<Message> {
    let rest = history.split_off(range.end.min(history.len()));
    let mut out = Vec::with_capacity(rest.len() + 1);
    out.push(replacement);
    // A summary is a user message; if the kept part starts with a user message too, the two
    // merge on the wire, which every provider accepts.
    out.extend(rest);
    out
}

/// The instructions of a summary request (step b).
pub const SUMMARY_INSTRUCTIONS: &str = "\
[runtime note] The conversation above is about to be replaced by a summary to save context. \
Write that summary now, for yourself, in these sections:
Goal: what the user wants, in their words where possible.
Decisions: what was decided and why.
Files touched: paths created, read or changed, and how.
Open tasks: what remains to do, in order.
Errors seen: tool errors and their causes, so they are not repeated.
Be specific (names, paths, values); do not call tools.";

/// The message that stands for a summarized range.
pub fn summary_message(summary: &str, messages: usize) -> Message {
    Message::user(format!(
        "[runtime note] Summary of the {messages} earliest messages of this conversation (the originals are kept in \
         the session store):\n\n{}",
        summary.trim()
    ))
}

/// The message that stands for a dropped range (step c).
pub fn removal_message(messages: usize) -> Message {
    Message::user(format!(
        "[runtime note] The {messages} earliest messages were removed from the context to make room; they are kept in \
         the session store."
    ))
}
