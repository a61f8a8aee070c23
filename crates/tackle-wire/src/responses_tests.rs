use super::*;
use serde_json::json;

#[test]
fn a_request_reads_and_writes_back_the_same_bytes() {
    let body = json!({
        "model": "gpt-x",
        "tools": [
            {"type": "function", "name": "a", "description": "d", "parameters": {"type": "object"}, "strict": false},
            {"type": "web_search", "search_context_size": "low"}
        ],
        "instructions": "be brief",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "call_1", "name": "a", "arguments": "{\"k\":1}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "now"}]}
        ],
        "tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "a"}]},
        "parallel_tool_calls": false,
        "max_output_tokens": 100,
        "temperature": 0.5,
        "reasoning": {"effort": "low", "summary": "auto"},
        "prompt_cache_key": "k",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "truncation": "disabled",
        "stream": true
    });
    let text = serde_json::to_string(&body).unwrap();
    let request: ResponsesRequest = serde_json::from_str(&text).unwrap();
    assert!(matches!(&request.input, Input::Items(items) if matches!(items[1], InputItem::Other(_))));
    assert_eq!(serde_json::to_string(&request).unwrap(), text);
}

#[test]
fn short_forms_read_as_messages() {
    let request: ResponsesRequest =
        serde_json::from_value(json!({"model": "m", "input": [{"role": "user", "content": "hi"}]})).unwrap();
    let Input::Items(items) = &request.input else { panic!("items") };
    assert_eq!(items[0].kind(), "message");
    let request: ResponsesRequest = serde_json::from_value(json!({"model": "m", "input": "hi"})).unwrap();
    assert_eq!(request.input, Input::Text("hi".into()));
    for choice in [json!("auto"), json!({"type": "function", "name": "a"})] {
        let read: ToolChoice = serde_json::from_value(choice.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), choice);
    }
}

#[test]
fn every_tool_choice_form_round_trips_byte_for_byte() {
    for choice in [
        json!("none"),
        json!("auto"),
        json!("required"),
        json!({"type": "function", "name": "a"}),
        json!({"type": "allowed_tools", "mode": "required", "tools": [
            {"type": "function", "name": "a"}, {"name": "b"}, {"type": "function", "function": {"name": "c"}},
            {"type": "mcp", "server_label": "deepwiki"}]}),
        json!({"type": "custom", "name": "grammar"}),
        json!({"type": "mcp", "server_label": "deepwiki"}),
        json!({"type": "mcp", "server_label": "deepwiki", "name": "ask"}),
        json!({"type": "file_search"}),
        json!({"type": "web_search_preview"}),
        json!({"type": "web_search_preview_2025_03_11"}),
        json!({"type": "computer_use_preview"}),
        json!({"type": "image_generation"}),
        json!({"type": "code_interpreter"}),
        json!({"type": "apply_patch"}),
        json!({"type": "shell"}),
        // Chat Completions' spellings, which Tackle's server accepts here too.
        json!({"type": "function", "function": {"name": "a"}}),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "a"}}]}}),
        // A kind added later: kept as sent.
        json!({"type": "web_search_2030", "x": [1]}),
        json!({"name": "no type"}),
    ] {
        let text = choice.to_string();
        let read: ToolChoice = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), text, "byte for byte");
    }
    let read: ToolChoice = serde_json::from_value(json!({"type": "file_search"})).unwrap();
    assert_eq!(read, ToolChoice::Object(ToolChoiceObject::FileSearch));
    let read: ToolChoice =
        serde_json::from_value(json!({"type": "function", "function": {"name": "a"}})).unwrap();
    assert_eq!(
        read,
        ToolChoice::Object(ToolChoiceObject::Chat(crate::chat::ToolChoiceObject::Function {
            function: crate::chat::FunctionName { name: "a".into() }
        }))
    );
    let read: ToolChoice = serde_json::from_value(json!({"type": "x"})).unwrap();
    assert!(matches!(read, ToolChoice::Object(ToolChoiceObject::Other(_))), "{read:?}");
}

#[test]
fn a_bad_tool_choice_names_its_field() {
    for (choice, want) in [
        (json!("sometimes"), "tool_choice: unknown variant `sometimes`"),
        (json!(5), "tool_choice: invalid type: integer `5`"),
        (json!({"type": "function"}), "missing field `name`"),
        (json!({"type": "function", "name": ["a"]}), "invalid type: sequence"),
        (json!({"type": "allowed_tools", "mode": "sometimes", "tools": []}), "unknown variant `sometimes`"),
        (json!({"type": "allowed_tools", "mode": "auto"}), "missing field `tools`"),
        (json!({"type": "allowed_tools", "allowed_tools": {"tools": []}}), "missing field `mode`"),
        (json!({"type": "mcp"}), "missing field `server_label`"),
        (json!({"type": "custom"}), "missing field `name`"),
    ] {
        let e = error_of(json!({"model": "m", "input": "hi", "tool_choice": choice}));
        assert!(e.starts_with("tool_choice") && e.contains(want), "{choice}: {e}");
    }
}

#[test]
fn the_echo_writes_back_what_it_read_and_nulls_what_is_unset() {
    // Every field, in the API's order, then one this module does not name.
    let text = r#"{"instructions":"be brief","max_output_tokens":64,"parallel_tool_calls":false,"previous_response_id":null,"prompt_cache_key":"k","reasoning":{"effort":null,"summary":null},"store":false,"temperature":0.7,"text":{"format":{"type":"text"}},"tool_choice":{"type":"function","name":"t"},"tools":[{"type":"function","name":"t","parameters":{"type":"object"},"strict":false,"x":1}],"top_p":null,"truncation":"disabled","user":null,"metadata":{"team":"a"},"service_tier":"default"}"#;
    let echo: Echo = serde_json::from_str(text).unwrap();
    assert_eq!(echo.temperature, Some(Some(0.7)));
    assert_eq!(echo.previous_response_id, Some(None), "null is kept apart from absent");
    assert_eq!(echo.other["service_tier"], "default");
    assert_eq!(serde_json::to_string(&echo).unwrap(), text);
    let partial: Echo =
        serde_json::from_str(r#"{"tool_choice":"auto","reasoning":{"effort":"low"}}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&partial).unwrap(),
        r#"{"reasoning":{"effort":"low"},"tool_choice":"auto"}"#
    );
    // Instructions as items (a prompt template's) read too.
    let items: Echo =
        serde_json::from_value(json!({"instructions": [{"role": "developer", "content": "x"}]})).unwrap();
    assert!(matches!(items.instructions, Some(Some(Input::Items(_)))));
    let e = serde_path_to_error::deserialize::<_, Echo>(json!({"tool_choice": {"type": "mcp"}})).unwrap_err();
    assert!(e.to_string().starts_with("tool_choice") && e.to_string().contains("server_label"), "{e}");
}

fn error_of(body: Value) -> String {
    let e = serde_path_to_error::deserialize::<_, ResponsesRequest>(body).unwrap_err();
    format!("{}: {}", e.path(), e.inner())
}

#[test]
fn a_wrong_field_fails_with_its_path_and_name() {
    let e =
        error_of(json!({"model": "m", "input": [{"type": "function_call", "name": "a", "arguments": "{}"}]}));
    assert!(e.starts_with("input[0]: missing field `call_id`"), "{e}");
    let e = error_of(json!({"model": "m", "input": [{"role": "robot", "content": "x"}]}));
    assert!(e.starts_with("input[0]: unknown variant `robot`"), "{e}");
    let e = error_of(json!({"model": "m", "input": [], "tools": [{"type": "function"}]}));
    assert!(e.starts_with("tools[0]: missing field `name`"), "{e}");
    let e = error_of(json!({"model": "m", "input": [], "max_output_tokens": "many"}));
    assert!(e.starts_with("max_output_tokens: invalid type: string"), "{e}");
}

#[test]
fn stream_events_read_unknown_events_and_fields_and_write_the_api_order() {
    let delta = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"sequence_number":4}"#;
    let event: StreamEvent = serde_json::from_str(delta).unwrap();
    assert_eq!(serde_json::to_string(&event).unwrap(), delta, "type first, sequence_number last");
    let StreamEvent::OutputTextDelta(d) = &event else { panic!("{event:?}") };
    assert!(matches!(d.delta, Cow::Borrowed("Hi")), "a delta without escapes is borrowed");
    assert!(matches!(d.item_id, Some(Cow::Borrowed("msg_1"))), "so is an optional id");
    // A field the API added later, and an event it added later, read without failing.
    let extra = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"a","obfuscation":"x7","sequence_number":5}"#;
    let StreamEvent::FunctionCallArgumentsDelta(d) = serde_json::from_str(extra).unwrap() else { panic!() };
    assert_eq!((d.output_index, &*d.delta), (Some(1), "{\"a"));
    let later: StreamEvent =
        serde_json::from_str(r#"{"type":"response.audio.transcript.delta","delta":"x"}"#).unwrap();
    assert_eq!(later, StreamEvent::Unknown);
    assert!(serde_json::from_str::<StreamEvent>(r#"{"delta":"x"}"#).is_err(), "an event states its type");
}

#[test]
fn output_items_keep_reasoning_bytes_and_read_the_rest_typed() {
    // Keys of the reasoning item in an order no struct would write.
    let reasoning = r#"{"id":"rs_1","type":"reasoning","encrypted_content":"gAAA","summary":[{"type":"summary_text","text":"plan"}]}"#;
    let done = format!(
        r#"{{"type":"response.output_item.done","output_index":0,"item":{reasoning},"sequence_number":3}}"#
    );
    let StreamEvent::OutputItemDone(e) = serde_json::from_str(&done).unwrap() else { panic!() };
    let OutputItem::Reasoning(r) = &e.item else { panic!("{:?}", e.item) };
    assert_eq!(serde_json::to_string(r).unwrap(), reasoning, "the bytes the API sent");
    assert_eq!((r.id(), r.encrypted_content()), (Some("rs_1"), Some("gAAA")));
    assert_eq!(r.summary_texts().collect::<Vec<_>>(), ["plan"]);
    let call: OutputItem =
        serde_json::from_value(json!({"id": "fc_1", "type": "function_call", "status": "completed",
        "arguments": "{}", "call_id": "call_1", "name": "a", "added_later": true}))
        .unwrap();
    assert!(
        matches!(&call, OutputItem::FunctionCall(c) if c.call_id == "call_1" && c.id.as_deref() == Some("fc_1"))
    );
    let hosted: OutputItem =
        serde_json::from_value(json!({"type": "web_search_call", "id": "ws_1"})).unwrap();
    assert_eq!((hosted.kind(), hosted.id()), ("web_search_call", Some("ws_1")));
}

#[test]
fn a_terminal_response_carries_usage_errors_and_echoed_parameters() {
    let completed = json!({"type": "response.completed", "response": {
        "id": "resp_1", "object": "response", "created_at": 1, "status": "incomplete", "error": null,
        "incomplete_details": {"reason": "max_output_tokens"}, "model": "gpt-5", "output": [],
        "tool_choice": "auto", "store": false,
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3,
                  "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 13}},
        "sequence_number": 9});
    let text = completed.to_string();
    let event: StreamEvent = serde_json::from_str(&text).unwrap();
    let StreamEvent::Completed(e) = &event else { panic!("{event:?}") };
    let usage = e.response.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.input_tokens_details.unwrap().cached_tokens), (10, 4));
    assert_eq!(e.response.incomplete_details.as_ref().unwrap().reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(e.response.echo.tool_choice, Some(ToolChoice::Mode(ToolChoiceMode::Auto)));
    assert_eq!(e.response.echo.store, Some(false));
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        completed,
        "written back whole, echo between output and usage"
    );
    let top: StreamEvent = serde_json::from_str(
        r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
    )
    .unwrap();
    let nested: StreamEvent = serde_json::from_str(
        r#"{"type":"error","error":{"type":"invalid_request_error","code":"bad","message":"no"}}"#,
    )
    .unwrap();
    let (StreamEvent::Error(top), StreamEvent::Error(nested)) = (top, nested) else { panic!() };
    assert_eq!(top.error().code.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(
        (nested.error().code.as_deref(), nested.error().kind.as_deref()),
        (Some("bad"), Some("invalid_request_error"))
    );
}

#[test]
fn every_named_event_knows_its_type_and_takes_its_sequence_number() {
    let kinds = [
        ("response.created", json!({"response": {}})),
        ("response.in_progress", json!({"response": {}})),
        ("response.completed", json!({"response": {}})),
        ("response.incomplete", json!({"response": {}})),
        ("response.failed", json!({"response": {}})),
        ("response.output_item.added", json!({"item": {"type": "reasoning", "summary": []}})),
        ("response.output_item.done", json!({"item": {"type": "reasoning", "summary": []}})),
        ("response.content_part.added", json!({"part": {"type": "output_text", "text": ""}})),
        ("response.content_part.done", json!({"part": {"type": "output_text", "text": ""}})),
        ("response.output_text.delta", json!({"delta": "a"})),
        ("response.output_text.done", json!({"text": "a"})),
        ("response.refusal.delta", json!({"delta": "a"})),
        ("response.refusal.done", json!({"refusal": "a"})),
        ("response.function_call_arguments.delta", json!({"delta": "{"})),
        ("response.function_call_arguments.done", json!({"arguments": "{}"})),
        ("response.reasoning_summary_part.added", json!({"part": {"type": "summary_text", "text": ""}})),
        ("response.reasoning_summary_part.done", json!({"part": {"type": "summary_text", "text": ""}})),
        ("response.reasoning_summary_text.delta", json!({"delta": "a"})),
        ("response.reasoning_summary_text.done", json!({"text": "a"})),
        ("response.reasoning_text.delta", json!({"delta": "a"})),
        ("response.reasoning_text.done", json!({"text": "a"})),
        ("error", json!({"code": "server_error", "message": "m", "param": null})),
    ];
    for (kind, mut body) in kinds {
        body["type"] = json!(kind);
        let text = body.to_string();
        let mut event: StreamEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(event.kind(), Some(kind));
        event.set_sequence_number(9);
        let written = serde_json::to_value(&event).unwrap();
        assert_eq!(
            (written["type"].as_str(), written["sequence_number"].as_u64()),
            (Some(kind), Some(9)),
            "{kind}"
        );
    }
    let unknown: StreamEvent = serde_json::from_str(r#"{"type": "response.audio.delta"}"#).unwrap();
    assert_eq!(unknown.kind(), None);
}

#[test]
fn an_output_message_writes_its_parts_as_the_api_does() {
    let item =
        OutputItem::Message(MessageItem::assistant("msg_1", vec![Part::output_text("Hi")], "completed"));
    assert_eq!(
        serde_json::to_string(&item).unwrap(),
        r#"{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]}],"status":"completed"}"#
    );
}

/// A `response.completed` event as the real API writes it (every echoed parameter, fields this
/// module does not name, a hosted tool and a structured-output format): it reads, and the echo
/// is written back with the same values.
#[test]
fn a_real_response_objects_echo_reads() {
    let completed = json!({"type": "response.completed", "sequence_number": 12, "response": {
        "id": "resp_1", "object": "response", "created_at": 1741476542, "status": "completed",
        "background": false, "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "max_tool_calls": null, "model": "gpt-5-2025-08-07", "output": [],
        "parallel_tool_calls": true, "previous_response_id": null, "prompt_cache_key": null,
        "prompt_cache_retention": null, "reasoning": {"effort": "medium", "summary": null},
        "safety_identifier": null, "service_tier": "default", "store": true, "temperature": 1.0,
        "text": {"format": {"type": "json_schema", "description": null, "name": "answer",
            "schema": {"type": "object"}, "strict": true}, "verbosity": "medium"},
        "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "a"}, {"type": "image_generation"}]},
        "tools": [{"type": "web_search", "filters": null, "search_context_size": "medium", "user_location": {"type": "approximate"}}],
        "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13},
        "user": null, "metadata": {}}});
    let text = completed.to_string();
    let event: StreamEvent = serde_json::from_str(&text).unwrap();
    let StreamEvent::Completed(e) = &event else { panic!("{event:?}") };
    let echo = &e.response.echo;
    assert_eq!(echo.reasoning.as_ref().unwrap().effort, Some(Some("medium".into())));
    assert_eq!(echo.other["service_tier"], "default");
    assert!(matches!(echo.tool_choice, Some(ToolChoice::Object(ToolChoiceObject::AllowedTools { .. }))));
    let mut written = serde_json::to_value(&event).unwrap();
    // `description: null` is the one value not kept (the format's field is optional).
    written["response"]["text"]["format"]["description"] = Value::Null;
    assert_eq!(written, completed);
}
