//! Structured final output: a turn whose final answer must be JSON matching a schema.
//!
//! An [`OutputSchema`] is checked once when built (a JSON Schema object that compiles); a turn
//! given one asks for it natively where the provider can (`Capabilities::native_output_schema`:
//! Chat Completions `response_format`, Responses `text.format`), else offers a final-answer tool
//! whose input schema is the schema and requires a tool call every step (Anthropic `tool_choice:
//! any`, the final-answer tool forced on the last step), so the other tools stay usable before
//! the answer. The answer is validated; an invalid one gets one repair round that shows the
//! model the validation error, and a second fails the turn with
//! [`crate::TurnFailure::OutputInvalid`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::Value;
use tackle_protocol::{
    AllowedToolsMode, ErrorCategory, OutputFormat, ToolChoice, ToolError, ToolResult, ToolSpec, ToolUse,
    is_valid_tool_name,
};
use tackle_tools::ArgsValidator;

/// The name of the tool a provider without native structured output answers through, when no
/// tool the session can reach has it; else the first of `final_answer_2`, `final_answer_3`, ...
/// that none has (the same for the same tools, so a session's requests keep their bytes). The
/// loop never routes a call by this name: the turn's output plan says which call is the answer.
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// Why a schema cannot be a turn's output schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputSchemaError {
    /// The name is not `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("invalid output schema name {0:?}: use 1 to 64 letters, digits, '_' or '-'")]
    Name(String),
    /// The schema is not a JSON object.
    #[error("the output schema must be a JSON Schema object (e.g. {{\"type\": \"object\", ...}}), not {0}")]
    NotAnObject(&'static str),
    /// The schema does not compile.
    #[error("the output schema is not a valid JSON Schema: {0}")]
    Invalid(String),
}

/// Why [`crate::Agent::run_typed`] returned no value.
#[derive(Debug, thiserror::Error)]
pub enum RunTypedError {
    /// The session could not be created or the turn could not run (the store, the workspace).
    #[error(transparent)]
    Agent(#[from] crate::AgentError),
    /// The turn ended without a valid answer (failed, cancelled, at its step limit); the
    /// outcome says how, its `error` why (`output_invalid` when the answer never matched).
    #[error("{}", turn_message(.0))]
    Turn(Box<crate::TurnOutcome>),
    /// The answer matched the schema but not the type (a schema looser than the type's
    /// `Deserialize`).
    #[error("the answer matched the schema but could not be read as the type: {0}")]
    Decode(serde_json::Error),
}

fn turn_message(outcome: &crate::TurnOutcome) -> String {
    match &outcome.error {
        Some(failure) => format!("the turn gave no structured answer: {failure}"),
        None => format!("the turn gave no structured answer (it ended {:?})", outcome.end),
    }
}

/// A JSON Schema a turn's final answer must match, validated once when built.
///
/// ```
/// use serde_json::json;
/// use tackle_agent::OutputSchema;
/// let schema = OutputSchema::new("verdict", json!({
///     "type": "object",
///     "properties": {"ok": {"type": "boolean"}},
///     "required": ["ok"],
///     "additionalProperties": false
/// })).unwrap();
/// assert_eq!(schema.parse(r#"{"ok": true}"#).unwrap(), json!({"ok": true}));
/// assert!(schema.parse(r#"{"ok": "yes"}"#).unwrap_err().contains("/ok"));
/// assert!(OutputSchema::new("bad", json!({"type": 3})).is_err());
/// ```
#[derive(Clone)]
pub struct OutputSchema {
    format: OutputFormat,
    validator: Arc<ArgsValidator>,
}

impl OutputSchema {
    /// A schema named `name` (sent where the API names the format); errors say what to fix.
    pub fn new(name: impl Into<String>, schema: Value) -> Result<Self, OutputSchemaError> {
        let name = name.into();
        if !is_valid_tool_name(&name) {
            return Err(OutputSchemaError::Name(name));
        }
        let kind = match &schema {
            Value::Object(_) => None,
            Value::Null => Some("null"),
            Value::Bool(_) => Some("a boolean"),
            Value::Number(_) => Some("a number"),
            Value::String(_) => Some("a string"),
            Value::Array(_) => Some("an array"),
        };
        if let Some(kind) = kind {
            return Err(OutputSchemaError::NotAnObject(kind));
        }
        let validator = ArgsValidator::new(&schema).map_err(OutputSchemaError::Invalid)?;
        // Strict only where the schema allows it, as for tools: the API would reject the request
        // otherwise; the answer is validated against the whole schema either way.
        let strict = tackle_provider::strict_compatible(&schema);
        let format = OutputFormat { strict: Some(strict), ..OutputFormat::new(name, schema) };
        Ok(Self { format, validator: Arc::new(validator) })
    }

    /// The schema schemars derives for `T` (subschemas inlined), named after the type.
    ///
    /// ```
    /// #[derive(schemars::JsonSchema)]
    /// struct Verdict { ok: bool }
    /// let schema = tackle_agent::OutputSchema::of::<Verdict>();
    /// assert_eq!(schema.name(), "Verdict");
    /// assert!(schema.parse(r#"{"ok": false}"#).is_ok());
    /// ```
    pub fn of<T: JsonSchema>() -> Self {
        let name: String = T::schema_name()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        let name = if name.is_empty() { "output".to_owned() } else { name };
        let schema = tackle_tools::schema::derived_schema_for::<T>();
        // A schema schemars derived always compiles; if one ever did not, validating against
        // `true` would accept anything, so the typed read still checks the value.
        Self::new(name.clone(), schema).unwrap_or_else(|_| Self {
            format: OutputFormat { strict: Some(false), ..OutputFormat::new(name, Value::Bool(true)) },
            validator: Arc::new(accept_all()),
        })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.format.name
    }

    /// The JSON Schema.
    pub fn schema(&self) -> &Value {
        &self.format.schema
    }

    /// The schema as a request carries it.
    pub fn format(&self) -> &OutputFormat {
        &self.format
    }

    /// `Ok` when `value` matches the schema; else the errors by JSON pointer.
    pub fn validate(&self, value: &Value) -> Result<(), String> {
        self.validator.validate(value)
    }

    /// The answer `text` as JSON matching the schema (a Markdown code fence around it is
    /// dropped); else what is wrong, worded for the model.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let json = unfence(text.trim());
        let value: Value = serde_json::from_str(json)
            .map_err(|e| format!("the answer is not valid JSON ({e}); answer with the JSON value only"))?;
        self.validate(&value)?;
        Ok(value)
    }
}

fn accept_all() -> ArgsValidator {
    // `true` is a valid schema in every draft.
    match ArgsValidator::new(&Value::Bool(true)) {
        Ok(v) => v,
        Err(_) => unreachable!("`true` is a valid JSON Schema"),
    }
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema").field("name", &self.format.name).finish_non_exhaustive()
    }
}

impl PartialEq for OutputSchema {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format
    }
}

/// `text` without a Markdown code fence around it.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let Some(body) = rest.strip_suffix("```") else { return text };
    // The info string (`json`) ends at the first newline.
    body.split_once('\n').map_or(body, |(_, inner)| inner).trim()
}

/// How one turn asks for its output schema, fixed for the whole turn. It owns the final-answer
/// tool (its name and definition) and says which call gives the answer: the loop asks it, it
/// never compares names (**[tools-not-names]**).
pub(crate) struct TurnOutput {
    pub(crate) schema: OutputSchema,
    /// The provider constrains the answer itself; else the final-answer tool is offered.
    pub(crate) native: bool,
    /// Non-native: the final-answer tool's name, one no tool of the session has.
    tool: Option<String>,
    /// Non-native: the session's catalog plus the final-answer tool, one allocation for the
    /// turn, so every step sends the same tool bytes.
    tools: Option<Arc<[ToolSpec]>>,
    /// Non-native, and the schema's root is not an object (a tool's input must be one): the
    /// answer travels as the input's `value`.
    wrapped: bool,
    /// Repair rounds left (one).
    pub(crate) repairs_left: u8,
    /// The validated answer, once given.
    pub(crate) value: Option<Value>,
}

impl TurnOutput {
    /// The plan of a turn asking for `schema`: natively, or through a final-answer tool named so
    /// that it is none of the tools `taken` names (the catalog's and any other the session can
    /// call, deferred ones included).
    pub(crate) fn new(
        schema: OutputSchema,
        native: bool,
        catalog: &Arc<[ToolSpec]>,
        taken: impl Fn(&str) -> bool,
    ) -> Self {
        let tool = (!native)
            .then(|| final_answer_name(|name| taken(name) || catalog.iter().any(|spec| spec.name == name)));
        let wrapped = !native && !object_root(schema.schema());
        let tools = tool.as_deref().map(|name| {
            let mut specs: Vec<ToolSpec> = catalog.iter().cloned().collect();
            specs.push(final_answer_tool(name, &schema, wrapped));
            Arc::<[ToolSpec]>::from(specs)
        });
        Self { schema, native, tool, tools, wrapped, repairs_left: 1, value: None }
    }

    /// Whether `call` gives the final answer (never, when the answer is asked natively).
    pub(crate) fn is_final_answer(&self, call: &ToolUse) -> bool {
        self.tool.as_deref() == Some(call.name.as_str())
    }

    /// The answer an answer without tool calls gives: its text parsed and validated (native),
    /// else a reminder that the answer is the final-answer tool's input.
    pub(crate) fn text_answer(&self, text: &str) -> Result<Value, String> {
        match &self.tool {
            None => self.schema.parse(text),
            Some(name) => Err(format!("give the final answer by calling the `{name}` tool, not as text")),
        }
    }

    /// The answer a final-answer call gives: its input (or the input's `value`, for a schema
    /// whose root is not an object), validated against the schema as the caller gave it.
    pub(crate) fn call_answer(&self, call: &ToolUse) -> Result<Value, String> {
        let Some(input) = call.input.as_json() else {
            return Err("the input is not valid JSON".to_owned());
        };
        let answer = if self.wrapped {
            input.get(WRAPPED_FIELD).ok_or_else(|| {
                format!(
                    "the input has no `{WRAPPED_FIELD}`: give the answer as {{\"{WRAPPED_FIELD}\": <answer>}}"
                )
            })?
        } else {
            input
        };
        self.schema.validate(answer).map(|()| answer.clone())
    }

    /// The result a final-answer call gets: accepted, or the validation error as the tool's
    /// error envelope (the repair round).
    pub(crate) fn call_result(&self, call: &ToolUse, answer: &Result<Value, String>) -> ToolResult {
        let name = self.tool.as_deref().unwrap_or(FINAL_ANSWER_TOOL);
        match answer {
            Ok(_) => ToolResult::ok(call.id.as_str(), "Final answer accepted."),
            Err(error) => {
                let envelope = ToolError::new(
                    name,
                    ErrorCategory::InvalidArgs,
                    format!("the final answer does not match the schema {:?}: {error}", self.schema.name()),
                )
                .with_hint(format!("call {name} again with an input that matches the schema"));
                ToolResult::error(call.id.as_str(), envelope.to_json())
            }
        }
    }

    /// Shapes a step's request: the schema for a native provider; for the others the
    /// final-answer tool beside the frozen catalog and a tool choice that requires a call (the
    /// final-answer tool itself where the step allowed none).
    pub(crate) fn apply(&self, request: &mut tackle_protocol::ModelRequest) {
        let (Some(name), Some(tools)) = (&self.tool, &self.tools) else {
            request.output = Some(self.schema.format.clone());
            return;
        };
        request.tools = tools.clone();
        let forced = ToolChoice::Named { name: name.clone() };
        request.tool_choice = match std::mem::replace(&mut request.tool_choice, ToolChoice::Auto) {
            ToolChoice::Auto | ToolChoice::Required => ToolChoice::Required,
            ToolChoice::None => forced,
            ToolChoice::Named { name } => ToolChoice::Named { name },
            ToolChoice::Allowed { mut tools, .. } => {
                if tools.iter().all(String::is_empty) {
                    forced
                } else {
                    tools.push(name.clone());
                    ToolChoice::Allowed { tools, mode: AllowedToolsMode::Required }
                }
            }
        };
    }
}

/// The final-answer tool's name: [`FINAL_ANSWER_TOOL`] unless `taken`, else the first of
/// `final_answer_2`, `final_answer_3`, ... that is not.
fn final_answer_name(taken: impl Fn(&str) -> bool) -> String {
    let mut name = FINAL_ANSWER_TOOL.to_owned();
    let mut n = 1u32;
    while taken(&name) {
        n += 1;
        name = format!("{FINAL_ANSWER_TOOL}_{n}");
    }
    name
}

/// The input field that carries an answer whose schema's root is not an object.
const WRAPPED_FIELD: &str = "value";

/// Whether `schema` describes objects at its root (`"type": "object"`), as a tool's input
/// schema must.
fn object_root(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `schema` as the `value` of an object, its definitions (`$defs`, `definitions`) kept at the
/// root so its `#/...` references still resolve.
fn wrap(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut root = serde_json::Map::new();
    root.insert("type".into(), Value::from("object"));
    if let Some(map) = inner.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = map.remove(key) {
                root.insert(key.into(), defs);
            }
        }
    }
    root.insert("properties".into(), serde_json::json!({ WRAPPED_FIELD: inner }));
    root.insert("required".into(), serde_json::json!([WRAPPED_FIELD]));
    root.insert("additionalProperties".into(), Value::Bool(false));
    Value::Object(root)
}

/// The tool a provider without native structured output gives its final answer through. A
/// schema whose root is not an object is `wrapped` as the input's `value`.
fn final_answer_tool(name: &str, schema: &OutputSchema, wrapped: bool) -> ToolSpec {
    let (input_schema, how) = if wrapped {
        (wrap(schema.schema()), format!("as this tool's input `{WRAPPED_FIELD}`"))
    } else {
        (schema.schema().clone(), "as this tool's input".to_owned())
    };
    let mut spec = ToolSpec::new(
        name,
        format!(
            "Give your final answer ({}) {how}, once you are done with the other tools. \
             Call it alone, as your last call; its input must match the schema exactly.",
            schema.name()
        ),
        input_schema,
    );
    spec.annotations.read_only = true;
    spec
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
