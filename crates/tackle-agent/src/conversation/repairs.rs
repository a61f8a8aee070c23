//! The repairs that make any stored messages a valid [`Conversation`](super::Conversation),
//! one concern each, run in the order of [`REPAIRS`]: each may assume the ones before it ran.
//! Every change is reported as a [`Repair`]; a dropped block is reported one by one.

use std::collections::HashSet;

use tackle_protocol::{ContentBlock, Message, Role, ToolCallId};

use super::interrupted_result;

/// What a repair changed, for logs and the `history_repaired` warning.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Repair {
    /// An empty text block, or a message with nothing in it, was dropped (nothing was said).
    EmptyDropped,
    /// A block in a message of the wrong role (a tool result from the assistant, a tool use
    /// from the user, reasoning among tool results) was dropped.
    MisplacedBlock {
        /// The block's type (`tool_use`, `tool_result`, `reasoning`).
        block: &'static str,
    },
    /// Text in a tool-results message was moved to a user message right after it.
    TextMovedFromTool,
    /// Tool results in a user message were moved to a tool message right before it.
    ResultsMovedFromUser,
    /// A tool result answered no tool use of the assistant message before it (or answered one
    /// twice); it was dropped.
    OrphanResult {
        /// The call id it named.
        call_id: ToolCallId,
    },
    /// Two assistant messages in a row were merged.
    AssistantsMerged,
    /// A tool use repeated an id already used in the same assistant message; it was dropped.
    DuplicateCall {
        /// The repeated id.
        call_id: ToolCallId,
    },
    /// A tool use had no result; an `interrupted` error result was added.
    MissingResult {
        /// The call id.
        call_id: ToolCallId,
    },
    /// The conversation did not start with a user message; a placeholder was added.
    LeadingUserAdded,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EmptyDropped => f.write_str("dropped an empty message or text block"),
            Self::MisplacedBlock { block } => {
                write!(f, "dropped a {block} block from a message of the wrong role")
            }
            Self::TextMovedFromTool => f.write_str("moved text out of a tool-results message"),
            Self::ResultsMovedFromUser => f.write_str("moved tool results out of a user message"),
            Self::OrphanResult { call_id } => write!(f, "dropped the result of unknown call {call_id}"),
            Self::AssistantsMerged => f.write_str("merged two assistant messages in a row"),
            Self::DuplicateCall { call_id } => write!(f, "dropped a repeated call {call_id}"),
            Self::MissingResult { call_id } => write!(f, "answered call {call_id} as interrupted"),
            Self::LeadingUserAdded => f.write_str("added a user message at the start"),
        }
    }
}

/// One repair: messages in, messages out, what it changed appended to the list.
pub type RepairFn = fn(Vec<Message>, &mut Vec<Repair>) -> Vec<Message>;

/// The repairs, by name, in the order they run.
pub const REPAIRS: [(&str, RepairFn); 7] = [
    ("drop_empty", drop_empty),
    ("sort_blocks_by_role", sort_blocks_by_role),
    ("pair_results", pair_results),
    ("merge_assistants", merge_assistants),
    ("dedupe_calls", dedupe_calls),
    ("answer_open_calls", answer_open_calls),
    ("lead_with_user", lead_with_user),
];

/// The wire name of a block's type, as [`Repair::MisplacedBlock`] reports it.
pub(super) fn block_type(block: &ContentBlock) -> &'static str {
    match block {
        ContentBlock::Text { .. } => "text",
        ContentBlock::ToolUse(_) => "tool_use",
        ContentBlock::ToolResult(_) => "tool_result",
        ContentBlock::Reasoning(_) => "reasoning",
    }
}

/// Drops empty text blocks and messages left with nothing.
fn drop_empty(mut messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    messages.retain_mut(|m| {
        let before = m.content.len();
        m.content.retain(|b| !b.is_empty());
        repairs.extend((m.content.len()..before).map(|_| Repair::EmptyDropped));
        if m.content.is_empty() && before == 0 {
            repairs.push(Repair::EmptyDropped);
        }
        !m.content.is_empty()
    });
    messages
}

/// Puts every block in a message of a role that may hold it: results out of user messages
/// into a tool message before them, text out of tool messages into a user message after them;
/// what no role of its place may hold (a result from the assistant, a tool use from the user,
/// reasoning among results) is dropped.
fn sort_blocks_by_role(messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let push = |out: &mut Vec<Message>, role, content: Vec<ContentBlock>| {
        if !content.is_empty() {
            out.push(Message { role, content });
        }
    };
    for message in messages {
        match message.role {
            Role::Assistant => {
                let mut kept = Vec::with_capacity(message.content.len());
                for block in message.content {
                    match block {
                        ContentBlock::ToolResult(_) => {
                            repairs.push(Repair::MisplacedBlock { block: block_type(&block) })
                        }
                        block => kept.push(block),
                    }
                }
                push(&mut out, Role::Assistant, kept);
            }
            Role::User => {
                let (mut results, mut rest) = (Vec::new(), Vec::new());
                for block in message.content {
                    match block {
                        ContentBlock::ToolResult(_) => results.push(block),
                        ContentBlock::ToolUse(_) => {
                            repairs.push(Repair::MisplacedBlock { block: block_type(&block) })
                        }
                        block => rest.push(block),
                    }
                }
                if !results.is_empty() {
                    repairs.push(Repair::ResultsMovedFromUser);
                }
                push(&mut out, Role::Tool, results);
                push(&mut out, Role::User, rest);
            }
            Role::Tool => {
                let (mut results, mut texts) = (Vec::new(), Vec::new());
                for block in message.content {
                    match block {
                        ContentBlock::ToolResult(_) => results.push(block),
                        ContentBlock::Text { .. } => texts.push(block),
                        block => repairs.push(Repair::MisplacedBlock { block: block_type(&block) }),
                    }
                }
                if !texts.is_empty() {
                    repairs.push(Repair::TextMovedFromTool);
                }
                push(&mut out, Role::Tool, results);
                push(&mut out, Role::User, texts);
            }
        }
    }
    out
}

/// Keeps in each run of tool messages only the results that answer a tool use of the assistant
/// message right before the run, each once; a run after anything else answers nothing.
fn pair_results(messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut open: HashSet<ToolCallId> = HashSet::new();
    for mut message in messages {
        match message.role {
            Role::Tool => {
                message.content.retain(|b| match b {
                    ContentBlock::ToolResult(r) if open.remove(&r.tool_use_id) => true,
                    ContentBlock::ToolResult(r) => {
                        repairs.push(Repair::OrphanResult { call_id: r.tool_use_id.clone() });
                        false
                    }
                    _ => true,
                });
                if !message.content.is_empty() {
                    out.push(message);
                }
                // An emptied tool message leaves the run open: a later one may still answer.
                continue;
            }
            Role::Assistant => open = message.tool_uses().map(|u| u.id.clone()).collect(),
            Role::User => open.clear(),
        }
        out.push(message);
    }
    out
}

/// Merges an assistant message into the one right before it.
fn merge_assistants(messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match out.last_mut() {
            Some(last) if last.role == Role::Assistant && message.role == Role::Assistant => {
                repairs.push(Repair::AssistantsMerged);
                last.content.extend(message.content);
            }
            _ => out.push(message),
        }
    }
    out
}

/// Drops a tool use whose id already appeared earlier in the same assistant message.
fn dedupe_calls(mut messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    for message in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        let mut seen = HashSet::new();
        message.content.retain(|b| match b {
            ContentBlock::ToolUse(u) if !seen.insert(u.id.clone()) => {
                repairs.push(Repair::DuplicateCall { call_id: u.id.clone() });
                false
            }
            _ => true,
        });
    }
    messages
}

/// Answers every tool use without a result with an `interrupted` error, at the end of the tool
/// messages right after its assistant message (a new one if there are none).
fn answer_open_calls(messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut iter = messages.into_iter().peekable();
    while let Some(message) = iter.next() {
        if message.role != Role::Assistant {
            out.push(message);
            continue;
        }
        let calls: Vec<(ToolCallId, String)> =
            message.tool_uses().map(|u| (u.id.clone(), u.name.clone())).collect();
        out.push(message);
        let mut answered = HashSet::new();
        let run_start = out.len();
        while let Some(tool) = iter.next_if(|m| m.role == Role::Tool) {
            answered.extend(tool.tool_results_iter().map(|r| r.tool_use_id.clone()));
            out.push(tool);
        }
        let missing: Vec<ContentBlock> = calls
            .into_iter()
            .filter(|(id, _)| !answered.contains(id))
            .map(|(id, name)| {
                let result = ContentBlock::ToolResult(interrupted_result(&id, &name));
                repairs.push(Repair::MissingResult { call_id: id });
                result
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        // Past `run_start`, the last message is the run's last tool message.
        let after_run = run_start < out.len();
        match out.last_mut().filter(|_| after_run) {
            Some(last) => last.content.extend(missing),
            None => out.push(Message { role: Role::Tool, content: missing }),
        }
    }
    out
}

/// Starts the conversation with a user message.
fn lead_with_user(mut messages: Vec<Message>, repairs: &mut Vec<Repair>) -> Vec<Message> {
    if messages.first().is_some_and(|m| m.role != Role::User) {
        repairs.push(Repair::LeadingUserAdded);
        messages.insert(0, Message::user("(conversation continues)"));
    }
    messages
}
