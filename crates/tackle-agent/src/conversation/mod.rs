//! [`Conversation`]: messages every provider accepts, valid by construction
//! (**[conversation-valid]** in ARCHITECTURE.md).
//!
//! A session's stored messages can be anything a crash, an old version or an import left: a
//! call without its result, a result without its call, an empty message. A `Conversation` is
//! made from them only through [`Conversation::new`] (which refuses what is invalid, saying
//! why) or [`Conversation::repair`] (which applies the named [`Repair`]s of [`REPAIRS`] in
//! order and reports each one, so nothing is lost silently). Requests are built from a
//! `Conversation`, and compaction takes one and returns one, so neither can send a provider a
//! conversation it would reject.
//!
//! Valid means: the first message is the user's; no message or text block is empty; a tool
//! message holds only tool results and follows an assistant message (or another tool message);
//! every tool use of an assistant message has exactly one result in the tool messages right
//! after it, and every result there answers one of its uses; no assistant message follows
//! another; user messages hold no tool uses or results. Two user messages in a row are valid:
//! the encoders merge them, which every provider accepts.
//!
//! ```
//! use tackle_agent::conversation::{Conversation, Repair};
//! use tackle_protocol::Message;
//!
//! let ok = Conversation::new(vec![Message::user("hi"), Message::assistant("hello")]).unwrap();
//! assert_eq!(ok.len(), 2);
//!
//! let stored = vec![Message::assistant("left over"), Message::user("")];
//! assert!(Conversation::new(stored.clone()).is_err());
//! let (repaired, repairs) = Conversation::repair(&stored);
//! assert_eq!(repairs, [Repair::EmptyDropped, Repair::LeadingUserAdded]);
//! assert_eq!(repaired.len(), 2);
//! ```

mod repairs;

use std::ops::Range;
use std::sync::Arc;

use tackle_protocol::{ContentBlock, ErrorCategory, Message, Role, ToolCallId, ToolError, ToolResult};

pub use repairs::{REPAIRS, Repair};

/// A provider-valid conversation (see the [module](self) docs). Cheap to clone: the messages
/// are shared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    messages: Arc<Vec<Message>>,
}

/// Why messages are not a valid [`Conversation`]: the first rule they break, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid conversation at message {index}: {reason} (Conversation::repair fixes it and reports how)")]
#[non_exhaustive]
pub struct InvalidConversation {
    /// Index of the first message that breaks a rule.
    pub index: usize,
    /// The rule it breaks.
    pub reason: &'static str,
}

/// The first `end` messages of a conversation, ending between two units (an assistant message
/// and its tool results are one unit), so replacing them can never split a call from its
/// result. Only [`Conversation::prefix`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    end: usize,
}

impl Prefix {
    /// The positions it covers.
    pub fn range(&self) -> Range<usize> {
        0..self.end
    }

    /// How many messages it covers.
    pub fn len(&self) -> usize {
        self.end
    }

    /// Whether it covers nothing (never true for a prefix [`Conversation::prefix`] made).
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
}

impl Conversation {
    /// The messages as a conversation, if they are valid.
    pub fn new(messages: Vec<Message>) -> Result<Self, InvalidConversation> {
        Self::shared(Arc::new(messages))
    }

    /// The same for messages already shared (no copy).
    pub fn shared(messages: Arc<Vec<Message>>) -> Result<Self, InvalidConversation> {
        check(&messages)?;
        Ok(Self { messages })
    }

    /// A valid conversation made from any messages by the [`REPAIRS`], in order, with what each
    /// changed. No repair when the messages are valid already.
    pub fn repair(messages: &[Message]) -> (Self, Vec<Repair>) {
        let mut repairs = Vec::new();
        let mut out = messages.to_vec();
        for (_, repair) in REPAIRS {
            out = repair(out, &mut repairs);
        }
        debug_assert!(check(&out).is_ok(), "the repairs left {:?}: {out:?}", check(&out));
        (Self { messages: Arc::new(out) }, repairs)
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, shared (for a request).
    pub fn lend(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.messages)
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The oldest whole units before `protected_from` holding at least `want` tokens (`counts`
    /// per message): what compaction summarizes or drops. `None` when nothing before the
    /// protected part can go.
    pub fn prefix(&self, counts: &[u64], protected_from: usize, want: u64) -> Option<Prefix> {
        tackle_context::plan_prefix(&self.messages, counts, protected_from, want)
            .map(|r| Prefix { end: r.end })
    }

    /// This conversation with `prefix` replaced by one user message of `text` (a summary, or a
    /// note that messages were dropped). The rest is kept as it is.
    pub fn replace_prefix(&self, prefix: &Prefix, text: String) -> Result<Self, InvalidConversation> {
        let end = prefix.end.min(self.len());
        let mut out = Vec::with_capacity(self.len() - end + 1);
        out.push(Message::user(text));
        out.extend_from_slice(&self.messages[end..]);
        Self::new(out)
    }

    /// This conversation with the outputs of the planned tool results replaced by what `stub`
    /// makes of them. Ids and error flags are kept, so every call keeps its one result.
    pub fn clear_results(
        &self,
        plan: &[tackle_context::ClearTarget],
        stub: impl FnMut(&tackle_context::ClearTarget, &ToolResult) -> String,
    ) -> Self {
        let mut messages = (*self.messages).clone();
        tackle_context::apply_clear(&mut messages, plan, stub);
        // Only result contents changed: every rule still holds.
        Self { messages: Arc::new(messages) }
    }
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

/// Whether `messages` is a valid conversation, without copying anything (the loop checks this
/// before every request; repairs run only when it fails).
pub fn is_valid(messages: &[Message]) -> bool {
    check(messages).is_ok()
}

/// The first rule `messages` breaks, if any.
fn check(messages: &[Message]) -> Result<(), InvalidConversation> {
    let fail = |index, reason| Err(InvalidConversation { index, reason });
    if messages.first().is_some_and(|m| m.role != Role::User) {
        return fail(0, "the conversation must start with a user message");
    }
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m.content.is_empty() || m.content.iter().any(ContentBlock::is_empty) {
            return fail(i, "empty message or empty text block");
        }
        match m.role {
            Role::Tool => return fail(i, "tool results that follow no assistant message"),
            Role::User => {
                if m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_) | ContentBlock::ToolUse(_)))
                {
                    return fail(i, "a tool use or result in a user message");
                }
                i += 1;
            }
            Role::Assistant => {
                if i > 0 && messages[i - 1].role == Role::Assistant {
                    return fail(i, "two assistant messages in a row");
                }
                if m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult(_))) {
                    return fail(i, "a tool result in an assistant message");
                }
                let ids: Vec<&str> = m.tool_uses().map(|u| u.id.as_str()).collect();
                if ids.iter().enumerate().any(|(k, id)| ids[..k].contains(id)) {
                    return fail(i, "two tool uses with one id");
                }
                let mut answered: Vec<&str> = Vec::with_capacity(ids.len());
                let mut j = i + 1;
                while j < messages.len() && messages[j].role == Role::Tool {
                    let t = &messages[j];
                    if t.content.is_empty() {
                        return fail(j, "empty message or empty text block");
                    }
                    for block in &t.content {
                        let ContentBlock::ToolResult(r) = block else {
                            return fail(j, "a tool message holds something other than tool results");
                        };
                        let id = r.tool_use_id.as_str();
                        if !ids.contains(&id) || answered.contains(&id) {
                            return fail(j, "a tool result answers no open tool use");
                        }
                        answered.push(id);
                    }
                    j += 1;
                }
                if answered.len() != ids.len() {
                    return fail(i, "a tool use without its result");
                }
                i = j;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
