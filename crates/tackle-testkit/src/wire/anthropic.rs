//! Anthropic Messages: named SSE events and `message` JSON, as `tackle_wire::anthropic` types.

use std::borrow::Cow;

use serde_json::{Value, json};
use tackle_protocol::StopReason;
use tackle_wire::anthropic::{
    ContentBlock, Delta, ErrorBody, MessageDelta, Response, Role, StreamEvent, Usage,
};

use super::{Frame, RenderCtx};
use crate::script::{Turn, chunks};

pub(crate) fn stop_reason(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::StopSequence => "stop_sequence",
        StopReason::Refusal => "refusal",
        StopReason::Pause => "pause_turn",
        StopReason::ContextExceeded => "model_context_window_exceeded",
        StopReason::Other(s) => s,
        // A reason newer than this fake: the plainest end.
        _ => "end_turn",
    }
}

fn call_id(turn: &Turn, ctx: &RenderCtx, i: usize) -> String {
    turn.tool_calls[i].id.clone().unwrap_or_else(|| format!("toolu_{}_{i}", ctx.turn))
}

fn start_usage(turn: &Turn) -> Usage {
    let u = turn.usage;
    Usage {
        input_tokens: Some(u.input_tokens.saturating_sub(u.cache_read_tokens + u.cache_write_tokens)),
        cache_creation_input_tokens: Some(u.cache_write_tokens),
        cache_read_input_tokens: Some(u.cache_read_tokens),
        output_tokens: Some(1),
    }
}

fn signature(text: &str) -> String {
    format!(
        "sig-{:016x}",
        text.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
    )
}

fn message<'a>(
    turn: &Turn,
    ctx: &'a RenderCtx,
    content: Vec<ContentBlock<'a>>,
    stop: Option<&'a str>,
) -> Response<'a> {
    Response {
        id: Cow::Owned(format!("msg_fake{}", ctx.turn)),
        kind: Cow::Borrowed("message"),
        role: Role::Assistant,
        model: Cow::Borrowed(&ctx.model),
        content,
        stop_reason: stop.map(Cow::Borrowed),
        stop_sequence: None,
        usage: start_usage(turn),
    }
}

fn event(e: &StreamEvent<'_>) -> Frame {
    let name = match e {
        StreamEvent::MessageStart { .. } => "message_start",
        StreamEvent::ContentBlockStart { .. } => "content_block_start",
        StreamEvent::ContentBlockDelta { .. } => "content_block_delta",
        StreamEvent::ContentBlockStop { .. } => "content_block_stop",
        StreamEvent::MessageDelta { .. } => "message_delta",
        StreamEvent::MessageStop => "message_stop",
        StreamEvent::Ping => "ping",
        StreamEvent::Error { .. } => "error",
        StreamEvent::Unknown => "unknown",
    };
    Frame::typed(name, e)
}

/// The block at `index`: its start, its deltas, its stop.
fn block<'a>(frames: &mut Vec<Frame>, index: u32, start: ContentBlock<'a>, deltas: Vec<Delta<'a>>) {
    frames.push(event(&StreamEvent::ContentBlockStart { index, content_block: start }));
    for delta in deltas {
        frames.push(event(&StreamEvent::ContentBlockDelta { index, delta }));
    }
    frames.push(event(&StreamEvent::ContentBlockStop { index }));
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx) -> Vec<Frame> {
    let mut frames =
        vec![event(&StreamEvent::MessageStart { message: message(turn, ctx, Vec::new(), None) })];
    frames.push(event(&StreamEvent::Ping));
    let mut index = 0;
    if let Some(reasoning) = &turn.reasoning {
        let mut deltas: Vec<Delta> = chunks(reasoning, ctx.chunk)
            .into_iter()
            .map(|p| Delta::ThinkingDelta { thinking: Cow::Owned(p) })
            .collect();
        deltas.push(Delta::SignatureDelta { signature: Cow::Owned(signature(reasoning)) });
        let start = ContentBlock::Thinking { thinking: Cow::Borrowed(""), signature: Cow::Borrowed("") };
        block(&mut frames, index, start, deltas);
        index += 1;
    }
    if let Some(text) = &turn.text {
        let deltas =
            chunks(text, ctx.chunk).into_iter().map(|p| Delta::TextDelta { text: Cow::Owned(p) }).collect();
        block(
            &mut frames,
            index,
            ContentBlock::Text { text: Cow::Borrowed(""), cache_control: None },
            deltas,
        );
        index += 1;
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let start = ContentBlock::ToolUse {
            id: Cow::Owned(call_id(turn, ctx, i)),
            name: Cow::Borrowed(&call.name),
            input: json!({}),
            cache_control: None,
        };
        // Anthropic opens every tool input with an empty fragment.
        let deltas = std::iter::once(String::new())
            .chain(chunks(&call.arguments, ctx.chunk))
            .map(|p| Delta::InputJsonDelta { partial_json: Cow::Owned(p) })
            .collect();
        block(&mut frames, index, start, deltas);
        index += 1;
    }
    let stop = turn.stop_reason();
    frames.push(event(&StreamEvent::MessageDelta {
        delta: MessageDelta { stop_reason: Some(Cow::Borrowed(stop_reason(&stop))), stop_sequence: None },
        usage: Some(Usage { output_tokens: Some(turn.usage.output_tokens), ..Usage::default() }),
    }));
    frames.push(event(&StreamEvent::MessageStop));
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &turn.reasoning {
        content
            .push(ContentBlock::Thinking { thinking: Cow::Borrowed(r), signature: Cow::Owned(signature(r)) });
    }
    if let Some(t) = &turn.text {
        content.push(ContentBlock::Text { text: Cow::Borrowed(t), cache_control: None });
    }
    for (i, c) in turn.tool_calls.iter().enumerate() {
        // A JSON response carries parsed input; invalid scripted JSON is sent as a string field.
        let input =
            serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| json!({"_raw": c.arguments}));
        content.push(ContentBlock::ToolUse {
            id: Cow::Owned(call_id(turn, ctx, i)),
            name: Cow::Borrowed(&c.name),
            input,
            cache_control: None,
        });
    }
    let stop = turn.stop_reason();
    let mut response = message(turn, ctx, content, Some(stop_reason(&stop)));
    response.usage.output_tokens = Some(turn.usage.output_tokens);
    serde_json::to_value(&response).unwrap_or_default()
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    serde_json::to_value(ErrorBody::new(kind, message)).unwrap_or_default()
}
