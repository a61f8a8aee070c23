//! Every message Tackle sends validates against the schema the pinned binary generated, and
//! messages the binary really sent (captured from 0.169.0) parse.

use serde_json::{Value, json};

use super::*;

const SCHEMA: &str = include_str!("../schema/app-server.schema.json");

/// Validates `value` against `#/definitions/{name}` of the committed schema.
pub(crate) fn check(name: &str, value: &impl Serialize) {
    let mut schema: Value = serde_json::from_str(SCHEMA).unwrap();
    schema["$ref"] = json!(format!("#/definitions/{name}"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let value = serde_json::to_value(value).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{name} does not match the schema: {errors:?}\n{value:#}");
}

/// The schema rejects what it should (the check above is not vacuous).
#[test]
fn the_schema_check_catches_a_wrong_message() {
    let mut schema: Value = serde_json::from_str(SCHEMA).unwrap();
    schema["$ref"] = json!("#/definitions/TurnStartParams");
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&json!({"threadId": "t"})), "input is required");
    assert!(!validator.is_valid(&json!({"threadId": "t", "input": [{"type": "txt", "text": "x"}]})));
    assert!(validator.is_valid(&json!({"threadId": "t", "input": []})));
}

#[test]
fn outgoing_messages_match_the_generated_schema() {
    check(
        "InitializeParams",
        &InitializeParams {
            client_info: ClientInfo {
                name: "tackle".into(),
                title: Some("Tackle".into()),
                version: "0.1.0".into(),
            },
            capabilities: InitializeCapabilities { experimental_api: true },
        },
    );
    let mut config = serde_json::Map::new();
    config.insert("features".into(), json!({"shell_tool": false}));
    check(
        "ThreadStartParams",
        &ThreadStartParams {
            cwd: Some("/w".into()),
            model: Some("gpt-5".into()),
            base_instructions: Some("You are Tackle.".into()),
            dynamic_tools: vec![DynamicToolSpec::Function {
                name: "read_file".into(),
                description: "Read a file.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            ephemeral: Some(false),
            experimental_raw_events: true,
            approval_policy: Some("never".into()),
            sandbox: Some("read-only".into()),
            config: Some(config.clone()),
        },
    );
    check(
        "ThreadResumeParams",
        &ThreadResumeParams {
            thread_id: "t".into(),
            cwd: Some("/w".into()),
            model: None,
            base_instructions: Some("b".into()),
            approval_policy: Some("on-request".into()),
            sandbox: Some("workspace-write".into()),
            config: Some(config),
        },
    );
    check("TurnStartParams", &TurnStartParams { thread_id: "t".into(), input: vec![UserInput::text("hi")] });
    check(
        "TurnSteerParams",
        &TurnSteerParams {
            thread_id: "t".into(),
            expected_turn_id: "u".into(),
            input: vec![UserInput::text("x")],
        },
    );
    check("TurnInterruptParams", &TurnInterruptParams { thread_id: "t".into(), turn_id: "u".into() });
    check(
        "ThreadInjectItemsParams",
        &ThreadInjectItemsParams {
            thread_id: "t".into(),
            items: vec![
                serde_json::from_value(
                    json!({"type": "function_call_output", "call_id": "c", "output": "ok"}),
                )
                .unwrap(),
            ],
        },
    );
    check("DynamicToolCallResponse", &DynamicToolCallResponse::text("result", true));
    check(
        "DynamicToolCallResponse",
        &DynamicToolCallResponse {
            content_items: vec![ContentItem::InputImage { image_url: "data:image/png;base64,AA==".into() }],
            success: false,
        },
    );
}

/// Lines the 0.169.0 binary wrote (ids shortened).
#[test]
fn messages_captured_from_the_binary_parse() {
    let call: DynamicToolCallParams = serde_json::from_value(json!({"threadId": "th", "turnId": "tu",
        "callId": "call-dyn-1", "namespace": null, "tool": "lookup_ticket", "arguments": {"id": "ABC-123"}}))
    .unwrap();
    assert_eq!(call.call_id, CallId::from("call-dyn-1"));
    assert_eq!(call.arguments["id"], "ABC-123");

    let usage: TokenUsageUpdated = serde_json::from_value(json!({"threadId": "th", "turnId": "tu",
        "tokenUsage": {"total": {"totalTokens": 315, "inputTokens": 300, "cachedInputTokens": 140,
        "cacheWriteInputTokens": 0, "outputTokens": 15, "reasoningOutputTokens": 0},
        "last": {"totalTokens": 205, "inputTokens": 200, "cachedInputTokens": 100, "cacheWriteInputTokens": 0,
        "outputTokens": 5, "reasoningOutputTokens": 0}, "modelContextWindow": 258400}}))
    .unwrap();
    let last: tackle_protocol::Usage = usage.token_usage.last.into();
    assert_eq!((last.input_tokens, last.cache_read_tokens, last.output_tokens), (200, 100, 5));

    let done = json!({"threadId": "th", "turn": {"id": "tu", "items": [], "itemsView": "summary",
        "status": "failed", "error": {"message": "Quota exceeded", "codexErrorInfo": {"httpConnectionFailed":
        {"httpStatusCode": 429}}}}});
    let turn: TurnStartResult = serde_json::from_value(done.clone()).unwrap();
    assert_eq!(turn.turn.status, "failed");
    assert_eq!(turn.turn.error.unwrap().kind().as_deref(), Some("httpConnectionFailed"));
    assert_eq!(turn_of(&done), Some(TurnId::from("tu")));
    assert_eq!(thread_of(&done), Some(ThreadId::from("th")));
}

#[test]
fn thread_items_read_typed_and_any_other_item_is_unknown() {
    // Shapes from codex app-server 0.169.0 (research transcript.jsonl).
    let dynamic = json!({"type": "dynamicToolCall", "id": "call-dyn-1", "namespace": null, "tool": "lookup_ticket",
        "arguments": {"id": "ABC-123"}, "status": "completed", "contentItems": [{"type": "inputText", "text": "open"}],
        "success": true, "durationMs": 22, "startedAtMs": 1, "completedAtMs": 2});
    assert_eq!(
        ThreadItem::read(&dynamic),
        ThreadItem::DynamicToolCall { id: Some("call-dyn-1".into()), status: Some("completed".into()) }
    );
    let message = json!({"type": "agentMessage", "moderation": null, "id": "msg-3", "text": "All done.", "phase": null});
    assert_eq!(
        ThreadItem::read(&message),
        ThreadItem::AgentMessage { id: Some("msg-3".into()), text: Some("All done.".into()) }
    );
    for other in [
        json!({"type": "contextCompaction", "id": "01a2", "startedAtMs": 1}),
        json!({"type": "userMessage", "id": "u", "content": [{"type": "text", "text": "hi"}]}),
        json!({"type": "somethingNew", "x": [1, 2]}),
        json!({"type": "agentMessage", "text": 7}),
        json!({"no_type": true}),
        json!(null),
    ] {
        assert_eq!(ThreadItem::read(&other), ThreadItem::Unknown, "{other}");
    }
    // A resumed turn with items of every kind reads whole.
    let turn: Turn = serde_json::from_value(json!({"id": "t", "status": "completed",
        "items": [message, {"type": "agentMessage", "text": 7}, {"type": "reasoning"}, dynamic]}))
    .unwrap();
    assert_eq!(turn.items.len(), 4);
    assert_eq!(turn.items[1], ThreadItem::Unknown);
}
