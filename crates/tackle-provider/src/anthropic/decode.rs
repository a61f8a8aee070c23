//! Anthropic Messages stream events -> normalized stream events.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};
use tackle_protocol::{Reasoning, StopReason, StreamEvent, ToolInput, ToolUse, Usage};

use tackle_wire::anthropic as wire;

use crate::ProviderError;
use crate::http::{WireDecoder, classify_http_error, snippet};
use crate::sse::SseEvent;

enum Block {
    Text,
    ToolUse { id: String, name: String, json: String },
    Thinking { text: String, signature: String },
    Redacted(Value),
    Other,
}

/// Decoder state of one Messages stream.
#[derive(Default)]
pub struct AnthropicDecoder {
    blocks: HashMap<u32, Block>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

/// Maps a Messages `stop_reason`.
pub(crate) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::Pause,
        "model_context_window_exceeded" => StopReason::ContextExceeded,
        other => StopReason::Other(other.to_owned()),
    }
}

/// Reads Anthropic usage fields into `usage`, keeping fields the object does not mention.
pub(crate) fn merge_usage(usage: &mut Usage, v: &wire::Usage) {
    let (fresh, read, write) = (v.input_tokens, v.cache_read_input_tokens, v.cache_creation_input_tokens);
    if fresh.is_some() || read.is_some() || write.is_some() {
        let old_fresh = usage.input_tokens.saturating_sub(usage.cache_read_tokens + usage.cache_write_tokens);
        usage.cache_read_tokens = read.unwrap_or(usage.cache_read_tokens);
        usage.cache_write_tokens = write.unwrap_or(usage.cache_write_tokens);
        usage.input_tokens = fresh.unwrap_or(old_fresh) + usage.cache_read_tokens + usage.cache_write_tokens;
    }
    if let Some(out) = v.output_tokens {
        usage.output_tokens = out;
    }
}

impl AnthropicDecoder {
    fn block_start(&mut self, index: u32, block: wire::ContentBlock<'_>, out: &mut VecDeque<StreamEvent>) {
        let state = match block {
            wire::ContentBlock::Text { text, .. } => {
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta { text: text.into_owned() });
                }
                Block::Text
            }
            wire::ContentBlock::ToolUse { id, name, input, .. } => {
                let (id, name) = (id.into_owned(), name.into_owned());
                out.push_back(StreamEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
                // Input normally streams as JSON deltas from `{}`; a non-empty start object is kept.
                let json = match input {
                    Value::Object(m) if !m.is_empty() => Value::Object(m).to_string(),
                    _ => String::new(),
                };
                Block::ToolUse { id, name, json }
            }
            wire::ContentBlock::Thinking { thinking, signature } => {
                let text = thinking.into_owned();
                if !text.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta { text: text.clone() });
                }
                Block::Thinking { text, signature: signature.into_owned() }
            }
            wire::ContentBlock::RedactedThinking { data } => {
                Block::Redacted(json!({ "type": "redacted_thinking", "data": data }))
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn block_delta(&mut self, index: u32, delta: wire::Delta<'_>, out: &mut VecDeque<StreamEvent>) {
        let block = self.blocks.get_mut(&index);
        match (delta, block) {
            (wire::Delta::TextDelta { text }, _) if !text.is_empty() => {
                out.push_back(StreamEvent::TextDelta { text: text.into_owned() });
            }
            (wire::Delta::InputJsonDelta { partial_json }, Some(Block::ToolUse { json, .. }))
                if !partial_json.is_empty() =>
            {
                json.push_str(&partial_json);
                out.push_back(StreamEvent::ToolCallDelta { index, arguments: partial_json.into_owned() });
            }
            (wire::Delta::ThinkingDelta { thinking }, Some(Block::Thinking { text, .. })) => {
                text.push_str(&thinking);
                if !thinking.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta { text: thinking.into_owned() });
                }
            }
            (wire::Delta::SignatureDelta { signature: part }, Some(Block::Thinking { signature, .. })) => {
                signature.push_str(&part);
            }
            _ => {} // unknown delta types (citations, ...) are ignored
        }
    }

    fn block_stop(&mut self, index: u32, out: &mut VecDeque<StreamEvent>) {
        match self.blocks.remove(&index) {
            Some(Block::ToolUse { id, name, json }) => {
                let input = ToolInput::parse(&json);
                out.push_back(StreamEvent::ToolCallEnd {
                    index,
                    call: ToolUse { id: id.into(), name, input },
                });
            }
            Some(Block::Thinking { text, signature }) => {
                let data = json!({ "type": "thinking", "thinking": text, "signature": signature });
                out.push_back(StreamEvent::Reasoning(Reasoning { format: "anthropic".into(), text, data }));
            }
            Some(Block::Redacted(data)) => {
                out.push_back(StreamEvent::Reasoning(Reasoning {
                    format: "anthropic".into(),
                    text: String::new(),
                    data,
                }));
            }
            Some(Block::Text | Block::Other) | None => {}
        }
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) {
        out.push_back(StreamEvent::Usage(self.usage));
        let reason = self.stop.clone().unwrap_or(StopReason::EndTurn);
        out.push_back(StreamEvent::Stop { reason });
        self.done = true;
    }
}

fn stream_error(error: &wire::ErrorDetail<'_>) -> ProviderError {
    let status = match error.kind.as_ref() {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "authentication_error" => 401,
        "permission_error" => 403,
        "invalid_request_error" | "not_found_error" | "request_too_large" => 400,
        "timeout_error" => 408,
        _ => 500,
    };
    let body = serde_json::to_string(&wire::ErrorBody { kind: "error".into(), error: error.clone() })
        .unwrap_or_default();
    classify_http_error(status, &http::HeaderMap::new(), &body)
}

/// One event's data as a typed event. The `type` in the data is authoritative; the SSE event
/// name stands in only when the data has none.
fn parse_event<'a>(event: &'a SseEvent) -> Result<wire::StreamEvent<'a>, ProviderError> {
    let malformed = |e: serde_json::Error| {
        ProviderError::protocol(format!("malformed stream event ({e}): {}", snippet(&event.data)))
    };
    match serde_json::from_str(&event.data) {
        Ok(parsed) => Ok(parsed),
        Err(e) => {
            let Ok(Value::Object(mut data)) = serde_json::from_str::<Value>(&event.data) else {
                return Err(malformed(e));
            };
            if data.contains_key("type") || event.event.is_empty() {
                return Err(malformed(e));
            }
            data.insert("type".into(), Value::String(event.event.clone()));
            serde_json::from_value(Value::Object(data)).map_err(malformed)
        }
    }
}

impl WireDecoder for AnthropicDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        match parse_event(event)? {
            wire::StreamEvent::MessageStart { message } => {
                let known = |s: &str| (!s.is_empty()).then(|| s.to_owned());
                let (id, model) = (known(&message.id), known(&message.model));
                if id.is_some() || model.is_some() {
                    out.push_back(StreamEvent::ResponseInfo { id, model });
                }
                merge_usage(&mut self.usage, &message.usage);
            }
            wire::StreamEvent::ContentBlockStart { index, content_block } => {
                self.block_start(index, content_block, out);
            }
            wire::StreamEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta, out),
            wire::StreamEvent::ContentBlockStop { index } => self.block_stop(index, out),
            wire::StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop = Some(stop_reason(&reason));
                }
                if let Some(u) = usage {
                    merge_usage(&mut self.usage, &u);
                }
            }
            wire::StreamEvent::MessageStop => self.finish(out),
            wire::StreamEvent::Error { error } => return Err(stream_error(&error)),
            _ => {} // ping and event types added later are ignored
        }
        Ok(())
    }
    fn on_end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.stop.is_some() && self.blocks.is_empty() {
            // Everything arrived but the final `message_stop`; the response is complete.
            self.finish(out);
            return Ok(());
        }
        Err(ProviderError::network("the stream ended before the response finished (no message_stop)"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// A whole answer (a `message`, asked with `"stream": false`) as the events its stream would
/// have carried: each content block is started and stopped as its stream events would (thinking
/// kept with its signature, tool input as its JSON text), then the usage and the stop reason,
/// through the stream's own decoder. A body of type `error` is that error.
pub(crate) fn whole(body: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
    let message: wire::Response<'_> =
        serde_json::from_slice(body).map_err(|e| crate::http::malformed_whole(&e, body))?;
    if message.kind == "error" {
        let error: wire::ErrorBody<'_> =
            serde_json::from_slice(body).map_err(|e| crate::http::malformed_whole(&e, body))?;
        return Err(stream_error(&error.error));
    }
    let known = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let (id, model) = (known(&message.id), known(&message.model));
    if id.is_some() || model.is_some() {
        out.push_back(StreamEvent::ResponseInfo { id, model });
    }
    let mut decoder = AnthropicDecoder::default();
    merge_usage(&mut decoder.usage, &message.usage);
    for (position, block) in message.content.into_iter().enumerate() {
        let index = u32::try_from(position).unwrap_or(u32::MAX);
        decoder.block_start(index, block, out);
        decoder.block_stop(index, out);
    }
    decoder.stop = message.stop_reason.as_deref().map(stop_reason);
    decoder.finish(out);
    Ok(())
}
