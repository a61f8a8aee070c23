//! OpenAI Responses: typed SSE events with sequence numbers in the documented order, and the
//! `response` object.
//!
//! A turn renders as output items: a `reasoning` item when it has reasoning (its summary only
//! when the request asked for one with `reasoning.summary`, its `encrypted_content` only when
//! the request asked for it with `include`), a `message` item for its text, then one
//! `function_call` item per call. A turn stopped by `max_tokens` ends `incomplete`.

use serde_json::{Value, json};
use tackle_protocol::StopReason;

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
    pub(crate) echo: serde_json::Map<String, Value>,
}

impl Asked {
    pub(crate) fn from_request(body: &Value) -> Self {
        let encrypted_reasoning = body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
        let reasoning_summary =
            body.get("reasoning").and_then(|r| r.get("summary")).is_some_and(|s| s.is_string());
        let mut echo = serde_json::Map::new();
        for (key, default) in [
            ("instructions", Value::Null),
            ("max_output_tokens", Value::Null),
            ("parallel_tool_calls", json!(true)),
            ("previous_response_id", Value::Null),
            ("prompt_cache_key", Value::Null),
            ("reasoning", json!({"effort": null, "summary": null})),
            ("store", json!(true)),
            ("temperature", json!(1.0)),
            ("text", json!({"format": {"type": "text"}})),
            ("tool_choice", json!("auto")),
            ("tools", json!([])),
            ("top_p", json!(1.0)),
            ("truncation", json!("disabled")),
            ("user", Value::Null),
            ("metadata", json!({})),
        ] {
            echo.insert(key.into(), body.get(key).cloned().unwrap_or(default));
        }
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

fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens + u.output_tokens
    })
}

fn incomplete(turn: &Turn) -> bool {
    turn.stop_reason() == StopReason::MaxTokens
}

fn reasoning_id(ctx: &RenderCtx) -> String {
    format!("rs_fake{}", ctx.turn)
}

fn text_part(turn: &Turn, text: &str) -> Value {
    if turn.stop_reason() == StopReason::Refusal {
        json!({"type": "refusal", "refusal": text})
    } else {
        json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
    }
}

/// The output items of a turn, finished.
fn output(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Vec<Value> {
    let mut out = Vec::new();
    let status = if incomplete(turn) { "incomplete" } else { "completed" };
    if let Some(r) = &turn.reasoning {
        let id = reasoning_id(ctx);
        let summary =
            if asked.reasoning_summary { json!([{"type": "summary_text", "text": r}]) } else { json!([]) };
        let mut item = json!({"id": id, "type": "reasoning", "summary": summary});
        if asked.encrypted_reasoning {
            item["encrypted_content"] = json!(seal(&id, r));
        }
        out.push(item);
    }
    if let Some(t) = &turn.text {
        out.push(json!({"id": format!("msg_fake{}", ctx.turn), "type": "message", "status": status,
                        "content": [text_part(turn, t)], "role": "assistant"}));
    }
    for (i, c) in turn.tool_calls.iter().enumerate() {
        out.push(json!({"id": format!("fc_fake{}_{i}", ctx.turn), "type": "function_call", "status": status,
                        "arguments": c.arguments,
                        "call_id": c.id.clone().unwrap_or_else(|| format!("call_{}_{i}", ctx.turn)),
                        "name": c.name}));
    }
    out
}

fn response(turn: &Turn, ctx: &RenderCtx, asked: &Asked, status: &str, output: Vec<Value>) -> Value {
    let finished = status != "in_progress";
    let mut r = json!({"id": format!("resp_fake{}", ctx.turn), "object": "response", "created_at": 1_700_000_000,
                       "status": status, "background": false, "error": null,
                       "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
                       "model": ctx.model, "output": output});
    if let Some(r) = r.as_object_mut() {
        r.extend(asked.echo.clone());
    }
    r["usage"] = if finished { usage(turn) } else { Value::Null };
    r
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Vec<Frame> {
    let mut seq = 0u64;
    let mut frames = Vec::new();
    let mut push = |name: &'static str, mut v: Value| {
        v["type"] = json!(name);
        v["sequence_number"] = json!(seq);
        seq += 1;
        frames.push(Frame::named(name, &v));
    };
    push("response.created", json!({"response": response(turn, ctx, asked, "in_progress", vec![])}));
    push("response.in_progress", json!({"response": response(turn, ctx, asked, "in_progress", vec![])}));
    let items = output(turn, ctx, asked);
    for (out_index, item) in items.iter().enumerate() {
        let item_id = item["id"].clone();
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                added["summary"] = json!([]);
                if let Some(a) = added.as_object_mut() {
                    a.remove("encrypted_content");
                }
                push("response.output_item.added", json!({"output_index": out_index, "item": added}));
                let summary = item["summary"][0]["text"].as_str().unwrap_or("").to_owned();
                if !summary.is_empty() {
                    let at = json!({"item_id": item_id, "output_index": out_index, "summary_index": 0});
                    let with = |extra: Value| {
                        let mut v = at.clone();
                        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
                            v.extend(extra.clone());
                        }
                        v
                    };
                    push(
                        "response.reasoning_summary_part.added",
                        with(json!({"part": {"type": "summary_text", "text": ""}})),
                    );
                    for piece in chunks(&summary, ctx.chunk) {
                        push("response.reasoning_summary_text.delta", with(json!({"delta": piece})));
                    }
                    push("response.reasoning_summary_text.done", with(json!({"text": summary})));
                    push(
                        "response.reasoning_summary_part.done",
                        with(json!({"part": {"type": "summary_text", "text": summary}})),
                    );
                }
            }
            Some("message") => {
                let part = item["content"][0].clone();
                let refusal = part["type"] == "refusal";
                let text = part[if refusal { "refusal" } else { "text" }].as_str().unwrap_or("").to_owned();
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                push("response.output_item.added", json!({"output_index": out_index, "item": added}));
                let empty = if refusal {
                    json!({"type": "refusal", "refusal": ""})
                } else {
                    json!({"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
                };
                let at = |mut v: Value| {
                    v["item_id"] = item_id.clone();
                    v["output_index"] = json!(out_index);
                    v["content_index"] = json!(0);
                    v
                };
                push("response.content_part.added", at(json!({"part": empty})));
                let (delta_event, done_event, done_key) = if refusal {
                    ("response.refusal.delta", "response.refusal.done", "refusal")
                } else {
                    ("response.output_text.delta", "response.output_text.done", "text")
                };
                for piece in chunks(&text, ctx.chunk) {
                    let mut v = at(json!({"delta": piece}));
                    if !refusal {
                        v["logprobs"] = json!([]);
                    }
                    push(delta_event, v);
                }
                let mut done = at(json!({}));
                done[done_key] = json!(text);
                if !refusal {
                    done["logprobs"] = json!([]);
                }
                push(done_event, done);
                push("response.content_part.done", at(json!({"part": part})));
            }
            _ => {
                let args = item["arguments"].as_str().unwrap_or("").to_owned();
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
                    json!({"item_id": item_id, "output_index": out_index, "name": item["name"], "arguments": args}),
                );
            }
        }
        push("response.output_item.done", json!({"output_index": out_index, "item": item}));
    }
    if incomplete(turn) {
        push("response.incomplete", json!({"response": response(turn, ctx, asked, "incomplete", items)}));
    } else {
        push("response.completed", json!({"response": response(turn, ctx, asked, "completed", items)}));
    }
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx, asked: &Asked) -> Value {
    let status = if incomplete(turn) { "incomplete" } else { "completed" };
    response(turn, ctx, asked, status, output(turn, ctx, asked))
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
