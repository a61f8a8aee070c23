//! OpenAI Responses stream events -> normalized stream events.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Value, json};
use tackle_protocol::{Reasoning, StopReason, StreamEvent, ToolInput, ToolUse, Usage};

use super::REASONING_FORMAT;
use crate::ProviderError;
use crate::http::{WireDecoder, classify_http_error, snippet};
use crate::sse::SseEvent;

/// An output item being streamed, by `output_index`.
enum Item {
    /// A `message`: whether its text already went out as deltas.
    Message { streamed: bool },
    /// A `function_call`: whether `ToolCallStart` went out, and the argument text so far.
    Call { id: String, name: String, args: String, started: bool },
    /// A `reasoning` item: whether its summary already went out as deltas.
    Reasoning { streamed: bool },
    /// Anything else (built-in tool calls Tackle never asks for).
    Other,
}

/// Decoder state of one Responses stream.
///
/// Items are keyed by `output_index`; what an item's `response.output_item.done` carries is
/// authoritative, and a server that skips the fine-grained events (some send only the `done`
/// events, or only `response.completed`) still yields the same normalized events.
#[derive(Default)]
pub struct ResponsesDecoder {
    items: BTreeMap<u32, Item>,
    /// `item_id` -> `output_index`, for servers that omit the index on deltas.
    ids: BTreeMap<String, u32>,
    /// One past the highest index seen: what an item without `output_index` gets (items come
    /// in output order, so that is its position in the response's `output`).
    next_index: u32,
    /// The index of the latest item added, for deltas that name neither index nor item.
    latest: Option<u32>,
    /// Items whose `done` was handled.
    finished: BTreeSet<u32>,
    had_calls: bool,
    done: bool,
}

fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Usage of a `response` object: `input_tokens` counts all prompt tokens, cached or not.
fn usage(response: &Value) -> Option<Usage> {
    let u = response.get("usage").filter(|u| u.is_object())?;
    let get = |v: Option<&Value>, k: &str| v.and_then(|v| v.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let input_details = u.get("input_tokens_details");
    Some(Usage {
        input_tokens: get(Some(u), "input_tokens"),
        output_tokens: get(Some(u), "output_tokens"),
        cache_read_tokens: get(input_details, "cached_tokens"),
        cache_write_tokens: get(input_details, "cache_write_tokens"),
        reasoning_tokens: get(u.get("output_tokens_details"), "reasoning_tokens"),
    })
}

/// Maps an error `code` of a `response.failed` or `error` event to a typed error, through the
/// HTTP status the API gives the same condition.
fn stream_error(error: &Value) -> ProviderError {
    let code = str_field(error, "code");
    let message = match str_field(error, "message") {
        "" => format!("the response failed ({})", if code.is_empty() { "no error code" } else { code }),
        m => m.to_owned(),
    };
    let status = match code {
        "rate_limit_exceeded" => 429,
        "context_length_exceeded" | "insufficient_quota" | "invalid_prompt" | "invalid_request_error" => 400,
        c if c.starts_with("invalid_") || c.starts_with("image_") || c.ends_with("_policy_violation") => 400,
        _ => 500,
    };
    let body = json!({ "error": { "message": message, "type": str_field(error, "type"), "code": code } });
    classify_http_error(status, &http::HeaderMap::new(), &body.to_string())
}

impl ResponsesDecoder {
    /// The index an event is about: its `output_index`, else the item it names (a delta's
    /// `item_id`, an item's `id`) while that item is open, else, for an item event, the next
    /// position. Servers that omit indexes or reuse item ids (some use the call id) still get
    /// one index per item, so no item is mistaken for another.
    fn index(&mut self, v: &Value, kind: &str) -> u32 {
        let stated = v.get("output_index").and_then(Value::as_u64).and_then(|i| u32::try_from(i).ok());
        let item = v.get("item");
        let index = stated.unwrap_or_else(|| {
            let id = match item {
                Some(item) => str_field(item, "id"),
                None => str_field(v, "item_id"),
            };
            let open = self.ids.get(id).copied().filter(|i| !id.is_empty() && !self.finished.contains(i));
            match (kind, open) {
                ("response.output_item.added", _) => self.next_index,
                (_, Some(i)) => i,
                ("response.output_item.done", None) => self.next_index,
                (_, None) => self.latest.unwrap_or(self.next_index),
            }
        });
        if let Some(id) = item.and_then(|i| i.get("id")).and_then(Value::as_str) {
            self.ids.insert(id.to_owned(), index);
        }
        if kind == "response.output_item.added" {
            self.latest = Some(index);
        }
        self.next_index = self.next_index.max(index.saturating_add(1));
        index
    }

    fn start_call(index: u32, id: &str, name: &str, args: &str, out: &mut VecDeque<StreamEvent>) {
        out.push_back(StreamEvent::ToolCallStart { index, id: id.to_owned(), name: name.to_owned() });
        if !args.is_empty() {
            out.push_back(StreamEvent::ToolCallDelta { index, arguments: args.to_owned() });
        }
    }

    fn call_id(index: u32, item: &Value) -> String {
        match (str_field(item, "call_id"), str_field(item, "id")) {
            ("", "") => format!("call_{index}"),
            ("", id) => id.to_owned(),
            (call_id, _) => call_id.to_owned(),
        }
    }

    fn item_added(&mut self, index: u32, item: &Value, out: &mut VecDeque<StreamEvent>) {
        let state = match str_field(item, "type") {
            "function_call" => {
                let (id, name) = (Self::call_id(index, item), str_field(item, "name").to_owned());
                let args = str_field(item, "arguments").to_owned();
                Self::start_call(index, &id, &name, &args, out);
                self.had_calls = true;
                Item::Call { id, name, args, started: true }
            }
            "message" => Item::Message { streamed: false },
            "reasoning" => Item::Reasoning { streamed: false },
            _ => Item::Other,
        };
        self.items.insert(index, state);
    }

    /// A delta of a message's text, or of a reasoning item's summary or text.
    fn streamed_delta(&mut self, index: u32, delta: &str, reasoning: bool, out: &mut VecDeque<StreamEvent>) {
        let fresh =
            if reasoning { Item::Reasoning { streamed: false } } else { Item::Message { streamed: false } };
        match (self.items.entry(index).or_insert(fresh), reasoning) {
            (Item::Message { streamed }, false) | (Item::Reasoning { streamed }, true) => *streamed = true,
            _ => return,
        }
        if !delta.is_empty() {
            let text = delta.to_owned();
            out.push_back(if reasoning {
                StreamEvent::ReasoningDelta { text }
            } else {
                StreamEvent::TextDelta { text }
            });
        }
    }

    fn arguments_delta(&mut self, index: u32, delta: &str, out: &mut VecDeque<StreamEvent>) {
        let item = self.items.entry(index).or_insert_with(|| Item::Call {
            id: String::new(),
            name: String::new(),
            args: String::new(),
            started: false,
        });
        if let Item::Call { args, started, .. } = item {
            args.push_str(delta);
            if *started && !delta.is_empty() {
                out.push_back(StreamEvent::ToolCallDelta { index, arguments: delta.to_owned() });
            }
        }
    }

    /// Arguments the `done` events state: what was not streamed yet goes out as one more delta.
    fn arguments_final(&mut self, index: u32, arguments: &str, out: &mut VecDeque<StreamEvent>) {
        if let Some(Item::Call { args, started: true, .. }) = self.items.get_mut(&index) {
            if let Some(rest) = arguments.strip_prefix(args.as_str())
                && !rest.is_empty()
            {
                out.push_back(StreamEvent::ToolCallDelta { index, arguments: rest.to_owned() });
            }
            arguments.clone_into(args);
        }
    }

    fn item_done(&mut self, index: u32, item: &Value, out: &mut VecDeque<StreamEvent>) {
        if !self.finished.insert(index) {
            return; // `response.completed` repeats items already done
        }
        let state = self.items.remove(&index);
        match str_field(item, "type") {
            "function_call" => {
                let stated = str_field(item, "arguments");
                let (id, name, arguments) = match state {
                    Some(Item::Call { id, name, args, started: true }) => {
                        // The item states the whole text; what was not streamed goes out now.
                        if let Some(rest) = stated.strip_prefix(args.as_str())
                            && !rest.is_empty()
                        {
                            out.push_back(StreamEvent::ToolCallDelta { index, arguments: rest.to_owned() });
                        }
                        (id, name, if stated.is_empty() { args } else { stated.to_owned() })
                    }
                    buffered => {
                        let args = match buffered {
                            Some(Item::Call { args, .. }) if stated.is_empty() => args,
                            _ => stated.to_owned(),
                        };
                        let (id, name) = (Self::call_id(index, item), str_field(item, "name").to_owned());
                        Self::start_call(index, &id, &name, &args, out);
                        (id, name, args)
                    }
                };
                self.had_calls = true;
                let call = ToolUse { id: id.into(), name, input: ToolInput::parse(&arguments) };
                out.push_back(StreamEvent::ToolCallEnd { index, call });
            }
            // Text not streamed as deltas (a server that sends only the item) goes out now.
            "message" if !matches!(state, Some(Item::Message { streamed: true })) => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    let text = match str_field(part, "type") {
                        "output_text" => str_field(part, "text"),
                        "refusal" => str_field(part, "refusal"),
                        _ => "",
                    };
                    if !text.is_empty() {
                        out.push_back(StreamEvent::TextDelta { text: text.to_owned() });
                    }
                }
            }
            "reasoning" => {
                let parts = |key: &str| -> Vec<&str> {
                    item.get(key)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|p| str_field(p, "text"))
                        .filter(|t| !t.is_empty())
                        .collect()
                };
                let mut texts = parts("summary");
                if texts.is_empty() {
                    texts = parts("content");
                }
                let text = texts.join("\n\n");
                if !text.is_empty() && !matches!(state, Some(Item::Reasoning { streamed: true })) {
                    out.push_back(StreamEvent::ReasoningDelta { text: text.clone() });
                }
                out.push_back(StreamEvent::Reasoning(Reasoning {
                    format: REASONING_FORMAT.into(),
                    text,
                    data: item.clone(),
                }));
            }
            _ => {}
        }
    }

    /// A terminal `response` object: items not finished yet are finished from its `output`
    /// (a call cut short keeps the argument text received, flagged if it does not parse).
    fn finish(&mut self, response: &Value, stop: Option<StopReason>, out: &mut VecDeque<StreamEvent>) {
        response_info(response, out);
        for (position, item) in
            response.get("output").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let index = u32::try_from(position).unwrap_or(u32::MAX);
            if !self.finished.contains(&index) {
                self.item_done(index, item, out);
            }
        }
        for (index, item) in std::mem::take(&mut self.items) {
            if let Item::Call { id, name, args, started } = item {
                if !started {
                    Self::start_call(index, &id, &name, &args, out);
                }
                let call = ToolUse { id: id.into(), name, input: ToolInput::parse(&args) };
                out.push_back(StreamEvent::ToolCallEnd { index, call });
                self.had_calls = true;
            }
        }
        if let Some(u) = usage(response) {
            out.push_back(StreamEvent::Usage(u));
        }
        let reason = match stop {
            Some(reason) => reason,
            None if self.had_calls => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push_back(StreamEvent::Stop { reason });
        self.done = true;
    }
}

/// The response's id and model, from a `response` object (created, or terminal).
fn response_info(response: &Value, out: &mut VecDeque<StreamEvent>) {
    let known = |key| response.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let (id, model) = (known("id"), known("model"));
    if id.is_some() || model.is_some() {
        out.push_back(StreamEvent::ResponseInfo { id, model });
    }
}

/// Why a response is `incomplete`.
fn incomplete_reason(response: &Value) -> StopReason {
    let reason = response.get("incomplete_details").map(|d| str_field(d, "reason")).unwrap_or("");
    match reason {
        "max_output_tokens" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        "" => StopReason::Other("incomplete".into()),
        other => StopReason::Other(format!("incomplete: {other}")),
    }
}

impl WireDecoder for ResponsesDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::protocol(format!("malformed stream event ({e}): {}", snippet(data)))
        })?;
        // The `type` in the data is authoritative; the SSE event name is only a hint.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        let null = Value::Null;
        let response = v.get("response").unwrap_or(&null);
        match kind {
            "response.created" => response_info(response, out),
            "response.output_item.added" => {
                let item = v.get("item").unwrap_or(&null);
                let i = self.index(&v, kind);
                self.item_added(i, item, out);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let i = self.index(&v, kind);
                self.streamed_delta(i, str_field(&v, "delta"), false, out);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let i = self.index(&v, kind);
                self.streamed_delta(i, str_field(&v, "delta"), true, out);
            }
            "response.function_call_arguments.delta" => {
                let i = self.index(&v, kind);
                self.arguments_delta(i, str_field(&v, "delta"), out);
            }
            "response.function_call_arguments.done" => {
                let i = self.index(&v, kind);
                self.arguments_final(i, str_field(&v, "arguments"), out);
            }
            "response.output_item.done" => {
                let item = v.get("item").unwrap_or(&null);
                let i = self.index(&v, kind);
                self.item_done(i, item, out);
            }
            "response.completed" => self.finish(response, None, out),
            "response.incomplete" => self.finish(response, Some(incomplete_reason(response)), out),
            "response.failed" => {
                return Err(stream_error(response.get("error").unwrap_or(&null)));
            }
            "error" => {
                // Documented with the fields at the top level; some servers nest an `error`.
                return Err(stream_error(v.get("error").filter(|e| e.is_object()).unwrap_or(&v)));
            }
            _ => {} // lifecycle, content parts, `.done` of text and events added later
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        Err(ProviderError::network("the stream ended before the response finished (no response.completed)"))
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
