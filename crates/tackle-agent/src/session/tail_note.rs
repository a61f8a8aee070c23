//! Runtime notes appended at the tail of the conversation: never in the system prompt, never an
//! edit of earlier messages, so the cached prefix stays byte-identical.

use tackle_protocol::Message;

/// Prefix of every runtime note, as the base prompt tells the model.
pub const NOTE_PREFIX: &str = "[runtime note]";

/// Prefix of state notes (as opposed to one-off reminders).
pub const STATE_PREFIX: &str = "[runtime note] Current state:";

/// The note saying the state is back to "all tools, no todos".
pub const RESET_NOTE: &str = "[runtime note] Current state: all tools are available; no open todo items.";

/// Parts of the state a tail note reports. Rendered in a fixed order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailState {
    /// Callable tools when not all tools are (stated only then).
    pub active_tools: Option<Vec<String>>,
    /// Open todo items (`id. text`).
    pub open_todos: Vec<String>,
    /// Other lines contributed by extensions (skills, deferred tools found by search, ...).
    pub extra: Vec<String>,
}

impl TailState {
    /// The note text, or `None` when there is nothing to state.
    pub fn render(&self) -> Option<String> {
        let mut lines = Vec::new();
        if let Some(active) = &self.active_tools {
            if active.is_empty() {
                lines.push("No tools are available in this step; answer in text.".to_owned());
            } else {
                lines.push(format!(
                    "Tools available in this step: {}. Other tools are defined but refused.",
                    active.join(", ")
                ));
            }
        }
        if !self.open_todos.is_empty() {
            lines.push(format!(
                "Open todo items:\n{}",
                self.open_todos.iter().map(|t| format!("- {t}")).collect::<Vec<_>>().join("\n")
            ));
        }
        lines.extend(self.extra.iter().cloned());
        if lines.is_empty() {
            return None;
        }
        Some(format!("{STATE_PREFIX}\n{}", lines.join("\n")))
    }
}

/// Decides when a note is due: only when what it says changed since the last note, so history
/// grows by a note per change rather than per step.
#[derive(Debug, Default)]
pub struct TailNotes {
    last: Option<String>,
}

impl TailNotes {
    /// Starts from the last note found in `history` (so a resumed session does not repeat it).
    pub fn from_history(history: &[Message]) -> Self {
        let last = history.iter().rev().map(Message::text).find(|t| t.starts_with(STATE_PREFIX));
        Self { last: last.filter(|t| t != RESET_NOTE) }
    }

    /// The note to append for `state`, if it differs from the last one.
    pub fn next(&mut self, state: &TailState) -> Option<Message> {
        let text = state.render();
        match (&text, &self.last) {
            (None, None) => None,
            (Some(t), Some(l)) if t == l => None,
            (None, Some(_)) => {
                // The state went back to "nothing to say": say so once, so the model does not
                // act on a stale list.
                self.last = None;
                Some(Message::user(RESET_NOTE))
            }
            (Some(t), _) => {
                self.last = Some(t.clone());
                Some(Message::user(t.clone()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_only_when_the_state_changes() {
        let mut notes = TailNotes::default();
        assert_eq!(notes.next(&TailState::default()), None);
        let masked = TailState { active_tools: Some(vec!["read_file".into()]), ..TailState::default() };
        let first = notes.next(&masked).unwrap();
        assert!(first.text().starts_with(STATE_PREFIX));
        assert!(first.text().contains("read_file"));
        assert_eq!(notes.next(&masked), None, "same state, no new note");
        assert_eq!(notes.next(&TailState::default()).unwrap().text(), RESET_NOTE);
        assert_eq!(notes.next(&TailState::default()), None);
    }

    #[test]
    fn resumed_sessions_remember_the_last_note() {
        let state = TailState { open_todos: vec!["1. write tests".into()], ..TailState::default() };
        let note = TailNotes::default().next(&state).unwrap();
        let history = vec![Message::user("hi"), note, Message::assistant("ok")];
        let mut notes = TailNotes::from_history(&history);
        assert_eq!(notes.next(&state), None);
        let mut notes = TailNotes::from_history(&[Message::user(RESET_NOTE)]);
        assert_eq!(notes.next(&TailState::default()), None);
    }
}
