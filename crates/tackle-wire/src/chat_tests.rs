use super::*;
use serde_json::json;

#[test]
fn a_request_reads_and_writes_back_the_same_bytes() {
    let body = json!({
        "model": "gpt-x",
        "tools": [
            {"type": "function", "function": {"name": "a", "description": "d", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}, "strict": true}}
        ],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "developer", "content": [{"type": "text", "text": "rules"}]},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"k\":1}"}},
                {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{\"k\": "}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            {"role": "tool", "tool_call_id": "call_2", "content": ""},
            {"role": "assistant", "content": "done"}
        ],
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "a"}}
        ]}},
        "parallel_tool_calls": false,
        "max_completion_tokens": 100,
        "temperature": 0.5,
        "prompt_cache_key": "k",
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let text = serde_json::to_string(&body).unwrap();
    let request: ChatRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&request).unwrap(), text);
}

#[test]
fn null_lists_and_options_read_as_absent() {
    let request: ChatRequest = serde_json::from_value(json!({
        "model": "m", "tools": null, "tool_choice": null, "max_tokens": null, "stream_options": null,
        "messages": [{"role": "assistant", "content": "hi", "tool_calls": null, "refusal": null}]
    }))
    .unwrap();
    assert!(request.messages[0].tool_calls.is_empty() && request.tools.is_none());
}

#[test]
fn every_tool_choice_form_round_trips() {
    for choice in [
        json!("none"),
        json!("auto"),
        json!("required"),
        json!({"type": "function", "function": {"name": "a"}}),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "a"}}, {"function": {"name": "b"}}, {"type": "function", "name": "c"}]}}),
        json!({"type": "custom", "custom": {"name": "a"}}),
        // The Responses API's spellings, which Tackle's server accepts here too.
        json!({"type": "function", "name": "a"}),
        json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "a"}]}),
        // A kind this module does not know, kept for the reader to refuse by name.
        json!({"type": "web_search", "x": 1}),
    ] {
        let text = choice.to_string();
        let read: ToolChoice = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), text, "byte for byte");
    }
    let flat: ToolChoice = serde_json::from_value(json!({"type": "function", "name": "a"})).unwrap();
    assert!(matches!(flat, ToolChoice::Object(ToolChoiceObject::Responses(ref o))
        if matches!(**o, crate::responses::ToolChoiceObject::Function { ref name } if name == "a")));
    let nested: ToolChoice = serde_json::from_value(json!({"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "name": "b"}]}}))
    .unwrap();
    let ToolChoice::Object(ToolChoiceObject::AllowedTools { allowed_tools }) = nested else {
        panic!("{nested:?}")
    };
    assert_eq!(allowed_tools.tools[0].name(), Some("b"));
    assert_eq!(
        ToolChoice::function("a"),
        serde_json::from_value(json!({"type": "function", "function": {"name": "a"}})).unwrap()
    );
}

/// The path and the reason of the first error reading `body` as a request.
fn error_of(body: Value) -> String {
    let e = serde_path_to_error::deserialize::<_, ChatRequest>(body).unwrap_err();
    format!("{}: {}", e.path(), e.inner())
}

#[test]
fn a_wrong_field_fails_with_its_path() {
    let base = |messages: Value| json!({"model": "m", "messages": messages});
    let e = error_of(base(json!([{"role": "robot", "content": "x"}])));
    assert!(e.starts_with("messages[0].role: unknown variant `robot`"), "{e}");
    let e = error_of(base(json!([{"role": "user", "content": 5}])));
    assert!(e.starts_with("messages[0].content: invalid type: integer `5`"), "{e}");
    let e = error_of(base(json!([{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}])));
    assert!(e.starts_with("messages[0].tool_calls[0].function: missing field `name`"), "{e}");
    let e = error_of(json!({"model": "m", "messages": [], "tool_choice": "sometimes"}));
    assert!(e.starts_with("tool_choice: unknown variant `sometimes`"), "{e}");
    let e =
        error_of(json!({"model": "m", "messages": [], "tool_choice": {"type": "function", "function": {}}}));
    assert!(e.contains("tool_choice") && e.contains("missing field `name`"), "{e}");
    for (choice, field) in [
        (json!({"type": "function", "name": 5}), "invalid type: integer `5`"),
        (
            json!({"type": "allowed_tools", "allowed_tools": {"mode": "sometimes", "tools": []}}),
            "unknown variant `sometimes`",
        ),
        (json!({"type": "allowed_tools", "mode": "auto"}), "missing field `tools`"),
        (json!({"type": "custom", "custom": {}}), "missing field `name`"),
    ] {
        let e = error_of(json!({"model": "m", "messages": [], "tool_choice": choice}));
        assert!(e.starts_with("tool_choice") && e.contains(field), "{e}");
    }
    let e = error_of(json!({"messages": []}));
    assert!(e.contains("missing field `model`"), "{e}");
}

#[test]
fn stream_chunks_read_every_shape() {
    let text = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#;
    let chunk: Chunk = serde_json::from_str(text).unwrap();
    assert_eq!(chunk.id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(serde_json::to_string(&chunk).unwrap(), text);
    let usage = r#"{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}"#;
    let chunk: Chunk = serde_json::from_str(usage).unwrap();
    assert_eq!(
        chunk.usage.as_ref().and_then(|u| u.prompt_tokens_details).and_then(|d| d.cached_tokens),
        Some(1)
    );
    assert_eq!(serde_json::to_string(&chunk).unwrap(), usage);
    let reasoning: Chunk = serde_json::from_str(r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#).unwrap();
    assert_eq!(reasoning.choices[0].delta.as_ref().and_then(|d| d.reasoning_content.as_deref()), Some("hm"));
}

#[test]
fn a_whole_completion_and_an_error_body_round_trip() {
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
            "logprobs": null, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    });
    let read: Completion = serde_json::from_value(completion.clone()).unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap(), completion);
    // Compatible servers: reasoning under either name, and no id, object or created.
    for key in ["reasoning_content", "reasoning"] {
        let sparse = json!({"model": "m", "choices": [{"message": {"role": "assistant", "content": "a", key: "why"},
            "finish_reason": "stop"}]});
        let read: Completion = serde_json::from_value(sparse).unwrap();
        assert_eq!(read.choices[0].message.reasoning_content.as_deref(), Some("why"), "{key}");
        assert_eq!((read.id.as_ref(), read.created), ("", 0));
    }
    assert_eq!(
        serde_json::to_value(ErrorBody::new("server_error", "boom")).unwrap(),
        json!({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}})
    );
}

#[test]
fn chunk_strings_are_borrowed_unless_escaped() {
    let chunk: Chunk = serde_json::from_str(
        r#"{"id":"chatcmpl-1","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"a\nb","tool_calls":[{"index":0,"function":{"arguments":"{\"k"}}]},"finish_reason":"stop"}]}"#,
    )
    .unwrap();
    assert!(matches!(chunk.id, Some(Cow::Borrowed("chatcmpl-1"))));
    assert!(matches!(chunk.choices[0].finish_reason, Some(Cow::Borrowed("stop"))));
    let delta = chunk.choices[0].delta.as_ref().unwrap();
    assert!(matches!(&delta.content, Some(Cow::Owned(s)) if s == "a\nb"), "escapes need a copy");
    let args = delta.tool_calls.as_ref().unwrap()[0].function.as_ref().unwrap().arguments.as_deref();
    assert_eq!(args, Some("{\"k"));
}
