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
