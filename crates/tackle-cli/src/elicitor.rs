//! Answering an MCP server's question at the terminal: the server's message, then one line per
//! form field (its title, description, choices and default; each answer checked against the
//! field's schema and asked again when it does not fit), or the page to open for a URL
//! question. Ctrl-C at the question cancels the turn, like at an approval.

use std::io::Write;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tackle_tools::elicitation::{
    field_choices, form_fields, parse_field_input, required_fields, validate_field,
};
use tackle_tools::{ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicitor};
use tokio_util::sync::CancellationToken;

use crate::screen::Screen;
use crate::style::{Style, sanitize};
use crate::terminal::{Input, Terminal};

/// Times a field is asked again after an answer that does not fit.
const MAX_TRIES: usize = 5;

/// Asks the person at the terminal.
pub struct TerminalElicitor {
    terminal: Terminal,
    screen: Screen,
    style: Style,
    /// The running turn, cancelled by Ctrl-C at a question.
    turn: Mutex<Option<CancellationToken>>,
}

enum Step<T> {
    Value(T),
    Cancel,
    Decline,
}

impl TerminalElicitor {
    pub fn new(terminal: Terminal, screen: Screen) -> Self {
        Self { terminal, screen, style: Style::stderr(), turn: Mutex::new(None) }
    }

    /// The turn Ctrl-C at a question cancels.
    pub fn set_turn(&self, cancel: CancellationToken) {
        *self.turn.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel);
    }

    fn interrupted(&self) -> ElicitationAnswer {
        eprintln!("{}", self.style.yellow("(cancelling the turn…)"));
        if let Some(turn) = &*self.turn.lock().unwrap_or_else(|p| p.into_inner()) {
            turn.cancel();
        }
        ElicitationAnswer::Cancel
    }

    async fn line(&self, prompt: &str) -> Step<String> {
        match self.terminal.read_line(prompt, false).await {
            // Shift-Tab only ends reads that ask for it; `read_line` never does.
            Input::Line(line) | Input::CycleMode(line) => Step::Value(line),
            Input::Interrupted => Step::Cancel,
            Input::Eof => Step::Decline,
        }
    }

    /// Asks one field until the answer fits; `None`: left empty.
    async fn field(&self, name: &str, field: &Value, required: bool) -> Step<Option<Value>> {
        let s = self.style;
        let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
        let mut label = s.bold(&sanitize(title));
        if let Some(description) = field.get("description").and_then(Value::as_str) {
            label.push_str(&format!(" {}", s.dim(&format!("({})", sanitize(description)))));
        }
        let choices = field_choices(field);
        let items = field.get("items").map(field_choices).unwrap_or_default();
        let shown = if choices.is_empty() { &items } else { &choices };
        if !shown.is_empty() {
            let list: Vec<String> =
                shown.iter().enumerate().map(|(i, (_, l))| format!("{} {}", i + 1, sanitize(l))).collect();
            label.push_str(&format!("\n    {}", list.join("  ")));
            if !items.is_empty() {
                label.push_str(&s.dim("  (several: 1,3)"));
            }
        }
        let kind = field.get("type").and_then(Value::as_str).unwrap_or("");
        let hint = match (kind, field.get("default")) {
            (_, Some(d)) => format!(" [{}]", d.as_str().map(str::to_owned).unwrap_or_else(|| d.to_string())),
            ("boolean", None) => " [yes/no]".to_owned(),
            _ if required => " (required)".to_owned(),
            _ => " (optional, Enter to skip)".to_owned(),
        };
        for _ in 0..MAX_TRIES {
            let prompt = format!("  {label}{hint}: ");
            let text = match self.line(&prompt).await {
                Step::Value(t) => t,
                Step::Cancel => return Step::Cancel,
                Step::Decline => return Step::Decline,
            };
            if text.trim().is_empty() {
                if let Some(default) = field.get("default") {
                    return Step::Value(Some(default.clone()));
                }
                if !required {
                    return Step::Value(None);
                }
                eprintln!("  {}", s.yellow("this field is required"));
                continue;
            }
            let value = match parse_field_input(field, &text) {
                Ok(v) => v,
                Err(problem) => {
                    eprintln!("  {}", s.yellow(&problem.to_string()));
                    continue;
                }
            };
            match validate_field(field, &value) {
                Ok(()) => return Step::Value(Some(value)),
                Err(problem) => eprintln!("  {}", s.yellow(&problem.to_string())),
            }
        }
        Step::Decline
    }
}

#[async_trait]
impl Elicitor for TerminalElicitor {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let s = self.style;
        let _paused = self.screen.pause();
        {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "{} {} asks: {}",
                s.yellow("?"),
                s.bold(&sanitize(&request.server)),
                sanitize(&request.message)
            );
            let _ = err.flush();
        }
        match &request.kind {
            ElicitationKind::Url { url } => {
                eprintln!("  open: {}", sanitize(url));
                let prompt = format!(
                    "  {}one (I visited it) / {}ecline / {}ancel: ",
                    s.bold("[d]"),
                    s.bold("[n] d"),
                    s.bold("[c]")
                );
                match self.line(&prompt).await {
                    Step::Value(line) => match line.trim().to_ascii_lowercase().as_str() {
                        "d" | "done" | "y" | "yes" | "ok" => {
                            ElicitationAnswer::Accept { content: Value::Object(Map::new()) }
                        }
                        "c" | "cancel" => ElicitationAnswer::Cancel,
                        _ => ElicitationAnswer::decline("the user declined to open the page"),
                    },
                    Step::Cancel => self.interrupted(),
                    Step::Decline => ElicitationAnswer::decline("no answer from the user"),
                }
            }
            ElicitationKind::Form { schema } => {
                let prompt =
                    format!("  {}nswer / {}ecline / {}ancel: ", s.bold("[a]"), s.bold("[d]"), s.bold("[c]"));
                match self.line(&prompt).await {
                    Step::Value(line) => match line.trim().to_ascii_lowercase().as_str() {
                        "" | "a" | "answer" | "y" | "yes" => {}
                        "c" | "cancel" => return ElicitationAnswer::Cancel,
                        _ => return ElicitationAnswer::decline("the user declined to answer"),
                    },
                    Step::Cancel => return self.interrupted(),
                    Step::Decline => return ElicitationAnswer::decline("no answer from the user"),
                }
                let required = required_fields(schema);
                let mut content = Map::new();
                for (name, field) in form_fields(schema) {
                    match self.field(name, field, required.contains(&name)).await {
                        Step::Value(Some(v)) => {
                            content.insert(name.to_owned(), v);
                        }
                        Step::Value(None) => {}
                        Step::Cancel => return self.interrupted(),
                        Step::Decline => {
                            return ElicitationAnswer::decline("the user did not finish the form");
                        }
                    }
                }
                ElicitationAnswer::Accept { content: Value::Object(content) }
            }
        }
    }
}
