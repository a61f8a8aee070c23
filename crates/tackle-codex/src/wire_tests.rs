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

/// Two wire transcripts of the 0.169.0 binary (a dynamic tool call, and a thread of two turns),
/// as recorded (`/work/shared/research/codex-app-server/transcript{,2}.jsonl`: `->` lines are
/// the client's, `<-` lines the server's).
const TRANSCRIPTS: [&str; 2] = [
    include_str!("../tests/data/app_server_0.169.0_tool_call.jsonl"),
    include_str!("../tests/data/app_server_0.169.0_two_turns.jsonl"),
];

/// Every notification the binary sent reads: those Tackle reads typed, with the fields it uses,
/// every other method as `Other`; each known one also matches the schema's definition.
#[test]
fn recorded_notifications_read_typed() {
    let (mut seen, mut others) = (std::collections::BTreeMap::<String, usize>::new(), Vec::new());
    for transcript in TRANSCRIPTS {
        let mut turns = Vec::new();
        for line in transcript.lines().filter_map(|l| l.strip_prefix("<- ")) {
            let message: Value = serde_json::from_str(line).unwrap();
            let (Some(method), None) = (message["method"].as_str(), message.get("id")) else { continue };
            let params = message["params"].clone();
            let read = Notification::read(method, params.clone()).unwrap_or_else(|e| panic!("{e}: {line}"));
            match &read {
                Notification::TurnStarted(n) => turns.push(n.turn.id.clone()),
                Notification::TurnCompleted(n) => {
                    assert_eq!(turns.last(), Some(&n.turn.id), "completes the turn that started");
                    assert_eq!(n.turn.status, "completed");
                }
                Notification::ItemCompleted(n) => {
                    assert_eq!(turns.last(), Some(&n.turn_id));
                    if params["item"]["type"] == "agentMessage" {
                        let ThreadItem::AgentMessage { text, .. } = &n.item else { panic!("{:?}", n.item) };
                        assert_eq!(text.as_deref(), params["item"]["text"].as_str());
                    }
                }
                Notification::TokenUsage(n) => {
                    assert_eq!(turns.last(), Some(&n.turn_id));
                    assert_eq!(
                        u64::try_from(n.token_usage.last.input_tokens).unwrap(),
                        params["tokenUsage"]["last"]["inputTokens"].as_u64().unwrap()
                    );
                }
                Notification::Warning(n) => assert_eq!(n.message, params["message"].as_str().unwrap()),
                Notification::Other => {
                    others.push(method.to_owned());
                    continue;
                }
                other => panic!("not in the transcripts: {other:?}"),
            }
            let name = match method {
                method::TURN_STARTED => "TurnStartedNotification",
                method::TURN_COMPLETED => "TurnCompletedNotification",
                method::ITEM_COMPLETED => "ItemCompletedNotification",
                method::TOKEN_USAGE => "ThreadTokenUsageUpdatedNotification",
                _ => "WarningNotification",
            };
            check(name, &params);
            *seen.entry(method.to_owned()).or_default() += 1;
        }
    }
    for method in [
        method::TURN_STARTED,
        method::TURN_COMPLETED,
        method::ITEM_COMPLETED,
        method::TOKEN_USAGE,
        method::WARNING,
    ] {
        assert!(seen.get(method).is_some_and(|n| *n > 0), "{method} is in the transcripts: {seen:?}");
    }
    assert!(others.iter().any(|m| m == "thread/status/changed"), "{others:?}");
    assert!(others.iter().any(|m| m == "account/rateLimits/updated"), "{others:?}");
}

/// The notifications no transcript holds (deltas, raw events, errors), in the schema's shapes;
/// a known method whose params do not fit fails naming the field; an unknown method is `Other`.
#[test]
fn notifications_read_typed_and_a_misfit_names_its_field() {
    let delta = Notification::read(
        method::AGENT_MESSAGE_DELTA,
        json!({"threadId": "th", "turnId": "tu", "itemId": "m", "delta": "Hi"}),
    )
    .unwrap();
    let Notification::AgentMessageDelta(d) = &delta else { panic!("{delta:?}") };
    assert_eq!((d.item_id.as_str(), d.delta.as_str()), ("m", "Hi"));
    assert_eq!(delta.turn(), Some(&TurnId::from("tu")));
    let raw = Notification::read(
        method::RAW_ITEM_COMPLETED,
        json!({"threadId": "th", "turnId": "tu", "item": {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"}}),
    )
    .unwrap();
    let Notification::RawItemCompleted(raw) = raw else { panic!("{raw:?}") };
    assert!(
        matches!(raw.item, Ok(tackle_wire::responses::OutputItem::FunctionCall(ref c)) if c.call_id == "c1")
    );
    // A raw item that does not read is kept as its reason: the event still counts.
    let raw = Notification::read(
        method::RAW_ITEM_COMPLETED,
        json!({"threadId": "th", "turnId": "tu", "item": {"type": "function_call", "name": "a"}}),
    )
    .unwrap();
    let Notification::RawItemCompleted(raw) = raw else { panic!("{raw:?}") };
    assert!(raw.item.unwrap_err().contains("call_id"));
    let done = Notification::read(
        method::RAW_RESPONSE_COMPLETED,
        json!({"threadId": "th", "turnId": "tu", "responseId": "r", "usage": {"inputTokens": 10, "outputTokens": 2}}),
    )
    .unwrap();
    let Notification::RawResponseCompleted(done) = done else { panic!("{done:?}") };
    assert_eq!(done.usage.map(|u| u.input_tokens), Some(10));
    let error = Notification::read(
        method::ERROR,
        json!({"threadId": "th", "turnId": "tu", "willRetry": true,
            "error": {"message": "Reconnecting... 1/5", "additionalDetails": "Connection failed", "codexErrorInfo": null}}),
    )
    .unwrap();
    let Notification::Error(error) = error else { panic!("{error:?}") };
    assert!(error.will_retry);
    assert_eq!(error.error.additional_details.as_deref(), Some("Connection failed"));
    for (method, params) in [
        (
            method::AGENT_MESSAGE_DELTA,
            json!({"threadId": "th", "turnId": "tu", "itemId": "m", "delta": "Hi"}),
        ),
        (
            method::REASONING_SUMMARY_DELTA,
            json!({"threadId": "th", "turnId": "tu", "itemId": "r", "delta": "x", "summaryIndex": 0}),
        ),
        (
            method::REASONING_TEXT_DELTA,
            json!({"threadId": "th", "turnId": "tu", "itemId": "r", "delta": "x", "contentIndex": 0}),
        ),
        (
            method::RAW_RESPONSE_COMPLETED,
            json!({"threadId": "th", "turnId": "tu", "responseId": "r", "usage": null}),
        ),
    ] {
        Notification::read(method, params.clone()).unwrap();
        let name = match method {
            method::AGENT_MESSAGE_DELTA => "AgentMessageDeltaNotification",
            method::REASONING_SUMMARY_DELTA => "ReasoningSummaryTextDeltaNotification",
            method::REASONING_TEXT_DELTA => "ReasoningTextDeltaNotification",
            _ => "RawResponseCompletedNotification",
        };
        check(name, &params);
    }

    for (method, params, path, message) in [
        (
            method::AGENT_MESSAGE_DELTA,
            json!({"threadId": "th", "turnId": "tu", "itemId": "m", "delta": 5}),
            "delta",
            "invalid type: integer `5`",
        ),
        (
            method::AGENT_MESSAGE_DELTA,
            json!({"threadId": "th", "itemId": "m", "delta": "x"}),
            ".",
            "missing field `turnId`",
        ),
        (
            method::TURN_COMPLETED,
            json!({"threadId": "th", "turn": {"status": "completed"}}),
            "turn",
            "missing field `id`",
        ),
        (
            method::TURN_COMPLETED,
            json!({"threadId": "th", "turn": {"id": 7}}),
            "turn.id",
            "invalid type: integer `7`",
        ),
        (
            method::ERROR,
            json!({"threadId": "th", "turnId": "tu", "error": {"message": "x"}}),
            ".",
            "missing field `willRetry`",
        ),
        (
            method::ERROR,
            json!({"threadId": "th", "turnId": "tu", "willRetry": "yes", "error": {"message": "x"}}),
            "willRetry",
            "invalid type: string",
        ),
        (
            method::TOKEN_USAGE,
            json!({"threadId": "th", "turnId": "tu", "tokenUsage": {"last": {}, "total": {"inputTokens": "many"}}}),
            "tokenUsage.total.inputTokens",
            "invalid type: string",
        ),
        (
            method::RAW_RESPONSE_COMPLETED,
            json!({"threadId": "th", "turnId": "tu", "usage": "lots"}),
            "usage",
            "invalid type: string",
        ),
        (method::WARNING, json!({"threadId": "th"}), ".", "missing field `message`"),
    ] {
        let e = Notification::read(method, params).unwrap_err();
        assert_eq!((e.method.as_str(), e.path.as_str()), (method, path), "{e}");
        assert!(e.message.starts_with(message), "{e}");
        assert!(e.to_string().contains(method) && e.to_string().contains(path), "{e}");
    }
    // Methods Tackle does not read, whatever their params.
    for method in ["item/started", "thread/status/changed", "item/somethingNew"] {
        assert!(matches!(Notification::read(method, json!(5)), Ok(Notification::Other)));
    }
}
