//! Stream decoders on streams shaped like the providers' documented examples.

use bytes::Bytes;
use futures::StreamExt;
use tackle_protocol::{ContentBlock, ResponseAccumulator, StopReason, StreamEvent, ToolInput, Usage};
use tackle_provider::{AnthropicDecoder, OpenAiChatDecoder, ProviderError, WireDecoder, decode_sse};

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
            cache_write_tokens: 100
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
        Usage { input_tokens: 1200, output_tokens: 2, cache_read_tokens: 1024, cache_write_tokens: 0 }
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
