use super::*;
use serde_json::json;

#[test]
fn a_request_reads_and_writes_back_the_same_bytes() {
    let body = json!({
        "model": "claude-x",
        "tools": [
            {"name": "a", "description": "d", "input_schema": {"type": "object"}},
            {"name": "b", "description": "d", "input_schema": {"type": "object"}, "defer_loading": true},
            {"name": "c", "description": "d", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}
        ],
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "redacted_thinking", "data": "x"},
                {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"k": 1}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": true,
                 "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "toolu_2",
                 "content": [{"type": "tool_reference", "tool_name": "b"}]}
            ]}
        ],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
        "max_tokens": 100,
        "temperature": 0.5,
        "stream": true
    });
    let text = serde_json::to_string(&body).unwrap();
    let request: MessagesRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&request).unwrap(), text);
}

#[test]
fn strings_are_short_for_blocks_and_unknown_blocks_are_skipped() {
    let request: MessagesRequest = serde_json::from_value(json!({
        "model": "m", "max_tokens": 1, "system": "sys",
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": [{"type": "server_tool_use", "id": "x"}]}]
    }))
    .unwrap();
    assert_eq!(request.system, [SystemBlock::Text { text: "sys".into(), cache_control: None }]);
    assert_eq!(
        request.messages[0].content.blocks()[0],
        ContentBlock::Text { text: "hi".into(), cache_control: None }
    );
    assert_eq!(request.messages[1].content.blocks()[0], ContentBlock::Unknown);
}

#[test]
fn a_wrong_field_is_named() {
    let err = serde_json::from_value::<MessagesRequest>(json!({"model": "m", "messages": []})).unwrap_err();
    assert!(err.to_string().contains("max_tokens"), "{err}");
    let err = serde_json::from_value::<ToolResultBlock>(json!({"type": "video"})).unwrap_err();
    assert!(err.to_string().contains("video"), "{err}");
}

#[test]
fn stream_events_read_as_anthropic_sends_them() {
    let start: StreamEvent = serde_json::from_value(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 2, "output_tokens": 1}}}))
    .unwrap();
    let StreamEvent::MessageStart { message } = start else { panic!("{start:?}") };
    assert_eq!((message.id.as_ref(), message.usage.cache_read_input_tokens), ("msg_1", Some(2)));
    let thinking: StreamEvent = serde_json::from_value(json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "thinking", "thinking": ""}}))
    .unwrap();
    assert!(matches!(
        thinking,
        StreamEvent::ContentBlockStart { index: 0, content_block: ContentBlock::Thinking { .. } }
    ));
    let citation: StreamEvent = serde_json::from_value(json!({"type": "content_block_delta", "index": 1,
        "delta": {"type": "citations_delta", "citation": {}}}))
    .unwrap();
    assert_eq!(citation, StreamEvent::ContentBlockDelta { index: 1, delta: Delta::Unknown });
    let later: StreamEvent = serde_json::from_value(json!({"type": "message_later", "x": 1})).unwrap();
    assert_eq!(later, StreamEvent::Unknown);
    let error = serde_json::to_string(&ErrorBody::new("overloaded_error", "busy")).unwrap();
    assert_eq!(error, r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#);
}
