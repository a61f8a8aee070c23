//! Why a turn failed decides the HTTP answer, the same on every route: a provider's 429 is a 429
//! with `Retry-After`, a full context a 400 `context_length_exceeded`, a provider's 5xx a 502,
//! in the sessions API (`stream: false`), both OpenAI-compatible routes in agent mode and the
//! gateway; a streamed turn's `error` event carries the same code.

use crate::common;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use common::{Harness, parse_sse};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tackle_testkit::{Fault, Script, Turn};
use tower::ServiceExt;

async fn post(h: &Harness, path: &str, body: Value) -> (StatusCode, HeaderMap, Vec<u8>) {
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = h.app().oneshot(request).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.into_body().collect().await.unwrap().to_bytes().to_vec())
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

fn rate_limit(retry_after: Option<&str>) -> Fault {
    Fault::Status {
        status: 429,
        body: None,
        retry_after: retry_after.map(str::to_owned),
        retry_after_ms: None,
        should_retry: None,
    }
}

fn status(code: u16, body: Option<&str>) -> Fault {
    Fault::Status {
        status: code,
        body: body.map(str::to_owned),
        retry_after: None,
        retry_after_ms: None,
        should_retry: None,
    }
}

/// An OpenAI-shaped "prompt too long" answer (what `ContextExceeded` is classified from).
const CONTEXT_EXCEEDED: &str = r#"{"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#;

#[tokio::test]
async fn the_sessions_api_answers_a_failed_turn_with_the_status_its_code_calls_for() {
    let h = Harness::new(Script::new(vec![Turn::text("fine")])).await;
    let id = h.session(None).await;
    let path = format!("/v1/sessions/{id}/messages");
    let send = json!({"message": "hi", "stream": false});

    h.fake.push_fault(rate_limit(Some("3")));
    let (code, headers, body) = post(&h, &path, send.clone()).await;
    let body = json_of(&body);
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(headers.get("retry-after").map(|v| v.to_str().unwrap()), Some("3"));
    assert_eq!(
        (body["end"].as_str(), body["error"]["code"].as_str()),
        (Some("failed"), Some("rate_limited"))
    );
    assert_eq!(body["error"]["retryAfterMs"], 3000, "{body}");
    let error_event = body["events"].as_array().unwrap().iter().find(|e| e["type"] == "error").cloned();
    assert_eq!(error_event.map(|e| e["code"].clone()), Some(json!("rate_limited")), "{body}");

    h.fake.push_fault(status(500, None));
    let (code, headers, body) = post(&h, &path, send.clone()).await;
    assert_eq!(code, StatusCode::BAD_GATEWAY);
    assert!(headers.get("retry-after").is_none());
    assert_eq!(json_of(&body)["error"]["code"], "provider_error");

    h.fake.push_fault(status(401, None));
    let (code, _, body) = post(&h, &path, send.clone()).await;
    assert_eq!(
        (code, json_of(&body)["error"]["code"].clone()),
        (StatusCode::BAD_GATEWAY, json!("provider_auth"))
    );

    // The provider finds the prompt too long; in a new session compaction has nothing to shrink
    // (the turn is kept whole), so the same request is not sent again: 400, as OpenAI answers it.
    let fresh = h.session(None).await;
    h.fake.push_fault(status(400, Some(CONTEXT_EXCEEDED)));
    let (code, _, body) = post(&h, &format!("/v1/sessions/{fresh}/messages"), send.clone()).await;
    let body = json_of(&body);
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("context_length_exceeded"))
    );

    // The session is still usable, and a completed turn is a 200 without `error`.
    let (code, _, body) = post(&h, &path, send).await;
    let body = json_of(&body);
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["end"], "completed");
    assert!(body.get("error").is_none(), "{body}");
}

#[tokio::test]
async fn a_streamed_turn_names_its_failure_in_the_error_event() {
    let h = Harness::new(Script::new(vec![])).await;
    let id = h.session(None).await;
    h.fake.push_fault(status(503, None));
    let (code, _, body) = post(&h, &format!("/v1/sessions/{id}/messages"), json!({"message": "hi"})).await;
    assert_eq!(code, StatusCode::OK, "a stream has answered before the turn fails");
    let events = parse_sse(&String::from_utf8(body).unwrap());
    let error = events.iter().find(|e| e.event == "error").expect("an error event");
    assert_eq!(error.data["code"], "provider_error", "{:?}", error.data);
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("turn_finished"));
}

#[tokio::test]
async fn chat_completions_in_agent_mode_and_as_a_gateway_answer_in_openai_shape_with_the_same_status() {
    let h = Harness::new(Script::new(vec![])).await;
    let agent = h.state.config().agent_model.clone();
    for model in [agent.as_str(), "model-x"] {
        let request = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
        h.fake.push_fault(rate_limit(Some("2")));
        let (code, headers, body) = post(&h, "/v1/chat/completions", request.clone()).await;
        let body = json_of(&body);
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{model}: {body}");
        assert_eq!(headers.get("retry-after").map(|v| v.to_str().unwrap()), Some("2"), "{model}");
        assert_eq!(body["error"]["code"], "rate_limited", "{model}: {body}");
        assert_eq!(body["error"]["type"], "rate_limit_error", "{model}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("rate limited"), "{model}: {body}");

        h.fake.push_fault(status(400, Some(CONTEXT_EXCEEDED)));
        let (code, _, body) = post(&h, "/v1/chat/completions", request).await;
        let body = json_of(&body);
        assert_eq!(code, StatusCode::BAD_REQUEST, "{model}: {body}");
        assert_eq!(body["error"]["code"], "context_length_exceeded", "{model}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{model}: {body}");
    }
}

#[tokio::test]
async fn the_responses_route_in_agent_mode_answers_a_rate_limit_with_429() {
    let h = Harness::new(Script::new(vec![])).await;
    let agent = h.state.config().agent_model.clone();
    h.fake.push_fault(rate_limit(None));
    let (code, headers, body) = post(&h, "/v1/responses", json!({"model": agent, "input": "hi"})).await;
    let body = json_of(&body);
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(headers.get("retry-after").is_none(), "the provider named no wait");
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
}
