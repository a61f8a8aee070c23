//! `ModelRequest` -> OpenAI Responses request body.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;
use tackle_protocol::{
    AllowedToolsMode, CachePolicy, ContentBlock, ModelRequest, Reasoning, Role, ToolChoice, ToolSpec,
};
use tackle_wire::responses::{
    self as wire, FunctionCallItem, FunctionCallOutputItem, InputItem, MessageContent, MessageRole, Part,
    ToolChoiceMode, ToolChoiceObject,
};

use super::{REASONING_FORMAT, ResponsesConfig};
use crate::{ToolSchemaRules, adapt_schema};

/// The smallest `max_output_tokens` the API accepts.
pub(crate) const MIN_OUTPUT_TOKENS: u32 = 16;

/// What the response should carry besides its output: the encrypted reasoning, so the history
/// is complete on Tackle's side whether or not OpenAI stores anything.
const INCLUDE: &str = "reasoning.encrypted_content";

/// The request body: the Responses wire type, with the tools rendered once and reused as bytes.
/// Its field order puts what the provider caches first (tools, instructions, input), so the
/// serialized bytes of consecutive requests share the longest possible prefix; the history
/// (most of every request's bytes) is borrowed from the request, never copied into a JSON tree.
pub(crate) type ResponsesBody<'a> = wire::ResponsesRequest<'a, &'a RawValue>;

/// Tool definitions in the Responses `tools` format. `strict` is always stated, because the API
/// enforces strict schemas when it is left out; it is `true` only where the schema allows it.
pub(crate) fn render_tools(tools: &[ToolSpec]) -> Vec<wire::Tool<'_>> {
    tools
        .iter()
        .map(|t| {
            let parameters = adapt_schema(&t.input_schema, ToolSchemaRules::strictest());
            let strict = strict_compatible(&parameters);
            wire::Tool::function(t.name.as_str(), t.description.as_str(), parameters, strict)
        })
        .collect()
}

pub(crate) fn body<'a>(
    request: &'a ModelRequest,
    tools: Option<&'a RawValue>,
    options: &ResponsesConfig,
    stream: bool,
) -> ResponsesBody<'a> {
    let has_tools = tools.is_some();
    let cacheable: Vec<&str> = request
        .system
        .iter()
        .filter(|s| s.cache == CachePolicy::Cacheable && !s.text.is_empty())
        .map(|s| s.text.as_str())
        .collect();
    let instructions = match cacheable.as_slice() {
        [] => None,
        [one] => Some(Cow::Borrowed(*one)),
        many => Some(Cow::Owned(many.join("\n\n"))),
    };
    let reasoning = wire::ReasoningConfig {
        effort: options.reasoning_effort.map(|e| Cow::Borrowed(e.as_str())),
        summary: options.reasoning_summary.map(|s| Cow::Borrowed(s.as_str())),
    };
    ResponsesBody {
        model: Cow::Borrowed(&request.model),
        tools,
        instructions,
        input: wire::Input::Items(input(request, options.store)),
        tool_choice: has_tools.then(|| tool_choice(&request.tool_choice)).flatten(),
        parallel_tool_calls: if has_tools { request.parallel_tool_calls } else { None },
        max_output_tokens: request.max_output_tokens.map(|n| n.max(MIN_OUTPUT_TOKENS)),
        temperature: request.temperature,
        reasoning: (reasoning != wire::ReasoningConfig::default()).then_some(reasoning),
        // The format as given: the agent's `strict` is derived from the schema (strict only
        // where the API accepts it), the gateway's is the client's.
        text: request.output.as_ref().map(|o| wire::TextConfig {
            format: Some(if o.json_object {
                wire::TextFormat::JsonObject
            } else {
                wire::TextFormat::JsonSchema(crate::openai::json_schema_format(o))
            }),
            verbosity: None,
        }),
        prompt_cache_key: request.prompt_cache_key.as_deref().map(Cow::Borrowed),
        store: Some(options.store),
        include: Some(vec![Cow::Borrowed(INCLUDE)]),
        // Never `auto`: the API would silently drop the start of the conversation; Tackle
        // compacts explicitly instead and hears about an overflow as an error.
        truncation: Some(Cow::Borrowed("disabled")),
        stream,
    }
}

fn tool_choice(choice: &ToolChoice) -> Option<wire::ToolChoice<'_>> {
    Some(match choice {
        // `auto` is the default whenever tools are present; sending it explicitly changes nothing.
        ToolChoice::Auto => return None,
        ToolChoice::None => wire::ToolChoice::Mode(ToolChoiceMode::None),
        ToolChoice::Required => wire::ToolChoice::Mode(ToolChoiceMode::Required),
        ToolChoice::Named { name } => wire::ToolChoice::function(name.as_str()),
        ToolChoice::Allowed { tools, mode } => wire::ToolChoice::Object(ToolChoiceObject::AllowedTools {
            mode: match mode {
                AllowedToolsMode::Auto => ToolChoiceMode::Auto,
                AllowedToolsMode::Required => ToolChoiceMode::Required,
            },
            tools: tools.iter().map(|n| wire::ToolRef::function(n.as_str())).collect(),
        }),
    })
}

/// Whether a reasoning block goes back to the API: only the API's own items, and without
/// `store` only those carrying their encrypted content (an id alone would name an item the API
/// never kept).
fn sendable(reasoning: &Reasoning, store: bool) -> bool {
    reasoning.format == REASONING_FORMAT
        && reasoning.data.is_object()
        && (store || reasoning.data.get("encrypted_content").is_some_and(Value::is_string))
}

fn message<'a>(
    role: MessageRole,
    part: fn(Cow<'a, str>) -> Part<'a>,
    texts: Vec<Cow<'a, str>>,
) -> InputItem<'a> {
    InputItem::message(role, texts.into_iter().map(part).collect())
}

fn input_text(text: Cow<'_, str>) -> Part<'_> {
    Part::InputText { text }
}

fn output_text(text: Cow<'_, str>) -> Part<'_> {
    Part::OutputText { text, annotations: None, logprobs: None }
}

fn input(request: &ModelRequest, store: bool) -> Vec<InputItem<'_>> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    for m in request.messages.iter() {
        match m.role {
            Role::Assistant => {
                // Items keep the order the model produced them in: a reasoning item right
                // before the call or message it led to.
                let mut texts: Vec<Cow<'_, str>> = Vec::new();
                for block in &m.content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => texts.push(Cow::Borrowed(text)),
                        ContentBlock::Text { .. } => {}
                        other => {
                            if !texts.is_empty() {
                                out.push(message(
                                    MessageRole::Assistant,
                                    output_text,
                                    std::mem::take(&mut texts),
                                ));
                            }
                            match other {
                                // Sent without its item id: only `call_id` pairs it.
                                ContentBlock::ToolUse(u) => {
                                    out.push(InputItem::FunctionCall(FunctionCallItem {
                                        id: None,
                                        call_id: Cow::Borrowed(u.id.as_str()),
                                        name: Cow::Borrowed(&u.name),
                                        namespace: None,
                                        arguments: Cow::Owned(u.input.to_wire_string()),
                                        status: None,
                                    }))
                                }
                                // A reasoning item exactly as the API sent it.
                                ContentBlock::Reasoning(r) if sendable(r, store) => {
                                    out.push(InputItem::Other(Cow::Borrowed(&r.data)))
                                }
                                // Other providers' reasoning, and results (never in assistant
                                // messages), are not the API's to read.
                                _ => {}
                            }
                        }
                    }
                }
                if !texts.is_empty() {
                    out.push(message(MessageRole::Assistant, output_text, texts));
                }
            }
            Role::User | Role::Tool => {
                // Tool results become `function_call_output` items; any text goes in a user
                // message after them.
                for result in m.tool_results_iter() {
                    out.push(InputItem::FunctionCallOutput(FunctionCallOutputItem {
                        call_id: Cow::Borrowed(result.tool_use_id.as_str()),
                        output: MessageContent::Text(Cow::Borrowed(&result.content)),
                    }));
                }
                let texts: Vec<Cow<'_, str>> = m.texts().map(Cow::Borrowed).collect();
                if !texts.is_empty() {
                    out.push(message(MessageRole::User, input_text, texts));
                }
            }
        }
    }
    // Sections that may change between requests go last, where a change costs no cached prefix.
    let dynamic: Vec<Cow<'_, str>> = request
        .system
        .iter()
        .filter(|s| s.cache == CachePolicy::Dynamic && !s.text.is_empty())
        .map(|s| Cow::Borrowed(s.text.as_str()))
        .collect();
    if !dynamic.is_empty() {
        out.push(message(MessageRole::Developer, input_text, dynamic));
    }
    out
}

/// Keywords strict mode accepts (Structured Outputs' supported subset of JSON Schema).
const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "title",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Deepest nesting of objects strict mode accepts.
const STRICT_MAX_DEPTH: usize = 10;

/// Whether `schema` can be sent with `strict: true`: an object at the root, every object closed
/// (`additionalProperties: false`) with every property required, and only keywords of the
/// supported subset. Anything else is sent with `strict: false`, so the API never rejects a tool
/// and never constrains the model to a schema it would read differently.
///
/// ```
/// use serde_json::json;
/// use tackle_provider::strict_compatible;
/// let closed = json!({"type": "object", "properties": {"path": {"type": "string"}},
///     "required": ["path"], "additionalProperties": false});
/// assert!(strict_compatible(&closed));
/// let optional = json!({"type": "object", "properties": {"path": {"type": "string"}},
///     "additionalProperties": false});
/// assert!(!strict_compatible(&optional));
/// ```
pub fn strict_compatible(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object") && strict_node(schema, 0)
}

fn strict_node(schema: &Value, depth: usize) -> bool {
    let Some(node) = schema.as_object() else { return false };
    if depth > STRICT_MAX_DEPTH || node.keys().any(|k| !STRICT_KEYWORDS.contains(&k.as_str())) {
        return false;
    }
    let is_object = match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => node.contains_key("properties"),
    };
    if is_object {
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            return false;
        }
        let properties = match node.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return false,
        };
        let required: Vec<&str> = match node.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            Some(_) => return false,
        };
        if let Some(properties) = properties {
            if properties.keys().any(|k| !required.contains(&k.as_str())) {
                return false;
            }
            if !properties.values().all(|p| strict_node(p, depth + 1)) {
                return false;
            }
        }
    }
    let all = |key: &str| match node.get(key) {
        None => true,
        Some(Value::Array(items)) => items.iter().all(|s| strict_node(s, depth + 1)),
        Some(Value::Object(map)) if key == "$defs" || key == "definitions" => {
            map.values().all(|s| strict_node(s, depth + 1))
        }
        Some(other) => key == "items" && strict_node(other, depth + 1),
    };
    all("items") && all("anyOf") && all("$defs") && all("definitions")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strictness_follows_the_schema() {
        let closed = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
        assert!(strict_compatible(&json!({"type": "object", "additionalProperties": false})));
        assert!(strict_compatible(&closed(json!({"a": {"type": ["string", "null"]}}), json!(["a"]))));
        assert!(strict_compatible(&closed(
            json!({"list": {"type": "array", "items": closed(json!({"x": {"type": "integer"}}), json!(["x"]))}}),
            json!(["list"])
        )));
        // An optional property, an open object, an unsupported keyword, a nested open object,
        // an object that is not at the root.
        assert!(!strict_compatible(&closed(json!({"a": {"type": "string"}}), json!([]))));
        assert!(!strict_compatible(&json!({"type": "object", "properties": {}})));
        assert!(!strict_compatible(&closed(json!({"a": {"type": "string", "minLength": 1}}), json!(["a"]))));
        assert!(!strict_compatible(&closed(
            json!({"o": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}),
            json!(["o"])
        )));
        assert!(!strict_compatible(&json!({"anyOf": [{"type": "object"}]})));
        assert!(!strict_compatible(&json!("object")));
        // Nesting deeper than the API allows.
        let mut deep = json!({"type": "string"});
        for _ in 0..12 {
            deep = closed(json!({ "x": deep }), json!(["x"]));
        }
        assert!(!strict_compatible(&deep));
    }
}
