//! The OpenAI-compatible endpoint: gateway and agent modes, streaming and not, through the
//! router and driven by the official `openai` Python SDK (installed by scripts/test-deps.sh).

use crate::common;

use std::path::PathBuf;

use axum::http::{Method, StatusCode};
use common::{ALICE, BOB, Harness, parse_sse, run_peer_script, tokens};
use serde_json::{Value, json};
use tackle_testkit::{Script, ScriptMode, Turn, peers};

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}])
}

#[tokio::test]
async fn gateway_returns_tool_calls_and_keeps_the_tool_order_stable() {
    let script = Script::new(vec![
        Turn::call("get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("Rainy."),
        Turn::text("Plain."),
    ]);
    let h = Harness::new(script).await;
    let (status, body) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "model-x", "messages": [{"role": "user", "content": "weather?"}], "tools": tools(),
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"Oslo"}"#);

    // The same tools in another order: the provider sees identical tool bytes.
    let mut reversed = tools();
    reversed.as_array_mut().unwrap().reverse();
    let (status, body) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "model-x", "messages": [{"role": "user", "content": "weather?"}], "tools": reversed,
                "tool_choice": "none", "stream": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = body.as_str().unwrap();
    let chunks = parse_sse(text);
    assert_eq!(chunks.last().unwrap().data, "[DONE]");
    let content: String =
        chunks.iter().filter_map(|c| c.data["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(content, "Rainy.");
    let requests = h.fake.requests();
    assert_eq!(requests[0].body["tools"], requests[1].body["tools"], "tool order is frozen");
    assert_eq!(requests[0].body["prompt_cache_key"], requests[1].body["prompt_cache_key"]);
    assert_eq!(requests[0].body["tool_choice"]["function"]["name"], "get_weather");
    assert_eq!(requests[1].body["tool_choice"], "none");

    // Without tools and with a provider model name, the request is forwarded as is.
    let (status, body) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "model-x", "messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Plain.");
}

#[tokio::test]
async fn errors_come_in_openai_shape() {
    let h = Harness::new(Script::new(vec![])).await;
    let user = json!([{"role": "user", "content": "x"}]);
    for (body, param) in [
        (json!({"model": "model-x", "messages": []}), "messages"),
        (
            json!({"model": "model-x", "messages": user, "tools": [{"type": "function", "function": {"name": "bad name"}}]}),
            "tools[0].function.name",
        ),
        (
            json!({"model": "model-x", "messages": user, "tools": tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            "tool_choice",
        ),
        (
            json!({"model": "model-x", "messages": user, "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "sometimes", "tools": []}}}),
            "tool_choice",
        ),
        (json!({"model": "model-x", "messages": user, "tool_choice": "sometimes"}), "tool_choice"),
        (json!({"model": "model-x", "messages": user, "tool_choice": 5}), "tool_choice"),
        (
            json!({"model": "model-x", "messages": user, "tool_choice": {"type": "function", "function": {}}}),
            "tool_choice.name",
        ),
        (
            json!({"model": "model-x", "messages": user, "tool_choice": {"type": "custom", "custom": {"name": "x"}}}),
            "tool_choice",
        ),
        (json!({"model": "model-x", "messages": user, "tool_choice": {"type": "web_search"}}), "tool_choice"),
        (
            json!({"model": "tackle-agent", "messages": user, "tool_choice": {"type": "function", "name": "x"}}),
            "tool_choice",
        ),
        (json!({"model": "model-x", "messages": [{"role": "user", "content": ""}]}), "messages[0].content"),
        (json!({"model": "model-x", "messages": [{"role": "assistant", "content": null}]}), "messages[0]"),
        (
            json!({"model": "model-x", "messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c9", "content": "r"}]}),
            "messages",
        ),
        (
            json!({"model": "model-x", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}]}),
            "messages",
        ),
        (json!({"model": "model-x", "messages": user, "max_tokens": 1.5}), "max_tokens"),
        (json!({"model": "model-x", "messages": user, "stream_options": [1]}), "stream_options"),
        (json!({"model": "tackle-agent", "messages": user, "tools": tools()}), "tools"),
        (json!({"messages": []}), "."),
    ] {
        let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
        if param != "." {
            assert_eq!(error["error"]["param"], param, "{body}: {error}");
        }
    }
    assert!(h.fake.requests().is_empty(), "nothing invalid reached the provider");
    // A provider failure is a 502 in the same shape (the fake has no turns left).
    let (status, error) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "model-x", "messages": [{"role": "user", "content": "x"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
    assert_eq!(error["error"]["type"], "server_error");
    // A method the route does not have: 405 in the same shape, with Allow.
    // Every OpenAI-compatible route, /v1/responses included: the shape is the router's layer.
    for path in ["/v1/chat/completions", "/v1/responses"] {
        let (status, error) = h.call(Method::PUT, path, None, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{path}: {error}");
        assert_eq!(error["error"]["code"], "method_not_allowed", "{path}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{path}: {error}");
    }
    // The sessions API keeps Tackle's own shape (no `type`).
    let (status, error) = h.call(Method::PUT, "/v1/sessions", None, None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{error}");
    assert_eq!(error["error"]["code"], "method_not_allowed", "{error}");
    assert!(error["error"].get("type").is_none(), "{error}");
}

/// The two requests schemathesis once found accepted by the document and refused by the server
/// (issue 32): the document now says they are invalid, and the server answers each with a 400
/// naming the field, never forwarding it.
#[tokio::test]
async fn what_the_document_calls_invalid_the_server_refuses_by_field() {
    let h = Harness::new(Script::new(vec![])).await;
    let null_id = json!({"model": "model-x", "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": null, "content": "r"}]});
    let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(null_id)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "messages[2].tool_call_id", "{error}");
    let (status, error) =
        h.call(Method::POST, "/v1/responses", None, Some(json!({"model": "model-x", "input": [{}]}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "input[0].type", "{error}");
    assert!(h.fake.requests().is_empty(), "nothing invalid reached the provider");

    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let schemas = &doc["components"]["schemas"];
    let messages = schemas["ChatRequest"]["properties"]["messages"]["description"].as_str().unwrap();
    assert!(messages.contains("a tool message needs `tool_call_id`"), "{messages}");
    let items = &schemas["ResponsesRequest"]["properties"]["input"]["oneOf"][1]["items"];
    assert_eq!(items["anyOf"], json!([{"required": ["type"]}, {"required": ["role"]}]), "{items}");
}

/// The gateway forwards only the models the server offers, unless it is configured open.
#[tokio::test]
async fn the_gateway_forwards_only_offered_models_unless_open() {
    let h = Harness::new(Script::stateless(vec![Turn::text("hi")])).await;
    let ask = |model: &str| json!({"model": model, "messages": [{"role": "user", "content": "x"}], "tools": tools()});
    let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(ask("gpt-5-pro"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "model");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tackle-agent, model-x, model-y") && message.contains("[server] models"),
        "{message}"
    );
    assert!(h.fake.requests().is_empty(), "the unknown model was not forwarded");
    for offered in ["model-x", "model-y"] {
        let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(ask(offered))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // The document lists exactly the accepted names.
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(
        doc["components"]["schemas"]["ChatRequest"]["properties"]["model"]["enum"],
        json!(["tackle-agent", "model-x", "model-y"])
    );

    let open = Harness::configured(Script::stateless(vec![Turn::text("hi")]), Vec::new(), |c| {
        c.gateway_any_model = true
    })
    .await;
    let (status, body) = open.call(Method::POST, "/v1/chat/completions", None, Some(ask("gpt-5-pro"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(open.fake.requests()[0].body["model"], "gpt-5-pro");
    let (_, doc) = open.call(Method::GET, "/openapi.json", None, None).await;
    assert!(doc["components"]["schemas"]["ChatRequest"]["properties"]["model"].get("enum").is_none());
}

#[tokio::test]
async fn agent_mode_runs_tackles_own_tools_and_streams_the_answer() {
    let script =
        Script::new(vec![Turn::call("list_files", r#"{"path":"."}"#), Turn::text("One file: notes.md.")]);
    let h = Harness::new(script).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let (status, body) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "tackle-agent", "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"},
                    {"role": "user", "content": "what is here?"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let chunks = parse_sse(body.as_str().unwrap());
    let content: String =
        chunks.iter().filter_map(|c| c.data["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(content, "One file: notes.md.");
    assert!(
        chunks.iter().any(|c| c.data["usage"]["total_tokens"].is_u64()),
        "include_usage adds a usage chunk"
    );
    // The agent really ran its tool, with the earlier exchange as history.
    let requests = h.fake.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].body["messages"].to_string();
    assert!(first.contains("earlier") && first.contains("what is here?"), "{first}");
    assert!(requests[1].body["messages"].to_string().contains("notes.md"));
    let (_, models) = h.call(Method::GET, "/v1/models", None, None).await;
    let ids: Vec<&str> =
        models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["tackle-agent", "model-x", "model-y"]);
}

/// A turn whose steps both say something answers with both, as paragraphs, streaming or not:
/// the two modes agree, and markdown that starts a step starts a line.
#[tokio::test]
async fn agent_mode_answers_every_step_the_same_streaming_or_not() {
    let steps = || {
        [
            Turn::text("Let me look first.").with_call("list_files", r#"{"path":"."}"#),
            Turn::text("## Summary\nOne file."),
        ]
    };
    let script = Script::new(steps().into_iter().chain(steps()).collect());
    let h = Harness::new(script).await;
    let messages = json!([{"role": "user", "content": "what is here?"}]);
    let request = |stream: bool| json!({"model": "tackle-agent", "stream": stream, "messages": messages});
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(request(false))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let whole = body["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    let (status, body) = h.call(Method::POST, "/v1/chat/completions", None, Some(request(true))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let streamed: String = parse_sse(body.as_str().unwrap())
        .iter()
        .filter_map(|c| c.data["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(whole, "Let me look first.\n\n## Summary\nOne file.");
    assert_eq!(streamed, whole);
}

#[tokio::test]
async fn the_official_openai_python_sdk_works_against_the_endpoint() {
    let Some(python) = peers::or_skip(peers::venv_python("openai")) else { return };
    let mut script = Script::stateless(vec![]);
    script.mode = ScriptMode::Sequential;
    script.turns = vec![
        Turn::call("get_weather", r#"{"city":"Oslo"}"#),
        Turn::text("It rains in Oslo."),
        Turn::call("get_weather", r#"{"city":"Bergen"}"#),
        Turn::call("list_files", r#"{"path":"."}"#),
        Turn::text("The workspace has notes.md."),
        Turn::text("Still notes.md."),
    ];
    let h = Harness::with(script, tokens()).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let base = h.listen().await;
    let seen = run_peer_script(&python, "openai_sdk.py", &base).await;
    assert_eq!(seen["models"][0], "tackle-agent");
    assert_eq!(
        seen["gateway_call"],
        json!({"name": "get_weather", "arguments": {"city": "Oslo"}, "finish": "tool_calls"})
    );
    assert_eq!(seen["gateway_stream"]["text"], "It rains in Oslo.");
    assert_eq!(seen["gateway_stream"]["finish"], "stop");
    assert!(seen["gateway_stream"]["usage"].is_u64(), "{seen}");
    assert_eq!(
        seen["gateway_stream_call"]["0"],
        json!({"name": "get_weather", "arguments": {"city": "Bergen"}})
    );
    assert_eq!(seen["agent_stream"], "The workspace has notes.md.");
    assert_eq!(seen["agent"], "Still notes.md.");
    assert_eq!(seen["bad_request"], json!({"type": "BadRequestError", "status": 400}));
    assert_eq!(seen["unauthorized"], json!({"type": "AuthenticationError", "status": 401}));
}

/// Agent mode where nobody can answer approvals: a destructive call is denied at once (the
/// model is told, the client sees it in `tackle.denied_calls`), through the official SDK with a
/// 30 s timeout; nothing ran.
#[tokio::test]
async fn agent_mode_denies_destructive_calls_through_the_official_sdk_without_hanging() {
    let Some(python) = peers::or_skip(peers::venv_python("openai")) else { return };
    let touch = r#"{"command":"touch destroyed.txt"}"#;
    let script = Script::new(vec![
        Turn::call("shell", touch),
        Turn::text("I could not delete it: the call was denied."),
        Turn::call("shell", touch),
        Turn::text("Denied again."),
    ]);
    let h = Harness::with(script, tokens()).await;
    let base = h.listen().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/agent_denial.py");
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(90),
        tokio::process::Command::new(python).arg(script).arg(&base).arg(ALICE).output(),
    )
    .await
    .expect("the SDK script hung")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK script failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    for run in ["plain", "stream"] {
        let tackle = &seen[run]["tackle"];
        assert!(seen[run]["seconds"].as_f64().unwrap() < 30.0, "{seen}");
        assert_eq!(tackle["denied_calls"][0]["tool"], "shell", "{seen}");
        assert!(
            tackle["denied_calls"][0]["message"].as_str().unwrap().contains("approval policy `deny`"),
            "{seen}"
        );
        assert_eq!(tackle["pending_approvals"], json!([]), "{seen}");
        let session = tackle["session_id"].as_str().unwrap();
        let (status, _) = h.call(Method::GET, &format!("/v1/sessions/{session}"), Some(ALICE), None).await;
        assert_eq!(status, StatusCode::OK, "the session is alice's and listed");
    }
    assert_eq!(seen["plain"]["text"], "I could not delete it: the call was denied.");
    assert_eq!(seen["stream"]["text"], "Denied again.");
    assert!(!h.workspace.path().join("destroyed.txt").exists(), "the denied command never ran");
    // The model saw the denial envelope.
    let requests = h.fake.requests();
    assert!(
        requests[1].body["messages"].to_string().contains("approval policy `deny`"),
        "{}",
        requests[1].body
    );
}

/// With `openai_approval = wait`, a client that knows Tackle finds the pending approval under
/// the session named by the `x-tackle-session-id` header, approves it, and the call runs.
#[tokio::test]
async fn agent_mode_with_wait_exposes_the_approval_through_the_sessions_api() {
    let script =
        Script::new(vec![Turn::call("shell", r#"{"command":"touch approved.txt"}"#), Turn::text("Done.")]);
    let h = Harness::configured(script, tokens(), |c| {
        c.openai_approval = tackle_tools::ApprovalPolicy::Wait(std::time::Duration::from_secs(60))
    })
    .await;
    let base = h.listen().await;
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .json(&json!({"model": "tackle-agent", "stream": true, "messages": [{"role": "user", "content": "touch it"}]}))
        .send()
        .await
        .unwrap();
    let session = response.headers()["x-tackle-session-id"].to_str().unwrap().to_owned();
    let approval = loop {
        let (_, list) =
            h.call(Method::GET, &format!("/v1/sessions/{session}/approvals"), Some(ALICE), None).await;
        if let Some(id) = list["approvals"][0]["id"].as_str() {
            assert_eq!(list["approvals"][0]["tool"], "shell");
            break id.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // Another user cannot see or decide it.
    let (status, _) =
        h.call(Method::GET, &format!("/v1/sessions/{session}/approvals"), Some(BOB), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = h
        .call(Method::POST, &format!("/v1/approvals/{approval}"), Some(ALICE), Some(json!({"approve": true})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = response.text().await.unwrap();
    assert!(text.contains("Done.") && text.contains("[DONE]"), "{text}");
    assert!(h.workspace.path().join("approved.txt").exists(), "the approved command ran");
}
