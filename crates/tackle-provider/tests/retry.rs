//! Retries like the official SDKs, against wiremock.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tackle_protocol::{Message, ModelRequest};
use tackle_provider::{
    Anthropic, CallOptions, OpenAiChat, OpenAiDialect, Provider, ProviderConfig, ProviderError, ProviderKind,
    RetryNotice, RetryPolicy,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ANTHROPIC_OK: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

const OPENAI_OK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(5),
    }
}

fn anthropic(server: &MockServer) -> Anthropic {
    let config = ProviderConfig::new(ProviderKind::Anthropic)
        .with_base_url(server.uri())
        .with_api_key("sk-ant-test")
        .with_retry(fast_policy());
    Anthropic::new(config).unwrap()
}

fn openai(server: &MockServer) -> OpenAiChat {
    let config = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_api_key("sk-test")
        .with_retry(fast_policy());
    OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest::new("m", vec![Message::user("hi")])
}

fn sse(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

fn recorder() -> (CallOptions, Arc<Mutex<Vec<RetryNotice>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options =
        CallOptions { on_retry: Some(Arc::new(move |n: &RetryNotice| sink.lock().unwrap().push(n.clone()))) };
    (options, seen)
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_string(
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(ANTHROPIC_OK))
        .mount(&server)
        .await;
    let (options, seen) = recorder();
    let started = Instant::now();
    let response = anthropic(&server).complete(&request(), &options).await.unwrap();
    assert_eq!(response.text(), "ok");
    assert!(started.elapsed() >= Duration::from_secs(1), "retry-after: 1 must be waited");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].attempt, 2);
    assert_eq!(seen[0].wait, Duration::from_secs(1));
    assert!(matches!(seen[0].error, ProviderError::RateLimited { .. }));
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_string(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST")).respond_with(sse(ANTHROPIC_OK)).mount(&server).await;
    let (options, seen) = recorder();
    let response = anthropic(&server).complete(&request(), &options).await.unwrap();
    assert_eq!(response.text(), "ok");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn server_error_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_string(r#"{"error":{"message":"boom","type":"server_error"}}"#),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(OPENAI_OK))
        .mount(&server)
        .await;
    let response = openai(&server).complete(&request(), &CallOptions::default()).await.unwrap();
    assert_eq!(response.text(), "ok");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("down"))
        .mount(&server)
        .await;
    let err = openai(&server).complete(&request(), &CallOptions::default()).await.unwrap_err();
    assert!(matches!(err, ProviderError::Server { status: 503, .. }), "{err:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3, "first attempt + 2 retries");
}

#[tokio::test]
async fn no_retry_on_400_or_401() {
    for (status, body) in [
        (400, r#"{"error":{"message":"bad field","type":"invalid_request_error"}}"#),
        (401, r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_string(body))
            .mount(&server)
            .await;
        let err = openai(&server).complete(&request(), &CallOptions::default()).await.unwrap_err();
        match status {
            400 => assert!(matches!(err, ProviderError::BadRequest { .. }), "{err:?}"),
            _ => assert!(matches!(err, ProviderError::Auth { .. }), "{err:?}"),
        }
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "status {status} is not retried");
    }
}

#[tokio::test]
async fn x_should_retry_false_stops_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).insert_header("x-should-retry", "false").set_body_string("{}"),
        )
        .mount(&server)
        .await;
    openai(&server).complete(&request(), &CallOptions::default()).await.unwrap_err();
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn html_error_pages_become_typed_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(502).insert_header("content-type", "text/html").set_body_string(
                "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            ),
        )
        .mount(&server)
        .await;
    let err = anthropic(&server).complete(&request(), &CallOptions::default()).await.unwrap_err();
    assert!(matches!(err, ProviderError::Server { status: 502, .. }), "{err:?}");
    assert!(err.to_string().contains("HTML page"), "{err}");
}

#[tokio::test]
async fn headers_carry_the_key_and_version_and_errors_never_do() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(sse(ANTHROPIC_OK))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(401).set_body_string(r#"{"error":{"message":"nope"}}"#))
        .mount(&server)
        .await;
    anthropic(&server).complete(&request(), &CallOptions::default()).await.unwrap();
    let err = openai(&server).complete(&request(), &CallOptions::default()).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("sk-test"));
    assert!(!format!("{:?}", openai(&server)).contains("sk-test"));
}

#[tokio::test]
async fn connection_refused_is_a_network_error_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = ProviderConfig::new(ProviderKind::Anthropic)
        .with_base_url(format!("http://{addr}"))
        .with_retry(fast_policy());
    let (options, seen) = recorder();
    let err = Anthropic::new(config).unwrap().complete(&request(), &options).await.unwrap_err();
    assert!(matches!(err, ProviderError::Network { .. }), "{err:?}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}
