//! OpenAI Responses: typed SSE events with sequence numbers in the documented order, and the
//! `response` object.
//!
//! A turn renders as output items: a `reasoning` item when it has reasoning (its summary only
//! when the request asked for one with `reasoning.summary`, its `encrypted_content` only when
//! the request asked for it with `include`), a `message` item for its text, then one
//! `function_call` item per call. A turn stopped by `max_tokens` ends `incomplete`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use tackle_protocol::StopReason;
use tackle_wire::responses::{
    DeltaEvent, DoneEvent, Echo, EchoReasoning, FunctionCallItem, IncompleteDetails, InputTokensDetails,
    ItemEvent, MessageContent, MessageItem, MessageRole, OutputItem, OutputTokensDetails, Part, PartEvent,
    ReasoningItem, Response, ResponseEvent, ResponseUsage, StreamEvent, TextConfig, TextFormat, ToolChoice,
    ToolChoiceMode,
};

use super::{Frame, RenderCtx};
use crate::script::{Turn, chunks};

/// What the request asked for that changes the response's shape, and the request parameters a
/// `response` object echoes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    /// `include` has `reasoning.encrypted_content`.
    pub(crate) encrypted_reasoning: bool,
    /// `reasoning.summary` is set.
    pub(crate) reasoning_summary: bool,
    /// Request parameters echoed in the `response` object.
    pub(crate) echo: Echo<'static>,
}

impl Asked {
    pub(crate) fn from_request(body: &Value) -> Self {
        let encrypted_reasoning = body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
        let reasoning_summary =
            body.get("reasoning").and_then(|r| r.get("summary")).is_some_and(|s| s.is_string());
        // The request's parameters are the echo's fields by name; the request's others
        // (`model`, `input`, ...) are not echoed. A body that does not read (the validator
        // refuses it first, or another wire format's) echoes the defaults.
        let mut echo = Echo::deserialize(body).unwrap_or_default();
        echo.other.clear();
        echo.instructions.get_or_insert(None);
        echo.max_output_tokens.get_or_insert(None);
        echo.parallel_tool_calls.get_or_insert(true);
        echo.previous_response_id.get_or_insert(None);
        echo.prompt_cache_key.get_or_insert(None);
        echo.reasoning.get_or_insert(EchoReasoning { effort: Some(None), summary: Some(None) });
        echo.store.get_or_insert(true);
        echo.temperature.get_or_insert(Some(1.0));
        echo.text.get_or_insert(TextConfig { format: Some(TextFormat::Text), verbosity: None });
        echo.tool_choice.get_or_insert(ToolChoice::Mode(ToolChoiceMode::Auto));
        echo.tools.get_or_insert_with(Vec::new);
        echo.top_p.get_or_insert(Some(1.0));
        echo.truncation.get_or_insert(Cow::Borrowed("disabled"));
        echo.user.get_or_insert(None);
        echo.metadata.get_or_insert_with(|| Value::Object(serde_json::Map::new()));
        Self { encrypted_reasoning, reasoning_summary, echo }
    }
}

/// Checksum of the fake's encrypted reasoning (FNV-1a over a fixed key and the payload): a
/// client that alters the blob is caught as the real API catches it.
fn checksum(payload: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in b"tackle-testkit-reasoning\0".iter().chain(payload) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The fake's stand-in for `encrypted_content`: the item id and reasoning text, hex encoded,
/// with a checksum. Opaque to clients; [`unseal`] verifies it.
pub(crate) fn seal(id: &str, text: &str) -> String {
    let payload = format!("{id}\n{text}");
    let hex: String = payload.bytes().map(|b| format!("{b:02x}")).collect();
    format!("enc1.{hex}.{:016x}", checksum(payload.as_bytes()))
}

/// The item id sealed in `token`, if the token is one [`seal`] made and was not altered.
pub(crate) fn unseal(token: &str) -> Option<String> {
    let rest = token.strip_prefix("enc1.")?;
    let (hex, sum) = rest.rsplit_once('.')?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if format!("{:016x}", checksum(&bytes)) != sum {
        return None;
    }
    let payload = String::from_utf8(bytes).ok()?;
    payload.split_once('\n').map(|(id, _)| id.to_owned())
}

fn usage(turn: &Turn) -> ResponseUsage {
    let u = turn.usage;
    ResponseUsage {
        input_tokens: u.input_tokens,
        input_tokens_details: Some(InputTokensDetails {
            cached_tokens: u.cache_read_tokens,
            cache_write_tokens: Some(u.cache_write_tokens),
        }),
        output_tokens: u.output_tokens,
        output_tokens_details: Some(OutputTokensDetails { reasoning_tokens: u.reasoning_tokens }),
        total_tokens: u.input_tokens + u.output_tokens,
    }
}

fn incomplete(turn: &Turn) -> bool {
    turn.stop_reason() == StopReason::MaxTokens
}

fn reasoning_id(ctx: &RenderCtx) -> String {
    format!("rs_fake{}", ctx.turn)
}

fn refusal(turn: &Turn) -> bool {
    turn.stop_reason() == StopReason::Refusal
}

/// A message's one content part, `text` in it.
fn text_part(refusal: bool, text: &str) -> Part<'static> {
    let text = Cow::Owned(text.to_owned());
    if refusal {
        Part::Refusal { refusal: text }
    } else {
        Part::OutputText { text, annotations: Some(vec![]), logprobs: Some(vec![]) }
    }
}

fn status(s: &'static str) -> Option<Cow<'static, str>> {
    Some(Cow::Borrowed(s))
}

/// The output items of a turn, finished.
fn output(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Vec<OutputItem<'static>> {
    let mut out = Vec::new();
    let done = if incomplete(turn) { "incomplete" } else { "completed" };
    if let Some(r) = &turn.reasoning {
        let id = reasoning_id(ctx);
        let summary: &[&str] = if asked.reasoning_summary { &[r.as_str()] } else { &[] };
        let sealed = asked.encrypted_reasoning.then(|| seal(&id, r));
        out.push(OutputItem::Reasoning(ReasoningItem::new(&id, summary, sealed.as_deref())));
    }
    if let Some(t) = &turn.text {
        out.push(OutputItem::Message(MessageItem {
            id: Some(format!("msg_fake{}", ctx.turn).into()),
            role: MessageRole::Assistant,
            content: MessageContent::Parts(vec![text_part(refusal(turn), t)]),
            status: status(done),
        }));
    }
    for (i, c) in turn.tool_calls.iter().enumerate() {
        out.push(OutputItem::FunctionCall(FunctionCallItem {
            id: Some(format!("fc_fake{}_{i}", ctx.turn).into()),
            call_id: c.id.clone().unwrap_or_else(|| format!("call_{}_{i}", ctx.turn)).into(),
            name: c.name.clone().into(),
            namespace: None,
            arguments: c.arguments.clone().into(),
            status: status(done),
        }));
    }
    out
}

fn response(
    turn: &Turn,
    ctx: &RenderCtx,
    asked: &Asked,
    state: &'static str,
    output: Vec<OutputItem<'static>>,
) -> Response<'static> {
    let finished = state != "in_progress";
    Response {
        id: Some(format!("resp_fake{}", ctx.turn).into()),
        object: status("response"),
        created_at: Some(1_700_000_000),
        status: status(state),
        background: Some(false),
        error: None,
        incomplete_details: (state == "incomplete")
            .then(|| IncompleteDetails { reason: status("max_output_tokens") }),
        model: Some(ctx.model.clone().into()),
        output,
        echo: asked.echo.clone(),
        usage: finished.then(|| usage(turn)),
    }
}

/// Numbers the events of one stream and renders them, the SSE event name being the type.
struct Events {
    frames: Vec<Frame>,
}

impl Events {
    fn push(&mut self, event: StreamEvent<'_>) {
        let seq = self.frames.len() as u64;
        let name = event.kind().unwrap_or("unknown");
        let mut event = event;
        event.set_sequence_number(seq);
        self.frames.push(Frame::typed(name, &event));
    }
}

fn lifecycle(response: Response<'_>) -> ResponseEvent<'_> {
    ResponseEvent { response, sequence_number: 0 }
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Vec<Frame> {
    let mut events = Events { frames: Vec::new() };
    let in_progress = || lifecycle(response(turn, ctx, asked, "in_progress", vec![]));
    events.push(StreamEvent::Created(in_progress()));
    events.push(StreamEvent::InProgress(in_progress()));
    let items = output(turn, ctx, asked);
    for (index, item) in items.iter().enumerate() {
        let output_index = u32::try_from(index).ok();
        let item_id: Option<Cow<'_, str>> = item.id().map(Cow::Borrowed);
        let added = match item {
            OutputItem::Reasoning(r) => {
                OutputItem::Reasoning(ReasoningItem::new(r.id().unwrap_or(""), &[], None))
            }
            OutputItem::Message(m) => OutputItem::Message(MessageItem {
                status: status("in_progress"),
                content: MessageContent::Parts(vec![]),
                ..m.clone()
            }),
            OutputItem::FunctionCall(c) => OutputItem::FunctionCall(FunctionCallItem {
                status: status("in_progress"),
                arguments: Cow::Borrowed(""),
                ..c.clone()
            }),
            OutputItem::Other(v) => OutputItem::Other(v.clone()),
        };
        events.push(StreamEvent::OutputItemAdded(ItemEvent {
            output_index,
            item: added,
            sequence_number: 0,
        }));
        let delta = |delta: String| DeltaEvent {
            item_id: item_id.clone(),
            output_index,
            delta: delta.into(),
            ..Default::default()
        };
        let done = || DoneEvent { item_id: item_id.clone(), output_index, ..Default::default() };
        match item {
            OutputItem::Reasoning(r) => {
                let summary = r.summary_texts().next().unwrap_or("");
                if !summary.is_empty() {
                    let part = |text: &str| PartEvent {
                        item_id: item_id.clone(),
                        output_index,
                        content_index: None,
                        summary_index: Some(0),
                        part: Part::SummaryText { text: Cow::Owned(text.to_owned()) },
                        sequence_number: 0,
                    };
                    events.push(StreamEvent::ReasoningSummaryPartAdded(part("")));
                    for piece in chunks(summary, ctx.chunk) {
                        events.push(StreamEvent::ReasoningSummaryTextDelta(DeltaEvent {
                            summary_index: Some(0),
                            ..delta(piece)
                        }));
                    }
                    events.push(StreamEvent::ReasoningSummaryTextDone(DoneEvent {
                        summary_index: Some(0),
                        text: Some(summary.into()),
                        ..done()
                    }));
                    events.push(StreamEvent::ReasoningSummaryPartDone(part(summary)));
                }
            }
            OutputItem::Message(m) => {
                let refused = refusal(turn);
                let whole = match &m.content {
                    MessageContent::Parts(parts) => parts.first().cloned(),
                    MessageContent::Text(_) => None,
                };
                let text = match &whole {
                    Some(Part::OutputText { text, .. } | Part::Refusal { refusal: text }) => text.to_string(),
                    _ => String::new(),
                };
                let part = |part: Part<'static>| PartEvent {
                    item_id: item_id.clone(),
                    output_index,
                    content_index: Some(0),
                    summary_index: None,
                    part,
                    sequence_number: 0,
                };
                events.push(StreamEvent::ContentPartAdded(part(text_part(refused, ""))));
                let logprobs = (!refused).then(Vec::new);
                for piece in chunks(&text, ctx.chunk) {
                    let d = DeltaEvent { content_index: Some(0), logprobs: logprobs.clone(), ..delta(piece) };
                    events.push(if refused {
                        StreamEvent::RefusalDelta(d)
                    } else {
                        StreamEvent::OutputTextDelta(d)
                    });
                }
                let whole_text = Some(Cow::Owned(text.clone()));
                events.push(if refused {
                    StreamEvent::RefusalDone(DoneEvent {
                        content_index: Some(0),
                        refusal: whole_text,
                        ..done()
                    })
                } else {
                    StreamEvent::OutputTextDone(DoneEvent {
                        content_index: Some(0),
                        text: whole_text,
                        logprobs,
                        ..done()
                    })
                });
                events.push(StreamEvent::ContentPartDone(part(text_part(refused, &text))));
            }
            OutputItem::FunctionCall(c) => {
                for piece in chunks(&c.arguments, ctx.chunk) {
                    events.push(StreamEvent::FunctionCallArgumentsDelta(delta(piece)));
                }
                events.push(StreamEvent::FunctionCallArgumentsDone(DoneEvent {
                    name: Some(Cow::Borrowed(&c.name)),
                    arguments: Some(Cow::Borrowed(&c.arguments)),
                    ..done()
                }));
            }
            OutputItem::Other(_) => {}
        }
        events.push(StreamEvent::OutputItemDone(ItemEvent {
            output_index,
            item: item.clone(),
            sequence_number: 0,
        }));
    }
    let state = if incomplete(turn) { "incomplete" } else { "completed" };
    let last = lifecycle(response(turn, ctx, asked, state, items.clone()));
    events.push(if incomplete(turn) { StreamEvent::Incomplete(last) } else { StreamEvent::Completed(last) });
    events.frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Value {
    let state = if incomplete(turn) { "incomplete" } else { "completed" };
    serde_json::to_value(response(turn, ctx, asked, state, output(turn, ctx, asked))).unwrap_or_default()
}

/// An error in the OpenAI shape, with the parameter it is about.
pub(crate) fn error_body(kind: &str, message: &str, param: Option<&str>, code: Option<&str>) -> Value {
    let mut body = tackle_wire::chat::ErrorBody::new(kind, message);
    body.error.param = param.map(std::borrow::Cow::Borrowed);
    body.error.code = code.map(Value::from);
    serde_json::to_value(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_reasoning_verifies_and_detects_tampering() {
        let token = seal("rs_1", "thinking about é");
        assert_eq!(unseal(&token).as_deref(), Some("rs_1"));
        let mut bytes = token.clone().into_bytes();
        bytes[7] = if bytes[7] == b'0' { b'1' } else { b'0' };
        assert_eq!(unseal(&String::from_utf8(bytes).unwrap()), None);
        assert_eq!(unseal("gAAAAB-real-openai-blob"), None);
        assert_eq!(unseal(&token[..token.len() - 1]), None);
    }
}
