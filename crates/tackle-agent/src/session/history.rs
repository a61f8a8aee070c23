//! [`History`]: the conversation as the model sees it, each message with its store sequence
//! number and its token count, kept in step by construction.
//!
//! Requests borrow the messages ([`History::conversation`] clones an `Arc`, not the messages), so
//! a long history is never copied or moved per step, and nothing has to be put back.

use std::ops::Range;
use std::sync::Arc;

use tackle_protocol::Message;

use crate::conversation::{Conversation, InvalidConversation};

/// A session's messages with their store sequence numbers (`None` for messages made by
/// compaction or repair, which are not stored rows) and token counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    messages: Arc<Vec<Message>>,
    seqs: Vec<Option<i64>>,
    tokens: Vec<u64>,
    /// Every message of the session since its start is here (nothing summarized, dropped or
    /// repaired away), so every tool call it ever made is too.
    complete: bool,
}

impl History {
    /// A history from `(message, seq, tokens)` entries.
    pub(crate) fn from_entries(entries: impl IntoIterator<Item = (Message, Option<i64>, u64)>) -> Self {
        let mut history = Self { complete: true, ..Self::default() };
        let messages = Arc::make_mut(&mut history.messages);
        for (message, seq, tokens) in entries {
            messages.push(message);
            // Messages made by compaction (from a snapshot) are not stored rows.
            history.complete &= seq.is_some();
            history.seqs.push(seq);
            history.tokens.push(tokens);
        }
        history
    }

    /// The messages.
    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Whether every message since the session started is here (no compaction or repair).
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Token counts, one per message.
    pub(crate) fn tokens(&self) -> &[u64] {
        &self.tokens
    }

    /// Tokens of all messages.
    pub(crate) fn total_tokens(&self) -> u64 {
        self.tokens.iter().sum()
    }

    /// Appends a message (already committed as row `seq`, if stored) counted as `tokens`.
    pub(crate) fn push(&mut self, message: Message, seq: Option<i64>, tokens: u64) {
        Arc::make_mut(&mut self.messages).push(message);
        self.seqs.push(seq);
        self.tokens.push(tokens);
    }

    /// Store sequence numbers of the stored messages in `range`.
    pub(crate) fn seqs_in(&self, range: Range<usize>) -> Vec<i64> {
        let end = range.end.min(self.seqs.len());
        let start = range.start.min(end);
        self.seqs[start..end].iter().flatten().copied().collect()
    }

    /// The messages as a [`Conversation`], if they are valid (shared, not copied).
    pub(crate) fn conversation(&self) -> Result<Conversation, InvalidConversation> {
        Conversation::shared(Arc::clone(&self.messages))
    }

    /// Takes `conversation` in place of the messages, as `change` made it from them, keeping
    /// the store sequence numbers of the messages it kept where they were (counted by `count`).
    pub(crate) fn adopt(
        &mut self,
        conversation: Conversation,
        change: Change,
        count: impl Fn(&Message) -> u64,
    ) {
        let messages = conversation.lend();
        match change {
            // Cleared results: the same messages at the same positions.
            Change::InPlace if messages.len() == self.seqs.len() => {}
            Change::PrefixReplaced { len } if messages.len() + len == self.seqs.len() + 1 => {
                self.seqs.splice(0..len, std::iter::once(None));
                self.complete = false;
            }
            // Repaired (or a change that does not fit its description): positions no longer
            // match stored rows.
            _ => {
                self.seqs = vec![None; messages.len()];
                self.complete = false;
            }
        }
        self.tokens = messages.iter().map(count).collect();
        self.messages = messages;
    }
}

/// How a [`Conversation`] given to [`History::adopt`] was made from the history's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Messages edited in place (tool results cleared): positions kept.
    InPlace,
    /// The first `len` messages replaced by one (a summary, a removal note).
    PrefixReplaced {
        /// Messages replaced.
        len: usize,
    },
    /// Rebuilt by repairs: positions no longer match stored rows.
    Repaired,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len_count(m: &Message) -> u64 {
        m.text().len() as u64
    }

    #[test]
    fn entries_stay_in_step_through_every_change() {
        let mut h = History::from_entries([
            (Message::user("a"), Some(1), 1),
            (Message::assistant("bb"), Some(2), 2),
            (Message::user("ccc"), Some(3), 3),
        ]);
        let lent = h.conversation().unwrap().lend();
        h.push(Message::assistant("dddd"), Some(4), 4);
        assert_eq!(lent.len(), 3, "a lent request keeps what it was given");
        assert_eq!((h.len(), h.total_tokens()), (4, 10));
        assert!(h.is_complete());
        let conversation = h.conversation().unwrap();
        let prefix = conversation.prefix(h.tokens(), 2, 2).unwrap();
        let summarized = conversation.replace_prefix(&prefix, "summary".into()).unwrap();
        h.adopt(summarized, Change::PrefixReplaced { len: prefix.len() }, len_count);
        assert!(!h.is_complete(), "summarized messages are gone from memory");
        assert_eq!(h.messages()[0].text(), "summary");
        assert_eq!(h.tokens(), [7, 3, 4]);
        assert_eq!(h.seqs_in(0..3), [3, 4], "the summary is not a stored row");
        h.adopt(h.conversation().unwrap(), Change::InPlace, len_count);
        assert_eq!(h.seqs_in(0..3), [3, 4], "edits in place keep the rows");
        let (repaired, _) = Conversation::repair(&[Message::assistant("x")]);
        h.adopt(repaired, Change::Repaired, len_count);
        assert_eq!((h.len(), h.total_tokens(), h.seqs_in(0..2)), (2, 25, vec![]));
    }
}
