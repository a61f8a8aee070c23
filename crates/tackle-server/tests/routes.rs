//! Every route and its errors, through the router (tower oneshot) and over a socket for SSE.

use crate::common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{ALICE, BOB, Harness, parse_sse, tokens, until};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tackle_testkit::{Script, Turn};
use tower::ServiceExt;

fn listing_script() -> Script {
    Script::new(vec![Turn::call("list_files", r#"{"path":"."}"#), Turn::text("There is one file.")])
}

#[tokio::test]
async fn health_and_unknown_routes() {
    let h = Harness::new(Script::new(vec![])).await;
    let (status, body) = h.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
    let (status, body) = h.call(Method::GET, "/v1/nope", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "not_found");
    let (status, bytes) = h.call_raw(Method::GET, "/", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&bytes).contains("<title>Tackle</title>"));
    // The page, at / and at a session's own URL, runs only its own scripts.
    let response =
        h.app().oneshot(Request::get("/s/some-session").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
    for asset in ["app.js", "markdown.js", "app.css"] {
        let (status, bytes) = h.call_raw(Method::GET, &format!("/web/{asset}"), None, None).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
        assert!(!bytes.is_empty());
    }
    let (status, _) = h.call_raw(Method::GET, "/web/../Cargo.toml", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, bytes) = h.call_raw(Method::GET, "/docs", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&bytes).contains("/openapi.json"));
}

#[tokio::test]
async fn openapi_document_covers_every_route() {
    let h = Harness::new(Script::new(vec![])).await;
    let (status, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let expected = [
        ("get", "/healthz"),
        ("post", "/v1/sessions"),
        ("get", "/v1/sessions"),
        ("get", "/v1/sessions/{id}"),
        ("patch", "/v1/sessions/{id}"),
        ("delete", "/v1/sessions/{id}"),
        ("post", "/v1/sessions/{id}/messages"),
        ("get", "/v1/sessions/{id}/events"),
        ("post", "/v1/sessions/{id}/cancel"),
        ("post", "/v1/sessions/{id}/compact"),
        ("get", "/v1/sessions/{id}/context"),
        ("get", "/v1/sessions/{id}/children"),
        ("get", "/v1/sessions/{id}/turns"),
        ("post", "/v1/sessions/{id}/rewind"),
        ("post", "/v1/sessions/{id}/fork"),
        ("get", "/v1/sessions/{id}/approvals"),
        ("get", "/v1/sessions/{id}/results/{locator}"),
        ("post", "/v1/approvals/{id}"),
        ("get", "/v1/sessions/{id}/elicitations"),
        ("post", "/v1/elicitations/{id}"),
        ("get", "/v1/tools"),
        ("post", "/v1/chat/completions"),
        ("post", "/v1/responses"),
        ("get", "/v1/models"),
        ("get", "/metrics"),
    ];
    let paths = doc["paths"].as_object().unwrap();
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    for (method, path) in expected {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} is not documented");
    }
    assert_eq!(documented, expected.len(), "a route is documented that the test does not know");
    // toolMask is documented with its default and the provider fallbacks.
    let mask = &doc["components"]["schemas"]["SendMessage"]["properties"]["toolMask"];
    let text = mask.to_string();
    assert!(
        text.contains("Omitted") && text.contains("allowed_tools") && text.contains("strategy_fallback"),
        "{text}"
    );
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    // Every $ref resolves.
    let all = doc.to_string();
    for r in all.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = &r[..r.find('"').unwrap()];
        assert!(doc["components"]["schemas"].get(name).is_some(), "dangling $ref {name}");
    }
}

/// Every error has the one JSON shape: bad query strings and paths, unknown methods, and the
/// document states each status and content type the server answers.
#[tokio::test]
async fn every_error_is_json_and_documented() {
    let h = Harness::with(Script::new(vec![]), tokens()).await;
    let id = h.session(Some(ALICE)).await;
    for (path, field) in [
        ("/v1/sessions?limit=-1", "limit"),
        ("/v1/sessions?limit=0", "limit"),
        ("/v1/sessions?limit=501", "limit"),
        ("/v1/sessions?offset=abc", "offset"),
        ("/v1/sessions?offset=9223372036854775808", "offset"),
        (&format!("/v1/sessions/{id}/results/out_x?unit=pages"), "unit"),
        (&format!("/v1/sessions/{id}/results/out_x?limit=0"), "limit"),
        (&format!("/v1/sessions/{id}/results/out_x?offset=-1"), "offset"),
    ] {
        let (status, body) = h.call(Method::GET, path, Some(ALICE), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], "invalid_request", "{path}: {body}");
        assert_eq!(body["error"]["field"], field, "{path}: {body}");
    }
    let (status, body) =
        h.call(Method::GET, "/v1/sessions?offset=9223372036854775807&limit=500", Some(ALICE), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A path segment that is not UTF-8.
    let (status, body) = h.call(Method::GET, "/v1/sessions/%FF%FE", Some(ALICE), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "invalid_request");
    // 405 with a body and Allow.
    let response = h
        .app()
        .oneshot(
            axum::http::Request::builder()
                .method(Method::PUT)
                .uri("/v1/sessions")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert!(response.headers()["allow"].to_str().unwrap().contains("POST"));
    let body: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
    // A blank message, in the characters Python and JavaScript count as whitespace too.
    for blank in ["   ", "\u{1c}\u{1f}", "\u{feff}\u{3000}\n"] {
        let (status, body) = h
            .call(
                Method::POST,
                &format!("/v1/sessions/{id}/messages"),
                Some(ALICE),
                Some(json!({"message": blank})),
            )
            .await;
        assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("message")));
    }
    // Integers may be spelled 3.0, as JSON Schema allows; 1.5 is refused.
    let (status, body) = h
        .call(
            Method::POST,
            &format!("/v1/sessions/{id}/messages"),
            Some(ALICE),
            Some(json!({"message": "hi", "maxSteps": 1.5, "stream": false})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("maxSteps")),
        "{body}"
    );

    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            if path.starts_with("/v1/") {
                for status in ["400", "401", "500"] {
                    assert!(responses.contains_key(status), "{method} {path} does not document {status}");
                }
            }
            if path.contains('{') {
                assert!(responses.contains_key("404"), "{method} {path} does not document 404");
            }
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("413"), "{method} {path} does not document 413");
            }
        }
    }
    let send = &doc["paths"]["/v1/sessions/{id}/messages"]["post"]["responses"]["200"]["content"];
    assert_eq!(send["text/event-stream"]["schema"]["$ref"], "#/components/schemas/AgentSseEvent");
    assert_eq!(send["application/json"]["schema"]["$ref"], "#/components/schemas/TurnResult");
    let message = &doc["components"]["schemas"]["SendMessage"]["properties"]["message"];
    assert_eq!(message["minLength"], 1, "{message}");
    let chat = &doc["components"]["schemas"]["ChatRequest"]["properties"];
    assert_eq!(chat["messages"]["minItems"], 1);
    let list = &doc["paths"]["/v1/sessions"]["get"]["parameters"];
    let offset = list.as_array().unwrap().iter().find(|p| p["name"] == "offset").unwrap();
    assert_eq!(offset["schema"]["maximum"], json!(i64::MAX), "{offset}");
    let create = &doc["components"]["schemas"]["CreateSession"]["properties"];
    assert_eq!(create["model"]["enum"], json!(["model-x", "model-y", null]));
    assert_eq!(create["workspace"]["enum"], json!(["default", null]));
}

#[tokio::test]
async fn sessions_crud() {
    let h = Harness::new(Script::new(vec![])).await;
    let (status, created) =
        h.call(Method::POST, "/v1/sessions", None, Some(json!({"title": "plans", "model": "model-y"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["title"], "plans");
    assert_eq!(created["model"], "model-y");
    let id = created["id"].as_str().unwrap();
    let (status, list) = h.call(Method::GET, "/v1/sessions", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["sessions"][0]["id"], id);
    let (status, shown) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["messages"], json!([]));
    let (status, ctx) = h.call(Method::GET, &format!("/v1/sessions/{id}/context"), None, None).await;
    assert_eq!(status, StatusCode::OK, "{ctx}");
    assert!(ctx["window"].as_u64().unwrap() > 0);
    let (status, tools) = h.call(Method::GET, "/v1/tools", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "shell" && t["destructive"] == true)
    );
    let (status, _) = h.call(Method::DELETE, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = h.call(Method::DELETE, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn validation_errors_name_the_field() {
    let h = Harness::new(Script::new(vec![])).await;
    let id = h.session(None).await;
    let post = |body: Value| {
        let path = format!("/v1/sessions/{id}/messages");
        let h = &h;
        async move { h.call(Method::POST, &path, None, Some(body)).await }
    };
    let (status, body) = post(json!({"message": "hi", "toolMask": {"shell": "no"}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["field"], "toolMask.shell");
    assert!(body["error"]["message"].as_str().unwrap().contains("expected a boolean"), "{body}");
    let (status, body) = post(json!({"toolMask": {}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().unwrap().contains("message"), "{body}");
    let (status, body) = post(json!({"message": "  "})).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("message")));
    let (status, body) = post(json!({"message": "hi", "maxSteps": 0})).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("maxSteps")));
    let (status, body) = post(json!({"message": "hi", "stream": "yes"})).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("stream")));
    let (status, body) =
        h.call_raw(Method::POST, &format!("/v1/sessions/{id}/messages"), None, Some("{oops".into())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&body));
    // Too large.
    let big = json!({"message": "x".repeat(100 * 1024)});
    let (status, body) = post(big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error"]["code"], "body_too_large");
    // Unknown session.
    let (status, body) =
        h.call(Method::POST, "/v1/sessions/no-such/messages", None, Some(json!({"message": "hi"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Session options.
    let (status, body) = h.call(Method::POST, "/v1/sessions", None, Some(json!({"model": "gpt-9"}))).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("model")));
    assert!(body["error"]["message"].as_str().unwrap().contains("model-x, model-y"), "{body}");
    let (status, body) = h.call(Method::POST, "/v1/sessions", None, Some(json!({"workspace": "/etc"}))).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("workspace")));
    let (status, body) =
        h.call(Method::POST, "/v1/sessions", None, Some(json!({"provider": "anthropic"}))).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("provider")));
    let (status, body) = h.call(Method::POST, "/v1/sessions", None, Some(json!({"color": "red"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().unwrap().contains("unknown field `color`"), "{body}");
}

#[tokio::test]
async fn a_turn_streams_typed_events_with_ids_over_sse() {
    let h = Harness::new(listing_script()).await;
    std::fs::write(h.workspace.path().join("notes.md"), "hello").unwrap();
    let id = h.session(None).await;
    let base = h.listen().await;
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .json(&json!({"message": "what is here?", "toolMask": {"shell": false, "no_such_tool": false}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    for expected in
        ["session_started", "tools_resolved", "tool_call", "tool_result", "text_delta", "turn_finished"]
    {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let ids: Vec<u64> = events.iter().map(|e| e.id.as_deref().unwrap().parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1) && ids[0] == 1, "{ids:?}");
    assert!(events.iter().all(|e| e.data["type"] == e.event), "the SSE name is the event type");
    let warning = events.iter().find(|e| e.event == "warning").expect("unknown mask names are reported");
    assert!(warning.data["message"].as_str().unwrap().contains("no_such_tool"));
    let resolved = events.iter().find(|e| e.event == "tools_resolved").unwrap();
    assert!(resolved.data["inactive"].as_array().unwrap().contains(&json!("shell")));
    let last = events.last().unwrap();
    assert_eq!(last.event, "turn_finished");
    assert_eq!(last.data["text"], "There is one file.");
    // The provider got the mask natively, with the tool list unchanged.
    let requests = h.fake.requests();
    let body = &requests[0].body;
    assert_eq!(body["tool_choice"]["type"], "allowed_tools");
    assert!(body["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "shell"));
}

#[tokio::test]
async fn stream_false_answers_with_one_json_result() {
    let h = Harness::new(listing_script()).await;
    let id = h.session(None).await;
    let (status, body) = h
        .call(
            Method::POST,
            &format!("/v1/sessions/{id}/messages"),
            None,
            Some(json!({"message": "hi", "stream": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "There is one file.");
    assert_eq!(body["end"], "completed");
    assert_eq!(body["steps"], 2);
    assert!(body["events"].as_array().unwrap().iter().any(|e| e["type"] == "tool_result"));
    let (_, shown) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(shown["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_busy_session_answers_409_and_cancel_stops_the_turn() {
    let mut script = Script::new(vec![Turn::text("slow answer")]);
    script.latency_ms = Some(3_000);
    let h = Harness::new(script).await;
    let id = h.session(None).await;
    let base = h.listen().await;
    let client = reqwest::Client::new();
    let stream = client
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .json(&json!({"message": "take your time"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    until("the turn to start", || async { h.state.running_turns() == 1 }).await;
    let (status, body) = h
        .call(Method::POST, &format!("/v1/sessions/{id}/messages"), None, Some(json!({"message": "again"})))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "busy");
    let (status, _) = h.call(Method::POST, &format!("/v1/sessions/{id}/compact"), None, None).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, body) = h.call(Method::POST, &format!("/v1/sessions/{id}/cancel"), None, None).await;
    assert_eq!((status, body["cancelled"].clone()), (StatusCode::OK, json!(true)));
    let events = parse_sse(&stream.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!(last.data["reason"], "cancelled", "{events:?}");
    let (_, body) = h.call(Method::POST, &format!("/v1/sessions/{id}/cancel"), None, None).await;
    assert_eq!(body["cancelled"], false, "nothing runs any more");
    // The cancelled turn's replay ends with its last event, with or without Last-Event-ID.
    for after in [None, Some(1usize)] {
        let mut request = client.get(format!("{base}/v1/sessions/{id}/events"));
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after.to_string());
        }
        let replay = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            request.send().await.unwrap().text().await.unwrap()
        })
        .await
        .expect("the replay of a cancelled turn ends");
        let replay = parse_sse(&replay);
        assert_eq!(replay.len(), events.len() - after.unwrap_or(0), "{replay:?}");
        assert_eq!(replay.last().unwrap().event, "turn_finished", "{replay:?}");
        assert_eq!(replay.last().unwrap().data["reason"], "cancelled", "{replay:?}");
    }
}

async fn pending(h: &Harness, id: &str) -> Value {
    h.call(Method::GET, &format!("/v1/sessions/{id}/approvals"), None, None).await.1
}

#[tokio::test]
async fn approvals_are_listed_approved_and_denied() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command":"echo approved-run"}"#),
        Turn::call("shell", r#"{"command":"echo never"}"#),
        Turn::text("done"),
    ]);
    let h = Harness::new(script).await;
    let id = h.session(None).await;
    let base = h.listen().await;
    let stream = reqwest::Client::new()
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .json(&json!({"message": "run it"}))
        .send()
        .await
        .unwrap();
    until("the first approval", || async {
        pending(&h, &id).await["approvals"].as_array().unwrap().len() == 1
    })
    .await;
    let list = pending(&h, &id).await;
    let first = &list["approvals"][0];
    assert_eq!(first["tool"], "shell");
    assert_eq!(first["args"]["command"], "echo approved-run");
    let (status, body) = h
        .call(
            Method::POST,
            &format!("/v1/approvals/{}", first["id"].as_str().unwrap()),
            None,
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    until("the second approval", || async {
        let l = pending(&h, &id).await;
        l["approvals"].as_array().unwrap().len() == 1 && l["approvals"][0]["args"]["command"] == "echo never"
    })
    .await;
    let second = pending(&h, &id).await["approvals"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = h
        .call(
            Method::POST,
            &format!("/v1/approvals/{second}"),
            None,
            Some(json!({"approve": false, "reason": "not now"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        h.call(Method::POST, &format!("/v1/approvals/{second}"), None, Some(json!({"approve": true}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a decided approval is gone");
    let (status, body) = h.call(Method::POST, "/v1/approvals/x", None, Some(json!({"approve": "yes"}))).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("approve")));
    let events = parse_sse(&stream.text().await.unwrap());
    let results: Vec<&Value> = events.iter().filter(|e| e.event == "tool_result").map(|e| &e.data).collect();
    assert_eq!(results[0]["outcome"]["status"], "ok");
    assert!(results[0]["outcome"]["preview"].as_str().unwrap().contains("approved-run"));
    assert_eq!(results[1]["outcome"]["status"], "error");
    assert!(
        results[1]["outcome"]["envelope"]["message"].as_str().unwrap().contains("not now"),
        "{}",
        results[1]
    );
    assert_eq!(events.iter().filter(|e| e.event == "approval_requested").count(), 2);
}

#[tokio::test]
async fn offloaded_outputs_are_restored_by_locator_and_compaction_runs() {
    let script = Script::new(vec![Turn::call("read_file", r#"{"path":"big.txt"}"#), Turn::text("read it")]);
    let h = Harness::new(script).await;
    let big: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(h.workspace.path().join("big.txt"), &big).unwrap();
    let id = h.session(None).await;
    let (status, turn) = h
        .call(
            Method::POST,
            &format!("/v1/sessions/{id}/messages"),
            None,
            Some(json!({"message": "read big.txt", "stream": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{turn}");
    let result = turn["events"].as_array().unwrap().iter().find(|e| e["type"] == "tool_result").unwrap();
    let locator = result["locator"].as_str().expect("a large output is offloaded behind a locator");
    let (status, page) = h
        .call(Method::GET, &format!("/v1/sessions/{id}/results/{locator}?offset=2000&limit=3"), None, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("line 2000") || text.contains("2000"), "{text}");
    let (status, body) =
        h.call(Method::GET, &format!("/v1/sessions/{id}/results/{locator}?unit=pages"), None, None).await;
    assert_eq!((status, body["error"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("unit")));
    let (status, _) = h.call(Method::GET, &format!("/v1/sessions/{id}/results/out_nope"), None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, report) = h.call(Method::POST, &format!("/v1/sessions/{id}/compact"), None, None).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert!(report["tokensAfter"].as_u64().unwrap() <= report["tokensBefore"].as_u64().unwrap());
}

#[tokio::test]
async fn users_only_see_their_own_sessions_approvals_and_outputs() {
    let script = Script::new(vec![Turn::call("shell", r#"{"command":"seq 1 5000"}"#), Turn::text("ok")]);
    let h = Harness::with(script, tokens()).await;
    // No token, a wrong token.
    let (status, body) = h.call(Method::GET, "/v1/sessions", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"].as_str().unwrap().contains("Bearer"));
    let (status, _) = h.call(Method::GET, "/v1/sessions", Some("alice-token-0123456788"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = h.call(Method::GET, "/v1/models", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["type"], "authentication_error", "OpenAI routes answer in OpenAI's shape");
    let (status, _) = h.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK, "health needs no token");

    let id = h.session(Some(ALICE)).await;
    let base = h.listen().await;
    let stream = reqwest::Client::new()
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .bearer_auth(ALICE)
        .json(&json!({"message": "count"}))
        .send()
        .await
        .unwrap();
    let approvals_path = format!("/v1/sessions/{id}/approvals");
    until("alice's approval", || async {
        h.call(Method::GET, &approvals_path, Some(ALICE), None).await.1["approvals"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .await;
    let approval = h.call(Method::GET, &approvals_path, Some(ALICE), None).await.1["approvals"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Bob sees nothing of it.
    let (_, list) = h.call(Method::GET, "/v1/sessions", Some(BOB), None).await;
    assert_eq!(list["sessions"], json!([]));
    for (method, path) in [
        (Method::GET, format!("/v1/sessions/{id}")),
        (Method::GET, approvals_path.clone()),
        (Method::POST, format!("/v1/sessions/{id}/cancel")),
        (Method::DELETE, format!("/v1/sessions/{id}")),
        (Method::GET, format!("/v1/sessions/{id}/context")),
        (Method::GET, format!("/v1/sessions/{id}/turns")),
    ] {
        let (status, _) = h.call(method.clone(), &path, Some(BOB), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    for (path, body) in [
        (format!("/v1/sessions/{id}/rewind"), json!({"turn": 1, "dryRun": true})),
        (format!("/v1/sessions/{id}/fork"), json!({})),
        (format!("/v1/sessions/{id}"), json!({"mode": "plan"})),
    ] {
        let method = if path.ends_with(id.as_str()) { Method::PATCH } else { Method::POST };
        let (status, _) = h.call(method, &path, Some(BOB), Some(body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let (status, _) = h
        .call(Method::POST, &format!("/v1/approvals/{approval}"), Some(BOB), Some(json!({"approve": true})))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "bob cannot approve alice's call");
    let (status, _) = h
        .call(Method::POST, &format!("/v1/sessions/{id}/messages"), Some(BOB), Some(json!({"message": "hi"})))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = h
        .call(Method::POST, &format!("/v1/approvals/{approval}"), Some(ALICE), Some(json!({"approve": true})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let events = parse_sse(&stream.text().await.unwrap());
    let locator = events.iter().find(|e| e.event == "tool_result").unwrap().data["locator"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v1/sessions/{id}/results/{locator}");
    assert_eq!(h.call(Method::GET, &path, Some(ALICE), None).await.0, StatusCode::OK);
    assert_eq!(h.call(Method::GET, &path, Some(BOB), None).await.0, StatusCode::NOT_FOUND);
    // Bob's own session cannot reach alice's locator either.
    let bobs = h.session(Some(BOB)).await;
    let (status, _) =
        h.call(Method::GET, &format!("/v1/sessions/{bobs}/results/{locator}"), Some(BOB), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[test]
fn without_tokens_only_loopback_binds() {
    let mut config = tackle_server::ServerConfig::new(".".into());
    assert!(config.validate().is_ok());
    config.bind = "0.0.0.0:8787".parse().unwrap();
    let e = config.validate().unwrap_err().to_string();
    assert!(e.contains("refusing") && e.contains("TACKLE_SERVER_TOKENS"), "{e}");
    config.tokens = vec![tackle_server::UserToken::new("a", "short")];
    assert!(config.validate().unwrap_err().to_string().contains("shorter than 16"));
    config.tokens = tokens();
    assert!(config.validate().is_ok());
    assert!(!format!("{:?}", config.tokens).contains(ALICE), "tokens never appear in debug output");
}

#[tokio::test]
async fn sessions_are_renamed_by_their_owner_with_a_valid_title() {
    let h = Harness::with(Script::new(vec![]), tokens()).await;
    let id = h.session(Some(ALICE)).await;
    let path = format!("/v1/sessions/{id}");
    let (status, body) =
        h.call(Method::PATCH, &path, Some(ALICE), Some(json!({"title": "  release notes  "}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "release notes");
    let (_, shown) = h.call(Method::GET, &path, Some(ALICE), None).await;
    assert_eq!(shown["title"], "release notes");
    for bad in [
        json!({"title": ""}),
        json!({"title": "   "}),
        json!({"title": "a\u{1b}[2Jb"}),
        json!({"title": "x".repeat(201)}),
        json!({"title": 5}),
        json!({"name": "x"}),
    ] {
        let (status, body) = h.call(Method::PATCH, &path, Some(ALICE), Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (_, shown) = h.call(Method::GET, &path, Some(ALICE), None).await;
    assert_eq!(shown["title"], "release notes", "a refused rename changed nothing");
    // Another user's session is not found, and stays as it was.
    let (status, _) = h.call(Method::PATCH, &path, Some(BOB), Some(json!({"title": "mine now"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, shown) = h.call(Method::GET, &path, Some(ALICE), None).await;
    assert_eq!(shown["title"], "release notes");
}
