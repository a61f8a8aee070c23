//! Request serialization: snapshots of every wire format, and byte stability.

use std::sync::Arc;

use serde_json::{Value, json};
use tackle_protocol::{
    AllowedToolsMode, CacheBreakpoint, ContentBlock, Message, ModelRequest, Reasoning, Role, SystemSection,
    ToolChoice, ToolInput, ToolResult, ToolSpec, ToolUse,
};
use tackle_provider::{
    Anthropic, OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig, ProviderKind,
    ReasoningEffort, ReasoningSummary, ResponsesConfig,
};

fn tools() -> Arc<[ToolSpec]> {
    Arc::from(vec![
        ToolSpec::new(
            "read_file",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "Path."}}, "required": ["path"]}),
        ),
        ToolSpec::new(
            "shell",
            "Run a command.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        ),
    ])
}

fn conversation() -> ModelRequest {
    let mut req = ModelRequest::new(
        "model-x",
        vec![
            Message::user("What is in a.txt?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Reasoning(Reasoning {
                        format: "anthropic".into(),
                        text: "think".into(),
                        data: json!({"type": "thinking", "thinking": "think", "signature": "sig"}),
                    }),
                    ContentBlock::text("Let me look."),
                    ContentBlock::ToolUse(ToolUse {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        input: json!({"path": "a.txt"}).into(),
                    }),
                    ContentBlock::ToolUse(ToolUse {
                        id: "call_2".into(),
                        name: "shell".into(),
                        input: ToolInput::parse("{\"command\": "),
                    }),
                ],
            },
            Message {
                role: Role::Tool,
                content: vec![
                    ContentBlock::ToolResult(ToolResult::ok("call_1", "hello")),
                    ContentBlock::ToolResult(ToolResult::error(
                        "call_2",
                        r#"{"tool":"shell","category":"invalid_args","retryable":false,"message":"arguments are not JSON"}"#,
                    )),
                ],
            },
            Message::user("[note] Active tools: read_file."),
        ],
    );
    req.system = vec![
        SystemSection::cacheable("base", "You are Tackle."),
        SystemSection::cacheable("agents", "Project rules."),
        SystemSection::dynamic("clock", "It is noon."),
    ];
    req.tools = tools();
    req.tool_choice = ToolChoice::Allowed { tools: vec!["read_file".into()], mode: AllowedToolsMode::Auto };
    req.parallel_tool_calls = Some(false);
    req.max_output_tokens = Some(1024);
    req.temperature = Some(0.0);
    req.prompt_cache_key = Some("session-1".into());
    req.cache_breakpoints = vec![CacheBreakpoint::System, CacheBreakpoint::Message { index: 2 }];
    req
}

fn openai(dialect: OpenAiDialect) -> OpenAiChat {
    OpenAiChat::with_dialect(ProviderConfig::new(ProviderKind::Openai), dialect).unwrap()
}

fn anthropic() -> Anthropic {
    Anthropic::new(ProviderConfig::new(ProviderKind::Anthropic)).unwrap()
}

fn responses() -> OpenAiResponses {
    OpenAiResponses::new(ProviderConfig::new(ProviderKind::OpenaiResponses)).unwrap()
}

fn body(p: &dyn Provider, req: &ModelRequest) -> Value {
    serde_json::from_slice(&p.encode(req).unwrap().body).unwrap()
}

#[test]
fn openai_request_snapshot() {
    insta::assert_json_snapshot!("openai_request", body(&openai(OpenAiDialect::OpenAi), &conversation()));
}

#[test]
fn openai_compatible_request_snapshot() {
    insta::assert_json_snapshot!(
        "openai_compatible_request",
        body(&openai(OpenAiDialect::Compatible), &conversation())
    );
}

#[test]
fn anthropic_request_snapshot() {
    insta::assert_json_snapshot!("anthropic_request", body(&anthropic(), &conversation()));
}

/// The same conversation after a Responses model reasoned in it: its reasoning item (with the
/// encrypted content) goes back; one without the content could not (nothing is stored), and
/// another provider's reasoning is not this API's to read.
fn responses_conversation() -> ModelRequest {
    let mut req = conversation();
    let item = |id: &str, blob: Option<&str>| {
        let mut data = json!({"id": id, "type": "reasoning", "summary": [{"type": "summary_text", "text": "Read a.txt."}]});
        if let Some(b) = blob {
            data["encrypted_content"] = json!(b);
        }
        ContentBlock::Reasoning(Reasoning {
            format: "openai-responses".into(),
            text: "Read a.txt.".into(),
            data,
        })
    };
    let messages = Arc::make_mut(&mut req.messages);
    messages[1].content.insert(1, item("rs_kept", Some("gAAAAB-opaque")));
    messages[1].content.insert(2, item("rs_dropped", None));
    req
}

#[test]
fn responses_request_snapshot() {
    let body = body(&responses(), &responses_conversation());
    insta::assert_json_snapshot!("responses_request", body);
    let input = body["input"].as_array().unwrap();
    assert!(input.iter().all(|i| i["id"] != "rs_dropped"), "no encrypted content, no item");
    assert!(!body.to_string().contains("signature"), "Anthropic thinking stays out");
    // Only the cacheable sections are instructions; the dynamic one closes the input.
    assert_eq!(body["instructions"], "You are Tackle.\n\nProject rules.");
    assert_eq!(input.last().unwrap()["role"], "developer");
}

#[test]
fn responses_options_and_strictness() {
    let options = ResponsesConfig {
        store: true,
        reasoning_effort: Some(ReasoningEffort::High),
        reasoning_summary: Some(ReasoningSummary::Auto),
    };
    let client =
        OpenAiResponses::with_options(ProviderConfig::new(ProviderKind::OpenaiResponses), options).unwrap();
    let mut req = responses_conversation();
    req.max_output_tokens = Some(4);
    req.tools = Arc::from(vec![
        ToolSpec::new(
            "closed",
            "Every property required, no others allowed.",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
        ),
        tools()[1].clone(),
    ]);
    req.tool_choice = ToolChoice::Allowed { tools: vec!["closed".into()], mode: AllowedToolsMode::Auto };
    let b = body(&client, &req);
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(b["store"], true);
    assert_eq!(b["max_output_tokens"], 16, "raised to the API's minimum");
    assert_eq!(b["truncation"], "disabled");
    assert_eq!(
        (b["tools"][0]["strict"].clone(), b["tools"][1]["strict"].clone()),
        (json!(true), json!(false))
    );
    // Stored responses can be named by id: the reasoning item without its blob goes back too.
    assert!(b["input"].as_array().unwrap().iter().any(|i| i["id"] == "rs_dropped"));
    let encoded = client.encode(&req).unwrap();
    assert_eq!(encoded.path, "/responses");
    assert_eq!(encoded.cache_order, ["tools", "instructions", "input"]);
}

#[test]
fn equal_input_gives_equal_bytes() {
    let providers: Vec<Box<dyn Provider>> =
        vec![Box::new(openai(OpenAiDialect::OpenAi)), Box::new(responses()), Box::new(anthropic())];
    for p in providers {
        let a = p.encode(&conversation()).unwrap().body;
        let b = p.encode(&conversation()).unwrap().body;
        assert_eq!(a, b, "{}", p.name());
        // The same tool list encodes identically whether or not its rendering was cached.
        let mut req = conversation();
        req.tools = Arc::from(tools().to_vec());
        assert_eq!(p.encode(&req).unwrap().body, a, "{}", p.name());
    }
}

#[test]
fn tool_choice_mappings() {
    let cases = [
        (ToolChoice::Auto, Value::Null, Value::Null, json!({"type": "auto"})),
        (ToolChoice::None, json!("none"), json!("none"), json!({"type": "none"})),
        (ToolChoice::Required, json!("required"), json!("required"), json!({"type": "any"})),
        (
            ToolChoice::Named { name: "shell".into() },
            json!({"type": "function", "function": {"name": "shell"}}),
            json!({"type": "function", "name": "shell"}),
            json!({"type": "tool", "name": "shell"}),
        ),
        (
            ToolChoice::Allowed {
                tools: vec!["read_file".into(), "shell".into()],
                mode: AllowedToolsMode::Required,
            },
            json!({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
                {"type": "function", "function": {"name": "read_file"}}, {"type": "function", "function": {"name": "shell"}}]}}),
            json!({"type": "allowed_tools", "mode": "required", "tools": [
                {"type": "function", "name": "read_file"}, {"type": "function", "name": "shell"}]}),
            json!({"type": "any"}),
        ),
    ];
    for (choice, oa, resp, an) in cases {
        let mut req = conversation();
        req.parallel_tool_calls = None;
        req.tool_choice = choice.clone();
        let o = body(&openai(OpenAiDialect::OpenAi), &req);
        assert_eq!(o.get("tool_choice").cloned().unwrap_or(Value::Null), oa, "{choice:?}");
        let r = body(&responses(), &req);
        assert_eq!(r.get("tool_choice").cloned().unwrap_or(Value::Null), resp, "{choice:?}");
        assert_eq!(body(&anthropic(), &req)["tool_choice"], an, "{choice:?}");
        // The mask never touches the tools: same bytes whatever the choice.
        assert_eq!(r["tools"], body(&responses(), &conversation())["tools"]);
    }
}

#[test]
fn the_last_step_keeps_tools_and_says_none() {
    let mut req = conversation();
    req.tool_choice = ToolChoice::None;
    let o = body(&openai(OpenAiDialect::OpenAi), &req);
    assert_eq!(o["tools"].as_array().unwrap().len(), 2);
    assert_eq!(o["tool_choice"], "none");
    let a = body(&anthropic(), &req);
    assert_eq!(a["tools"].as_array().unwrap().len(), 2);
    assert_eq!(a["tool_choice"], json!({"type": "none"}));
    let r = body(&responses(), &req);
    assert_eq!(r["tools"].as_array().unwrap().len(), 2);
    assert_eq!(r["tool_choice"], "none");
}

#[test]
fn anthropic_honours_at_most_four_breakpoints() {
    let mut req = conversation();
    req.cache_breakpoints = vec![
        CacheBreakpoint::Tools,
        CacheBreakpoint::System,
        CacheBreakpoint::Message { index: 0 },
        CacheBreakpoint::Message { index: 1 },
        CacheBreakpoint::Message { index: 2 },
        CacheBreakpoint::Message { index: 3 },
    ];
    let text = String::from_utf8(anthropic().encode(&req).unwrap().body.to_vec()).unwrap();
    assert_eq!(text.matches("cache_control").count(), 4, "{text}");
}

#[test]
fn requests_without_tools_send_no_tool_fields() {
    let req = ModelRequest::new("m", vec![Message::user("hi")]);
    let o = body(&openai(OpenAiDialect::OpenAi), &req);
    assert!(
        o.get("tools").is_none() && o.get("tool_choice").is_none() && o.get("parallel_tool_calls").is_none()
    );
    assert_eq!(o["stream_options"], json!({"include_usage": true}));
    let a = body(&anthropic(), &req);
    assert!(a.get("tools").is_none() && a.get("tool_choice").is_none());
    assert_eq!(a["max_tokens"], 8192);
    let r = body(&responses(), &req);
    assert!(
        r.get("tools").is_none() && r.get("tool_choice").is_none() && r.get("parallel_tool_calls").is_none()
    );
    assert!(r.get("instructions").is_none() && r.get("reasoning").is_none());
    assert_eq!(
        r["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    );
}

/// Native deferral: deferred definitions are sent with `defer_loading` (the list never changes),
/// the cache marker stays on the last tool loaded up front, a search result loads tools with
/// `tool_reference` blocks, and the request declares the beta it needs.
#[test]
fn anthropic_deferred_tools_and_tool_references() {
    let mut req = ModelRequest::new(
        "model-x",
        vec![
            Message::user("Find the weather tool."),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse(ToolUse {
                    id: "call_1".into(),
                    name: "tool_search".into(),
                    input: json!({"query": "weather"}).into(),
                })],
            },
            Message {
                role: Role::Tool,
                content: vec![ContentBlock::ToolResult(
                    ToolResult::ok("call_1", "Found: weather__forecast")
                        .with_tool_references(vec!["weather__forecast".into()]),
                )],
            },
        ],
    );
    let mut specs = tools().to_vec();
    specs.push(ToolSpec::new("tool_search", "Search deferred tools.", json!({"type": "object"})));
    specs.push(ToolSpec::new("weather__forecast", "Forecast.", json!({"type": "object"})).deferred());
    req.tools = Arc::from(specs);
    req.cache_breakpoints = vec![CacheBreakpoint::Tools];
    let encoded = anthropic().encode(&req).unwrap();
    assert_eq!(encoded.betas, [tackle_provider::DEFERRED_TOOLS_BETA]);
    let body: Value = serde_json::from_slice(&encoded.body).unwrap();
    insta::assert_json_snapshot!("anthropic_deferred_tools", body);
    assert_eq!(body["tools"][2]["cache_control"], json!({"type": "ephemeral"}));
    assert!(body["tools"][3].get("cache_control").is_none());

    // Without deferred tools nothing changes: no beta, references are plain text elsewhere.
    assert!(anthropic().encode(&conversation()).unwrap().betas.is_empty());
    let openai_body = body_of_openai(&req);
    assert!(!openai_body.contains("defer_loading") && !openai_body.contains("tool_reference"));
    assert!(openai_body.contains("Found: weather__forecast"));
}

fn body_of_openai(req: &ModelRequest) -> String {
    String::from_utf8(openai(OpenAiDialect::OpenAi).encode(req).unwrap().body.to_vec()).unwrap()
}
