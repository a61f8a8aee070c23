//! Anthropic Messages stream events -> normalized stream events.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};
use tackle_protocol::{Reasoning, StopReason, StreamEvent, ToolInput, ToolUse, Usage};

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
pub(crate) fn merge_usage(usage: &mut Usage, v: &Value) {
    let get = |k: &str| v.get(k).and_then(Value::as_u64);
    let (fresh, read, write) =
        (get("input_tokens"), get("cache_read_input_tokens"), get("cache_creation_input_tokens"));
    if fresh.is_some() || read.is_some() || write.is_some() {
        let old_fresh = usage.input_tokens.saturating_sub(usage.cache_read_tokens + usage.cache_write_tokens);
        usage.cache_read_tokens = read.unwrap_or(usage.cache_read_tokens);
        usage.cache_write_tokens = write.unwrap_or(usage.cache_write_tokens);
        usage.input_tokens = fresh.unwrap_or(old_fresh) + usage.cache_read_tokens + usage.cache_write_tokens;
    }
    if let Some(out) = get("output_tokens") {
        usage.output_tokens = out;
    }
}

fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

impl AnthropicDecoder {
    fn block_start(&mut self, index: u32, block: &Value, out: &mut VecDeque<StreamEvent>) {
        let state = match str_field(block, "type") {
            "text" => {
                let text = str_field(block, "text");
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta { text: text.to_owned() });
                }
                Block::Text
            }
            "tool_use" => {
                let id = str_field(block, "id").to_owned();
                let name = str_field(block, "name").to_owned();
                out.push_back(StreamEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
                // Input normally streams as JSON deltas from `{}`; a non-empty start object is kept.
                let json = match block.get("input") {
                    Some(Value::Object(m)) if !m.is_empty() => Value::Object(m.clone()).to_string(),
                    _ => String::new(),
                };
                Block::ToolUse { id, name, json }
            }
            "thinking" => {
                let text = str_field(block, "thinking").to_owned();
                if !text.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta { text: text.clone() });
                }
                Block::Thinking { text, signature: str_field(block, "signature").to_owned() }
            }
            "redacted_thinking" => Block::Redacted(block.clone()),
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn block_delta(&mut self, index: u32, delta: &Value, out: &mut VecDeque<StreamEvent>) {
        let block = self.blocks.get_mut(&index);
        match (str_field(delta, "type"), block) {
            ("text_delta", _) => {
                let text = str_field(delta, "text");
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta { text: text.to_owned() });
                }
            }
            ("input_json_delta", Some(Block::ToolUse { json, .. })) => {
                let part = str_field(delta, "partial_json");
                if !part.is_empty() {
                    json.push_str(part);
                    out.push_back(StreamEvent::ToolCallDelta { index, arguments: part.to_owned() });
                }
            }
            ("thinking_delta", Some(Block::Thinking { text, .. })) => {
                let part = str_field(delta, "thinking");
                text.push_str(part);
                if !part.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta { text: part.to_owned() });
                }
            }
            ("signature_delta", Some(Block::Thinking { signature, .. })) => {
                signature.push_str(str_field(delta, "signature"));
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

fn stream_error(v: &Value) -> ProviderError {
    let error = v.get("error").cloned().unwrap_or(Value::Null);
    let status = match str_field(&error, "type") {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "authentication_error" => 401,
        "permission_error" => 403,
        "invalid_request_error" | "not_found_error" | "request_too_large" => 400,
        "timeout_error" => 408,
        _ => 500,
    };
    classify_http_error(status, &http::HeaderMap::new(), &json!({ "error": error }).to_string())
}

impl WireDecoder for AnthropicDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let v: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::protocol(format!("malformed stream event ({e}): {}", snippet(&event.data)))
        })?;
        // The `type` in the data is authoritative; the SSE event name is only a hint.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        let index =
            || v.get("index").and_then(Value::as_u64).and_then(|i| u32::try_from(i).ok()).unwrap_or(0);
        match kind {
            "message_start" => {
                let message = v.get("message").unwrap_or(&Value::Null);
                let known = |key| message.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
                if known("id").is_some() || known("model").is_some() {
                    out.push_back(StreamEvent::ResponseInfo {
                        id: known("id").map(str::to_owned),
                        model: known("model").map(str::to_owned),
                    });
                }
                if let Some(u) = message.get("usage") {
                    merge_usage(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                self.block_start(index(), &block, out);
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                self.block_delta(index(), &delta, out);
            }
            "content_block_stop" => self.block_stop(index(), out),
            "message_delta" => {
                if let Some(reason) =
                    v.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str)
                {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(u) = v.get("usage") {
                    merge_usage(&mut self.usage, u);
                }
            }
            "message_stop" => self.finish(out),
            "error" => return Err(stream_error(&v)),
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
