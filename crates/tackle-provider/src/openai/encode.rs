//! `ModelRequest` -> OpenAI Chat Completions request body.

use std::borrow::Cow;

use serde_json::value::RawValue;
use tackle_protocol::{AllowedToolsMode, ModelRequest, OutputFormat, Role, ToolChoice, ToolSpec};
use tackle_wire::chat::{self as wire, StreamOptions, ToolChoiceMode, ToolChoiceObject};

use super::OpenAiDialect;
use crate::{ToolSchemaRules, adapt_schema};

/// The request body: the Chat Completions wire type, with the tools rendered once and reused as
/// bytes. Its field order puts what the provider caches first (tools, then messages), so the
/// serialized bytes of consecutive requests share the longest possible prefix; the history
/// (most of every request's bytes) is borrowed from the request, never copied into a JSON tree.
pub(crate) type ChatBody<'a> = wire::ChatRequest<'a, &'a RawValue>;

/// Tool definitions in the Chat Completions `tools` format, schemas adapted to what the API
/// accepts ([`crate::ToolSchemaRules::strictest`]).
pub(crate) fn render_tools(tools: &[ToolSpec]) -> Vec<wire::Tool<'_>> {
    tools
        .iter()
        .map(|t| {
            wire::Tool::function(
                t.name.as_str(),
                t.description.as_str(),
                adapt_schema(&t.input_schema, ToolSchemaRules::strictest()),
            )
        })
        .collect()
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
        model: Cow::Borrowed(&request.model),
        tools,
        messages: messages(request),
        tool_choice: has_tools.then(|| tool_choice(&request.tool_choice, dialect)).flatten(),
        parallel_tool_calls: if has_tools { request.parallel_tool_calls } else { None },
        max_completion_tokens: if official { request.max_output_tokens } else { None },
        max_tokens: if official { None } else { request.max_output_tokens },
        temperature: request.temperature,
        response_format: request.output.as_ref().map(|o| {
            if o.json_object {
                wire::ResponseFormat::JsonObject
            } else {
                wire::ResponseFormat::JsonSchema { json_schema: json_schema_format(o) }
            }
        }),
        prompt_cache_key: if official {
            request.prompt_cache_key.as_deref().map(Cow::Borrowed)
        } else {
            None
        },
        stream,
        stream_options: stream.then_some(StreamOptions { include_usage: true }),
    }
}

/// A `json_schema` format in the API's field order (name, description, schema, strict), with
/// the format's own `description` and `strict` as given (the gateway's are the client's).
pub(crate) fn json_schema_format(o: &OutputFormat) -> wire::JsonSchemaFormat<'_> {
    wire::JsonSchemaFormat {
        name: Cow::Borrowed(o.name.as_str()),
        description: o.description.as_deref().map(Cow::Borrowed),
        schema: Some(Cow::Borrowed(&*o.schema)),
        strict: o.strict,
    }
}

fn tool_choice(choice: &ToolChoice, dialect: OpenAiDialect) -> Option<wire::ToolChoice<'_>> {
    Some(match choice {
        // `auto` is the default whenever tools are present; sending it explicitly changes nothing.
        ToolChoice::Auto => return None,
        ToolChoice::None => wire::ToolChoice::Mode(ToolChoiceMode::None),
        ToolChoice::Required => wire::ToolChoice::Mode(ToolChoiceMode::Required),
        ToolChoice::Named { name } => wire::ToolChoice::function(name.as_str()),
        ToolChoice::Allowed { tools, mode } => {
            let mode = match mode {
                AllowedToolsMode::Auto => ToolChoiceMode::Auto,
                AllowedToolsMode::Required => ToolChoiceMode::Required,
            };
            if dialect == OpenAiDialect::OpenAi {
                wire::ToolChoice::Object(ToolChoiceObject::AllowedTools {
                    allowed_tools: wire::AllowedTools {
                        mode,
                        tools: tools.iter().map(|n| wire::ToolRef::function(n.as_str())).collect(),
                    },
                })
            } else {
                // Servers without allowed_tools: the executor enforces the subset; ask for the
                // closest mode they understand.
                wire::ToolChoice::Mode(mode)
            }
        }
    })
}

fn messages(request: &ModelRequest) -> Vec<wire::Message<'_>> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let system: Vec<&str> =
        request.system.iter().map(|s| s.text.as_str()).filter(|t| !t.is_empty()).collect();
    if !system.is_empty() {
        out.push(wire::Message::text(wire::Role::System, system.join("\n\n")));
    }
    for message in request.messages.iter() {
        match message.role {
            Role::Assistant => {
                let text = message.text();
                let calls: Vec<wire::ToolCall<'_>> = message
                    .tool_uses()
                    .map(|u| {
                        wire::ToolCall::function(u.id.as_str(), u.name.as_str(), u.input.to_wire_string())
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue; // e.g. only reasoning from another provider
                }
                let content = (!text.is_empty()).then_some(wire::Content::Text(Cow::Owned(text)));
                out.push(wire::Message {
                    role: wire::Role::Assistant,
                    tool_call_id: None,
                    content,
                    tool_calls: calls,
                });
            }
            Role::User | Role::Tool => {
                // Tool results become `tool` messages; any text goes in a user message after them.
                for result in message.tool_results_iter() {
                    out.push(wire::Message::tool_result(
                        result.tool_use_id.as_str(),
                        result.content.as_str(),
                    ));
                }
                let texts: Vec<&str> = message.texts().collect();
                match texts.as_slice() {
                    [] => {}
                    [one] => out.push(wire::Message::text(wire::Role::User, *one)),
                    many => out.push(wire::Message::text(wire::Role::User, many.join("\n\n"))),
                }
            }
        }
    }
    out
}
