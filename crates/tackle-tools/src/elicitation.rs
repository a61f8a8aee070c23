//! Elicitation: a running tool (an MCP server) asks the person behind the turn for input.
//!
//! A tool calls [`elicit`] with a [`Question`]: a form (a flat JSON Schema object of primitive
//! fields) or a URL to visit. What happens is decided per turn, like approvals: the turn's
//! [`ElicitationPolicy`] (in its [`crate::TurnState`]; derived from its [`ApprovalPolicy`] when
//! unset) declines at once, accepts a form's defaults (`--yes`), or asks the turn's
//! [`Elicitor`] (the terminal, the web page, a chat, the sessions API) and waits. The time spent
//! waiting for a person does not count against the call's timeout ([`crate::WaitClock`]).
//!
//! ```
//! use serde_json::json;
//! use tackle_tools::elicitation::{form_defaults, missing_required};
//! let schema = json!({"type": "object", "properties": {
//!     "name": {"type": "string", "default": "Ada"},
//!     "age": {"type": "integer"}}, "required": ["name", "age"]});
//! assert_eq!(form_defaults(&schema), json!({"name": "Ada"}));
//! assert_eq!(missing_required(&schema, &form_defaults(&schema)), ["age"]);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tackle_protocol::{AgentEvent, ElicitationId, SessionId, ToolCallId};
use tokio::sync::oneshot;

use crate::{ApprovalPolicy, ToolContext};

/// What a question asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationKind {
    /// A form: `schema` is a JSON Schema object whose properties are strings (optionally with
    /// `format`, `enum` or `oneOf` choices), numbers, integers, booleans or arrays of choices.
    Form {
        /// The form's schema.
        schema: Value,
    },
    /// A page the person opens (to sign in somewhere, pay, consent); nothing is sent back but
    /// whether they agreed.
    Url {
        /// The page.
        url: String,
    },
}

/// A question waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationRequest {
    /// Elicitation id (UUIDv7).
    pub id: ElicitationId,
    /// Session of the call.
    pub session_id: SessionId,
    /// The call that asks.
    pub call_id: ToolCallId,
    /// Tool name of the call.
    pub tool: String,
    /// Who asks (the MCP server's name).
    pub server: String,
    /// The question.
    pub message: String,
    /// Form or URL.
    #[serde(flatten)]
    pub kind: ElicitationKind,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ElicitationAnswer {
    /// Accepted: for a form, the fields (an object); for a URL, `{}`.
    Accept {
        /// The filled-in form.
        #[serde(default = "empty_object")]
        content: Value,
    },
    /// Declined: the tool goes on without the input.
    Decline {
        /// Why (shown to the model, never sent to the server).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Cancelled: the person stopped the whole operation.
    Cancel,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ElicitationAnswer {
    /// Declines with a reason the model is told.
    pub fn decline(reason: impl Into<String>) -> Self {
        Self::Decline { reason: Some(reason.into()) }
    }

    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept { .. } => "accept",
            Self::Decline { .. } => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// Asks a person and waits for the answer (a terminal form, the web page, a chat).
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// The answer to `request`; a front end that cannot show it declines with a reason.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// The elicitor of a turn, kept in its [`crate::TurnState`].
#[derive(Clone)]
pub struct TurnElicitor(pub Arc<dyn Elicitor>);

impl fmt::Debug for TurnElicitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TurnElicitor")
    }
}

/// What happens to a question in a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElicitationPolicy {
    /// Decline at once; the reason is shown to the model.
    Decline(String),
    /// Accept a form filled with its defaults when every required field has one; decline
    /// otherwise (`tackle run --yes`).
    Defaults,
    /// Ask the turn's elicitor and wait at most this long (`None`: as long as it takes); no
    /// answer in time cancels.
    Ask(Option<Duration>),
}

impl ElicitationPolicy {
    /// The policy that matches a turn's approval policy: `deny` declines (nobody can answer),
    /// `auto` takes defaults, `wait` asks with the same timeout, none asks without one.
    pub fn from_approvals(approval: Option<ApprovalPolicy>) -> Self {
        match approval {
            None => Self::Ask(None),
            Some(ApprovalPolicy::Deny) => Self::Decline(
                "the MCP server asked the user a question, and nobody can answer questions here".to_owned(),
            ),
            Some(ApprovalPolicy::Auto) => Self::Defaults,
            Some(ApprovalPolicy::Wait(timeout)) => Self::Ask(Some(timeout)),
        }
    }
}

/// A question a tool asks through [`elicit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Tool name of the asking call.
    pub tool: String,
    /// Who asks (the MCP server's name).
    pub server: String,
    /// The question.
    pub message: String,
    /// Form or URL.
    pub kind: ElicitationKind,
}

/// Asks the person behind the call's turn, as the turn's policy says, and returns the answer:
/// an accepted form is complete (defaults filled in) and valid against its schema, or the
/// answer is a decline with the reason.
pub async fn elicit(ctx: &ToolContext, question: Question) -> ElicitationAnswer {
    let policy = ctx
        .turn
        .get::<ElicitationPolicy>()
        .unwrap_or_else(|| ElicitationPolicy::from_approvals(ctx.turn.get::<ApprovalPolicy>()));
    let schema = match &question.kind {
        ElicitationKind::Form { schema } => Some(schema.clone()),
        ElicitationKind::Url { .. } => None,
    };
    if let Some(schema) = &schema
        && let Err(problem) = check_form_schema(schema)
    {
        return ElicitationAnswer::decline(format!("the server's form cannot be shown: {problem}"));
    }
    let timeout = match policy {
        ElicitationPolicy::Decline(reason) => return ElicitationAnswer::decline(reason),
        ElicitationPolicy::Defaults => return answer_with_defaults(&question),
        ElicitationPolicy::Ask(timeout) => timeout,
    };
    let Some(TurnElicitor(elicitor)) = ctx.turn.get::<TurnElicitor>() else {
        return ElicitationAnswer::decline(
            "the MCP server asked the user a question, and this front end cannot show questions",
        );
    };
    let request = ElicitationRequest {
        id: ElicitationId::new(uuid::Uuid::now_v7().to_string()),
        session_id: ctx.session_id.clone(),
        call_id: ctx.call_id.clone(),
        tool: question.tool.clone(),
        server: question.server.clone(),
        message: question.message.clone(),
        kind: question.kind.clone(),
    };
    let id = request.id.clone();
    let (mode, url) = match &question.kind {
        ElicitationKind::Form { .. } => ("form", None),
        ElicitationKind::Url { url } => ("url", Some(url.clone())),
    };
    ctx.events.emit(AgentEvent::ElicitationRequested {
        elicitation_id: id.clone(),
        call_id: ctx.call_id.clone(),
        tool: question.tool.clone(),
        server: question.server.clone(),
        message: question.message.clone(),
        mode: mode.to_owned(),
        schema: schema.clone(),
        url,
    });
    let _paused = ctx.wait_clock.pause();
    let asked = elicitor.elicit(request);
    let answer = tokio::select! {
        answer = asked => answer,
        _ = ctx.cancel.cancelled() => ElicitationAnswer::Cancel,
        _ = sleep_or_forever(timeout) => ElicitationAnswer::decline(format!(
            "nobody answered the server's question within {}s",
            timeout.map_or(0, |t| t.as_secs())
        )),
    };
    let answer = match (answer, &schema) {
        (ElicitationAnswer::Accept { content }, Some(schema)) => {
            let content = apply_defaults(schema, content);
            match validate_form(schema, &content) {
                Ok(()) => ElicitationAnswer::Accept { content },
                Err(problem) => {
                    ElicitationAnswer::decline(format!("the answer did not fit the form: {problem}"))
                }
            }
        }
        (ElicitationAnswer::Accept { .. }, None) => ElicitationAnswer::Accept { content: empty_object() },
        (other, _) => other,
    };
    ctx.events
        .emit(AgentEvent::ElicitationResolved { elicitation_id: id, action: answer.action().to_owned() });
    answer
}

async fn sleep_or_forever(timeout: Option<Duration>) {
    match timeout {
        Some(t) => tokio::time::sleep(t).await,
        None => std::future::pending().await,
    }
}

/// `--yes`: a form every required field of which has a default is accepted with its defaults.
fn answer_with_defaults(question: &Question) -> ElicitationAnswer {
    match &question.kind {
        ElicitationKind::Url { url } => ElicitationAnswer::decline(format!(
            "the MCP server asked the user to open {url}, and nobody can open it in an unattended run"
        )),
        ElicitationKind::Form { schema } => {
            let content = form_defaults(schema);
            let missing = missing_required(schema, &content);
            if !missing.is_empty() {
                return ElicitationAnswer::decline(format!(
                    "the MCP server asked for {} without defaults, and nobody can answer in this unattended run",
                    missing.join(", ")
                ));
            }
            match validate_form(schema, &content) {
                Ok(()) => ElicitationAnswer::Accept { content },
                Err(problem) => {
                    ElicitationAnswer::decline(format!("the form's defaults are invalid: {problem}"))
                }
            }
        }
    }
}

/// The properties of a form schema, in order.
pub fn form_fields(schema: &Value) -> Vec<(&str, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// The required field names of a form schema.
pub fn required_fields(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The form's defaults: every field with a `default`, as an object.
pub fn form_defaults(schema: &Value) -> Value {
    let defaults: Map<String, Value> = form_fields(schema)
        .into_iter()
        .filter_map(|(name, field)| field.get("default").map(|d| (name.to_owned(), d.clone())))
        .collect();
    Value::Object(defaults)
}

/// `content` with the defaults of the fields it leaves out filled in (an answer that is not an
/// object is returned as is, for validation to refuse).
pub fn apply_defaults(schema: &Value, content: Value) -> Value {
    let Value::Object(mut fields) = content else { return content };
    for (name, field) in form_fields(schema) {
        if let Some(default) = field.get("default")
            && !fields.contains_key(name)
        {
            fields.insert(name.to_owned(), default.clone());
        }
    }
    Value::Object(fields)
}

/// Required fields `content` lacks.
pub fn missing_required(schema: &Value, content: &Value) -> Vec<String> {
    required_fields(schema)
        .into_iter()
        .filter(|name| content.get(name).is_none())
        .map(str::to_owned)
        .collect()
}

/// Why a form cannot be shown, or why an answer does not fit it. The messages are shown to
/// the person answering (a terminal form re-asks) and to the model (a declined question).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// A form's schema must be an object of primitive fields.
    #[error("the schema is not an object")]
    SchemaNotObject,
    /// A list field must offer its choices (`items.enum` or `items.anyOf`).
    #[error("field `{field}` is a list without choices")]
    ListWithoutChoices {
        /// The field's name.
        field: String,
    },
    /// A field of a type a form cannot ask for (`None`: no type and no choices).
    #[error("field `{field}` has the unsupported type {kind:?}")]
    UnsupportedFieldType {
        /// The field's name.
        field: String,
        /// Its `type`, if it has one.
        kind: Option<String>,
    },
    /// The schema itself does not compile (`of` is `form` or `field`).
    #[error("the {of}'s schema is invalid: {reason}")]
    InvalidSchema {
        /// `form` or `field`.
        of: &'static str,
        /// What the JSON Schema compiler said.
        reason: String,
    },
    /// A form's answer must be an object of fields.
    #[error("the answer is not an object")]
    AnswerNotObject,
    /// The answer breaks the schema: one problem per field, `field: problem`.
    #[error("{}", .0.join("; "))]
    DoesNotFit(Vec<String>),
    /// A yes/no field got something else.
    #[error("answer yes or no")]
    NotYesOrNo,
    /// An integer field got something else.
    #[error("enter a whole number")]
    NotInteger,
    /// A number field got something else (or a number JSON cannot hold).
    #[error("enter a number")]
    NotNumber,
    /// A choice field got neither a choice's number nor its value or label.
    #[error("choose one of: {}", .0.join(", "))]
    NotAChoice(Vec<String>),
}

/// Refuses schemas a form cannot be built from: not an object of primitive fields.
pub fn check_form_schema(schema: &Value) -> Result<(), FormError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(FormError::SchemaNotObject);
    }
    for (name, field) in form_fields(schema) {
        let kind = field.get("type").and_then(Value::as_str);
        let choices =
            field.get("enum").is_some() || field.get("oneOf").is_some() || field.get("anyOf").is_some();
        match kind {
            Some("string" | "number" | "integer" | "boolean") => {}
            Some("array") => {
                let items = field.get("items");
                let has_choices = items.is_some_and(|i| i.get("enum").is_some() || i.get("anyOf").is_some());
                if !has_choices {
                    return Err(FormError::ListWithoutChoices { field: name.to_owned() });
                }
            }
            None if choices => {}
            other => {
                return Err(FormError::UnsupportedFieldType {
                    field: name.to_owned(),
                    kind: other.map(str::to_owned),
                });
            }
        }
    }
    Ok(())
}

/// Checks a filled-in form against its schema (JSON Schema, formats included).
pub fn validate_form(schema: &Value, content: &Value) -> Result<(), FormError> {
    if !content.is_object() {
        return Err(FormError::AnswerNotObject);
    }
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| FormError::InvalidSchema { of: "form", reason: e.to_string() })?;
    let problems: Vec<String> = validator
        .iter_errors(content)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() { e.to_string() } else { format!("{}: {e}", at.trim_start_matches('/')) }
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(FormError::DoesNotFit(problems)) }
}

/// Checks one field's value against the field's schema (a terminal form re-asks on failure).
pub fn validate_field(field_schema: &Value, value: &Value) -> Result<(), FormError> {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(field_schema)
        .map_err(|e| FormError::InvalidSchema { of: "field", reason: e.to_string() })?;
    let problems: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    if problems.is_empty() { Ok(()) } else { Err(FormError::DoesNotFit(problems)) }
}

/// The choices of a single-choice field: `(value, label)` from `enum` (with the legacy
/// `enumNames`) or `oneOf`/`anyOf` of `{const, title}`.
pub fn field_choices(field: &Value) -> Vec<(Value, String)> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
                (v.clone(), label)
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = field.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .filter_map(|o| {
                    let value = o.get("const")?.clone();
                    let label =
                        o.get("title").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| {
                            value.as_str().map(str::to_owned).unwrap_or_else(|| value.to_string())
                        });
                    Some((value, label))
                })
                .collect();
        }
    }
    Vec::new()
}

/// Parses what a person typed for a field into a value of the field's type (`yes`/`no` for
/// booleans, numbers, a choice by number or value, comma-separated choices for lists).
pub fn parse_field_input(field: &Value, text: &str) -> Result<Value, FormError> {
    let text = text.trim();
    let choices = field_choices(field);
    if !choices.is_empty() {
        return pick_choice(&choices, text);
    }
    match field.get("type").and_then(Value::as_str) {
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" | "on" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" | "off" => Ok(Value::Bool(false)),
            _ => Err(FormError::NotYesOrNo),
        },
        Some("integer") => text.parse::<i64>().map(Value::from).map_err(|_| FormError::NotInteger),
        Some("number") => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => {
                serde_json::Number::from_f64(n).map(Value::Number).ok_or(FormError::NotNumber)
            }
            _ => Err(FormError::NotNumber),
        },
        Some("array") => {
            let items = field.get("items").cloned().unwrap_or(Value::Null);
            let choices = field_choices(&items);
            let choices = if choices.is_empty() {
                items.get("anyOf").map(|_| field_choices(&items)).unwrap_or_default()
            } else {
                choices
            };
            text.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| pick_choice(&choices, t))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        _ => Ok(Value::String(text.to_owned())),
    }
}

fn pick_choice(choices: &[(Value, String)], text: &str) -> Result<Value, FormError> {
    if let Ok(n) = text.parse::<usize>()
        && (1..=choices.len()).contains(&n)
    {
        return Ok(choices[n - 1].0.clone());
    }
    choices
        .iter()
        .find(|(value, label)| value.as_str() == Some(text) || label.eq_ignore_ascii_case(text))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| {
            FormError::NotAChoice(
                choices.iter().enumerate().map(|(i, (_, l))| format!("{} {l}", i + 1)).collect(),
            )
        })
}

/// Why an answer could not be recorded.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ElicitationError {
    /// No pending question has this id.
    #[error("no pending question {0}; list the pending questions to see the ids")]
    NotFound(String),
}

struct Pending {
    request: ElicitationRequest,
    reply: oneshot::Sender<ElicitationAnswer>,
}

/// Pending questions that people answer later (the server's routes, the web page, a chat),
/// like [`crate::ApprovalQueue`] for approvals. The asking call resumes when answered.
#[derive(Clone, Default)]
pub struct ElicitationQueue {
    pending: Arc<Mutex<HashMap<ElicitationId, Pending>>>,
    order: Arc<Mutex<Vec<ElicitationId>>>,
}

impl fmt::Debug for ElicitationQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElicitationQueue").field("pending", &self.pending(None).len()).finish()
    }
}

impl ElicitationQueue {
    /// Pending questions, oldest first, optionally of one session.
    pub fn pending(&self, session_id: Option<&str>) -> Vec<ElicitationRequest> {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|id| pending.get(id))
            .filter(|p| session_id.is_none_or(|s| p.request.session_id == s))
            .map(|p| p.request.clone())
            .collect()
    }

    /// The pending question `id`.
    pub fn get(&self, id: &str) -> Option<ElicitationRequest> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).get(id).map(|p| p.request.clone())
    }

    /// Answers the question `id`; the asking call resumes.
    pub fn answer(&self, id: &str, answer: ElicitationAnswer) -> Result<(), ElicitationError> {
        let entry = self.remove(id).ok_or_else(|| ElicitationError::NotFound(id.to_owned()))?;
        let _ = entry.reply.send(answer);
        Ok(())
    }

    fn remove(&self, id: &str) -> Option<Pending> {
        let entry = self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        self.order.lock().unwrap_or_else(|p| p.into_inner()).retain(|i| i.as_str() != id);
        entry
    }
}

struct PendingGuard<'a> {
    queue: &'a ElicitationQueue,
    id: ElicitationId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.queue.remove(&self.id);
    }
}

#[async_trait]
impl Elicitor for ElicitationQueue {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let (reply, rx) = oneshot::channel();
        let id = request.id.clone();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Pending { request, reply });
        self.order.lock().unwrap_or_else(|p| p.into_inner()).push(id.clone());
        let _guard = PendingGuard { queue: self, id };
        rx.await.unwrap_or(ElicitationAnswer::Cancel)
    }
}

#[cfg(test)]
#[path = "elicitation_tests.rs"]
mod tests;
