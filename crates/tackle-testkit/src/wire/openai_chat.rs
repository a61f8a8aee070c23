//! OpenAI Chat Completions: `chat.completion.chunk` SSE and `chat.completion` JSON.

use serde_json::{Value, json};
use tackle_protocol::StopReason;

use super::{Frame, RenderCtx};
use crate::script::{Turn, chunks};

pub(crate) fn finish_reason(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(s) => s,
        StopReason::Pause | StopReason::ContextExceeded => "stop",
        _ => "stop",
    }
}

pub(crate) fn call_id(turn: &Turn, ctx: &RenderCtx, i: usize) -> String {
    turn.tool_calls[i].id.clone().unwrap_or_else(|| format!("call_{}_{i}", ctx.turn))
}

fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": { "cached_tokens": u.cache_read_tokens, "audio_tokens": 0 },
        "completion_tokens_details": { "reasoning_tokens": 0 }
    })
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx) -> Vec<Frame> {
    let id = format!("chatcmpl-fake{}", ctx.turn);
    let chunk = |choices: Value| {
        Frame::data(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": ctx.model,
            "system_fingerprint": "fp_fake", "choices": choices
        }))
    };
    let mut frames = vec![chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]),
    )];
    if let Some(text) = &turn.text {
        for piece in chunks(text, ctx.chunk) {
            frames.push(chunk(
                json!([{"index": 0, "delta": {"content": piece}, "logprobs": null, "finish_reason": null}]),
            ));
        }
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        frames.push(chunk(json!([{"index": 0, "delta": {"tool_calls": [{
            "index": i, "id": call_id(turn, ctx, i), "type": "function",
            "function": {"name": call.name, "arguments": ""}
        }]}, "logprobs": null, "finish_reason": null}])));
        for piece in chunks(&call.arguments, ctx.chunk) {
            frames.push(chunk(json!([{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}, "logprobs": null, "finish_reason": null}])));
        }
    }
    frames.push(chunk(json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": finish_reason(&turn.stop_reason())}])));
    if ctx.include_usage {
        frames.push(Frame::data(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": ctx.model,
            "system_fingerprint": "fp_fake", "choices": [], "usage": usage(turn)
        })));
    }
    frames.push(Frame { event: None, data: "[DONE]".into() });
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx) -> Value {
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"id": call_id(turn, ctx, i), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.text, "refusal": null});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": format!("chatcmpl-fake{}", ctx.turn), "object": "chat.completion", "created": 1_700_000_000,
        "model": ctx.model, "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(&turn.stop_reason())}],
        "usage": usage(turn)
    })
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}
