//! Anthropic Messages: named SSE events and `message` JSON.

use serde_json::{Value, json};
use tackle_protocol::StopReason;

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

fn start_usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "input_tokens": u.input_tokens.saturating_sub(u.cache_read_tokens + u.cache_write_tokens),
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
        "output_tokens": 1
    })
}

fn signature(text: &str) -> String {
    format!(
        "sig-{:016x}",
        text.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
    )
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx) -> Vec<Frame> {
    let mut frames = vec![Frame::named(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_fake{}", ctx.turn), "type": "message", "role": "assistant", "model": ctx.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage(turn)
        }}),
    )];
    frames.push(Frame::named("ping", &json!({"type": "ping"})));
    let mut index = 0;
    if let Some(reasoning) = &turn.reasoning {
        frames.push(Frame::named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}})));
        for piece in chunks(reasoning, ctx.chunk) {
            frames.push(Frame::named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}})));
        }
        frames.push(Frame::named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature(reasoning)}})));
        frames
            .push(Frame::named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    if let Some(text) = &turn.text {
        frames.push(Frame::named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for piece in chunks(text, ctx.chunk) {
            frames.push(Frame::named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})));
        }
        frames
            .push(Frame::named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        frames.push(Frame::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call_id(turn, ctx, i), "name": call.name, "input": {}
            }}),
        ));
        frames.push(Frame::named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})));
        for piece in chunks(&call.arguments, ctx.chunk) {
            frames.push(Frame::named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        frames
            .push(Frame::named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    frames.push(Frame::named(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(&turn.stop_reason()), "stop_sequence": null},
                "usage": {"output_tokens": turn.usage.output_tokens}}),
    ));
    frames.push(Frame::named("message_stop", &json!({"type": "message_stop"})));
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &turn.reasoning {
        content.push(json!({"type": "thinking", "thinking": r, "signature": signature(r)}));
    }
    if let Some(t) = &turn.text {
        content.push(json!({"type": "text", "text": t}));
    }
    for (i, c) in turn.tool_calls.iter().enumerate() {
        // A JSON response carries parsed input; invalid scripted JSON is sent as a string field.
        let input =
            serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| json!({"_raw": c.arguments}));
        content
            .push(json!({"type": "tool_use", "id": call_id(turn, ctx, i), "name": c.name, "input": input}));
    }
    let mut usage = start_usage(turn);
    usage["output_tokens"] = json!(turn.usage.output_tokens);
    json!({
        "id": format!("msg_fake{}", ctx.turn), "type": "message", "role": "assistant", "model": ctx.model,
        "content": content, "stop_reason": stop_reason(&turn.stop_reason()), "stop_sequence": null, "usage": usage
    })
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
