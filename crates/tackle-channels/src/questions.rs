//! [`Dialog`]: an MCP server's question (elicitation) asked in a chat, one step at a time. A
//! form is asked field by field: single choices and yes/no as buttons, anything else as a reply
//! the person writes, checked against the field's schema and asked again with the reason when it
//! does not fit; a default is offered as a button, an optional field can be skipped, and every
//! step can decline or cancel the whole question. A link is shown with a button to open it and
//! one to say it is done. No IO: the hub sends what [`Dialog::question`] returns and feeds
//! presses and replies to [`Dialog::press`] and [`Dialog::reply`].
//!
//! ```
//! use serde_json::json;
//! use tackle_channels::questions::{Dialog, Step};
//! use tackle_tools::ElicitationAnswer;
//! let schema = json!({"type": "object", "properties": {
//!     "size": {"type": "string", "enum": ["S", "M", "L"]},
//!     "qty": {"type": "integer", "minimum": 1, "default": 1}}, "required": ["size"]});
//! let mut d = Dialog::form("019a".into(), "shop", "Your order?", schema);
//! assert_eq!(d.question().buttons[0].len(), 3, "a button per size");
//! assert!(matches!(d.press("c1"), Step::Next(_)));
//! assert!(matches!(d.reply("none"), Step::Retry { .. }), "not a whole number");
//! let Step::Done(answer) = d.reply("3") else { panic!() };
//! assert_eq!(answer, ElicitationAnswer::Accept { content: json!({"size": "M", "qty": 3}) });
//! ```

use serde_json::{Map, Value};
use tackle_protocol::ElicitationId;
use tackle_tools::ElicitationAnswer;
use tackle_tools::elicitation::{
    field_choices, form_fields, parse_field_input, required_fields, validate_field, validate_form,
};

use crate::rich::{Block, Document, Span};
use crate::{Button, ButtonAction, Question};

/// Button codes (see [`ButtonAction::Reply`]).
const DEFAULT: &str = "d";
const SKIP: &str = "s";
const YES: &str = "y";
const NO: &str = "n";
const DONE: &str = "ok";
const DECLINE: &str = "x";
const CANCEL: &str = "q";

/// What an input did to a dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The input was taken (`taken`: how to show the answered step); ask the next step.
    Next(String),
    /// The input does not fit (`reason`); the same step is asked again.
    Retry {
        /// Why, for the person.
        reason: String,
    },
    /// The question is answered (`taken`: how to show the last step).
    Done(ElicitationAnswer),
    /// The input is not for this dialog (a stale button); nothing changed.
    Ignored,
}

#[derive(Debug, Clone)]
enum Kind {
    Form { schema: Value, fields: Vec<(String, Value)>, required: Vec<String>, answers: Map<String, Value> },
    Url { url: String },
}

/// One question of an MCP server, asked in a chat.
#[derive(Debug, Clone)]
pub struct Dialog {
    id: ElicitationId,
    server: String,
    message: String,
    kind: Kind,
    /// The field being asked (forms), or 0.
    step: usize,
}

impl Dialog {
    /// A form question: `schema` is a flat object of primitive fields (already checked by
    /// [`tackle_tools::elicitation::check_form_schema`]).
    pub fn form(id: ElicitationId, server: &str, message: &str, schema: Value) -> Self {
        let fields =
            form_fields(&schema).into_iter().map(|(name, field)| (name.to_owned(), field.clone())).collect();
        let required = required_fields(&schema).into_iter().map(str::to_owned).collect();
        Self {
            id,
            server: server.to_owned(),
            message: message.to_owned(),
            kind: Kind::Form { schema, fields, required, answers: Map::new() },
            step: 0,
        }
    }

    /// A page to open.
    pub fn url(id: ElicitationId, server: &str, message: &str, url: &str) -> Self {
        Self {
            id,
            server: server.to_owned(),
            message: message.to_owned(),
            kind: Kind::Url { url: url.to_owned() },
            step: 0,
        }
    }

    /// The question's id.
    pub fn id(&self) -> &ElicitationId {
        &self.id
    }

    /// The step being asked (button presses of another step are stale).
    pub fn step(&self) -> u32 {
        u32::try_from(self.step).unwrap_or(u32::MAX)
    }

    /// The current step, to show.
    pub fn question(&self) -> Question {
        let mut text = Document::default();
        text.push(Block::Paragraph(vec![
            Span::plain("❓ "),
            Span::bold(&self.server),
            Span::plain(" asks: "),
            Span::plain(&self.message),
        ]));
        let mut buttons = Vec::new();
        match &self.kind {
            Kind::Url { url } => {
                text.push(Block::Paragraph(vec![Span::plain("Open this page: "), Span::code(url)]));
                text.push(Block::Paragraph(vec![Span::italic(
                    "Press Done when you have finished there, or Decline.",
                )]));
                buttons.push(vec![button("🔗 Open", ButtonAction::Open(url.clone()))]);
                buttons.push(vec![reply("✅ Done", DONE)]);
            }
            Kind::Form { fields, required, .. } => match fields.get(self.step) {
                None => {
                    text.push(Block::Paragraph(vec![Span::italic("Nothing to fill in: send it?")]));
                    buttons.push(vec![reply("✅ Send", DONE)]);
                }
                Some((name, field)) => {
                    let is_required = required.iter().any(|r| r == name);
                    let (lines, row) = field_step(name, field, is_required, self.step + 1, fields.len());
                    text.push(Block::Paragraph(lines));
                    buttons.extend(row);
                }
            },
        }
        buttons.push(vec![reply("🚫 Decline", DECLINE), reply("⏹ Cancel", CANCEL)]);
        Question { elicitation_id: self.id.clone(), step: self.step(), text, buttons }
    }

    /// A button of step `step` was pressed.
    pub fn press_at(&mut self, step: u32, code: &str) -> Step {
        if step != self.step() {
            return Step::Ignored;
        }
        self.press(code)
    }

    /// A button of the current step was pressed.
    pub fn press(&mut self, code: &str) -> Step {
        match code {
            DECLINE => return Step::Done(ElicitationAnswer::Decline { reason: None }),
            CANCEL => return Step::Done(ElicitationAnswer::Cancel),
            _ => {}
        }
        let step = self.step;
        match &mut self.kind {
            Kind::Url { .. } if code == DONE => {
                Step::Done(ElicitationAnswer::Accept { content: Value::Object(Map::new()) })
            }
            Kind::Url { .. } => Step::Ignored,
            Kind::Form { fields, required, answers, .. } => {
                let Some((name, field)) = fields.get(step) else {
                    return if code == DONE { self.finish() } else { Step::Ignored };
                };
                let value = match code {
                    DEFAULT => match field.get("default") {
                        Some(d) => Some(d.clone()),
                        None => return Step::Ignored,
                    },
                    SKIP if !required.iter().any(|r| r == name) => None,
                    YES => Some(Value::Bool(true)),
                    NO => Some(Value::Bool(false)),
                    c => match c.strip_prefix('c').and_then(|n| n.parse::<usize>().ok()) {
                        Some(i) => match field_choices(field).into_iter().nth(i) {
                            Some((v, _)) => Some(v),
                            None => return Step::Ignored,
                        },
                        None => return Step::Ignored,
                    },
                };
                if let Some(value) = &value
                    && let Err(reason) = validate_field(field, value)
                {
                    return Step::Retry { reason: reason.to_string() };
                }
                let shown = shown_value(value.as_ref());
                let label = field_label(name, field);
                if let Some(value) = value {
                    answers.insert(name.clone(), value);
                }
                self.advance(format!("{label}: {shown}"))
            }
        }
    }

    /// The person wrote `text` while this dialog was asking.
    pub fn reply(&mut self, text: &str) -> Step {
        let step = self.step;
        let Kind::Form { fields, answers, .. } = &mut self.kind else {
            return Step::Retry {
                reason: "press Done when you have finished on the page, or Decline".into(),
            };
        };
        let Some((name, field)) = fields.get(step) else { return Step::Ignored };
        let value = match parse_field_input(field, text) {
            Ok(v) => v,
            Err(reason) => return Step::Retry { reason: reason.to_string() },
        };
        if let Err(reason) = validate_field(field, &value) {
            return Step::Retry { reason: reason.to_string() };
        }
        let shown = shown_value(Some(&value));
        let label = field_label(name, field);
        answers.insert(name.clone(), value);
        self.advance(format!("{label}: {shown}"))
    }

    fn advance(&mut self, taken: String) -> Step {
        self.step += 1;
        match &self.kind {
            Kind::Form { fields, .. } if self.step >= fields.len() => self.finish(),
            _ => Step::Next(taken),
        }
    }

    /// The filled-in form, checked whole.
    fn finish(&self) -> Step {
        let Kind::Form { schema, answers, .. } = &self.kind else {
            return Step::Ignored;
        };
        let content = Value::Object(answers.clone());
        match validate_form(schema, &content) {
            Ok(()) => Step::Done(ElicitationAnswer::Accept { content }),
            Err(problem) => Step::Done(ElicitationAnswer::decline(format!(
                "the answers given in the chat did not fit the form: {problem}"
            ))),
        }
    }

    /// What was answered so far, one line per field (for the closing message).
    pub fn summary(&self) -> String {
        match &self.kind {
            Kind::Url { url } => url.clone(),
            Kind::Form { fields, answers, .. } => fields
                .iter()
                .filter_map(|(name, field)| {
                    answers
                        .get(name)
                        .map(|v| format!("{}: {}", field_label(name, field), shown_value(Some(v))))
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

fn button(label: impl Into<String>, action: ButtonAction) -> Button {
    Button { label: label.into(), action }
}

fn reply(label: impl Into<String>, code: &str) -> Button {
    button(label, ButtonAction::Reply(code.to_owned()))
}

fn field_label(name: &str, field: &Value) -> String {
    field.get("title").and_then(Value::as_str).unwrap_or(name).to_owned()
}

fn shown_value(value: Option<&Value>) -> String {
    match value {
        None => "(skipped)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "yes".to_owned(),
        Some(Value::Bool(false)) => "no".to_owned(),
        Some(Value::Array(items)) => {
            items.iter().map(|i| shown_value(Some(i))).collect::<Vec<_>>().join(", ")
        }
        Some(other) => other.to_string(),
    }
}

/// The text and buttons of one field.
fn field_step(
    name: &str,
    field: &Value,
    required: bool,
    number: usize,
    of: usize,
) -> (Vec<Span>, Vec<Vec<Button>>) {
    let mut lines = vec![
        Span::bold(field_label(name, field)),
        Span::plain(format!(" ({number} of {of}{})", if required { ", required" } else { "" })),
    ];
    if let Some(description) = field.get("description").and_then(Value::as_str) {
        lines.push(Span::plain(format!("\n{description}")));
    }
    let kind = field.get("type").and_then(Value::as_str);
    let mut rows = Vec::new();
    let choices = field_choices(field);
    let hint = if !choices.is_empty() {
        let per_row = if choices.len() <= 3 { 3 } else { 2 };
        let buttons: Vec<Button> = choices
            .iter()
            .enumerate()
            .map(|(i, (_, label))| reply(label.clone(), &format!("c{i}")))
            .collect();
        rows.extend(buttons.chunks(per_row).map(<[Button]>::to_vec));
        "Choose one, or write its name or number.".to_owned()
    } else if kind == Some("boolean") {
        rows.push(vec![reply("Yes", YES), reply("No", NO)]);
        "Choose Yes or No.".to_owned()
    } else if kind == Some("array") {
        let items = field.get("items").cloned().unwrap_or(Value::Null);
        let names: Vec<String> =
            field_choices(&items).iter().enumerate().map(|(i, (_, l))| format!("{} {l}", i + 1)).collect();
        format!("Write your choices separated by commas (names or numbers): {}.", names.join(", "))
    } else {
        let what = match kind {
            Some("integer") => "a whole number".to_owned(),
            Some("number") => "a number".to_owned(),
            _ => match field.get("format").and_then(Value::as_str) {
                Some(format) => format!("text ({format})"),
                None => "text".to_owned(),
            },
        };
        format!("Reply with {what}.")
    };
    lines.push(Span::italic(format!("\n{hint}")));
    let mut extra = Vec::new();
    if let Some(default) = field.get("default") {
        lines.push(Span::plain(format!("\nDefault: {}", shown_value(Some(default)))));
        extra.push(reply(format!("Use default ({})", truncate(&shown_value(Some(default)), 24)), DEFAULT));
    }
    if !required {
        extra.push(reply("Skip", SKIP));
    }
    if !extra.is_empty() {
        rows.push(extra);
    }
    (lines, rows)
}

fn truncate(text: &str, max: usize) -> String {
    let mut t: String = text.chars().take(max).collect();
    if t.len() < text.len() {
        t.push('…');
    }
    t
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;
