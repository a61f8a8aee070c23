//! Conversation invariants enforced before every request, so a provider never rejects a
//! history Tackle built: every tool use has its result, no result lacks its use, no message is
//! empty, and roles come in an order every provider accepts.

use std::collections::HashSet;

use tackle_protocol::{ContentBlock, ErrorCategory, Message, Role, ToolCallId, ToolError, ToolResult};

/// What [`enforce`] changed, for logs and events.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Repair {
    /// A tool use had no result; an `interrupted` error result was added.
    MissingResult {
        /// The call id.
        call_id: ToolCallId,
    },
    /// A tool result answered no tool use of the preceding assistant message; it was dropped.
    OrphanResult {
        /// The call id it named.
        call_id: ToolCallId,
    },
    /// An empty message or empty text block was dropped.
    EmptyDropped,
    /// The conversation did not start with a user message; a placeholder was added.
    LeadingUserAdded,
    /// Two assistant messages in a row were merged.
    AssistantsMerged,
    /// Text in a tool-results message was moved to a user message after it.
    TextMovedFromTool,
    /// A block in a message of the wrong role (a tool result from the assistant, text or
    /// reasoning among tool results) was dropped or moved.
    MisplacedBlock,
    /// A tool use repeated an id already used in the same assistant turn; it was dropped.
    DuplicateCall {
        /// The repeated id.
        call_id: ToolCallId,
    },
}

/// The error result given to a tool call that never finished (crash, cancellation).
pub fn interrupted_result(call_id: &ToolCallId, tool: &str) -> ToolResult {
    let envelope = ToolError::new(
        tool,
        ErrorCategory::Interrupted,
        "this call was interrupted before it finished; its effects, if any, are unknown",
    )
    .with_hint("check the current state before calling it again");
    ToolResult::error(call_id, envelope.to_json())
}

/// Returns a provider-valid copy of `messages` and the repairs made. Pure; callers decide
/// whether to persist the result.
pub fn enforce(messages: &[Message]) -> (Vec<Message>, Vec<Repair>) {
    let mut repairs = Vec::new();
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);

    for message in messages {
        let mut message = message.clone();
        let before = message.content.len();
        message.content.retain(|b| !b.is_empty());
        if message.content.len() != before || message.content.is_empty() {
            repairs.push(Repair::EmptyDropped);
        }
        if message.content.is_empty() {
            continue;
        }
        match message.role {
            Role::Tool => {
                let texts: Vec<ContentBlock> = message
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::Text { .. }))
                    .cloned()
                    .collect();
                message.content.retain(|b| !matches!(b, ContentBlock::Text { .. }));
                push_results(&mut out, message, &mut repairs);
                if !texts.is_empty() {
                    repairs.push(Repair::TextMovedFromTool);
                    close_open_calls(&mut out, &mut repairs);
                    out.push(Message { role: Role::User, content: texts });
                }
            }
            Role::User if message.tool_results_iter().next().is_some() => {
                // Results inside a user message are treated as a tool message followed by text.
                let (results, rest): (Vec<_>, Vec<_>) =
                    message.content.into_iter().partition(|b| matches!(b, ContentBlock::ToolResult(_)));
                push_results(&mut out, Message { role: Role::Tool, content: results }, &mut repairs);
                if !rest.is_empty() {
                    close_open_calls(&mut out, &mut repairs);
                    out.push(Message { role: Role::User, content: rest });
                }
            }
            Role::Assistant => {
                let before = message.content.len();
                message.content.retain(|b| !matches!(b, ContentBlock::ToolResult(_)));
                if message.content.len() != before {
                    repairs.push(Repair::MisplacedBlock);
                }
                if message.content.is_empty() {
                    continue;
                }
                close_open_calls(&mut out, &mut repairs);
                match out.last_mut() {
                    Some(last) if last.role == Role::Assistant => {
                        repairs.push(Repair::AssistantsMerged);
                        last.content.extend(message.content);
                        dedupe_calls(last, &mut repairs);
                    }
                    _ => {
                        dedupe_calls(&mut message, &mut repairs);
                        out.push(message);
                    }
                }
            }
            Role::User => {
                close_open_calls(&mut out, &mut repairs);
                out.push(message);
            }
        }
    }
    close_open_calls(&mut out, &mut repairs);
    if out.first().is_some_and(|m| m.role != Role::User) {
        repairs.push(Repair::LeadingUserAdded);
        out.insert(0, Message::user("(conversation continues)"));
    }
    (out, repairs)
}

/// Drops tool uses whose id already appeared earlier in the same message.
fn dedupe_calls(message: &mut Message, repairs: &mut Vec<Repair>) {
    let mut seen = HashSet::new();
    message.content.retain(|b| match b {
        ContentBlock::ToolUse(u) if !seen.insert(u.id.clone()) => {
            repairs.push(Repair::DuplicateCall { call_id: u.id.clone() });
            false
        }
        _ => true,
    });
}

/// Tool uses of the last assistant message not yet answered in the tool message right after it.
fn open_calls(out: &[Message]) -> Vec<(ToolCallId, String)> {
    let Some(pos) = out.iter().rposition(|m| m.role == Role::Assistant) else { return Vec::new() };
    let answered: HashSet<&str> = out[pos + 1..]
        .iter()
        .take_while(|m| m.role == Role::Tool)
        .flat_map(|m| m.tool_results_iter().map(|r| r.tool_use_id.as_str()))
        .collect();
    out[pos]
        .tool_uses()
        .filter(|u| !answered.contains(u.id.as_str()))
        .map(|u| (u.id.clone(), u.name.clone()))
        .collect()
}

fn close_open_calls(out: &mut Vec<Message>, repairs: &mut Vec<Repair>) {
    let open = open_calls(out);
    if open.is_empty() {
        return;
    }
    let results: Vec<ContentBlock> = open
        .into_iter()
        .map(|(id, name)| {
            repairs.push(Repair::MissingResult { call_id: id.clone() });
            ContentBlock::ToolResult(interrupted_result(&id, &name))
        })
        .collect();
    // The results belong right after the assistant message and its tool messages.
    let Some(pos) = out.iter().rposition(|m| m.role == Role::Assistant) else { return };
    let tools_end = pos + 1 + out[pos + 1..].iter().take_while(|m| m.role == Role::Tool).count();
    if tools_end > pos + 1 {
        out[tools_end - 1].content.extend(results);
    } else {
        out.insert(tools_end, Message { role: Role::Tool, content: results });
    }
}

fn push_results(out: &mut Vec<Message>, message: Message, repairs: &mut Vec<Repair>) {
    // Results must answer the assistant message right before this run of tool messages.
    let tail_start = out.iter().rposition(|m| m.role != Role::Tool).map(|i| i + 1).unwrap_or(0);
    let expected: HashSet<ToolCallId> = match tail_start.checked_sub(1).map(|i| &out[i]) {
        Some(m) if m.role == Role::Assistant => m.tool_uses().map(|u| u.id.clone()).collect(),
        _ => HashSet::new(),
    };
    let mut seen: HashSet<ToolCallId> =
        out[tail_start..].iter().flat_map(|m| m.tool_results_iter().map(|r| r.tool_use_id.clone())).collect();
    let mut kept = Vec::new();
    for block in message.content {
        let ContentBlock::ToolResult(r) = &block else {
            repairs.push(Repair::MisplacedBlock);
            continue;
        };
        if expected.contains(&r.tool_use_id) && seen.insert(r.tool_use_id.clone()) {
            kept.push(block);
        } else {
            repairs.push(Repair::OrphanResult { call_id: r.tool_use_id.clone() });
        }
    }
    if kept.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.role == Role::Tool => last.content.extend(kept),
        _ => out.push(Message { role: Role::Tool, content: kept }),
    }
}

/// Whether `messages` already satisfies every invariant, without copying anything (the loop
/// checks this before every request; [`enforce`] runs only when it fails).
pub fn is_valid(messages: &[Message]) -> bool {
    if messages.first().is_some_and(|m| m.role != Role::User) {
        return false;
    }
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m.content.is_empty() || m.content.iter().any(ContentBlock::is_empty) {
            return false;
        }
        match m.role {
            Role::Tool => return false, // a tool message not right after an assistant message
            Role::User => {
                if m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult(_))) {
                    return false;
                }
                i += 1;
            }
            Role::Assistant => {
                if i > 0 && messages[i - 1].role == Role::Assistant {
                    return false;
                }
                if m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult(_))) {
                    return false;
                }
                let ids: Vec<&str> = m.tool_uses().map(|u| u.id.as_str()).collect();
                if ids.iter().enumerate().any(|(k, id)| ids[..k].contains(id)) {
                    return false;
                }
                let mut answered: Vec<&str> = Vec::with_capacity(ids.len());
                let mut j = i + 1;
                while j < messages.len() && messages[j].role == Role::Tool {
                    let t = &messages[j];
                    if t.content.is_empty() {
                        return false;
                    }
                    for block in &t.content {
                        let ContentBlock::ToolResult(r) = block else { return false };
                        let id = r.tool_use_id.as_str();
                        if !ids.contains(&id) || answered.contains(&id) {
                            return false;
                        }
                        answered.push(id);
                    }
                    j += 1;
                }
                if answered.len() != ids.len() {
                    return false;
                }
                i = j;
            }
        }
    }
    true
}

#[cfg(test)]
#[path = "invariants_tests.rs"]
mod tests;
