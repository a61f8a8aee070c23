//! Whole answers (`"stream": false`): the same scripted turns, asked streamed and whole from the
//! fake model in every wire format, normalize to equal responses; the request differs from the
//! streamed one only in its stream flag; failures keep their classes and retries; a body that
//! does not read or decode is a provider error, never a panic.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tackle_protocol::{
    ContentBlock, Message, ModelRequest, ModelResponse, ResponseAccumulator, StopReason, ToolSpec, Usage,
};
use tackle_provider::{
    Anthropic, CallOptions, Delivery, OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig,
    ProviderError, ProviderKind, ReasoningSummary, ResponsesConfig, RetryPolicy, Timeouts,
};
use tackle_testkit::{FakeModel, Fault, Script, Turn};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::fake_server::retry;

/// The three clients against `base` (the fake's or a mock's root URL); Responses asks for a
/// reasoning summary, so its reasoning items carry text.
fn clients(base: &str) -> Vec<Box<dyn Provider>> {
    clients_with(base, retry(), Timeouts::default())
}

/// [`clients`] with this retry policy and these timeouts.
fn clients_with(base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Vec<Box<dyn Provider>> {
    let config = |kind, url: String| {
        ProviderConfig::new(kind)
            .with_base_url(url)
            .with_api_key("sk-x")
            .with_retry(retry)
            .with_timeouts(timeouts)
    };
    let responses =
        ResponsesConfig { reasoning_summary: Some(ReasoningSummary::Auto), ..ResponsesConfig::default() };
    vec![
        Box::new(
            OpenAiChat::with_dialect(
                config(ProviderKind::Openai, format!("{base}/v1")),
                OpenAiDialect::OpenAi,
            )
            .unwrap(),
        ),
        Box::new(
            OpenAiResponses::with_options(
                config(ProviderKind::OpenaiResponses, format!("{base}/v1")),
                responses,
            )
            .unwrap(),
        ),
        Box::new(Anthropic::new(config(ProviderKind::Anthropic, base.to_owned())).unwrap()),
    ]
}

const CLIENTS: usize = 3;

fn tools() -> Arc<[ToolSpec]> {
    let object = |p: &str| json!({"type": "object", "properties": {p: {"type": "string"}}, "required": [p]});
    Arc::from(vec![
        ToolSpec::new("read_file", "Read a file.", object("path")),
        ToolSpec::new("search", "Search the files.", object("query")),
    ])
}

/// Text; several tool calls; reasoning with text, a call and usage with cache reads, writes and
/// reasoning tokens; an answer cut by its token limit.
fn turns() -> Vec<Turn> {
    let usage = |input, output, read, write, reasoning| Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: reasoning,
    };
    vec![
        Turn::text("Hello there, here is a plain answer.").with_usage(usage(120, 9, 0, 0, 0)),
        Turn::text("Reading three files.")
            .with_call_id("call_a", "read_file", r#"{"path": "a.md"}"#)
            .with_call("read_file", r#"{"path":"b/ü.md"}"#)
            .with_call_id("call_c", "search", r#"{"query": "needle \"quoted\""}"#)
            .with_usage(usage(1500, 60, 1024, 256, 0)),
        Turn::text("Reading it.")
            .with_reasoning("The answer is in notes/a.md; call read_file. Ünïcode too.")
            .with_call("read_file", r#"{"path": "notes/a.md"}"#)
            .with_usage(usage(2000, 120, 1792, 0, 64)),
        Turn::text("The file goes on and on and")
            .with_stop(StopReason::MaxTokens)
            .with_usage(usage(2100, 4096, 2048, 0, 0)),
    ]
}

fn request() -> ModelRequest {
    let mut request = ModelRequest::new("model-x", vec![Message::user("What is in the notes?")]);
    request.tools = tools();
    request
}

/// Encodes `request` as `delivery`, sends it and reads the normalized events into a response.
async fn ask(
    client: &dyn Provider,
    request: &ModelRequest,
    delivery: Delivery,
) -> Result<ModelResponse, ProviderError> {
    let encoded = client.encode_as(request, delivery)?;
    assert_eq!(encoded.delivery, delivery, "{}", client.name());
    let mut events = client.send(encoded, &CallOptions::default()).await?;
    let mut acc = ResponseAccumulator::default();
    while let Some(event) = events.next().await {
        acc.push(&event?);
    }
    assert!(acc.is_complete(), "{}: an answer ends with its stop", client.name());
    Ok(acc.finish())
}

#[tokio::test]
async fn whole_answers_equal_streamed_ones_in_every_format() {
    for i in 0..CLIENTS {
        let streamed_fake = FakeModel::start(Script::new(turns())).await.unwrap();
        let whole_fake = FakeModel::start(Script::new(turns())).await.unwrap();
        let streaming = clients(&streamed_fake.base_url()).remove(i);
        let whole = clients(&whole_fake.base_url()).remove(i);
        let name = streaming.name().to_owned();
        for (t, turn) in turns().iter().enumerate() {
            let streamed = ask(&*streaming, &request(), Delivery::Stream).await.unwrap();
            let answered = ask(&*whole, &request(), Delivery::Whole).await.unwrap();
            assert_eq!(answered, streamed, "{name}, turn {t}");
            // What was compared is the whole turn, not two empty answers.
            assert_eq!(answered.stop_reason, turn.stop_reason(), "{name}, turn {t}");
            assert_eq!(answered.tool_uses().count(), turn.tool_calls.len(), "{name}, turn {t}");
            assert_eq!(answered.text(), turn.text.clone().unwrap_or_default(), "{name}, turn {t}");
            assert_eq!(answered.usage.output_tokens, turn.usage.output_tokens, "{name}, turn {t}");
            assert_eq!(answered.usage.cache_read_tokens, turn.usage.cache_read_tokens, "{name}, turn {t}");
            assert!(answered.id.is_some() && answered.model.is_some(), "{name}, turn {t}: {answered:?}");
            for (call, scripted) in answered.tool_uses().zip(&turn.tool_calls) {
                assert_eq!(call.name, scripted.name);
                assert_eq!(call.input.as_json(), Some(&serde_json::from_str(&scripted.arguments).unwrap()));
                if let Some(id) = &scripted.id {
                    assert_eq!(call.id.as_str(), id, "{name}");
                }
            }
            // Reasoning that must go back verbatim arrives whole: Anthropic's thinking with its
            // signature, Responses' item with its encrypted content (Chat Completions has none).
            let reasoning: Vec<_> = answered
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Reasoning(r) => Some(r),
                    _ => None,
                })
                .collect();
            match (name.as_str(), &turn.reasoning) {
                ("anthropic", Some(text)) => {
                    assert_eq!(reasoning.len(), 1);
                    assert_eq!(&reasoning[0].text, text);
                    assert!(reasoning[0].data["signature"].as_str().is_some_and(|s| s.starts_with("sig-")));
                }
                ("openai-responses", Some(text)) => {
                    assert_eq!(reasoning.len(), 1);
                    assert_eq!(&reasoning[0].text, text);
                    assert!(reasoning[0].data["encrypted_content"].is_string(), "{:?}", reasoning[0].data);
                }
                _ => assert!(reasoning.is_empty(), "{name}, turn {t}"),
            }
        }
        // Each fake saw what was asked of it.
        for (fake, stream) in [(&streamed_fake, true), (&whole_fake, false)] {
            for sent in fake.requests() {
                assert_eq!(sent.body["stream"], json!(stream), "{name}");
                if !stream {
                    assert!(sent.body.get("stream_options").is_none(), "{name}: {}", sent.body);
                }
            }
        }
    }
}

/// A whole request is the streamed one with `"stream": false` for its stream flag (and, in Chat
/// Completions, without the `stream_options` the API refuses without streaming): the bytes the
/// provider caches are the same, so switching deliveries breaks no prompt cache.
#[tokio::test]
async fn a_whole_request_differs_from_the_streamed_one_only_in_its_stream_flag() {
    let mut request = request();
    request.system = vec![tackle_protocol::SystemSection::cacheable("base", "You are terse.")];
    for client in clients("http://127.0.0.1:9") {
        let streamed = client.encode_as(&request, Delivery::Stream).unwrap();
        assert_eq!(streamed, client.encode(&request).unwrap(), "encode streams, as it always did");
        let whole = client.encode_as(&request, Delivery::Whole).unwrap();
        assert_eq!(
            (whole.path, whole.betas, whole.cache_order),
            (streamed.path, streamed.betas, streamed.cache_order)
        );
        let streamed_text = String::from_utf8(streamed.body.to_vec()).unwrap();
        let flag = if client.name() == "openai" {
            r#""stream":true,"stream_options":{"include_usage":true}"#
        } else {
            r#""stream":true"#
        };
        assert_eq!(streamed_text.matches(flag).count(), 1, "{}: {streamed_text}", client.name());
        let expected = streamed_text.replace(flag, r#""stream":false"#);
        assert_eq!(String::from_utf8(whole.body.to_vec()).unwrap(), expected, "{}", client.name());
    }
}

async fn whole_fault_outcome(i: usize, fault: Fault) -> (Result<String, ProviderError>, usize) {
    let fake = FakeModel::start(Script::new(vec![Turn::text("recovered"); 3])).await.unwrap();
    fake.push_fault(fault);
    let client = clients(&fake.base_url()).remove(i);
    let result = ask(&*client, &ModelRequest::new("m", vec![Message::user("hi")]), Delivery::Whole).await;
    (result.map(|r| r.text()), fake.requests().len())
}

#[tokio::test]
async fn whole_answers_keep_error_classes_and_retries() {
    for i in 0..CLIENTS {
        for status in [429, 500, 529] {
            let fault = Fault::Status {
                status,
                body: None,
                retry_after: None,
                retry_after_ms: Some(10),
                should_retry: None,
            };
            let (result, requests) = whole_fault_outcome(i, fault).await;
            assert_eq!(result.unwrap(), "recovered", "client {i} status {status}");
            assert_eq!(requests, 2, "client {i} status {status}: retried once");
        }
        let (result, requests) = whole_fault_outcome(i, Fault::status(400)).await;
        assert!(matches!(result, Err(ProviderError::BadRequest { .. })), "{result:?}");
        assert_eq!(requests, 1, "a rejected request is not sent again");
        let (result, _) = whole_fault_outcome(i, Fault::status(401)).await;
        assert!(matches!(result, Err(ProviderError::Auth { .. })), "{result:?}");
        // A body cut mid-way fails to read: a network error, as a broken stream is.
        let (result, _) = whole_fault_outcome(i, Fault::CutAfter { events: 0 }).await;
        assert!(matches!(result, Err(ProviderError::Network { .. })), "client {i}: {result:?}");
        // A complete response whose body is half a JSON document: a protocol error.
        let (result, _) = whole_fault_outcome(i, Fault::MalformedChunk { after_events: 0 }).await;
        match result {
            Err(ProviderError::Protocol { message }) => {
                assert!(message.contains("malformed response body"), "client {i}: {message}")
            }
            other => panic!("client {i}: {other:?}"),
        }
    }
}

/// A whole answer sends nothing until the model is done, so it is limited as a whole
/// (`Timeouts::whole`), not per read: a model slower than the read limit still answers whole,
/// where the same wait fails a stream; past the whole limit it fails as a timeout, typed.
#[tokio::test]
async fn a_whole_answer_is_limited_as_a_whole_not_per_read() {
    let timeouts = |read: u64, whole: u64| {
        let mut t = Timeouts::default();
        t.read = Duration::from_millis(read);
        t.whole = Duration::from_millis(whole);
        t
    };
    let no_retry = RetryPolicy { max_retries: 0, ..retry() };
    let hi = ModelRequest::new("m", vec![Message::user("hi")]);
    for i in 0..CLIENTS {
        let fake = FakeModel::start(Script::new(vec![Turn::text("slow but whole"); 3])).await.unwrap();
        let slow = |fake: &FakeModel, t: Timeouts| {
            fake.push_fault(Fault::Latency { ms: 600 });
            clients_with(&fake.base_url(), no_retry, t).remove(i)
        };
        let client = slow(&fake, timeouts(150, 10_000));
        let answer = ask(&*client, &hi, Delivery::Whole).await;
        assert_eq!(answer.unwrap().text(), "slow but whole", "client {i}");
        let client = slow(&fake, timeouts(150, 10_000));
        let streamed = ask(&*client, &hi, Delivery::Stream).await;
        assert!(matches!(streamed, Err(ProviderError::Timeout { .. })), "client {i}: {streamed:?}");
        let client = slow(&fake, timeouts(10_000, 200));
        let limited = ask(&*client, &hi, Delivery::Whole).await;
        assert!(matches!(limited, Err(ProviderError::Timeout { .. })), "client {i}: {limited:?}");
        assert_eq!(fake.requests().len(), 3, "client {i}: one request each, none retried");
    }
}

/// What an error must be.
type Expected = fn(&ProviderError) -> bool;

/// Bodies a server may answer 200 with: errors in each API's shape keep their class, and
/// anything else that is not an answer is a protocol error.
#[tokio::test]
async fn whole_bodies_that_are_not_answers_are_typed_errors() {
    let cases: [(usize, &str, Expected); 9] = [
        (0, r#"{"error":{"message":"slow down","type":"rate_limit_error","code":429}}"#, |e| {
            matches!(e, ProviderError::RateLimited { .. })
        }),
        (
            0,
            r#"{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            |e| matches!(e, ProviderError::ContextExceeded { .. }),
        ),
        (0, "<html>not json</html>", |e| matches!(e, ProviderError::Protocol { .. })),
        (
            1,
            r#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"output":[]}"#,
            |e| matches!(e, ProviderError::RateLimited { .. }),
        ),
        (
            1,
            r#"{"id":"resp_1","object":"response","status":"in_progress","output":[]}"#,
            |e| matches!(e, ProviderError::Protocol { message } if message.contains("not finished")),
        ),
        (1, r#"{"output": 7}"#, |e| matches!(e, ProviderError::Protocol { .. })),
        (2, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, |e| {
            matches!(e, ProviderError::Overloaded { .. })
        }),
        (2, r#"{"type":"message","content":"not a list"}"#, |e| matches!(e, ProviderError::Protocol { .. })),
        (2, "", |e| matches!(e, ProviderError::Protocol { .. })),
    ];
    for (i, body, expected) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "application/json")
                    .set_body_string(body),
            )
            .mount(&server)
            .await;
        let client = clients(&server.uri()).remove(i);
        let result = ask(&*client, &ModelRequest::new("m", vec![Message::user("hi")]), Delivery::Whole).await;
        match result {
            Err(e) => assert!(expected(&e), "{} given {body}: {e:?}", client.name()),
            Ok(r) => panic!("{} given {body}: {r:?}", client.name()),
        }
    }
}

/// What the fake does not send, read from bodies as servers write them: Chat Completions'
/// reasoning text of compatible servers (`reasoning_content`, or `reasoning`), a refusal, a
/// completion without the fields compatible servers leave out, and a tool call whose
/// `finish_reason` says `stop`.
#[tokio::test]
async fn chat_completions_read_what_compatible_servers_send() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning":"Think first.","refusal":"I cannot.","tool_calls":[{"id":"","type":"function","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":3}}}"#;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(body))
        .mount(&server)
        .await;
    let client = clients(&server.uri()).remove(0);
    let encoded = client.encode_as(&request(), Delivery::Whole).unwrap();
    let mut events = client.send(encoded, &CallOptions::default()).await.unwrap();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.unwrap());
    }
    assert!(
        seen.contains(&tackle_protocol::StreamEvent::ReasoningDelta { text: "Think first.".into() }),
        "{seen:?}"
    );
    let mut acc = ResponseAccumulator::default();
    seen.iter().for_each(|e| acc.push(e));
    let response = acc.finish();
    assert_eq!(response.text(), "I cannot.");
    assert_eq!(response.stop_reason, StopReason::ToolUse, "the call decides, as in a stream");
    let call = response.tool_uses().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_0", "search"));
    assert_eq!(response.usage.reasoning_tokens, 3);
    assert_eq!(response.id, None, "no id was given");
    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers.get("accept").unwrap(), "application/json");
}

/// A provider written before whole answers (it implements `encode` and `send` only) keeps
/// streaming whatever the loop asks: `encode_as` falls back to `encode`.
#[tokio::test]
async fn a_provider_outside_the_crate_keeps_streaming() {
    struct Older(Box<dyn Provider>);
    #[async_trait::async_trait]
    impl Provider for Older {
        fn name(&self) -> &str {
            "older"
        }
        fn capabilities(&self) -> tackle_provider::Capabilities {
            tackle_provider::Capabilities::default()
        }
        fn encode(&self, request: &ModelRequest) -> Result<tackle_provider::EncodedRequest, ProviderError> {
            self.0.encode(request)
        }
        async fn send(
            &self,
            encoded: tackle_provider::EncodedRequest,
            options: &CallOptions,
        ) -> Result<tackle_provider::EventStream, ProviderError> {
            self.0.send(encoded, options).await
        }
    }
    let fake = FakeModel::start(Script::new(turns())).await.unwrap();
    let older = Older(clients(&fake.base_url()).remove(0));
    assert!(!older.capabilities().whole_answers);
    let answer = ask(&older, &request(), Delivery::Stream).await.unwrap();
    assert_eq!(answer.text(), "Hello there, here is a plain answer.");
    let encoded = older.encode_as(&request(), Delivery::Whole).unwrap();
    assert_eq!(encoded.delivery, Delivery::Stream, "asked for whole, it streams");
    assert_eq!(fake.requests()[0].body["stream"], true);
}
