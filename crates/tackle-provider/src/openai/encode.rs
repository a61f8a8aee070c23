//! `ModelRequest` -> OpenAI Chat Completions request body.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tackle_protocol::{AllowedToolsMode, ModelRequest, Role, ToolChoice, ToolSpec};

use super::OpenAiDialect;
use crate::{ToolSchemaRules, adapt_schema};

/// The request body. Field order puts what the provider caches first (tools, then messages), so
/// the serialized bytes of consecutive requests share the longest possible prefix.
#[derive(Serialize)]
pub(crate) struct ChatBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    messages: Vec<WireMessage<'a>>,
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

/// Tool definitions in the Chat Completions `tools` format, schemas adapted to what the API
/// accepts ([`crate::ToolSchemaRules::strictest`]).
pub(crate) fn render_tools(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": { "name": t.name, "description": t.description,
                        "parameters": adapt_schema(&t.input_schema, ToolSchemaRules::strictest()) }
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

/// One Chat Completions message, borrowing from the request: the history (most of every
/// request's bytes) is serialized straight from it, never copied into a JSON tree.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum WireMessage<'a> {
    /// `system` and `user` messages.
    Text { role: &'static str, content: Cow<'a, str> },
    /// An assistant turn: its text (`null` when it only calls tools) and its calls.
    Assistant {
        role: &'static str,
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    /// One tool result.
    Tool { role: &'static str, tool_call_id: &'a str, content: &'a str },
}

#[derive(Serialize)]
pub(crate) struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: String,
}

fn messages(request: &ModelRequest) -> Vec<WireMessage<'_>> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let system: Vec<&str> =
        request.system.iter().map(|s| s.text.as_str()).filter(|t| !t.is_empty()).collect();
    if !system.is_empty() {
        out.push(WireMessage::Text { role: "system", content: Cow::Owned(system.join("\n\n")) });
    }
    for message in request.messages.iter() {
        match message.role {
            Role::Assistant => {
                let text = message.text();
                let calls: Vec<WireCall<'_>> = message
                    .tool_uses()
                    .map(|u| WireCall {
                        id: &u.id,
                        kind: "function",
                        function: WireFunction { name: &u.name, arguments: u.input.to_wire_string() },
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue; // e.g. only reasoning from another provider
                }
                let content = (!text.is_empty()).then_some(Cow::Owned(text));
                out.push(WireMessage::Assistant { role: "assistant", content, tool_calls: calls });
            }
            Role::User | Role::Tool => {
                // Tool results become `tool` messages; any text goes in a user message after them.
                for result in message.tool_results_iter() {
                    out.push(WireMessage::Tool {
                        role: "tool",
                        tool_call_id: &result.tool_use_id,
                        content: &result.content,
                    });
                }
                let texts: Vec<&str> = message.texts().collect();
                match texts.as_slice() {
                    [] => {}
                    [one] => out.push(WireMessage::Text { role: "user", content: Cow::Borrowed(one) }),
                    many => {
                        out.push(WireMessage::Text { role: "user", content: Cow::Owned(many.join("\n\n")) })
                    }
                }
            }
        }
    }
    out
}
