//! Every client against the scripted fake model server: a two-step tool conversation, and every
//! fault ending in the right typed error or a successful retry.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tackle_protocol::{ContentBlock, Message, ModelRequest, Role, StopReason, ToolResult, ToolSpec, Usage};
use tackle_provider::{
    Anthropic, CallOptions, OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig,
    ProviderError, ProviderKind, RetryPolicy,
};
use tackle_testkit::{FakeModel, Fault, Script, Turn};

/// Quick retries for the fake's faults (shared with `whole.rs`).
pub(crate) fn retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    }
}

fn clients(fake: &FakeModel) -> Vec<Box<dyn Provider>> {
    let openai = ProviderConfig::new(ProviderKind::Openai)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("sk-x")
        .with_retry(retry());
    let responses = ProviderConfig::new(ProviderKind::OpenaiResponses)
        .with_base_url(format!("{}/v1", fake.base_url()))
        .with_api_key("sk-x")
        .with_retry(retry());
    let anthropic = ProviderConfig::new(ProviderKind::Anthropic)
        .with_base_url(fake.base_url())
        .with_api_key("sk-ant-x")
        .with_retry(retry());
    vec![
        Box::new(OpenAiChat::with_dialect(openai, OpenAiDialect::OpenAi).unwrap()),
        Box::new(OpenAiResponses::new(responses).unwrap()),
        Box::new(Anthropic::new(anthropic).unwrap()),
    ]
}

/// How many clients [`clients`] makes.
const CLIENTS: usize = 3;

fn name(i: usize) -> &'static str {
    ["openai", "openai-responses", "anthropic"][i]
}

fn tools() -> Arc<[ToolSpec]> {
    Arc::from(vec![ToolSpec::new(
        "read_file",
        "Read a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )])
}

fn two_step_script() -> Script {
    Script::new(vec![
        Turn::text("Let me read it.")
            .with_call("read_file", r#"{"path": "notes/a_file_with_a_long_name.md"}"#)
            .with_usage(Usage {
                input_tokens: 1200,
                output_tokens: 30,
                cache_read_tokens: 0,
                cache_write_tokens: 1024,
                reasoning_tokens: 0,
            }),
        Turn::text("The file says hello.").with_usage(Usage {
            input_tokens: 1300,
            output_tokens: 12,
            cache_read_tokens: 1024,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        }),
    ])
}

#[tokio::test]
async fn a_streamed_two_step_tool_conversation_in_every_format() {
    for i in 0..CLIENTS {
        let fake = FakeModel::start(two_step_script()).await.unwrap();
        let client = clients(&fake).remove(i);
        let mut request =
            ModelRequest::new("model-x", vec![Message::user("What is in notes/a_file_with_a_long_name.md?")]);
        request.tools = tools();

        let first = client.complete(&request, &CallOptions::default()).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse, "{}", client.name());
        let call = first.tool_uses().next().unwrap().clone();
        assert_eq!(call.input.as_json(), Some(&json!({"path": "notes/a_file_with_a_long_name.md"})));
        // Chat Completions reports only cache reads; Messages and Responses report writes too.
        let expected_write = if client.name() == "openai" { 0 } else { 1024 };
        assert_eq!(first.usage.cache_write_tokens, expected_write, "{}", client.name());
        assert_eq!(first.usage.input_tokens, 1200);

        std::sync::Arc::make_mut(&mut request.messages).push(first.into_message());
        std::sync::Arc::make_mut(&mut request.messages).push(Message {
            role: Role::Tool,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(&call.id, "hello"))],
        });
        let second = client.complete(&request, &CallOptions::default()).await.unwrap();
        assert_eq!(second.text(), "The file says hello.");
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        assert_eq!(
            second.usage,
            Usage {
                input_tokens: 1300,
                output_tokens: 12,
                cache_read_tokens: 1024,
                cache_write_tokens: 0,
                reasoning_tokens: 0
            },
            "{}",
            client.name()
        );

        // The fake validated the history: the tool result answered the call by id.
        let sent = fake.requests();
        assert_eq!(sent.len(), 2);
        let body = sent[1].body.to_string();
        assert!(body.contains(call.id.as_str()), "{body}");
    }
}

async fn fault_outcome(i: usize, fault: Fault) -> (Result<String, ProviderError>, usize) {
    let fake = FakeModel::start(Script::new(vec![Turn::text("recovered"); 3])).await.unwrap();
    fake.push_fault(fault);
    let client = clients(&fake).remove(i);
    let request = ModelRequest::new("m", vec![Message::user("hi")]);
    let result = client.complete(&request, &CallOptions::default()).await.map(|r| r.text());
    (result, fake.requests().len())
}

#[tokio::test]
async fn retryable_statuses_are_retried_to_success() {
    for i in 0..CLIENTS {
        for status in [429, 500, 503, 529] {
            let fault = Fault::Status {
                status,
                body: None,
                retry_after: None,
                retry_after_ms: Some(10),
                should_retry: None,
            };
            let (result, requests) = fault_outcome(i, fault).await;
            assert_eq!(result.unwrap(), "recovered", "client {i} status {status}");
            assert_eq!(requests, 2);
        }
        let (result, _) = fault_outcome(i, Fault::Html { status: 502 }).await;
        assert_eq!(result.unwrap(), "recovered");
        let (result, _) = fault_outcome(i, Fault::Latency { ms: 20 }).await;
        assert_eq!(result.unwrap(), "recovered");
    }
}

#[tokio::test]
async fn non_retryable_faults_end_in_typed_errors() {
    for i in 0..CLIENTS {
        let (result, requests) = fault_outcome(i, Fault::status(400)).await;
        assert!(matches!(result, Err(ProviderError::BadRequest { .. })), "{result:?}");
        assert_eq!(requests, 1);
        let (result, _) = fault_outcome(i, Fault::status(401)).await;
        assert!(matches!(result, Err(ProviderError::Auth { .. })), "{result:?}");
        let (result, _) = fault_outcome(i, Fault::CutAfter { events: 2 }).await;
        assert!(matches!(result, Err(ProviderError::Network { .. })), "client {i}: {result:?}");
        let (result, _) = fault_outcome(i, Fault::MalformedChunk { after_events: 2 }).await;
        assert!(matches!(result, Err(ProviderError::Protocol { .. })), "client {i}: {result:?}");
    }
}

#[tokio::test]
async fn malformed_tool_arguments_are_kept_raw() {
    for i in 0..CLIENTS {
        let fake = FakeModel::start(Script::new(vec![Turn::call("read_file", r#"{"path": "a.txt""#)]))
            .await
            .unwrap();
        let client = clients(&fake).remove(i);
        let mut request = ModelRequest::new("m", vec![Message::user("hi")]);
        request.tools = tools();
        let response = client.complete(&request, &CallOptions::default()).await.unwrap();
        let call = response.tool_uses().next().unwrap();
        assert!(call.input.as_json().is_none(), "{}: {:?}", client.name(), call.input);
        assert_eq!(call.input.to_wire_string(), r#"{"path": "a.txt""#);
    }
}

#[tokio::test]
async fn context_exceeded_is_recognized() {
    for i in 0..CLIENTS {
        let body = if name(i) != "anthropic" {
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
        } else {
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
        };
        let fault = Fault::Status {
            status: 400,
            body: Some(body.into()),
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
        };
        let (result, _) = fault_outcome(i, fault).await;
        assert!(matches!(result, Err(ProviderError::ContextExceeded { .. })), "{result:?}");
    }
}

/// The fake speaks the deferred-tools beta as the API does: `defer_loading` and
/// `tool_reference` are accepted with the beta header (which the client sends), a reference must
/// name a deferred tool, and not every tool may be deferred.
#[tokio::test]
async fn anthropic_deferred_tools_round_trip_with_the_beta() {
    let script = Script::new(vec![
        Turn::call("tool_search", r#"{"query":"weather"}"#),
        Turn::call("weather__forecast", r#"{"city":"Oslo"}"#),
    ]);
    let fake = FakeModel::start(script).await.unwrap();
    let client = clients(&fake).remove(2);
    let mut request = ModelRequest::new("model-x", vec![Message::user("Weather in Oslo?")]);
    request.tools = Arc::from(vec![
        ToolSpec::new("tool_search", "Search deferred tools.", json!({"type": "object"})),
        ToolSpec::new("weather__forecast", "Forecast.", json!({"type": "object"})).deferred(),
    ]);
    let first = client.complete(&request, &CallOptions::default()).await.unwrap();
    let call = first.tool_uses().next().unwrap().clone();
    std::sync::Arc::make_mut(&mut request.messages).push(first.into_message());
    std::sync::Arc::make_mut(&mut request.messages).push(Message {
        role: Role::Tool,
        content: vec![ContentBlock::ToolResult(
            ToolResult::ok(&call.id, "Found: weather__forecast")
                .with_tool_references(vec!["weather__forecast".into()]),
        )],
    });
    let second = client.complete(&request, &CallOptions::default()).await.unwrap();
    assert_eq!(second.tool_uses().next().unwrap().name, "weather__forecast");
    let sent = fake.requests();
    assert_eq!(sent[1].header("anthropic-beta"), Some(tackle_provider::DEFERRED_TOOLS_BETA));
    assert_eq!(sent[1].body["messages"][2]["content"][0]["content"][0]["type"], "tool_reference");

    // What the real API refuses, the fake refuses too.
    let fake = FakeModel::start(Script::new(vec![Turn::text("never")])).await.unwrap();
    let client = clients(&fake).remove(2);
    let mut all_deferred = ModelRequest::new("model-x", vec![Message::user("hi")]);
    all_deferred.tools = Arc::from(vec![ToolSpec::new("a", "A.", json!({"type": "object"})).deferred()]);
    let err = client.complete(&all_deferred, &CallOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("at least one tool must be loaded"), "{err}");
    let mut stray = request.clone();
    stray.tools = Arc::from(vec![
        ToolSpec::new("tool_search", "Search deferred tools.", json!({"type": "object"})),
        ToolSpec::new("weather__forecast", "Forecast.", json!({"type": "object"})),
        ToolSpec::new("other", "Other.", json!({"type": "object"})).deferred(),
    ]);
    let err = client.complete(&stray, &CallOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("does not name a tool with defer_loading"), "{err}");
}

/// The turns of the reasoning round trip.
fn reasoning_script() -> Script {
    Script::new(vec![
        Turn::text("Reading.")
            .with_reasoning("Reading the file answers the question; call read_file. Ünïcode too.")
            .with_call("read_file", r#"{"path": "notes/a.md"}"#)
            .with_usage(Usage {
                input_tokens: 900,
                output_tokens: 80,
                reasoning_tokens: 64,
                ..Usage::default()
            }),
        Turn::text("It says hello.").with_stop(StopReason::MaxTokens),
    ])
}

/// Reasoning survives the round trip: the item the API streamed (encrypted content included)
/// is kept as an opaque block and goes back in the next request exactly as it came, before the
/// call it led to; the fake checks the blob as the API does.
#[tokio::test]
async fn responses_reasoning_goes_back_verbatim() {
    let fake = FakeModel::start(reasoning_script()).await.unwrap();
    let client = clients(&fake).remove(1);
    let mut request = ModelRequest::new("model-x", vec![Message::user("What is in notes/a.md?")]);
    request.tools = tools();
    let first = client.complete(&request, &CallOptions::default()).await.unwrap();
    assert_eq!(first.usage.reasoning_tokens, 64);
    let reasoning = match &first.content[0] {
        ContentBlock::Reasoning(r) => r.clone(),
        other => panic!("reasoning first, got {other:?}"),
    };
    assert_eq!(reasoning.format, tackle_provider::REASONING_FORMAT);
    assert!(reasoning.data["encrypted_content"].is_string(), "{:?}", reasoning.data);
    let call = first.tool_uses().next().unwrap().clone();
    std::sync::Arc::make_mut(&mut request.messages).push(first.into_message());
    std::sync::Arc::make_mut(&mut request.messages)
        .push(Message::tool_results([ToolResult::ok(&call.id, "hello")]));
    let second = client.complete(&request, &CallOptions::default()).await.unwrap();
    assert_eq!(second.text(), "It says hello.");
    assert_eq!(second.stop_reason, StopReason::MaxTokens, "an incomplete response ran out of tokens");

    let sent = fake.requests();
    let streamed = streamed_reasoning_item(&sent[0].raw_body).await;
    let sent_back = String::from_utf8(sent[1].raw_body.to_vec()).unwrap();
    assert!(sent_back.contains(&streamed), "{streamed}\nnot in\n{sent_back}");
    let input = sent[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "message", "function_call", "function_call_output"]);
    assert_eq!(sent[1].body["store"], false);
    assert_eq!(sent[1].body["include"], json!(["reasoning.encrypted_content"]));
}

/// The exact bytes of the reasoning item a fresh fake streams for `body` (the fake is
/// deterministic, so it is the item the client received).
async fn streamed_reasoning_item(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Event<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow, default)]
        item: Option<&'a serde_json::value::RawValue>,
    }
    let fake = FakeModel::start(reasoning_script()).await.unwrap();
    let text = reqwest::Client::new()
        .post(format!("{}/v1/responses", fake.base_url()))
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else { continue };
        let event: Event<'_> = serde_json::from_str(data).unwrap();
        if let Some(item) = event
            .item
            .filter(|i| event.kind == "response.output_item.done" && i.get().contains("\"reasoning\""))
        {
            return item.get().to_owned();
        }
    }
    panic!("no reasoning item in\n{text}");
}
