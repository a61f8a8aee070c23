//! Request validation as strict as the real APIs, so a client bug fails here as it would there.

use std::collections::HashSet;

use serde_json::Value;
use tackle_wire::chat::JsonSchemaFormat;
use tackle_wire::responses::{
    Input, InputItem, MessageContent, MessageRole, Part, ResponsesRequest, TextFormat, Tool, ToolChoice,
    ToolChoiceMode, ToolChoiceObject,
};

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `body` read as `T`; an error names the field at fault (`messages[2].content: ...`).
fn read<'a, T: serde::Deserialize<'a>>(body: &'a Value) -> Result<T, String> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}

#[path = "validate_chat.rs"]
mod chat;
pub(crate) use chat::openai_chat;

/// Breakpoints: `cache_control` on tools, system blocks, message content blocks and blocks
/// inside tool results (not on keys inside tool schemas or inputs).
#[path = "validate_anthropic.rs"]
mod anthropic_messages;
pub(crate) use anthropic_messages::anthropic;

/// A request the Responses API refuses: status, message, and the parameter it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) status: u16,
    pub(crate) message: String,
    pub(crate) param: Option<String>,
    pub(crate) code: Option<String>,
}

impl Rejection {
    fn new(message: impl Into<String>, param: impl Into<String>) -> Self {
        Self { status: 400, message: message.into(), param: Some(param.into()), code: None }
    }

    fn missing(param: impl Into<String>) -> Self {
        let param = param.into();
        Self {
            status: 400,
            message: format!("Missing required parameter: '{param}'."),
            param: Some(param),
            code: Some("missing_required_parameter".into()),
        }
    }

    fn not_found(message: impl Into<String>, param: impl Into<String>) -> Self {
        Self { status: 404, ..Self::new(message, param) }
    }

    fn code(mut self, code: &str) -> Self {
        self.code = Some(code.into());
        self
    }
}

/// Top-level parameters of `POST /v1/responses` (as of the pinned `openai` SDK), plus
/// `client_metadata`, which Codex sends.
const RESPONSES_PARAMS: &[&str] = &[
    "access_programs",
    "background",
    "background_options",
    "client_metadata",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

/// Values `include` accepts.
const RESPONSES_INCLUDABLE: &[&str] = &[
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
    "web_search_call.results",
];

/// Why a schema cannot be used with `strict: true`, worded as the API words it.
fn strict_schema_error(schema: &Value, context: &mut Vec<String>) -> Option<String> {
    let node = schema.as_object()?;
    let ctx = || format!("({})", context.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", "));
    let is_object = match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => node.contains_key("properties"),
    };
    if is_object {
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Some(format!(
                "In context={}, 'additionalProperties' is required to be supplied and to be false.",
                ctx()
            ));
        }
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            if let Some(missing) = props.keys().find(|k| !required.contains(&k.as_str())) {
                return Some(format!(
                    "In context={}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{missing}'.",
                    ctx()
                ));
            }
            for (k, v) in props {
                context.extend(["properties".to_owned(), k.clone()]);
                let e = strict_schema_error(v, context);
                context.truncate(context.len() - 2);
                if e.is_some() {
                    return e;
                }
            }
        }
    }
    if let Some(items) = node.get("items") {
        context.push("items".into());
        let e = strict_schema_error(items, context);
        context.pop();
        if e.is_some() {
            return e;
        }
    }
    for key in ["anyOf"] {
        for (i, s) in node.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            context.extend([key.to_owned(), i.to_string()]);
            let e = strict_schema_error(s, context);
            context.truncate(context.len() - 2);
            if e.is_some() {
                return e;
            }
        }
    }
    None
}

/// `body` read as a typed request. A deserialization error becomes the API's rejection, naming
/// the parameter at fault: a missing field is `Missing required parameter: 'input[2].call_id'.`,
/// a value of the wrong type or an unknown variant names the field that holds it.
/// What the API refuses in a named answer schema (Chat Completions `response_format.json_schema`,
/// Responses `text.format`), with the parameter it names under `param`: a bad name, no schema
/// or one that is not an object, and with `strict: true` a schema outside the strict subset.
fn answer_format_error(format: &JsonSchemaFormat<'_>, param: &str) -> Option<(String, String)> {
    let name = &*format.name;
    if !valid_name(name) {
        return Some((
            format!(
                "Invalid '{param}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            ),
            format!("{param}.name"),
        ));
    }
    let Some(schema) = format.schema.as_deref() else {
        return Some((format!("Missing required parameter: '{param}.schema'."), format!("{param}.schema")));
    };
    if !schema.is_object() {
        return Some((
            format!("Invalid type for '{param}.schema': expected an object."),
            format!("{param}.schema"),
        ));
    }
    if format.strict == Some(true)
        && let Some(e) = strict_schema_error(schema, &mut Vec::new())
    {
        return Some((
            format!("Invalid schema for response_format '{name}': {e}"),
            format!("{param}.schema"),
        ));
    }
    None
}

fn read_request(body: &Value) -> Result<ResponsesRequest<'static>, Rejection> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = match e.path().to_string() {
            root if root == "." => String::new(),
            path => path,
        };
        let inner = e.inner().to_string();
        let join = |field: &str| if path.is_empty() { field.to_owned() } else { format!("{path}.{field}") };
        if let Some(field) = inner.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            return Rejection::missing(join(field));
        }
        if let Some(value) = inner.strip_prefix("unknown variant `").and_then(|r| r.split('`').next()) {
            // Inside an item the path stops at the item: the field is the one holding the value.
            let param = field_holding(body, &path, value).map_or_else(|| path.clone(), |field| join(&field));
            let supported = inner.split_once("expected ").map_or("", |(_, s)| s).replace('`', "'");
            return Rejection::new(
                format!("Invalid value: '{value}'. Supported values are: {supported}."),
                param,
            );
        }
        Rejection::new(format!("Invalid '{path}': {inner}."), path)
    })
}

/// The key of the object at `path` (`input[0]`) whose value is the string `value`.
fn field_holding(body: &Value, path: &str, value: &str) -> Option<String> {
    let pointer: String = path.split(['.', '[']).map(|s| format!("/{}", s.trim_end_matches(']'))).collect();
    let object = body.pointer(&pointer)?.as_object()?;
    object.iter().find(|(_, v)| v.as_str() == Some(value)).map(|(k, _)| k.clone())
}

fn responses_tools(tools: &[Tool<'_>]) -> Result<HashSet<String>, Rejection> {
    let mut names = HashSet::new();
    for (i, t) in tools.iter().enumerate() {
        match t {
            Tool::Function(f) => {
                let name = &*f.name;
                if !valid_name(name) {
                    return Err(Rejection::new(
                        format!(
                            "Invalid 'tools[{i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                        ),
                        format!("tools[{i}].name"),
                    ));
                }
                if !names.insert(name.to_owned()) {
                    return Err(Rejection::new(format!("Duplicate tool name: '{name}'."), "tools"));
                }
                let parameters = f.parameters.as_deref();
                if let Some(p) = parameters
                    && !p.is_object()
                {
                    return Err(Rejection::new(
                        format!("Invalid type for 'tools[{i}].parameters': expected an object."),
                        format!("tools[{i}].parameters"),
                    ));
                }
                // Left out, `strict` is true: the schema must be a strict one.
                if f.strict.unwrap_or(true)
                    && let Some(p) = parameters
                    && let Some(e) = strict_schema_error(p, &mut Vec::new())
                {
                    return Err(Rejection::new(
                        format!("Invalid schema for function '{name}': {e}"),
                        format!("tools[{i}].parameters"),
                    )
                    .code("invalid_function_parameters"));
                }
            }
            // Built-in tools, custom tools and namespaces; every tool states its type.
            Tool::Other(other) => {
                if str_at(other, "type").is_none() {
                    return Err(Rejection::missing(format!("tools[{i}].type")));
                }
            }
        }
    }
    Ok(names)
}

fn responses_tool_choice(choice: &ToolChoice<'_>, names: &HashSet<String>) -> Result<(), Rejection> {
    let not_found =
        || Rejection::new("Tool choice 'function' not found in 'tools' parameter.", "tool_choice");
    match choice {
        ToolChoice::Mode(_) => Ok(()),
        ToolChoice::Object(ToolChoiceObject::Function { name }) => {
            if names.contains(&**name) {
                Ok(())
            } else {
                Err(not_found())
            }
        }
        ToolChoice::Object(ToolChoiceObject::AllowedTools { mode, tools }) => {
            if *mode == ToolChoiceMode::None {
                return Err(Rejection::new(
                    "Invalid value for 'tool_choice.mode': expected 'auto' or 'required'.",
                    "tool_choice.mode",
                ));
            }
            for (k, t) in tools.iter().enumerate() {
                let name = t.name.as_deref().unwrap_or("");
                if t.kind.as_deref() == Some("function") && !names.contains(name) {
                    return Err(Rejection::new(
                        format!(
                            "Tool 'function' with name '{name}' in 'tool_choice.tools[{k}]' not found in 'tools' parameter."
                        ),
                        format!("tool_choice.tools[{k}]"),
                    ));
                }
            }
            Ok(())
        }
        // Chat Completions' spelling, which the real API refuses here.
        ToolChoice::Object(ToolChoiceObject::Chat(_)) => Err(Rejection::missing("tool_choice.name")),
        ToolChoice::Object(ToolChoiceObject::Other(v)) => Err(Rejection::new(
            format!(
                "Invalid value: {}. Supported values are: 'function', 'allowed_tools', 'custom', 'mcp', and the hosted tools.",
                v.get("type").unwrap_or(&Value::Null)
            ),
            "tool_choice.type",
        )),
        // Kinds of tool Tackle's provider does not send; the fake has none of them.
        ToolChoice::Object(_) => {
            Err(Rejection::new("Tool choice not found in 'tools' parameter.", "tool_choice"))
        }
    }
}

/// Content parts a message of `role` may carry.
fn responses_parts(role: MessageRole) -> &'static [&'static str] {
    if role == MessageRole::Assistant {
        &["output_text", "refusal"]
    } else {
        &["input_text", "input_image", "input_file"]
    }
}

/// A part's `type`.
fn part_kind<'p>(part: &'p Part<'_>) -> &'p str {
    match part {
        Part::InputText { .. } => "input_text",
        Part::OutputText { .. } => "output_text",
        Part::Refusal { .. } => "refusal",
        Part::SummaryText { .. } => "summary_text",
        Part::Other(v) => str_at(v, "type").unwrap_or(""),
    }
}

fn responses_input(input: &Input<'_>, store: bool) -> Result<(), Rejection> {
    let Input::Items(items) = input else { return Ok(()) };
    let mut calls: Vec<&str> = Vec::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str| format!("input[{i}].{field}");
        match item {
            InputItem::Message(message) => {
                if let MessageContent::Parts(parts) = &message.content {
                    let allowed = responses_parts(message.role);
                    for (j, part) in parts.iter().enumerate() {
                        let t = part_kind(part);
                        if !allowed.contains(&t) {
                            let list = allowed.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>();
                            return Err(Rejection::new(
                                format!("Invalid value: '{t}'. Supported values are: {}.", list.join(", ")),
                                format!("input[{i}].content[{j}]"),
                            ));
                        }
                    }
                }
            }
            InputItem::FunctionCall(call) => calls.push(&call.call_id),
            InputItem::FunctionCallOutput(output) => {
                let id = &*output.call_id;
                if !calls.contains(&id) {
                    return Err(Rejection::new(
                        format!("No tool call found for function call output with call_id {id}."),
                        "input",
                    ));
                }
                answered.insert(id);
            }
            InputItem::Other(other) => match str_at(other, "type").unwrap_or("") {
                "reasoning" => {
                    if !other.get("summary").is_some_and(Value::is_array) {
                        return Err(Rejection::missing(at("summary")));
                    }
                    let id = str_at(other, "id");
                    match str_at(other, "encrypted_content") {
                        Some(blob) => {
                            let sealed = crate::wire::responses::unseal(blob);
                            if sealed.is_none() || id.is_some_and(|id| sealed.as_deref() != Some(id)) {
                                return Err(Rejection::new(
                                    format!(
                                        "The encrypted content for item {} could not be verified.",
                                        id.unwrap_or("(no id)")
                                    ),
                                    at("encrypted_content"),
                                )
                                .code("invalid_encrypted_content"));
                            }
                        }
                        // An id alone names a stored item, and this server stores nothing.
                        None => {
                            let id = id.ok_or_else(|| Rejection::missing(at("encrypted_content")))?;
                            let why = if store {
                                String::new()
                            } else {
                                " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.".to_owned()
                            };
                            return Err(Rejection::not_found(
                                format!("Item with id '{id}' not found.{why}"),
                                "input",
                            ));
                        }
                    }
                }
                "item_reference" => {
                    let id = str_at(other, "id").unwrap_or("");
                    return Err(Rejection::not_found(format!("Item with id '{id}' not found."), "input"));
                }
                "" => return Err(Rejection::missing(at("type"))),
                _ => {} // built-in tool calls and outputs
            },
        }
    }
    if let Some(open) = calls.iter().find(|c| !answered.contains(*c)) {
        return Err(Rejection::new(format!("No tool output found for function call {open}."), "input"));
    }
    Ok(())
}

/// OpenAI Responses, as `POST /v1/responses` checks a request: the body read as
/// [`ResponsesRequest`] (an error names the parameter), then the rules a type does not state
/// (ranges, names, strict schemas, calls paired with outputs, reasoning items verified).
pub(crate) fn responses(body: &Value) -> Result<(), Rejection> {
    let Some(fields) = body.as_object() else {
        return Err(Rejection::new("The request body must be a JSON object.", ""));
    };
    if let Some(unknown) = fields.keys().find(|k| !RESPONSES_PARAMS.contains(&k.as_str())) {
        return Err(Rejection::new(format!("Unknown parameter: '{unknown}'."), unknown.as_str())
            .code("unknown_parameter"));
    }
    if let Some(id) = str_at(body, "previous_response_id") {
        return Err(Rejection::not_found(
            format!("Previous response with id '{id}' not found."),
            "previous_response_id",
        ));
    }
    let request = read_request(body)?;
    if request.model.is_empty() {
        return Err(Rejection::missing("model"));
    }
    if let Some(t) = request.truncation.as_deref()
        && !matches!(t, "auto" | "disabled")
    {
        return Err(Rejection::new(
            format!("Invalid value: '{t}'. Supported values are: 'auto' and 'disabled'."),
            "truncation",
        ));
    }
    for (k, v) in request.include.iter().flatten().enumerate() {
        if !RESPONSES_INCLUDABLE.contains(&&**v) {
            return Err(Rejection::new(
                format!("Invalid value: '{v}'. Supported values are: {}.", RESPONSES_INCLUDABLE.join(", ")),
                format!("include[{k}]"),
            ));
        }
    }
    if let Some(max) = request.max_output_tokens
        && max < 16
    {
        return Err(Rejection::new(
            format!("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {max} instead."),
            "max_output_tokens",
        )
        .code("integer_below_min_value"));
    }
    if let Some(t) = request.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(Rejection::new(
            format!("Invalid 'temperature': expected a number between 0 and 2, but got {t} instead."),
            "temperature",
        ));
    }
    let names = responses_tools(request.tools.as_deref().unwrap_or_default())?;
    if let Some(choice) = &request.tool_choice {
        responses_tool_choice(choice, &names)?;
    }
    if let Some(TextFormat::JsonSchema(format)) = request.text.as_ref().and_then(|t| t.format.as_ref())
        && let Some((message, param)) = answer_format_error(format, "text.format")
    {
        return Err(Rejection::new(message, param).code("invalid_json_schema"));
    }
    responses_input(&request.input, request.store.unwrap_or(true))
}

/// Tool results carried by a request, for stateless turn matching.
pub(crate) fn count_tool_results(wire: crate::WireFormat, body: &Value) -> usize {
    match wire {
        crate::WireFormat::OpenAiChat => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter(|m| str_at(m, "role") == Some("tool")).count())
            .unwrap_or(0),
        crate::WireFormat::AnthropicMessages => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m.get("content").and_then(Value::as_array))
                    .flatten()
                    .filter(|b| str_at(b, "type") == Some("tool_result"))
                    .count()
            })
            .unwrap_or(0),
        crate::WireFormat::OpenAiResponses => body
            .get("input")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter(|i| str_at(i, "type") == Some("function_call_output")).count())
            .unwrap_or(0),
    }
}

/// Tool results after the last message a person wrote (the conversation's last user turn). A
/// user message riding on tool results (a runtime's note after them) is not a person's.
pub(crate) fn count_tool_results_since_user(wire: crate::WireFormat, body: &Value) -> usize {
    let empty = Vec::new();
    // The index after the last item that `is_person` accepts, given it and the item before it.
    let after_person = |items: &[Value], is_person: &dyn Fn(&Value, Option<&Value>) -> bool| {
        (0..items.len())
            .rev()
            .find(|&i| is_person(&items[i], i.checked_sub(1).map(|p| &items[p])))
            .map_or(0, |i| i + 1)
    };
    match wire {
        crate::WireFormat::OpenAiChat => {
            let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
            let start = after_person(messages, &|m, before| {
                str_at(m, "role") == Some("user") && before.and_then(|b| str_at(b, "role")) != Some("tool")
            });
            messages[start..].iter().filter(|m| str_at(m, "role") == Some("tool")).count()
        }
        crate::WireFormat::AnthropicMessages => {
            let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
            let results = |m: &Value| match m.get("content") {
                Some(Value::Array(blocks)) => {
                    blocks.iter().filter(|b| str_at(b, "type") == Some("tool_result")).count()
                }
                _ => 0,
            };
            let start = after_person(messages, &|m, _| str_at(m, "role") == Some("user") && results(m) == 0);
            messages[start..].iter().map(results).sum()
        }
        crate::WireFormat::OpenAiResponses => {
            let items = body.get("input").and_then(Value::as_array).unwrap_or(&empty);
            let start = after_person(items, &|i, before| {
                str_at(i, "role") == Some("user")
                    && before.and_then(|b| str_at(b, "type")) != Some("function_call_output")
            });
            items[start..].iter().filter(|i| str_at(i, "type") == Some("function_call_output")).count()
        }
    }
}

#[cfg(test)]
mod replay_tests {
    use serde_json::json;

    use super::count_tool_results_since_user;
    use crate::WireFormat;

    #[test]
    fn tool_results_count_from_the_last_message_a_person_wrote() {
        let chat = json!({"messages": [
            {"role": "user", "content": "first"}, {"role": "assistant", "tool_calls": []},
            {"role": "tool", "content": "a"}, {"role": "assistant", "content": "done"},
            {"role": "user", "content": "second"}, {"role": "assistant", "tool_calls": []},
            {"role": "tool", "content": "b"}, {"role": "tool", "content": "c"},
            {"role": "user", "content": "[runtime note] riding on the results"},
        ]});
        assert_eq!(count_tool_results_since_user(WireFormat::OpenAiChat, &chat), 2);
        let anthropic = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "user", "content": [{"type": "tool_result"}, {"type": "text", "text": "note"}]},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
            {"role": "user", "content": [{"type": "tool_result"}, {"type": "tool_result"}]},
            {"role": "user", "content": [{"type": "tool_result"}, {"type": "text", "text": "note"}]},
        ]});
        assert_eq!(count_tool_results_since_user(WireFormat::AnthropicMessages, &anthropic), 3);
        let responses = json!({"input": [
            {"role": "user", "content": "first"}, {"type": "function_call_output"},
            {"type": "message", "role": "assistant", "content": "done"},
            {"role": "user", "content": "second"}, {"type": "function_call_output"},
            {"role": "user", "content": "note"},
        ]});
        assert_eq!(count_tool_results_since_user(WireFormat::OpenAiResponses, &responses), 1);
        assert_eq!(count_tool_results_since_user(WireFormat::OpenAiChat, &json!({})), 0);
    }

    #[test]
    fn a_text_format_schema_is_checked_as_the_api_checks_it() {
        let with = |format: serde_json::Value| {
            super::responses(&json!({"model": "m", "input": "x", "text": {"format": format}}))
        };
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
            "additionalProperties": false});
        with(json!({"type": "json_schema", "name": "out", "schema": closed, "strict": true})).unwrap();
        with(json!({"type": "text"})).unwrap();
        let open =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false});
        let e =
            with(json!({"type": "json_schema", "name": "out", "schema": open, "strict": true})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("text.format.schema"));
        assert!(e.message.contains("'required' is required to be supplied"), "{}", e.message);
        let e = with(json!({"type": "json_schema", "name": "", "schema": closed})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("text.format.name"));
        let e = with(json!({"type": "json_schema", "name": "out", "schema": "object"})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("text.format.schema"));
    }
}
