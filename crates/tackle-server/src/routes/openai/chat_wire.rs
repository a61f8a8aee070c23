//! The Chat Completions wire: request types, their conversion to Tackle's types, and
//! responses written back in OpenAI's shape (whole or as `chat.completion.chunk`s). No routes:
//! `chat` (Tackle's gateway and agent modes) and `codex_bridge` (models `codex/<model>`) both
//! speak it.

use std::borrow::Cow;
use std::convert::Infallible;

use axum::response::sse::Event;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::{
    ContentBlock, Message, ModelResponse, Role, StopReason, StreamEvent, SystemSection, ToolInput,
    ToolResult, ToolSpec, ToolUse, Usage,
};
use tackle_wire::chat as wire;
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::shared::{self, ClientTool, async_stream};
use crate::ApiError;

/// `POST /v1/chat/completions` body (the parts Tackle uses; others are ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatRequest {
    /// Model name: the agent model (`tackle-agent`) runs Tackle's agent; any other is forwarded.
    pub model: String,
    /// The conversation.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<ChatMessage>,
    /// Function tools the client runs itself.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<ChatTool>,
    /// `auto`, `none`, `required`, `{"type":"function","function":{"name":..}}` or
    /// `{"type":"allowed_tools",...}`.
    // Optional in the document too: `value_type` alone would list it as required.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tool_choice: Option<wire::ToolChoice<'static>>,
    /// Stream chunks as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// `{"include_usage": true}` adds a final usage chunk.
    #[schema(value_type = Option<Object>)]
    pub stream_options: Option<serde_json::Map<String, Value>>,
    /// Output token limit.
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub max_tokens: Option<u32>,
    /// Output token limit (newer name).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Whether several tool calls may come in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Prompt cache routing key; defaults to a hash of the tools and system prompt.
    pub prompt_cache_key: Option<String>,
    /// What the answer must be: `{"type": "text"}` (the default), `{"type": "json_object"}`, or
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}` (structured output).
    /// Forwarded as is to a provider model; with the agent model, the agent's final answer must
    /// match the schema (tools still run before it), and the message's content is only that JSON.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub response_format: Option<wire::ResponseFormat<'static>>,
}

impl ChatRequest {
    /// Whether a streamed answer ends with a usage chunk (`stream_options.include_usage`).
    pub(crate) fn include_usage(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.get("include_usage")).and_then(Value::as_bool)
            == Some(true)
    }
}

/// One message of a chat request: tackle-wire's Chat Completions message, read typed (an
/// unknown role, a content that is neither text nor parts, a part of no known type or a call
/// without its id is refused naming the field).
pub type ChatMessage = wire::Message<'static>;

/// A function tool of a chat request.
pub type ChatTool = wire::Tool<'static>;

pub(crate) fn completion_id() -> String {
    format!("chatcmpl-{}", uuid::Uuid::new_v4().simple())
}

/// Text of a message's `content` (none is empty): a string or text parts.
fn content_text(content: Option<&wire::Content<'_>>, at: usize) -> Result<String, ApiError> {
    let parts = match content {
        None => return Ok(String::new()),
        Some(wire::Content::Text(text)) => return Ok(text.to_string()),
        Some(wire::Content::Parts(parts)) => parts,
    };
    let mut out = String::new();
    for (k, part) in parts.iter().enumerate() {
        match part {
            wire::ContentPart::Text { text } => out.push_str(text),
            _ => {
                return Err(ApiError::invalid_field(
                    format!("messages[{at}].content[{k}]"),
                    "only text content parts are supported",
                ));
            }
        }
    }
    Ok(out)
}

/// Text of a system or user message, which providers refuse empty: a non-empty string, or text
/// parts each with text.
fn non_empty_text(content: Option<&wire::Content<'_>>, at: usize) -> Result<String, ApiError> {
    if let Some(wire::Content::Parts(parts)) = content
        && (parts.is_empty()
            || parts.iter().any(|p| matches!(p, wire::ContentPart::Text { text } if text.is_empty())))
    {
        return Err(ApiError::invalid_field(
            format!("messages[{at}].content"),
            "send at least one text part, each with text",
        ));
    }
    let text = content_text(content, at)?;
    if text.is_empty() {
        return Err(ApiError::invalid_field(
            format!("messages[{at}].content"),
            "the content is empty; send the text of the message",
        ));
    }
    Ok(text)
}

/// The system prompt and conversation of a chat request.
pub(crate) fn convert_messages(
    messages: &[ChatMessage],
) -> Result<(Vec<SystemSection>, Vec<Message>), ApiError> {
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            wire::Role::System | wire::Role::Developer => {
                system.push(SystemSection::cacheable("client", non_empty_text(m.content.as_ref(), i)?))
            }
            wire::Role::User => out.push(Message::user(non_empty_text(m.content.as_ref(), i)?)),
            wire::Role::Assistant => {
                let mut content = Vec::new();
                let text = content_text(m.content.as_ref(), i)?;
                if !text.is_empty() {
                    content.push(ContentBlock::text(text));
                }
                for call in &m.tool_calls {
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id: call.id.as_ref().into(),
                        name: call.function.name.to_string(),
                        input: ToolInput::parse(&call.function.arguments),
                    }));
                }
                if content.is_empty() {
                    return Err(ApiError::invalid_field(
                        format!("messages[{i}]"),
                        "an assistant message needs content or tool_calls",
                    ));
                }
                out.push(Message { role: Role::Assistant, content });
            }
            wire::Role::Tool => {
                let id = m.tool_call_id.as_deref().map(str::to_owned).ok_or_else(|| {
                    ApiError::invalid_field(
                        format!("messages[{i}].tool_call_id"),
                        "a tool message needs tool_call_id",
                    )
                })?;
                let result = ToolResult::ok(id, content_text(m.content.as_ref(), i)?);
                // Consecutive tool messages answer one assistant message together.
                match out.last_mut() {
                    Some(last) if last.role == Role::Tool => {
                        last.content.push(ContentBlock::ToolResult(result))
                    }
                    _ => out.push(Message::tool_results([result])),
                }
            }
        }
    }
    Ok((system, out))
}

/// The request's function tools, in name order.
pub(crate) fn convert_tools(tools: &[ChatTool]) -> Result<Vec<ToolSpec>, ApiError> {
    let tools: Vec<ClientTool<'_>> = tools
        .iter()
        .map(|t| ClientTool {
            kind: &t.kind,
            name: &t.function.name,
            description: t.function.description.as_deref().unwrap_or(""),
            parameters: t.function.parameters.as_deref(),
        })
        .collect();
    shared::function_tools(&tools, "function.name")
}

pub(crate) fn finish_reason(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens | StopReason::ContextExceeded => "length",
        StopReason::Refusal => "content_filter",
        _ => "stop",
    }
}

/// Tackle's token counts in the Chat Completions shape.
pub(crate) fn chat_usage(u: &Usage) -> wire::Usage {
    wire::Usage {
        prompt_tokens: u.input_tokens,
        completion_tokens: u.output_tokens,
        total_tokens: u.input_tokens + u.output_tokens,
        prompt_tokens_details: Some(wire::PromptTokensDetails {
            cached_tokens: Some(u.cache_read_tokens),
            audio_tokens: None,
        }),
        completion_tokens_details: None,
    }
}

/// A whole answer (`chat.completion`): the text (`null` when the answer only calls tools) and
/// the calls.
pub(crate) fn completion_body<'a>(
    id: &'a str,
    created: u64,
    model: &'a str,
    response: &'a ModelResponse,
) -> wire::Completion<'a> {
    let text = response.text();
    let tool_calls: Vec<wire::ToolCall<'a>> = response
        .tool_uses()
        .map(|u| wire::ToolCall::function(u.id.as_str(), u.name.as_str(), u.input.to_wire_string()))
        .collect();
    let content = if text.is_empty() && !tool_calls.is_empty() { None } else { Some(Cow::Owned(text)) };
    wire::Completion {
        id: id.into(),
        object: "chat.completion".into(),
        created,
        model: model.into(),
        system_fingerprint: None,
        choices: vec![wire::CompletionChoice {
            index: 0,
            message: wire::AnswerMessage {
                role: wire::Role::Assistant,
                content,
                refusal: None,
                reasoning_content: None,
                tool_calls,
            },
            logprobs: None,
            finish_reason: Some(finish_reason(&response.stop_reason).into()),
        }],
        usage: chat_usage(&response.usage),
    }
}

/// A body with Tackle's extension object beside OpenAI's fields (SDKs keep unknown fields).
#[derive(Debug, Serialize)]
pub(crate) struct WithTackle<T, E> {
    #[serde(flatten)]
    pub(crate) body: T,
    pub(crate) tackle: E,
}

/// Writes the `chat.completion.chunk` events of one streamed answer.
pub(crate) struct ChunkWriter {
    pub(crate) tx: mpsc::UnboundedSender<Result<Event, Infallible>>,
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
    pub(crate) include_usage: bool,
}

impl ChunkWriter {
    /// Sends one event; false when the client is gone.
    pub(crate) fn send(&self, body: &impl Serialize) -> bool {
        match serde_json::to_string(body) {
            Ok(data) => self.tx.send(Ok(Event::default().data(data))).is_ok(),
            Err(e) => {
                tracing::warn!(error = %e, "a chat chunk could not be written; ending the stream");
                false
            }
        }
    }

    /// A chunk of this answer with `choices` (empty for the usage chunk).
    fn chunk<'a>(&'a self, choices: Vec<wire::ChunkChoice<'a>>) -> wire::Chunk<'a> {
        wire::Chunk {
            id: Some(self.id.as_str().into()),
            object: Some("chat.completion.chunk".into()),
            created: Some(self.created),
            model: Some(self.model.as_str().into()),
            choices,
            ..wire::Chunk::default()
        }
    }

    /// One delta; false when the client is gone.
    pub(crate) fn delta(&self, delta: wire::Delta<'_>, finish: Option<&str>) -> bool {
        let choice = wire::ChunkChoice {
            index: 0,
            delta: Some(delta),
            logprobs: None,
            finish_reason: finish.map(Into::into),
        };
        self.send(&self.chunk(vec![choice]))
    }

    /// More answer text.
    pub(crate) fn text(&self, text: &str) -> bool {
        self.delta(wire::Delta { content: Some(text.into()), ..wire::Delta::default() }, None)
    }

    /// The first chunk: the assistant's role and empty content.
    pub(crate) fn start(&self) -> bool {
        self.delta(
            wire::Delta {
                role: Some("assistant".into()),
                content: Some("".into()),
                ..wire::Delta::default()
            },
            None,
        )
    }

    /// A failure in OpenAI's error shape.
    pub(crate) fn error(&self, code: &str, message: &str) -> bool {
        let mut body = wire::ErrorBody::new("server_error", message);
        body.error.code = Some(Value::String(code.to_owned()));
        self.send(&body)
    }

    /// The finish reason, the usage chunk if asked for, and `[DONE]`.
    pub(crate) fn finish(&self, reason: &str, usage: &Usage) {
        self.finish_with(reason, usage, None::<()>);
    }

    /// [`Self::finish`] with Tackle's extension object on the chunk carrying the finish reason.
    pub(crate) fn finish_with(&self, reason: &str, usage: &Usage, tackle: Option<impl Serialize>) {
        let last = self.chunk(vec![wire::ChunkChoice {
            index: 0,
            delta: Some(wire::Delta::default()),
            logprobs: None,
            finish_reason: Some(reason.into()),
        }]);
        match tackle {
            Some(tackle) => self.send(&WithTackle { body: last, tackle }),
            None => self.send(&last),
        };
        if self.include_usage {
            self.send(&wire::Chunk { usage: Some(Box::new(chat_usage(usage))), ..self.chunk(Vec::new()) });
        }
        let _ = self.tx.send(Ok(Event::default().data("[DONE]")));
    }
}

pub(crate) fn gateway_chunks(
    events: tackle_provider::EventStream,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let out = ChunkWriter { tx, id, created, model, include_usage };
        if !out.start() {
            return;
        }
        let mut events = events;
        let mut usage = Usage::default();
        let mut stop = StopReason::EndTurn;
        let mut call_index: Vec<u32> = Vec::new();
        while let Some(event) = events.next().await {
            let sent = match event {
                Ok(StreamEvent::TextDelta { text }) => out.text(&text),
                Ok(StreamEvent::ToolCallStart { index, id: call_id, name }) => {
                    call_index.push(index);
                    let at = u32::try_from(call_index.len() - 1).unwrap_or(u32::MAX);
                    out.delta(
                        tool_call_delta(wire::ToolCallDelta {
                            index: Some(at),
                            id: Some(call_id.as_str().into()),
                            kind: Some("function".into()),
                            function: Some(wire::FunctionDelta {
                                name: Some(name.into()),
                                arguments: Some("".into()),
                            }),
                        }),
                        None,
                    )
                }
                Ok(StreamEvent::ToolCallDelta { index, arguments }) => {
                    let at = call_index.iter().position(|i| *i == index).unwrap_or(0);
                    out.delta(
                        tool_call_delta(wire::ToolCallDelta {
                            index: Some(u32::try_from(at).unwrap_or(u32::MAX)),
                            function: Some(wire::FunctionDelta {
                                name: None,
                                arguments: Some(arguments.into()),
                            }),
                            ..wire::ToolCallDelta::default()
                        }),
                        None,
                    )
                }
                Ok(StreamEvent::Usage(u)) => {
                    usage = u;
                    continue;
                }
                Ok(StreamEvent::Stop { reason, .. }) => {
                    stop = reason;
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    // Mid-stream failures are reported in OpenAI's error shape, then the stream ends.
                    out.error("provider_error", &e.to_string());
                    return;
                }
            };
            if !sent {
                return;
            }
        }
        out.finish(finish_reason(&stop), &usage);
    })
}

fn tool_call_delta(call: wire::ToolCallDelta<'_>) -> wire::Delta<'_> {
    wire::Delta { tool_calls: Some(vec![call]), ..wire::Delta::default() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn msgs(v: Value) -> Vec<ChatMessage> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn messages_convert_with_tool_rounds() {
        let (system, out) = convert_messages(&msgs(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        ])))
        .unwrap();
        assert_eq!(system.len(), 1);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].tool_uses().count(), 2);
        assert_eq!(out[2].tool_results_iter().count(), 2, "consecutive tool messages merge");
        assert!(tackle_agent::conversation::is_valid(&out));
    }

    #[test]
    fn bad_messages_name_the_field() {
        let e = convert_messages(&msgs(json!([{"role": "tool", "content": "x"}]))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[0].tool_call_id"));
        let image = json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]);
        let e = convert_messages(&msgs(image)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[0].content[0]"));
    }

    /// A body that does not fit the typed request, as the route answers it.
    fn rejected(body: Value) -> ApiError {
        let bytes = serde_json::to_vec(&body).unwrap();
        crate::json::parse::<ChatRequest>(&bytes).map_err(super::super::read::reword).unwrap_err()
    }

    #[test]
    fn a_malformed_request_is_refused_naming_the_field_in_the_apis_words() {
        let e = rejected(json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]}));
        assert_eq!((e.field.as_deref(), e.code), (Some("messages[0].role"), "invalid_value"));
        assert!(
            e.message.starts_with("Invalid value: 'robot'. Supported values are: 'system'"),
            "{}",
            e.message
        );
        let e = rejected(json!({"model": "m", "messages": [{"role": "user", "content": 5}]}));
        assert_eq!((e.field.as_deref(), e.code), (Some("messages[0].content"), "invalid_type"));
        let call = json!({"type": "function", "function": {"name": "f"}});
        let e = rejected(json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]}));
        assert_eq!(e.field.as_deref(), Some("messages[0].tool_calls[0].id"), "{}", e.message);
        assert_eq!(e.message, "Missing required parameter: 'messages[0].tool_calls[0].id'.");
        let e =
            rejected(json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "video"}]}]}));
        assert_eq!(e.field.as_deref(), Some("messages[0].content[0].type"), "{}", e.message);
        let e =
            rejected(json!({"model": "m", "messages": [], "tools": [{"type": "function", "function": {}}]}));
        assert_eq!(e.field.as_deref(), Some("tools[0].function.name"), "{}", e.message);
    }

    #[test]
    fn chat_tools_are_read_in_name_order() {
        let tools: Vec<ChatTool> = serde_json::from_value(json!([
            {"type": "function", "function": {"name": "b_tool", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "a_tool"}},
        ]))
        .unwrap();
        let specs = convert_tools(&tools).unwrap();
        assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a_tool", "b_tool"]);
        assert_eq!(specs[0].input_schema, json!({"type": "object", "properties": {}}));
        let bad: Vec<ChatTool> =
            serde_json::from_value(json!([{"type": "function", "function": {"name": "a b"}}])).unwrap();
        assert_eq!(convert_tools(&bad).unwrap_err().field.as_deref(), Some("tools[0].function.name"));
    }
}
