//! [`LiveView`]: a turn as one message that is edited while it runs: a status line per tool
//! call (`shell ls -la` → `ok 24 lines`), the text the model wrote before its calls in its place
//! among them, and the answer as it streams. Pure: it folds
//! [`AgentEvent`]s and renders a [`Document`] that fits one message.

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolCallId, ToolOutcome};

use crate::rich::{Block, Document, Span, units};

/// Longest tool label shown, in characters.
const LABEL_CHARS: usize = 80;
/// Longest error shown on a status line, in characters.
const ERROR_CHARS: usize = 120;
/// Longest text of the model shown before its tool calls, in characters.
const TEXT_CHARS: usize = 600;

#[derive(Debug, Clone, PartialEq, Eq)]
enum LineState {
    Running,
    Waiting,
    Ok(String),
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ToolLine {
    call_id: ToolCallId,
    label: String,
    state: LineState,
}

/// One line of a turn's status, in the order things happened.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A tool call and how it is going.
    Tool(ToolLine),
    /// What the model wrote before its next tool calls ("Let me look around first.").
    Text(String),
    /// A note of the runtime's (a compaction).
    Note(String),
}

/// What one turn looks like so far.
#[derive(Debug, Clone)]
pub struct LiveView {
    entries: Vec<Entry>,
    text: String,
    limit: usize,
}

impl LiveView {
    /// An empty view for messages of at most `limit` visible units.
    pub fn new(limit: usize) -> Self {
        Self { entries: Vec::new(), text: String::new(), limit: limit.max(64) }
    }

    fn tools_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut ToolLine> {
        self.entries.iter_mut().filter_map(|e| match e {
            Entry::Tool(line) => Some(line),
            _ => None,
        })
    }

    /// Folds one event in; true when what is shown changed.
    pub fn apply(&mut self, event: &AgentEvent) -> bool {
        match event {
            AgentEvent::StepStarted { .. } => {
                let had = !self.text.is_empty();
                self.text.clear();
                had
            }
            AgentEvent::TextDelta { text } => {
                self.text.push_str(text);
                !text.is_empty()
            }
            AgentEvent::ToolCall { id, name, args } => {
                // The text streamed so far leads to this call: it stays, above it.
                let said = std::mem::take(&mut self.text);
                if !said.trim().is_empty() {
                    self.entries.push(Entry::Text(clip(said.trim(), TEXT_CHARS)));
                }
                self.entries.push(Entry::Tool(ToolLine {
                    call_id: id.clone(),
                    label: tool_label(name, args),
                    state: LineState::Running,
                }));
                true
            }
            AgentEvent::ApprovalRequested { call_id, .. } => self.set(call_id, LineState::Waiting),
            AgentEvent::ApprovalResolved { approved: true, .. } => {
                // Back to running; the call id is not in this event, but only one call waits at a time.
                match self.tools_mut().rev().find(|l| l.state == LineState::Waiting) {
                    Some(line) => {
                        line.state = LineState::Running;
                        true
                    }
                    None => false,
                }
            }
            AgentEvent::ToolResult { id, outcome, lines, bytes, .. } => {
                let state = match outcome {
                    ToolOutcome::Ok { .. } => LineState::Ok(ok_summary(*lines, *bytes)),
                    ToolOutcome::Error { envelope } => {
                        LineState::Failed(first_line(&envelope.message, ERROR_CHARS))
                    }
                };
                self.set(id, state)
            }
            AgentEvent::ContextCompacted { tokens_before, tokens_after, .. } => {
                self.entries
                    .push(Entry::Note(format!("context compacted: {tokens_before} → {tokens_after} tokens")));
                true
            }
            _ => false,
        }
    }

    fn set(&mut self, call_id: &ToolCallId, state: LineState) -> bool {
        match self.tools_mut().find(|l| &l.call_id == call_id) {
            Some(line) if line.state != state => {
                line.state = state;
                true
            }
            _ => false,
        }
    }

    /// True when any tool was called.
    pub fn has_tools(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, Entry::Tool(_)))
    }

    /// The status lines and the answer streamed so far (its end, if it is long), within the
    /// message limit.
    pub fn render(&self) -> Document {
        let mut doc = self.status();
        let used = doc.visible_len() + if doc.blocks.is_empty() { 0 } else { 2 };
        if !self.text.trim().is_empty() {
            let budget = self.limit.saturating_sub(used).max(16);
            doc.push(Block::Paragraph(vec![Span::plain(tail(self.text.trim(), budget))]));
        }
        doc
    }

    /// The status lines only (what stays once the answer is sent on its own): the calls, and
    /// what the model said before them, within the limit.
    pub fn status(&self) -> Document {
        // At most two thirds of a message for status lines; the oldest go first.
        let budget = self.limit * 2 / 3;
        let rendered: Vec<Vec<Span>> = self
            .entries
            .iter()
            .map(|e| match e {
                Entry::Tool(line) => line_spans(line),
                Entry::Text(text) => vec![Span::plain(text.clone())],
                Entry::Note(note) => vec![Span::italic(note.clone())],
            })
            .collect();
        let mut kept: Vec<Vec<Span>> = Vec::new();
        let mut len = 0;
        for spans in rendered.iter().rev() {
            let l: usize = spans.iter().map(|s| units(&s.text)).sum::<usize>() + 1;
            if len + l > budget.saturating_sub(40) {
                break;
            }
            len += l;
            kept.push(spans.clone());
        }
        let dropped = rendered.len() - kept.len();
        kept.reverse();
        if dropped > 0 {
            kept.insert(0, vec![Span::italic(format!("… {dropped} earlier lines"))]);
        }
        let mut spans = Vec::new();
        for (i, line) in kept.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::plain("\n"));
            }
            spans.extend(line);
        }
        let mut doc = Document::default();
        if !spans.is_empty() {
            doc.push(Block::Paragraph(merge(spans)));
        }
        doc
    }
}

fn line_spans(line: &ToolLine) -> Vec<Span> {
    let (icon, tail) = match &line.state {
        LineState::Running => ("⏳", String::new()),
        LineState::Waiting => ("❓", " → waiting for your approval".to_owned()),
        LineState::Ok(s) => ("✅", format!(" → {s}")),
        LineState::Failed(s) => ("❌", format!(" → {s}")),
    };
    vec![Span::plain(format!("{icon} ")), Span::code(line.label.clone()), Span::plain(tail)]
}

/// Adjacent spans of one style joined.
fn merge(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if last.style == s.style => last.text.push_str(&s.text),
            _ => out.push(s),
        }
    }
    out
}

/// A call as a person reads it: the tool and its main argument (`shell ls -la`,
/// `read_file src/main.rs`), on one line, shortened.
///
/// ```
/// use serde_json::json;
/// assert_eq!(tackle_channels::live::tool_label("shell", &json!({"command": "ls -la"})), "shell ls -la");
/// assert_eq!(tackle_channels::live::tool_label("todo", &json!({"action": "list"})), r#"todo {"action":"list"}"#);
/// ```
pub fn tool_label(name: &str, args: &Value) -> String {
    let main = ["command", "path", "url", "query", "pattern"]
        .iter()
        .find_map(|k| args.get(k).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| match args {
            Value::Object(m) if m.is_empty() => String::new(),
            Value::Null => String::new(),
            other => other.to_string(),
        });
    let label = if main.is_empty() { name.to_owned() } else { format!("{name} {main}") };
    first_line(&label.replace(['\n', '\r'], " "), LABEL_CHARS)
}

fn ok_summary(lines: u64, bytes: u64) -> String {
    match (lines, bytes) {
        (_, 0) => "ok, no output".to_owned(),
        (0 | 1, b) => format!("ok {b} bytes"),
        (n, _) => format!("ok {n} lines"),
    }
}

/// `s` in at most `max` characters (with an ellipsis when cut).
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The first line of `s`, at most `max` characters (with an ellipsis when cut).
fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The end of `s` within `budget` UTF-16 units, with an ellipsis when cut.
fn tail(s: &str, budget: usize) -> String {
    if units(s) <= budget {
        return s.to_owned();
    }
    let mut len = 1;
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        if len + c.len_utf16() > budget {
            break;
        }
        len += c.len_utf16();
        start = i;
    }
    format!("…{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tackle_protocol::{ErrorCategory, ToolError};

    use super::*;

    fn result(id: &str, lines: u64, bytes: u64) -> AgentEvent {
        AgentEvent::ToolResult {
            id: id.into(),
            name: "shell".into(),
            outcome: ToolOutcome::Ok { preview: String::new(), tail: None },
            bytes,
            lines,
            truncated: false,
            locator: None,
            duration_ms: 3,
        }
    }

    #[test]
    fn tool_calls_become_status_lines_and_text_streams_below() {
        let mut v = LiveView::new(4096);
        assert!(v.apply(&AgentEvent::ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            args: json!({"command": "ls -la"})
        }));
        assert_eq!(v.render().plain_text(), "⏳ shell ls -la");
        assert!(v.apply(&result("c1", 24, 900)));
        assert!(!v.apply(&result("c1", 24, 900)), "no change, no edit");
        v.apply(&AgentEvent::ToolCall {
            id: "c2".into(),
            name: "write_file".into(),
            args: json!({"path": "a.txt"}),
        });
        v.apply(&AgentEvent::ApprovalRequested {
            approval_id: "a".into(),
            call_id: "c2".into(),
            tool: "write_file".into(),
            args: json!({}),
        });
        v.apply(&AgentEvent::ToolResult {
            id: "c2".into(),
            name: "write_file".into(),
            outcome: ToolOutcome::Error {
                envelope: ToolError::new(
                    "write_file",
                    ErrorCategory::Denied,
                    "the user denied this call: no\nmore",
                ),
            },
            bytes: 0,
            lines: 0,
            truncated: false,
            locator: None,
            duration_ms: 1,
        });
        v.apply(&AgentEvent::StepStarted { step: 2, max_steps: 5 });
        v.apply(&AgentEvent::TextDelta { text: "Done: ".into() });
        v.apply(&AgentEvent::TextDelta { text: "24 files.".into() });
        assert_eq!(
            v.render().plain_text(),
            "✅ shell ls -la → ok 24 lines\n❌ write_file a.txt → the user denied this call: no\n\nDone: 24 files."
        );
        assert_eq!(v.status().blocks.len(), 1);
        assert!(v.has_tools());
    }

    /// What the model says before its calls stays in the status, in its place; the answer
    /// after the last call streams below.
    #[test]
    fn text_before_a_tool_call_stays_above_it() {
        let mut v = LiveView::new(4096);
        v.apply(&AgentEvent::StepStarted { step: 1, max_steps: 5 });
        v.apply(&AgentEvent::TextDelta { text: "Let me look ".into() });
        v.apply(&AgentEvent::TextDelta { text: "around first.".into() });
        v.apply(&AgentEvent::ToolCall {
            id: "c1".into(),
            name: "list_files".into(),
            args: json!({"path": "."}),
        });
        v.apply(&result("c1", 2, 20));
        v.apply(&AgentEvent::StepStarted { step: 2, max_steps: 5 });
        v.apply(&AgentEvent::TextDelta { text: "Now the notes.".into() });
        v.apply(&AgentEvent::ToolCall {
            id: "c2".into(),
            name: "read_file".into(),
            args: json!({"path": "n.md"}),
        });
        v.apply(&result("c2", 1, 5));
        v.apply(&AgentEvent::StepStarted { step: 3, max_steps: 5 });
        v.apply(&AgentEvent::TextDelta { text: "Two files.".into() });
        assert_eq!(
            v.status().plain_text(),
            "Let me look around first.\n✅ list_files . → ok 2 lines\nNow the notes.\n✅ read_file n.md → ok 5 bytes"
        );
        assert!(v.render().plain_text().ends_with("✅ read_file n.md → ok 5 bytes\n\nTwo files."));
    }

    #[test]
    fn a_long_turn_still_fits_one_message() {
        let mut v = LiveView::new(500);
        for i in 0..200 {
            v.apply(&AgentEvent::ToolCall {
                id: format!("c{i}").into(),
                name: "shell".into(),
                args: json!({"command": "x".repeat(300)}),
            });
            v.apply(&result(&format!("c{i}"), 3, 10));
        }
        v.apply(&AgentEvent::TextDelta { text: "y".repeat(10_000) });
        let doc = v.render();
        assert!(doc.visible_len() <= 500, "{}", doc.visible_len());
        let text = doc.plain_text();
        assert!(text.starts_with("… ") && text.contains("earlier lines"), "{text}");
        assert!(text.ends_with("yyyy") && text.contains('…'));
    }
}
