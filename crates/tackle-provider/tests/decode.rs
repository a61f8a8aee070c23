//! Stream decoders on streams shaped like the providers' documented examples.

use bytes::Bytes;
use futures::StreamExt;
use tackle_protocol::{ContentBlock, ResponseAccumulator, StopReason, StreamEvent, ToolInput, Usage};
use tackle_provider::{
    AnthropicDecoder, OpenAiChatDecoder, ProviderError, ResponsesDecoder, WireDecoder, decode_sse,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

async fn decode_with<D: WireDecoder>(
    bytes: &[u8],
    chunk: usize,
    decoder: D,
) -> Vec<Result<StreamEvent, ProviderError>> {
    let chunks: Vec<Result<Bytes, ProviderError>> =
        bytes.chunks(chunk.max(1)).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    decode_sse(futures::stream::iter(chunks), decoder).collect().await
}

fn ok(events: Vec<Result<StreamEvent, ProviderError>>) -> Vec<StreamEvent> {
    events.into_iter().map(|e| e.unwrap()).collect()
}

fn fold(events: &[StreamEvent]) -> tackle_protocol::ModelResponse {
    let mut acc = ResponseAccumulator::default();
    for e in events {
        acc.push(e);
    }
    assert!(acc.is_complete());
    acc.finish()
}

#[tokio::test]
async fn anthropic_text_stream() {
    let events = ok(decode_with(&fixture("anthropic_text.sse"), 4096, AnthropicDecoder::default()).await);
    let response = fold(&events);
    assert_eq!(response.text(), "Hello!");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage, Usage { input_tokens: 25, output_tokens: 15, ..Usage::default() });
}

#[tokio::test]
async fn anthropic_tool_call_arguments_in_many_fragments() {
    let bytes = fixture("anthropic_tool_use.sse");
    let events = ok(decode_with(&bytes, 4096, AnthropicDecoder::default()).await);
    insta::assert_json_snapshot!("anthropic_tool_use_events", events);
    let response = fold(&events);
    let calls: Vec<_> = response.tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(
        calls[0].input.as_json(),
        Some(&serde_json::json!({"location": "San Francisco, CA", "unit": "fahrenheit"}))
    );
    assert_eq!(calls[1].input.as_json(), Some(&serde_json::json!({})), "no input deltas means {{}}");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 472 + 100 + 2000,
            output_tokens: 89,
            cache_read_tokens: 2000,
            cache_write_tokens: 100,
            reasoning_tokens: 0,
        }
    );
    // Any chunking gives the same events.
    for size in [1, 7, 64] {
        assert_eq!(ok(decode_with(&bytes, size, AnthropicDecoder::default()).await), events, "chunk {size}");
    }
}

#[tokio::test]
async fn anthropic_thinking_round_trips_and_unknown_events_are_ignored() {
    let events = ok(decode_with(&fixture("anthropic_thinking.sse"), 4096, AnthropicDecoder::default()).await);
    let response = fold(&events);
    let ContentBlock::Reasoning(r) = &response.content[0] else { panic!("{:?}", response.content) };
    assert_eq!(r.format, "anthropic");
    assert!(r.text.starts_with("Let me solve"));
    assert_eq!(r.data["signature"], "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds");
    assert_eq!(r.data["type"], "thinking");
    assert_eq!(response.text(), "27 * 453 = 12,231");
}

#[tokio::test]
async fn anthropic_error_event_mid_stream_is_typed_and_yields_no_half_call() {
    let events = decode_with(&fixture("anthropic_error.sse"), 4096, AnthropicDecoder::default()).await;
    let last = events.last().unwrap();
    assert!(matches!(last, Err(ProviderError::Overloaded { .. })), "{last:?}");
    assert!(
        !events.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallEnd { .. }))),
        "the interrupted call must not be completed"
    );
}

#[tokio::test]
async fn openai_text_stream_with_usage_chunk() {
    let events = ok(decode_with(&fixture("openai_text.sse"), 4096, OpenAiChatDecoder::default()).await);
    let response = fold(&events);
    assert_eq!(response.text(), "Hello there");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage { input_tokens: 1200, output_tokens: 2, cache_read_tokens: 1024, ..Usage::default() }
    );
}

#[tokio::test]
async fn openai_two_parallel_tool_calls_accumulate_by_index() {
    let bytes = fixture("openai_parallel_tools.sse");
    let events = ok(decode_with(&bytes, 4096, OpenAiChatDecoder::default()).await);
    insta::assert_json_snapshot!("openai_parallel_tools_events", events);
    let response = fold(&events);
    let calls: Vec<_> = response.tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_AAA", "get_weather"));
    assert_eq!(calls[0].input.as_json(), Some(&serde_json::json!({"location": "Paris"})));
    assert_eq!(calls[1].input.as_json(), Some(&serde_json::json!({"tz": "CET"})));
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    for size in [1, 3, 100] {
        assert_eq!(ok(decode_with(&bytes, size, OpenAiChatDecoder::default()).await), events, "chunk {size}");
    }
}

#[tokio::test]
async fn openai_invalid_arguments_are_kept_raw_and_flagged() {
    let events = ok(decode_with(&fixture("openai_bad_args.sse"), 4096, OpenAiChatDecoder::default()).await);
    let response = fold(&events);
    let call = response.tool_uses().next().unwrap();
    match &call.input {
        ToolInput::Invalid { raw, error } => {
            assert_eq!(raw, "{\"path\": \"a.txt\"");
            assert!(error.contains("EOF"), "{error}");
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_a_network_error_without_half_calls() {
    let bytes = fixture("openai_parallel_tools.sse");
    // Cut after the third event: a call has started but not finished.
    let cut: Vec<u8> = bytes.split(|b| *b == b'\n').take(6).collect::<Vec<_>>().join(&b'\n');
    let events = decode_with(&cut, 4096, OpenAiChatDecoder::default()).await;
    assert!(matches!(events.last(), Some(Err(ProviderError::Network { .. }))), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallEnd { .. }))));

    let bytes = fixture("anthropic_tool_use.sse");
    let events = decode_with(&bytes[..bytes.len() / 2], 4096, AnthropicDecoder::default()).await;
    assert!(matches!(events.last(), Some(Err(ProviderError::Network { .. }))), "{events:?}");
}

#[tokio::test]
async fn malformed_chunks_are_protocol_errors() {
    let stream = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json\n\n";
    let events = decode_with(stream, 4096, OpenAiChatDecoder::default()).await;
    assert!(matches!(events.last(), Some(Err(ProviderError::Protocol { .. }))), "{events:?}");
    let stream = b"event: message_start\ndata: <html>\n\n";
    let events = decode_with(stream, 4096, AnthropicDecoder::default()).await;
    assert!(matches!(events.last(), Some(Err(ProviderError::Protocol { .. }))), "{events:?}");
}

#[tokio::test]
async fn unknown_finish_reasons_are_kept() {
    let stream = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"brand_new\"}]}\n\ndata: [DONE]\n\n";
    let events = ok(decode_with(stream, 4096, OpenAiChatDecoder::default()).await);
    assert_eq!(fold(&events).stop_reason, StopReason::Other("brand_new".into()));
}

/// Decodes a Responses stream whatever the chunking, and checks every chunking agrees (on the
/// error, for a failing stream: events queued with it are dropped, as in every format).
async fn responses(name: &str) -> Vec<Result<StreamEvent, ProviderError>> {
    let bytes = fixture(name);
    let whole = decode_with(&bytes, 1 << 20, ResponsesDecoder::default()).await;
    for size in [1, 5, 64] {
        let split = decode_with(&bytes, size, ResponsesDecoder::default()).await;
        match whole.last() {
            Some(Err(e)) => {
                assert_eq!(split.last().unwrap().as_ref().unwrap_err(), e, "{name}, chunk {size}")
            }
            _ => assert_eq!(format!("{split:?}"), format!("{whole:?}"), "{name}, chunk {size}"),
        }
        assert!(
            !split.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallEnd { .. }))
                && whole.last().is_some_and(Result::is_err))
        );
    }
    whole
}

#[tokio::test]
async fn responses_text_stream_with_cached_tokens() {
    let events = ok(responses("responses_text.sse").await);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hi", " there", ", how can", " I help?"], "text streams as it comes, once");
    let response = fold(&events);
    assert_eq!(response.text(), "Hi there, how can I help?");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage { input_tokens: 1200, output_tokens: 12, cache_read_tokens: 1024, ..Usage::default() }
    );
}

#[tokio::test]
async fn responses_function_call_arguments_in_many_fragments() {
    let events = ok(responses("responses_function_call.sse").await);
    let fragments = events.iter().filter(|e| matches!(e, StreamEvent::ToolCallDelta { .. })).count();
    assert_eq!(fragments, 13, "each fragment goes out as it comes, none twice");
    let response = fold(&events);
    let call = response.tool_uses().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_12345xyz", "get_weather"));
    assert_eq!(
        call.input.as_json(),
        Some(&serde_json::json!({"location": "San Francisco, CA", "unit": "celsius"}))
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn responses_two_parallel_calls_by_output_index() {
    let events = ok(responses("responses_parallel_calls.sse").await);
    insta::assert_json_snapshot!("responses_parallel_calls_events", events);
    let response = fold(&events);
    let calls: Vec<_> = response.tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].id.as_str(), calls[1].id.as_str()), ("call_aaa", "call_bbb"));
    assert_eq!(calls[0].input.as_json(), Some(&serde_json::json!({"location": "Paris"})));
    assert_eq!(calls[1].input.as_json(), Some(&serde_json::json!({"tz": "CET"})));
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn responses_reasoning_item_is_kept_whole_with_its_encrypted_content() {
    let bytes = fixture("responses_reasoning.sse");
    let events = ok(responses("responses_reasoning.sse").await);
    let summary: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(summary.starts_with("**Planning the lookup**"), "{summary}");
    let response = fold(&events);
    let ContentBlock::Reasoning(r) = &response.content[0] else { panic!("{:?}", response.content) };
    assert_eq!(r.format, "openai-responses");
    assert_eq!(r.text, summary, "the summary, streamed once");
    // The item re-serializes to exactly the bytes the API sent (compact JSON, keys in order).
    let item = serde_json::to_string(&r.data).unwrap();
    assert!(String::from_utf8(bytes).unwrap().contains(&format!("\"item\":{item}")), "{item}");
    assert!(r.data["encrypted_content"].as_str().unwrap().starts_with("gAAAAAB"));
    assert!(matches!(response.content[1], ContentBlock::ToolUse(_)), "the call after its reasoning");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2000,
            output_tokens: 190,
            cache_read_tokens: 1536,
            cache_write_tokens: 0,
            reasoning_tokens: 128
        }
    );
}

#[tokio::test]
async fn responses_failed_is_a_typed_error_and_yields_no_half_call() {
    let events = responses("responses_failed.sse").await;
    let last = events.last().unwrap();
    assert!(
        matches!(last, Err(ProviderError::Server { status: 500, message }) if message == "The model failed to generate a response."),
        "{last:?}"
    );
    assert!(last.as_ref().unwrap_err().is_retryable());
    let split = decode_with(&fixture("responses_failed.sse"), 1, ResponsesDecoder::default()).await;
    assert!(split.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallStart { .. }))), "{split:?}");
    assert!(!split.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallEnd { .. }))), "no half call");
}

#[tokio::test]
async fn responses_error_event_is_typed() {
    let events = responses("responses_error.sse").await;
    match events.last().unwrap() {
        Err(ProviderError::RateLimited { message, .. }) => assert!(message.contains("TPM"), "{message}"),
        other => panic!("{other:?}"),
    }
}

/// Servers that send only the items' `done` events (as Codex's tests do), or only the final
/// response, give the same calls and text; a stream cut before its end is an error; an
/// incomplete response ran out of tokens.
#[tokio::test]
async fn responses_sparse_incomplete_and_cut_streams() {
    let sse = |events: &[serde_json::Value]| -> Vec<u8> {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect::<String>()
            .into_bytes()
    };
    let call = serde_json::json!({"type": "function_call", "call_id": "call-1", "name": "lookup_ticket", "arguments": "{\"id\":\"ABC-123\"}"});
    let message = serde_json::json!({"type": "message", "role": "assistant", "id": "msg-1", "content": [{"type": "output_text", "text": "first answer"}]});
    let done_only = sse(&[
        serde_json::json!({"type": "response.created", "response": {"id": "resp-1"}}),
        serde_json::json!({"type": "response.output_item.done", "item": message}),
        serde_json::json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
        serde_json::json!({"type": "response.completed", "response": {"id": "resp-1", "usage": {"input_tokens": 100, "input_tokens_details": null, "output_tokens": 10, "output_tokens_details": null, "total_tokens": 110}}}),
    ]);
    let completed_only = sse(&[serde_json::json!({"type": "response.completed",
        "response": {"id": "resp-1", "output": [message, call], "usage": {"input_tokens": 100, "output_tokens": 10}}})]);
    for bytes in [done_only, completed_only] {
        let response = fold(&ok(decode_with(&bytes, 3, ResponsesDecoder::default()).await));
        assert_eq!(response.text(), "first answer");
        let c = response.tool_uses().next().unwrap();
        assert_eq!(
            (c.id.as_str(), c.input.as_json()),
            ("call-1", Some(&serde_json::json!({"id": "ABC-123"})))
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.usage.input_tokens, 100);
    }
    let incomplete = sse(&[
        serde_json::json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "write_file", "arguments": ""}}),
        serde_json::json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": "{\"path\": \"a"}),
        serde_json::json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
    ]);
    let response = fold(&ok(decode_with(&incomplete, 4096, ResponsesDecoder::default()).await));
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert!(
        response.tool_uses().next().unwrap().input.as_json().is_none(),
        "a cut call is flagged, not guessed"
    );
    let mut cut = fixture("responses_function_call.sse");
    cut.truncate(cut.len() / 2);
    let events = decode_with(&cut, 64, ResponsesDecoder::default()).await;
    assert!(matches!(events.last().unwrap(), Err(ProviderError::Network { .. })), "{:?}", events.last());
    assert!(!events.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCallEnd { .. }))));
    let garbage = decode_with(b"data: {not json\n\n", 4096, ResponsesDecoder::default()).await;
    assert!(matches!(garbage[0], Err(ProviderError::Protocol { .. })));
}

/// Two `function_call` items with one `call_id` (a model, proxy or gateway reusing ids) are two
/// calls, however the server numbers them: the agent renames the second and runs both, as with
/// Chat Completions and Anthropic. Servers that omit `output_index`, reuse item ids, or send
/// only the terminal response included.
#[tokio::test]
async fn responses_two_calls_with_one_call_id_are_both_kept() {
    let sse = |events: &[serde_json::Value]| -> Vec<u8> {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect::<String>()
            .into_bytes()
    };
    let call = |id: &str, args: &str| serde_json::json!({"type": "function_call", "id": id, "call_id": "call_same", "name": "shell", "arguments": args});
    let (a, b) = (r#"{"command":"echo a"}"#, r#"{"command":"echo b"}"#);
    let completed = |output: serde_json::Value| serde_json::json!({"type": "response.completed", "response": {"id": "r", "output": output}});
    let streams = [
        // Indexed, distinct item ids.
        sse(&[
            serde_json::json!({"type": "response.output_item.added", "output_index": 0, "item": call("fc_1", "")}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": call("fc_1", a)}),
            serde_json::json!({"type": "response.output_item.added", "output_index": 1, "item": call("fc_2", "")}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 1, "item": call("fc_2", b)}),
            completed(serde_json::json!([call("fc_1", a), call("fc_2", b)])),
        ]),
        // No output_index, one item id for both.
        sse(&[
            serde_json::json!({"type": "response.output_item.added", "item": call("call_same", "")}),
            serde_json::json!({"type": "response.function_call_arguments.delta", "item_id": "call_same", "delta": a}),
            serde_json::json!({"type": "response.output_item.done", "item": call("call_same", a)}),
            serde_json::json!({"type": "response.output_item.added", "item": call("call_same", "")}),
            serde_json::json!({"type": "response.function_call_arguments.delta", "item_id": "call_same", "delta": b}),
            serde_json::json!({"type": "response.output_item.done", "item": call("call_same", b)}),
            completed(serde_json::json!([call("call_same", a), call("call_same", b)])),
        ]),
        // Only the items' done events, without output_index.
        sse(&[
            serde_json::json!({"type": "response.output_item.done", "item": call("fc_1", a)}),
            serde_json::json!({"type": "response.output_item.done", "item": call("fc_2", b)}),
            completed(serde_json::json!([call("fc_1", a), call("fc_2", b)])),
        ]),
        // Only the terminal response.
        sse(&[completed(serde_json::json!([call("fc_1", a), call("fc_2", b)]))]),
    ];
    for (n, bytes) in streams.iter().enumerate() {
        let response = fold(&ok(decode_with(bytes, 7, ResponsesDecoder::default()).await));
        let calls: Vec<(String, Option<serde_json::Value>)> =
            response.tool_uses().map(|c| (c.id.to_string(), c.input.as_json().cloned())).collect();
        assert_eq!(
            calls,
            [
                ("call_same".to_owned(), Some(serde_json::json!({"command": "echo a"}))),
                ("call_same".to_owned(), Some(serde_json::json!({"command": "echo b"}))),
            ],
            "stream {n}"
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse, "stream {n}");
    }
}

/// `gen_ai.response.id` / `gen_ai.response.model` come from here: every wire names its response
/// and the model that actually answered (a dated snapshot where the request named an alias).
#[tokio::test]
async fn each_wire_reports_the_response_id_and_the_answering_model() {
    let chat = fold(&ok(decode_with(&fixture("openai_text.sse"), 7, OpenAiChatDecoder::default()).await));
    assert_eq!(chat.id.as_deref(), Some("chatcmpl-123"));
    assert_eq!(chat.model.as_deref(), Some("gpt-4o-mini"));
    let chat_events = ok(decode_with(&fixture("openai_text.sse"), 4096, OpenAiChatDecoder::default()).await);
    let infos = chat_events.iter().filter(|e| matches!(e, StreamEvent::ResponseInfo { .. })).count();
    assert_eq!(infos, 1, "every chunk repeats them; reported once");

    let responses = fold(&ok(responses("responses_text.sse").await));
    assert_eq!(responses.id.as_deref(), Some("resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"));
    assert_eq!(responses.model.as_deref(), Some("gpt-5-2025-08-07"));

    let anthropic =
        fold(&ok(decode_with(&fixture("anthropic_text.sse"), 3, AnthropicDecoder::default()).await));
    assert_eq!(anthropic.id.as_deref(), Some("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"));
    assert_eq!(anthropic.model.as_deref(), Some("claude-opus-4-6"));
}

/// A server that adds events and fields the decoder does not know (newer API versions, gateways)
/// still decodes: the unknown are skipped, the known read as before.
#[tokio::test]
async fn responses_unknown_events_and_fields_are_skipped() {
    let stream = concat!(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"model\":\"m\",\"brand_new\":{\"x\":[1]}},\"sequence_number\":0}\n\n",
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"\",\"added_later\":1}}\n\n",
        "event: response.audio.transcript.delta\ndata: {\"type\":\"response.audio.transcript.delta\",\"delta\":\"zz\"}\n\n",
        "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"item_id\":\"fc_1\",\"delta\":\"{\\\"a\\\":1}\",\"obfuscation\":\"q\"}\n\n",
        "event: response.function_call_arguments.delta\ndata: {\"output_index\":0,\"item_id\":\"fc_1\",\"delta\":\"\"}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"output\":[{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}],\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"future_tokens\":9}}}\n\n",
    );
    let response = fold(&ok(decode_with(stream.as_bytes(), 5, ResponsesDecoder::default()).await));
    let call = response.tool_uses().next().unwrap();
    assert_eq!((call.id.as_str(), call.input.as_json()), ("c1", Some(&serde_json::json!({"a": 1}))));
    assert_eq!(response.usage.input_tokens, 3);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}
