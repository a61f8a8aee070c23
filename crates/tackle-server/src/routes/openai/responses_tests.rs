use serde_json::json;

use super::*;

fn conversation(input: Value, agent: bool) -> Result<Input, ApiError> {
    read_input(&input, agent)
}

#[test]
fn input_items_become_the_conversation() {
    let input = conversation(
        json!([
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Call it."}], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": ""},
            {"type": "function_call_output", "call_id": "c1", "output": "rain"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "noon"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Rain at noon."}]},
            {"role": "user", "content": "thanks"},
        ]),
        false,
    )
    .unwrap();
    assert_eq!(input.system.len(), 1);
    let roles: Vec<Role> = input.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::User]);
    assert_eq!(input.starts, [1, 2, 5, 7, 8]);
    let ContentBlock::Reasoning(r) = &input.messages[1].content[0] else { panic!() };
    assert_eq!((r.format.as_str(), r.text.as_str()), ("openai-responses", "Call it."));
    assert_eq!(r.data["encrypted_content"], "gAAA", "kept whole");
    assert_eq!(input.messages[1].tool_uses().count(), 2);
    assert_eq!(
        input.messages[2].tool_results_iter().map(|r| r.content.as_str()).collect::<Vec<_>>(),
        ["rain", "noon"]
    );
    check_calls(&input.messages, |i| format!("input[{}]", input.starts[i])).unwrap();
    assert_eq!(conversation(json!("hi"), true).unwrap().messages, [Message::user("hi")]);
}

#[test]
fn bad_input_names_the_item() {
    let field = |input: Value, agent: bool| conversation(input, agent).unwrap_err().field.unwrap();
    assert_eq!(field(json!(""), false), "input");
    assert_eq!(field(json!(42), false), "input");
    assert_eq!(field(json!([{"role": "robot", "content": "x"}]), false), "input[0].role");
    assert_eq!(
        field(json!([{"role": "user", "content": [{"type": "input_image"}]}]), false),
        "input[0].content[0]"
    );
    assert_eq!(field(json!([{"type": "function_call", "name": "a"}]), false), "input[0].call_id");
    assert_eq!(field(json!([{"type": "item_reference", "id": "msg_1"}]), false), "input[0].type");
    assert_eq!(field(json!([{"type": "web_search_call"}]), false), "input[0].type");
    assert_eq!(field(json!([{"content": "no type"}]), false), "input[0].type");
    let output = json!([{"role": "user", "content": "x"}, {"type": "function_call_output", "call_id": "c", "output": "o"}]);
    assert_eq!(field(output, true), "input[1].type", "the agent runs its own tools");

    let calls = |items: Value| {
        let input = conversation(items, false).unwrap();
        check_calls(&input.messages, |i| format!("input[{}]", input.starts[i])).unwrap_err()
    };
    let orphan = calls(
        json!([{"role": "user", "content": "x"}, {"type": "function_call_output", "call_id": "c9", "output": "o"}]),
    );
    assert_eq!(orphan.field.as_deref(), Some("input[1]"));
    assert!(orphan.message.contains("c9"));
    let open = calls(
        json!([{"role": "user", "content": "x"}, {"type": "function_call", "call_id": "c1", "name": "a"},
        {"role": "user", "content": "next"}]),
    );
    assert_eq!(open.field.as_deref(), Some("input[2]"));
    let unanswered = calls(
        json!([{"role": "user", "content": "x"}, {"type": "function_call", "call_id": "c1", "name": "a"}]),
    );
    assert!(unanswered.message.contains("\"c1\""), "{}", unanswered.message);
}

#[test]
fn output_items_keep_the_order_and_the_api_reasoning_verbatim() {
    let api = json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"});
    let content = vec![
        ContentBlock::Reasoning(Reasoning {
            format: "openai-responses".into(),
            text: String::new(),
            data: api.clone(),
        }),
        ContentBlock::Reasoning(Reasoning {
            format: "anthropic".into(),
            text: "thinking".into(),
            data: json!({"signature": "s"}),
        }),
        ContentBlock::text("Let me "),
        ContentBlock::text("check."),
        ContentBlock::ToolUse(ToolUse {
            id: "c1".into(),
            name: "get_weather".into(),
            input: ToolInput::parse("{\"city\":\"Oslo\"}"),
        }),
    ];
    let items: Vec<Value> =
        output_items(&content, "completed").iter().map(|i| serde_json::to_value(i).unwrap()).collect();
    assert_eq!(items[0], api);
    assert_eq!(items[1]["summary"][0]["text"], "thinking");
    assert!(items[1].get("signature").is_none() && items[1].get("encrypted_content").is_none());
    assert_eq!(items[2]["content"][0]["text"], "Let me check.");
    assert_eq!(
        (items[3]["call_id"].as_str(), items[3]["arguments"].as_str()),
        (Some("c1"), Some("{\"city\":\"Oslo\"}"))
    );
    assert!(items[3]["id"].as_str().unwrap().starts_with("fc_"));
}

/// The SSE bytes a client receives from the writer.
async fn sse_text(request: Value, f: impl FnOnce(&mut EventWriter), end: End) -> String {
    use http_body_util::BodyExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let request: ResponsesRequest = serde_json::from_value(request).unwrap();
    let mut w = EventWriter::new(tx, Header::new(&request, "ann"));
    f(&mut w);
    w.end(&end, Some(&Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() }));
    let body = Sse::new(UnboundedReceiverStream::new(rx)).into_response().into_body();
    let bytes = body.collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Events as the writer sends them, read back from the SSE bytes a client receives.
async fn written(f: impl FnOnce(&mut EventWriter)) -> Vec<Value> {
    let text = sse_text(json!({"model": "m", "input": "hi"}), f, End::Completed).await;
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let name = frame.lines().find_map(|l| l.strip_prefix("event: ")).unwrap();
            let data: Value =
                serde_json::from_str(frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap();
            assert_eq!(data["type"], name, "the event is named after its type");
            data
        })
        .collect()
}

fn call(id: &str, args: &str) -> ToolUse {
    ToolUse { id: id.into(), name: "t".into(), input: ToolInput::parse(args) }
}

#[tokio::test]
async fn interleaved_calls_stream_one_item_at_a_time() {
    // Chat Completions streams a second call before it closes the first one.
    let events = written(|w| {
        w.text("Hi");
        w.call_start(0, "c0".into(), "t".into());
        w.call_delta(0, "{\"a\":");
        w.call_start(1, "c1".into(), "t".into());
        w.call_delta(1, "{\"b\":2}");
        w.text("late text");
        w.call_delta(0, "1}");
        w.call_end(0, call("c0", "{\"a\":1}"));
        w.call_end(1, call("c1", "{\"b\":2}"));
    })
    .await;
    let seqs: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    // Between an item's `added` and its `done`, only its own events.
    let mut open: Option<u64> = None;
    for e in &events {
        let t = e["type"].as_str().unwrap();
        let index = e["output_index"].as_u64();
        match t {
            "response.output_item.added" => {
                assert_eq!(open, None, "{t} while item {open:?} is open");
                open = index;
            }
            "response.output_item.done" => {
                assert_eq!(open, index);
                open = None;
            }
            _ if index.is_some() => assert_eq!(open, index, "{e}"),
            _ => {}
        }
    }
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    let output = last["response"]["output"].as_array().unwrap();
    let kinds: Vec<&str> = output.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "function_call", "function_call", "message"]);
    assert_eq!(output[1]["arguments"], "{\"a\":1}");
    assert_eq!(output[2]["arguments"], "{\"b\":2}");
    assert_eq!(output[3]["content"][0]["text"], "late text");
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 1)
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "{\"a\":1}", "the deltas add up to the arguments");
    assert_eq!(last["response"]["usage"]["total_tokens"], 10);
}

/// `text` with its random ids (`msg_<32 hex>`, ...) and times made fixed.
fn fixed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('_') {
        let (head, tail) = rest.split_at(pos + 1);
        out.push_str(head);
        let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex == 32 && ["msg_", "fc_", "rs_", "resp_"].iter().any(|p| out.ends_with(p)) {
            out.push_str("ID");
            rest = &tail[32..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    let mut fixed = String::new();
    for (i, piece) in out.split("\"created_at\":").enumerate() {
        if i > 0 {
            fixed.push_str("\"created_at\":0");
            fixed.push_str(piece.trim_start_matches(|c: char| c.is_ascii_digit()));
        } else {
            fixed.push_str(piece);
        }
    }
    fixed
}

fn echoing_request() -> Value {
    json!({"model": "m", "input": "hi", "instructions": "be brief", "max_output_tokens": 64,
        "parallel_tool_calls": false, "previous_response_id": "resp_prev", "prompt_cache_key": "k",
        "store": false, "temperature": 0.5, "metadata": {"team": "a"},
        "tool_choice": {"type": "function", "name": "t"},
        "tools": [{"type": "function", "name": "t", "description": "d", "parameters": {"type": "object"}, "strict": false}]})
}

/// The exact bytes a client receives, ids and times fixed: the writer's output is pinned byte
/// for byte (key order included), whatever builds it.
#[tokio::test]
async fn streamed_bytes_are_pinned() {
    let api = json!({"id": "rs_api", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"});
    let text = sse_text(
        echoing_request(),
        |w| {
            w.text("Hi");
            w.call_start(0, "c0".into(), "t".into());
            w.call_delta(0, "{\"a\":1}");
            w.call_end(0, call("c0", "{\"a\":1}"));
            w.reasoning(&Reasoning { format: "anthropic".into(), text: "hmm".into(), data: json!({}) });
            w.reasoning(&Reasoning { format: "openai-responses".into(), text: String::new(), data: api });
            w.call_end(1, call("c1", "{}"));
            w.text("bye");
        },
        End::Incomplete("max_output_tokens"),
    )
    .await;
    insta::assert_snapshot!(fixed(&text));
    let failed = sse_text(
        json!({"model": "m", "input": "hi"}),
        |w| w.text("x"),
        End::Failed("server_error", "boom".into()),
    )
    .await;
    insta::assert_snapshot!("streamed_failure", fixed(&failed));
}

/// A whole response object, as `stream: false` answers it, pinned byte for byte.
#[test]
fn response_object_bytes_are_pinned() {
    let request: ResponsesRequest = serde_json::from_value(echoing_request()).unwrap();
    let header = Header::new(&request, "ann");
    let content = vec![
        ContentBlock::Reasoning(Reasoning {
            format: "anthropic".into(),
            text: "hmm".into(),
            data: json!({}),
        }),
        ContentBlock::text("Let me check."),
        ContentBlock::ToolUse(call("c1", "{\"city\":\"Oslo\"}")),
    ];
    let usage = Usage {
        input_tokens: 7,
        output_tokens: 3,
        cache_read_tokens: 2,
        reasoning_tokens: 1,
        ..Usage::default()
    };
    let end = End::Completed;
    let object = header.object(end.status(), &end, output_items(&content, end.item_status()), Some(&usage));
    insta::assert_snapshot!(fixed(&serde_json::to_string(&object).unwrap()));
    let end = End::Failed("rate_limit_exceeded", "slow down".into());
    let object = header.object(end.status(), &end, Vec::new(), None);
    insta::assert_snapshot!("response_object_failed", fixed(&serde_json::to_string(&object).unwrap()));
}

#[test]
fn typed_items_name_the_field_in_the_apis_words_and_tolerate_what_it_tolerates() {
    let error = |input: Value| conversation(input, false).unwrap_err();
    let e = error(json!([{"role": "user", "content": 42}]));
    assert_eq!(e.field.as_deref(), Some("input[0].content"));
    assert!(
        e.message.starts_with("Invalid type for 'input[0].content': expected a string or a list"),
        "{}",
        e.message
    );
    let e = error(json!([{"role": "user", "content": "x"}, {"type": "function_call_output", "output": "o"}]));
    assert_eq!((e.field.as_deref(), e.code), (Some("input[1].call_id"), "missing_required_parameter"));
    assert_eq!(e.message, "Missing required parameter: 'input[1].call_id'.");
    let e = error(json!([{"type": "message", "role": "tool", "content": "x"}]));
    assert_eq!((e.field.as_deref(), e.code), (Some("input[0].role"), "invalid_value"));
    // Fields the route does not use, and a reasoning item's whole shape, are the API's business.
    let input = conversation(
        json!([{"role": "user", "content": "x", "id": "msg_1", "status": "completed", "future": {"a": 1}},
            {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}], "new": 1},
            {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "a", "arguments": "{}", "status": "completed", "extra": true},
            {"type": "function_call_output", "call_id": "c", "output": "o", "id": "fco_1"}]),
        false,
    )
    .unwrap();
    let ContentBlock::Reasoning(r) = &input.messages[1].content[0] else { panic!() };
    assert_eq!(r.data["new"], 1, "a reasoning item goes back as it came");
    assert_eq!(input.calls_answered, [("c".to_owned(), 3)]);
}
