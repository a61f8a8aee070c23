//! OpenAI Responses: typed SSE events with sequence numbers, and `response` JSON.

use serde_json::{Value, json};

use super::{Frame, RenderCtx};
use crate::script::{Turn, chunks};

fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input_tokens + u.output_tokens
    })
}

fn output(turn: &Turn, ctx: &RenderCtx) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(t) = &turn.text {
        out.push(json!({"id": format!("msg_fake{}", ctx.turn), "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": t, "annotations": []}]}));
    }
    for (i, c) in turn.tool_calls.iter().enumerate() {
        out.push(
            json!({"id": format!("fc_{}_{i}", ctx.turn), "type": "function_call", "status": "completed",
                        "call_id": c.id.clone().unwrap_or_else(|| format!("call_{}_{i}", ctx.turn)),
                        "name": c.name, "arguments": c.arguments}),
        );
    }
    out
}

fn response(turn: &Turn, ctx: &RenderCtx, status: &str, output: Vec<Value>, with_usage: bool) -> Value {
    let mut r = json!({"id": format!("resp_fake{}", ctx.turn), "object": "response", "created_at": 1_700_000_000,
                       "status": status, "model": ctx.model, "output": output});
    if with_usage {
        r["usage"] = usage(turn);
    }
    r
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx) -> Vec<Frame> {
    let mut seq = 0u64;
    let mut frames = Vec::new();
    let mut push = |name: &'static str, mut v: Value| {
        v["type"] = json!(name);
        v["sequence_number"] = json!(seq);
        seq += 1;
        frames.push(Frame::named(name, &v));
    };
    push("response.created", json!({"response": response(turn, ctx, "in_progress", vec![], false)}));
    push("response.in_progress", json!({"response": response(turn, ctx, "in_progress", vec![], false)}));
    let items = output(turn, ctx);
    for (out_index, item) in items.iter().enumerate() {
        let item_id = item["id"].clone();
        if item["type"] == "message" {
            let text = item["content"][0]["text"].as_str().unwrap_or("").to_owned();
            let mut added = item.clone();
            added["status"] = json!("in_progress");
            added["content"] = json!([]);
            push("response.output_item.added", json!({"output_index": out_index, "item": added}));
            push(
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": out_index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
            for piece in chunks(&text, ctx.chunk) {
                push(
                    "response.output_text.delta",
                    json!({"item_id": item_id, "output_index": out_index, "content_index": 0, "delta": piece}),
                );
            }
            push(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": out_index, "content_index": 0, "text": text}),
            );
            push(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": out_index, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}),
            );
        } else {
            let args = item["arguments"].as_str().unwrap_or("").to_owned();
            let mut added = item.clone();
            added["status"] = json!("in_progress");
            added["arguments"] = json!("");
            push("response.output_item.added", json!({"output_index": out_index, "item": added}));
            for piece in chunks(&args, ctx.chunk) {
                push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": out_index, "delta": piece}),
                );
            }
            push(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": out_index, "arguments": args}),
            );
        }
        push("response.output_item.done", json!({"output_index": out_index, "item": item}));
    }
    push("response.completed", json!({"response": response(turn, ctx, "completed", items, true)}));
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx) -> Value {
    response(turn, ctx, "completed", output(turn, ctx), true)
}
