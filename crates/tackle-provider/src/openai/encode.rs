//! `ModelRequest` -> OpenAI Chat Completions request body.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tackle_protocol::{AllowedToolsMode, ContentBlock, ModelRequest, Role, ToolChoice, ToolSpec};

use super::OpenAiDialect;

/// The request body. Field order puts what the provider caches first (tools, then messages), so
/// the serialized bytes of consecutive requests share the longest possible prefix.
#[derive(Serialize)]
pub(crate) struct ChatBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
}

/// Tool definitions in the Chat Completions `tools` format.
pub(crate) fn render_tools(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": { "name": t.name, "description": t.description, "parameters": t.input_schema }
                })
            })
            .collect(),
    )
}

pub(crate) fn body<'a>(
    request: &'a ModelRequest,
    tools: Option<&'a RawValue>,
    dialect: OpenAiDialect,
    stream: bool,
) -> ChatBody<'a> {
    let has_tools = tools.is_some();
    let official = dialect == OpenAiDialect::OpenAi;
    ChatBody {
        model: &request.model,
        tools,
        messages: messages(request),
        tool_choice: has_tools.then(|| tool_choice(&request.tool_choice, dialect)).flatten(),
        parallel_tool_calls: if has_tools { request.parallel_tool_calls } else { None },
        max_completion_tokens: if official { request.max_output_tokens } else { None },
        max_tokens: if official { None } else { request.max_output_tokens },
        temperature: request.temperature,
        prompt_cache_key: if official { request.prompt_cache_key.as_deref() } else { None },
        stream,
        stream_options: stream.then(|| json!({ "include_usage": true })),
    }
}

fn function_ref(name: &str) -> Value {
    json!({ "type": "function", "function": { "name": name } })
}

fn tool_choice(choice: &ToolChoice, dialect: OpenAiDialect) -> Option<Value> {
    Some(match choice {
        // `auto` is the default whenever tools are present; sending it explicitly changes nothing.
        ToolChoice::Auto => return None,
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named { name } => function_ref(name),
        ToolChoice::Allowed { tools, mode } => {
            let mode_str = match mode {
                AllowedToolsMode::Auto => "auto",
                AllowedToolsMode::Required => "required",
            };
            if dialect == OpenAiDialect::OpenAi {
                json!({
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": mode_str,
                        "tools": tools.iter().map(|n| function_ref(n)).collect::<Vec<_>>(),
                    }
                })
            } else {
                // Servers without allowed_tools: the executor enforces the subset; ask for the
                // closest mode they understand.
                json!(mode_str)
            }
        }
    })
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let system: Vec<&str> =
        request.system.iter().map(|s| s.text.as_str()).filter(|t| !t.is_empty()).collect();
    if !system.is_empty() {
        out.push(json!({ "role": "system", "content": system.join("\n\n") }));
    }
    for message in &request.messages {
        match message.role {
            Role::Assistant => {
                let text = message.text();
                let calls: Vec<Value> = message
                    .tool_uses()
                    .map(|u| {
                        json!({
                            "id": u.id,
                            "type": "function",
                            "function": { "name": u.name, "arguments": u.input.to_wire_string() }
                        })
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue; // e.g. only reasoning from another provider
                }
                let mut m = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) } });
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
            Role::User | Role::Tool => {
                // Tool results become `tool` messages; any text goes in a user message after them.
                for result in message.tool_results_iter() {
                    out.push(json!({ "role": "tool", "tool_call_id": result.tool_use_id, "content": result.content }));
                }
                let texts: Vec<&str> = message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } if !text.is_empty() => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !texts.is_empty() {
                    out.push(json!({ "role": "user", "content": texts.join("\n\n") }));
                }
            }
        }
    }
    out
}
