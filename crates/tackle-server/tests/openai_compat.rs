//! The OpenAI-compatible endpoint: gateway and agent modes, streaming and not, through the
//! router and driven by the official `openai` Python SDK (installed by scripts/test-deps.sh).

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, missing_peer, parse_sse, run_peer_script, tokens, venv_python};
use serde_json::{Value, json};
use tackle_testkit::{Script, ScriptMode, Turn};

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
    for (body, param) in [
        (json!({"model": "m", "messages": []}), "messages"),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "bad name"}}]}),
            "tools[0].function.name",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            "tool_choice",
        ),
        (json!({"messages": []}), "."),
    ] {
        let (status, error) = h.call(Method::POST, "/v1/chat/completions", None, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
        if param != "." {
            assert_eq!(error["error"]["param"], param, "{error}");
        }
    }
    // A provider failure is a 502 in the same shape (the fake has no turns left).
    let (status, error) = h
        .call(
            Method::POST,
            "/v1/chat/completions",
            None,
            Some(json!({"model": "m", "messages": [{"role": "user", "content": "x"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
    assert_eq!(error["error"]["type"], "server_error");
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

#[tokio::test]
async fn the_official_openai_python_sdk_works_against_the_endpoint() {
    let Some(python) = venv_python() else { return missing_peer("the openai Python SDK") };
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
