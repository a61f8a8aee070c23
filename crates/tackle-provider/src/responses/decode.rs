//! OpenAI Responses stream events -> normalized stream events.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::json;
use tackle_protocol::{Reasoning, StopReason, StreamEvent, ToolInput, ToolUse, Usage};
use tackle_wire::responses::{
    self as wire, MessageContent, OutputItem, Part, Response, StreamEvent as Event,
};

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

/// Usage of a `response` object: `input_tokens` counts all prompt tokens, cached or not.
fn usage(u: &wire::ResponseUsage) -> Usage {
    let input = u.input_tokens_details.unwrap_or_default();
    Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: input.cached_tokens,
        cache_write_tokens: input.cache_write_tokens.unwrap_or(0),
        reasoning_tokens: u.output_tokens_details.map_or(0, |d| d.reasoning_tokens),
    }
}

/// Maps an error `code` of a `response.failed` or `error` event to a typed error, through the
/// HTTP status the API gives the same condition.
fn stream_error(error: &wire::ResponseError<'_>) -> ProviderError {
    let code = error.code.as_deref().unwrap_or("");
    let message = match error.message.as_deref().unwrap_or("") {
        "" => format!("the response failed ({})", if code.is_empty() { "no error code" } else { code }),
        m => m.to_owned(),
    };
    let status = match code {
        "rate_limit_exceeded" => 429,
        "context_length_exceeded" | "insufficient_quota" | "invalid_prompt" | "invalid_request_error" => 400,
        c if c.starts_with("invalid_") || c.starts_with("image_") || c.ends_with("_policy_violation") => 400,
        _ => 500,
    };
    let kind = error.kind.as_deref().unwrap_or("");
    let body = json!({ "error": { "message": message, "type": kind, "code": code } });
    classify_http_error(status, &http::HeaderMap::new(), &body.to_string())
}

/// Where an event points: its `output_index`, and the item it names.
struct At<'e> {
    stated: Option<u32>,
    id: Option<&'e str>,
}

impl<'e> At<'e> {
    fn item(event: &'e wire::ItemEvent<'_>) -> Self {
        Self { stated: event.output_index, id: event.item.id() }
    }

    fn delta(event: &'e wire::DeltaEvent<'_>) -> Self {
        Self { stated: event.output_index, id: event.item_id.as_deref() }
    }

    fn done(event: &'e wire::DoneEvent<'_>) -> Self {
        Self { stated: event.output_index, id: event.item_id.as_deref() }
    }
}

/// What an event does to the index of its item.
#[derive(PartialEq, Eq)]
enum Role {
    Added,
    Done,
    Fragment,
}

impl ResponsesDecoder {
    /// The index an event is about: its `output_index`, else the item it names (a delta's
    /// `item_id`, an item's `id`) while that item is open, else, for an item event, the next
    /// position. Servers that omit indexes or reuse item ids (some use the call id) still get
    /// one index per item, so no item is mistaken for another.
    fn index(&mut self, at: At<'_>, role: Role) -> u32 {
        let id = at.id.unwrap_or("");
        let index = at.stated.unwrap_or_else(|| {
            let open = self.ids.get(id).copied().filter(|i| !id.is_empty() && !self.finished.contains(i));
            match (&role, open) {
                (Role::Added, _) => self.next_index,
                (_, Some(i)) => i,
                (Role::Done, None) => self.next_index,
                (Role::Fragment, None) => self.latest.unwrap_or(self.next_index),
            }
        });
        if role != Role::Fragment
            && let Some(id) = at.id
        {
            self.ids.insert(id.to_owned(), index);
        }
        if role == Role::Added {
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

    fn call_id(index: u32, call: &wire::FunctionCallItem<'_>) -> String {
        match (&*call.call_id, call.id.as_deref().unwrap_or("")) {
            ("", "") => format!("call_{index}"),
            ("", id) => id.to_owned(),
            (call_id, _) => call_id.to_owned(),
        }
    }

    fn item_added(&mut self, index: u32, item: &OutputItem<'_>, out: &mut VecDeque<StreamEvent>) {
        let state = match item {
            OutputItem::FunctionCall(call) => {
                let (id, name) = (Self::call_id(index, call), call.name.clone().into_owned());
                let args = call.arguments.clone().into_owned();
                Self::start_call(index, &id, &name, &args, out);
                self.had_calls = true;
                Item::Call { id, name, args, started: true }
            }
            OutputItem::Message(_) => Item::Message { streamed: false },
            OutputItem::Reasoning(_) => Item::Reasoning { streamed: false },
            OutputItem::Other(_) => Item::Other,
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

    fn item_done(&mut self, index: u32, item: &OutputItem<'_>, out: &mut VecDeque<StreamEvent>) {
        if !self.finished.insert(index) {
            return; // `response.completed` repeats items already done
        }
        let state = self.items.remove(&index);
        match item {
            OutputItem::FunctionCall(call) => {
                let stated = &*call.arguments;
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
                        let (id, name) = (Self::call_id(index, call), call.name.clone().into_owned());
                        Self::start_call(index, &id, &name, &args, out);
                        (id, name, args)
                    }
                };
                self.had_calls = true;
                let call = ToolUse { id: id.into(), name, input: ToolInput::parse(&arguments) };
                out.push_back(StreamEvent::ToolCallEnd { index, call });
            }
            // Text not streamed as deltas (a server that sends only the item) goes out now.
            OutputItem::Message(message) if !matches!(state, Some(Item::Message { streamed: true })) => {
                let parts = match &message.content {
                    MessageContent::Parts(parts) => parts.as_slice(),
                    MessageContent::Text(_) => &[],
                };
                for part in parts {
                    let text = match part {
                        Part::OutputText { text, .. } => text,
                        Part::Refusal { refusal } => refusal,
                        _ => continue,
                    };
                    if !text.is_empty() {
                        out.push_back(StreamEvent::TextDelta { text: text.clone().into_owned() });
                    }
                }
            }
            OutputItem::Reasoning(reasoning) => {
                let mut texts: Vec<&str> = reasoning.summary_texts().filter(|t| !t.is_empty()).collect();
                if texts.is_empty() {
                    texts = reasoning.content_texts().filter(|t| !t.is_empty()).collect();
                }
                let text = texts.join("\n\n");
                if !text.is_empty() && !matches!(state, Some(Item::Reasoning { streamed: true })) {
                    out.push_back(StreamEvent::ReasoningDelta { text: text.clone() });
                }
                out.push_back(StreamEvent::Reasoning(Reasoning {
                    format: REASONING_FORMAT.into(),
                    text,
                    data: reasoning.0.clone(),
                }));
            }
            _ => {}
        }
    }

    /// A terminal `response` object: items not finished yet are finished from its `output`
    /// (a call cut short keeps the argument text received, flagged if it does not parse).
    fn finish(&mut self, response: &Response<'_>, stop: Option<StopReason>, out: &mut VecDeque<StreamEvent>) {
        response_info(response, out);
        for (position, item) in response.output.iter().enumerate() {
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
        if let Some(u) = &response.usage {
            out.push_back(StreamEvent::Usage(usage(u)));
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
fn response_info(response: &Response<'_>, out: &mut VecDeque<StreamEvent>) {
    let known =
        |s: &Option<std::borrow::Cow<'_, str>>| s.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
    let (id, model) = (known(&response.id), known(&response.model));
    if id.is_some() || model.is_some() {
        out.push_back(StreamEvent::ResponseInfo { id, model });
    }
}

/// Why a response is `incomplete`.
fn incomplete_reason(response: &Response<'_>) -> StopReason {
    let reason = response.incomplete_details.as_ref().and_then(|d| d.reason.as_deref()).unwrap_or("");
    match reason {
        "max_output_tokens" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        "" => StopReason::Other("incomplete".into()),
        other => StopReason::Other(format!("incomplete: {other}")),
    }
}

/// An event's data, typed. The `type` in the data is authoritative; the SSE event name stands
/// in for it only where the data has none.
fn parse<'d>(data: &'d str, name: &str, spliced: &'d mut String) -> Result<Event<'d>, ProviderError> {
    let malformed = |e: serde_json::Error| {
        ProviderError::protocol(format!("malformed stream event ({e}): {}", snippet(data)))
    };
    match serde_json::from_str(data) {
        Ok(event) => Ok(event),
        Err(e) if !name.is_empty() && e.to_string().starts_with("missing field `type`") => {
            let rest = data.strip_prefix('{').map(str::trim_start).ok_or_else(|| malformed(e))?;
            let sep = if rest.starts_with('}') { "" } else { "," };
            *spliced = format!("{{\"type\":{}{sep}{rest}", serde_json::Value::from(name));
            serde_json::from_str(spliced).map_err(malformed)
        }
        Err(e) => Err(malformed(e)),
    }
}

impl WireDecoder for ResponsesDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let mut spliced = String::new();
        match parse(data, &event.event, &mut spliced)? {
            Event::Created(e) => response_info(&e.response, out),
            Event::OutputItemAdded(e) => {
                let i = self.index(At::item(&e), Role::Added);
                self.item_added(i, &e.item, out);
            }
            Event::OutputTextDelta(e) | Event::RefusalDelta(e) => {
                let i = self.index(At::delta(&e), Role::Fragment);
                self.streamed_delta(i, &e.delta, false, out);
            }
            Event::ReasoningSummaryTextDelta(e) | Event::ReasoningTextDelta(e) => {
                let i = self.index(At::delta(&e), Role::Fragment);
                self.streamed_delta(i, &e.delta, true, out);
            }
            Event::FunctionCallArgumentsDelta(e) => {
                let i = self.index(At::delta(&e), Role::Fragment);
                self.arguments_delta(i, &e.delta, out);
            }
            Event::FunctionCallArgumentsDone(e) => {
                let i = self.index(At::done(&e), Role::Fragment);
                self.arguments_final(i, e.arguments.as_deref().unwrap_or(""), out);
            }
            Event::OutputItemDone(e) => {
                let i = self.index(At::item(&e), Role::Done);
                self.item_done(i, &e.item, out);
            }
            Event::Completed(e) => self.finish(&e.response, None, out),
            Event::Incomplete(e) => self.finish(&e.response, Some(incomplete_reason(&e.response)), out),
            Event::Failed(e) => return Err(stream_error(&e.response.error.unwrap_or_default())),
            Event::Error(e) => {
                // Documented with the fields at the top level; some servers nest an `error`.
                let mut error = e.error();
                if e.error.is_none() {
                    error.kind = Some("error".into());
                }
                return Err(stream_error(&error));
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

/// A whole answer (a `response` object, asked with `"stream": false`) as the events its stream
/// would have carried: every item of its `output` is finished as its `response.output_item.done`
/// would finish it (reasoning items kept whole, with their encrypted content), then the usage and
/// the stop reason, through the stream's own decoder. A `failed` response is its error, as a
/// `response.failed` event is; a body holding only an `error` is that error.
pub(crate) fn whole(body: &[u8], out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
    let response: Response<'_> = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => {
            return Err(match serde_json::from_slice::<tackle_wire::chat::ErrorBody<'_>>(body) {
                Ok(error) => {
                    let text = serde_json::to_string(&error).unwrap_or_default();
                    classify_http_error(500, &http::HeaderMap::new(), &text)
                }
                Err(_) => crate::http::malformed_whole(&e, body),
            });
        }
    };
    let mut decoder = ResponsesDecoder::default();
    match response.status.as_deref() {
        Some("failed") => Err(stream_error(&response.error.clone().unwrap_or_default())),
        Some("incomplete") => {
            decoder.finish(&response, Some(incomplete_reason(&response)), out);
            Ok(())
        }
        // A compatible server may leave the status out; an answer that is not finished is not one.
        Some("completed") | None => {
            decoder.finish(&response, None, out);
            Ok(())
        }
        Some(other) => Err(ProviderError::protocol(format!(
            "the response is not finished (status {other:?}); a whole answer was asked for"
        ))),
    }
}
