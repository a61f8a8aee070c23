//! OpenAI Chat Completions: `chat.completion.chunk` SSE and `chat.completion` JSON, written with
//! the wire types the provider reads (`tackle_wire::chat`).

use std::borrow::Cow;

use serde_json::Value;
use tackle_protocol::StopReason;
use tackle_wire::chat::{
    AnswerMessage, Chunk, ChunkChoice, Completion, CompletionChoice, CompletionTokensDetails, Delta,
    ErrorBody, FunctionDelta, PromptTokensDetails, Role, ToolCall, ToolCallDelta, Usage,
};

use super::{Frame, RenderCtx};
use crate::script::{Turn, chunks};

const CREATED: u64 = 1_700_000_000;

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

fn usage(turn: &Turn) -> Usage {
    let u = turn.usage;
    Usage {
        prompt_tokens: u.input_tokens,
        completion_tokens: u.output_tokens,
        total_tokens: u.input_tokens + u.output_tokens,
        prompt_tokens_details: Some(PromptTokensDetails {
            cached_tokens: Some(u.cache_read_tokens),
            audio_tokens: Some(0),
        }),
        completion_tokens_details: Some(CompletionTokensDetails { reasoning_tokens: Some(0) }),
    }
}

pub(crate) fn stream(turn: &Turn, ctx: &RenderCtx) -> Vec<Frame> {
    let id = format!("chatcmpl-fake{}", ctx.turn);
    let chunk = |choices: Vec<ChunkChoice<'_>>, usage: Option<Usage>| {
        Frame::json(&Chunk {
            id: Some(Cow::Borrowed(&id)),
            object: Some(Cow::Borrowed("chat.completion.chunk")),
            created: Some(CREATED),
            model: Some(Cow::Borrowed(&ctx.model)),
            system_fingerprint: Some(Cow::Borrowed("fp_fake")),
            choices,
            usage: usage.map(Box::new),
            error: None,
        })
    };
    let delta =
        |delta: Delta<'_>| chunk(vec![ChunkChoice { delta: Some(delta), ..ChunkChoice::default() }], None);
    let mut frames = vec![delta(Delta {
        role: Some(Cow::Borrowed("assistant")),
        content: Some(Cow::Borrowed("")),
        ..Delta::default()
    })];
    if let Some(text) = &turn.text {
        for piece in chunks(text, ctx.chunk) {
            frames.push(delta(Delta { content: Some(Cow::Owned(piece)), ..Delta::default() }));
        }
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let index = Some(i as u32);
        frames.push(delta(Delta {
            tool_calls: Some(vec![ToolCallDelta {
                index,
                id: Some(Cow::Owned(call_id(turn, ctx, i))),
                kind: Some(Cow::Borrowed("function")),
                function: Some(FunctionDelta {
                    name: Some(Cow::Borrowed(&call.name)),
                    arguments: Some(Cow::Borrowed("")),
                }),
            }]),
            ..Delta::default()
        }));
        for piece in chunks(&call.arguments, ctx.chunk) {
            frames.push(delta(Delta {
                tool_calls: Some(vec![ToolCallDelta {
                    index,
                    function: Some(FunctionDelta { name: None, arguments: Some(Cow::Owned(piece)) }),
                    ..ToolCallDelta::default()
                }]),
                ..Delta::default()
            }));
        }
    }
    frames.push(chunk(
        vec![ChunkChoice {
            delta: Some(Delta::default()),
            finish_reason: Some(Cow::Borrowed(finish_reason(&turn.stop_reason()))),
            ..ChunkChoice::default()
        }],
        None,
    ));
    if ctx.include_usage {
        frames.push(chunk(Vec::new(), Some(usage(turn))));
    }
    frames.push(Frame { event: None, data: "[DONE]".into() });
    frames
}

pub(crate) fn json(turn: &Turn, ctx: &RenderCtx) -> Value {
    let tool_calls = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| ToolCall::function(call_id(turn, ctx, i), c.name.as_str(), c.arguments.as_str()))
        .collect();
    let stop = turn.stop_reason();
    let completion = Completion {
        id: Cow::Owned(format!("chatcmpl-fake{}", ctx.turn)),
        object: Cow::Borrowed("chat.completion"),
        created: CREATED,
        model: Cow::Borrowed(&ctx.model),
        system_fingerprint: Some(Cow::Borrowed("fp_fake")),
        choices: vec![CompletionChoice {
            index: 0,
            message: AnswerMessage {
                role: Role::Assistant,
                content: turn.text.as_deref().map(Cow::Borrowed),
                refusal: None,
                reasoning_content: None,
                tool_calls,
            },
            logprobs: None,
            finish_reason: Some(Cow::Borrowed(finish_reason(&stop))),
        }],
        usage: usage(turn),
    };
    serde_json::to_value(&completion).unwrap_or_default()
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    serde_json::to_value(ErrorBody::new(kind, message)).unwrap_or_default()
}
