//! OpenAI Chat Completions stream chunks -> normalized stream events.

use std::collections::{BTreeMap, VecDeque};

use tackle_protocol::{StopReason, StreamEvent, ToolInput, ToolUse, Usage};
use tackle_wire::chat::{self as wire, Chunk, ToolCallDelta};

use crate::ProviderError;
use crate::http::{WireDecoder, classify_http_error};
use crate::sse::SseEvent;

/// The normalized token counts of a Chat Completions `usage`.
pub(crate) fn usage(u: &wire::Usage) -> Usage {
    Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        cache_read_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
        cache_write_tokens: 0,
        reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens).unwrap_or(0),
    }
}

#[derive(Default)]
struct CallState {
    id: String,
    name: String,
    args: String,
    started: bool,
}

/// Decoder state of one Chat Completions stream.
#[derive(Default)]
pub struct OpenAiChatDecoder {
    calls: BTreeMap<u32, CallState>,
    finish: Option<String>,
    calls_closed: bool,
    had_calls: bool,
    usage: Option<Usage>,
    done: bool,
    /// The response's id and model were reported (every chunk repeats them; once is enough).
    identified: bool,
}

/// Maps a `finish_reason`. Some compatible servers say `stop` after tool calls; the calls decide.
pub(crate) fn stop_reason(reason: &str, had_calls: bool) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "stop" if had_calls => StopReason::ToolUse,
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

impl OpenAiChatDecoder {
    fn close_calls(&mut self, out: &mut VecDeque<StreamEvent>) {
        if self.calls_closed {
            return;
        }
        self.calls_closed = true;
        for (index, call) in std::mem::take(&mut self.calls) {
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            if !call.started {
                out.push_back(StreamEvent::ToolCallStart { index, id: id.clone(), name: call.name.clone() });
                if !call.args.is_empty() {
                    out.push_back(StreamEvent::ToolCallDelta { index, arguments: call.args.clone() });
                }
            }
            let input = ToolInput::parse(&call.args);
            out.push_back(StreamEvent::ToolCallEnd {
                index,
                call: ToolUse { id: id.into(), name: call.name, input },
            });
        }
    }

    fn finalize(&mut self, out: &mut VecDeque<StreamEvent>) {
        let had_calls = self.had_calls;
        self.close_calls(out);
        if let Some(usage) = self.usage {
            out.push_back(StreamEvent::Usage(usage));
        }
        let reason = match &self.finish {
            Some(r) => stop_reason(r, had_calls),
            None if had_calls => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push_back(StreamEvent::Stop { reason });
        self.done = true;
    }

    /// A fragment of a call, read in place: the chunk's strings are borrowed from the event
    /// (`[wire-borrow]`), and only what goes out or is kept is copied.
    fn on_call_delta(&mut self, position: usize, delta: &ToolCallDelta<'_>, out: &mut VecDeque<StreamEvent>) {
        // Servers that omit `index` send one call per chunk sequence; fall back to the position.
        let index = delta.index.unwrap_or(position as u32);
        self.had_calls = true;
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.id.as_deref().filter(|s| !s.is_empty())
            && call.id.is_empty()
        {
            id.clone_into(&mut call.id);
        }
        let (name, args) = match &delta.function {
            Some(f) => (f.name.as_deref(), f.arguments.as_deref()),
            None => (None, None),
        };
        if let Some(name) = name.filter(|s| !s.is_empty())
            && call.name.is_empty()
        {
            name.clone_into(&mut call.name);
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id.clone() };
            call.id = id.clone();
            out.push_back(StreamEvent::ToolCallStart { index, id, name: call.name.clone() });
            if !call.args.is_empty() {
                out.push_back(StreamEvent::ToolCallDelta { index, arguments: call.args.clone() });
            }
        }
        if let Some(args) = args.filter(|s| !s.is_empty()) {
            call.args.push_str(args);
            if call.started {
                out.push_back(StreamEvent::ToolCallDelta { index, arguments: args.to_owned() });
            }
        }
    }
}

impl WireDecoder for OpenAiChatDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finalize(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            ProviderError::protocol(format!("malformed stream chunk ({e}): {}", crate::http::snippet(data)))
        })?;
        self.on_chunk(chunk, out)
    }

    fn on_end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() {
            // Some compatible servers close the stream without `[DONE]`; the response is complete.
            self.finalize(out);
            return Ok(());
        }
        Err(ProviderError::network("the stream ended before the response finished (no finish_reason)"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl OpenAiChatDecoder {
    /// One chunk, typed.
    fn on_chunk(&mut self, chunk: Chunk<'_>, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error {
            let body = serde_json::json!({ "error": error }).to_string();
            let status = error.get("code").and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok());
            return Err(classify_http_error(status.unwrap_or(500), &http::HeaderMap::new(), &body));
        }
        if !self.identified && (chunk.id.is_some() || chunk.model.is_some()) {
            self.identified = true;
            let known =
                |s: Option<std::borrow::Cow<'_, str>>| s.filter(|s| !s.is_empty()).map(|s| s.into_owned());
            out.push_back(StreamEvent::ResponseInfo { id: known(chunk.id), model: known(chunk.model) });
        }
        if let Some(wire_usage) = chunk.usage {
            self.usage = Some(usage(&wire_usage));
        }
        for choice in &chunk.choices {
            if choice.index != 0 {
                continue; // n > 1 is not requested; ignore extra choices
            }
            if let Some(delta) = &choice.delta {
                if let Some(text) = delta.reasoning_content.as_deref().filter(|s| !s.is_empty()) {
                    out.push_back(StreamEvent::ReasoningDelta { text: text.to_owned() });
                }
                for text in [&delta.content, &delta.refusal].into_iter().flatten() {
                    if !text.is_empty() {
                        out.push_back(StreamEvent::TextDelta { text: text.to_string() });
                    }
                }
                for (position, call) in delta.tool_calls.iter().flatten().enumerate() {
                    self.on_call_delta(position, call, out);
                }
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish = Some(reason.to_string());
                self.close_calls(out);
            }
        }
        Ok(())
    }
}

/// A whole answer (`chat.completion`, asked with `"stream": false`) as the events its stream
/// would have carried: the completion is read as one chunk holding the whole message, so the
/// normalization (call ids, stop reasons, usage) is the stream's own. A body holding only an
/// `error` (some compatible servers answer 200 with one) is that error.
pub(crate) fn whole(body: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
    let completion: wire::Completion<'_> = match serde_json::from_slice(body) {
        Ok(c) => c,
        Err(e) => {
            return Err(match serde_json::from_slice::<wire::ErrorBody<'_>>(body) {
                Ok(error) => error_of(&error),
                Err(_) => crate::http::malformed_whole(&e, body),
            });
        }
    };
    let known = |s: std::borrow::Cow<'_, str>| (!s.is_empty()).then(|| s.into_owned());
    let choices = completion
        .choices
        .into_iter()
        .map(|c| wire::ChunkChoice {
            index: c.index,
            delta: Some(wire::Delta {
                role: None,
                content: c.message.content,
                refusal: c.message.refusal,
                reasoning_content: c.message.reasoning_content,
                tool_calls: Some(
                    c.message
                        .tool_calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, call)| ToolCallDelta {
                            index: u32::try_from(i).ok(),
                            id: Some(call.id),
                            kind: Some(call.kind),
                            function: Some(wire::FunctionDelta {
                                name: Some(call.function.name),
                                arguments: Some(call.function.arguments),
                            }),
                        })
                        .collect(),
                ),
            }),
            logprobs: None,
            finish_reason: c.finish_reason,
        })
        .collect();
    let chunk = Chunk {
        id: known(completion.id).map(Into::into),
        object: None,
        created: None,
        model: known(completion.model).map(Into::into),
        system_fingerprint: None,
        choices,
        usage: Some(Box::new(completion.usage)),
        error: None,
    };
    let mut decoder = OpenAiChatDecoder::default();
    decoder.on_chunk(chunk, out)?;
    decoder.finalize(out);
    Ok(())
}

/// An error body read where an answer was expected.
fn error_of(error: &wire::ErrorBody<'_>) -> ProviderError {
    let body = serde_json::to_string(error).unwrap_or_default();
    let status = error.error.code.as_ref().and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok());
    classify_http_error(status.unwrap_or(500), &http::HeaderMap::new(), &body)
}
