//! [`History`]: the conversation as the model sees it, each message with its store sequence
//! number and its token count, kept in step by construction.
//!
//! Requests borrow the messages ([`History::lend`] clones an `Arc`, not the conversation), so
//! a long history is never copied or moved per step, and nothing has to be put back.

use std::ops::Range;
use std::sync::Arc;

use tackle_protocol::Message;

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

    /// The messages for a request: shared, not copied. Appending to the history afterwards
    /// copies only if the request is still alive.
    pub(crate) fn lend(&self) -> Arc<Vec<Message>> {
        self.messages.clone()
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

    /// Replaces the messages in `range` (a prefix being compacted) with one `message` that is
    /// not a stored row.
    pub(crate) fn replace_range(&mut self, range: Range<usize>, message: Message, tokens: u64) {
        let start = range.start.min(self.len());
        let end = range.end.clamp(start, self.len());
        Arc::make_mut(&mut self.messages).splice(start..end, std::iter::once(message));
        self.complete = false;
        self.seqs.splice(start..end, std::iter::once(None));
        self.tokens.splice(start..end, std::iter::once(tokens));
    }

    /// Edits messages in place (cleared tool results keep their rows) and recounts them.
    pub(crate) fn edit(&mut self, edit: impl FnOnce(&mut Vec<Message>), count: impl Fn(&Message) -> u64) {
        let messages = Arc::make_mut(&mut self.messages);
        edit(messages);
        self.seqs.resize(messages.len(), None);
        self.tokens = messages.iter().map(count).collect();
    }

    /// Replaces the whole conversation with a repaired one whose positions no longer match
    /// stored rows.
    pub(crate) fn replace_all(&mut self, messages: Vec<Message>, count: impl Fn(&Message) -> u64) {
        self.tokens = messages.iter().map(count).collect();
        self.seqs = vec![None; messages.len()];
        self.complete = false;
        self.messages = Arc::new(messages);
    }
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
        let lent = h.lend();
        h.push(Message::assistant("dddd"), Some(4), 4);
        assert_eq!(lent.len(), 3, "a lent request keeps what it was given");
        assert_eq!((h.len(), h.total_tokens()), (4, 10));
        assert!(h.is_complete());
        h.replace_range(0..2, Message::user("summary"), 7);
        assert!(!h.is_complete(), "summarized messages are gone from memory");
        assert_eq!(h.messages()[0].text(), "summary");
        assert_eq!(h.tokens(), [7, 3, 4]);
        assert_eq!(h.seqs_in(0..3), [3, 4], "the summary is not a stored row");
        h.edit(|m| m.truncate(2), len_count);
        assert_eq!((h.len(), h.tokens().len(), h.seqs_in(0..9)), (2, 2, vec![3]));
        h.replace_all(vec![Message::user("x")], len_count);
        assert_eq!((h.len(), h.total_tokens(), h.seqs_in(0..1)), (1, 1, vec![]));
    }
}
