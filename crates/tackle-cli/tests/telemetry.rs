//! Traces and metrics of the real binary: a two-step tool turn against the testkit's fake
//! model, its GenAI spans exported over OTLP/HTTP to a collector in this test (decoding the
//! protobuf export requests), and `GET /metrics` of `tackle serve` parsed as Prometheus text.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use tackle_protocol::Usage;
use tackle_testkit::{FakeModel, Fault, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const API_KEY: &str = "sk-test-SECRET-provider-key-1234";
const USER_TOKEN: &str = "user-token-SECRET-0123456789abcdef";
const SCRAPE_TOKEN: &str = "scrape-token-SECRET-0123456789abcdef";
const FILE_TEXT: &str = "the-file-content-PRIVATE";
const PROMPT: &str = "what does hello.txt say? PROMPT-PRIVATE";
const ANSWER: &str = "It says ANSWER-PRIVATE.";

/// An OTLP/HTTP collector: every span of every `POST /v1/traces`, and the raw bodies.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Span>>>,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    async fn start() -> (Self, String) {
        Self::start_on("127.0.0.1:0").await
    }

    async fn start_on(addr: &str) -> (Self, String) {
        let collector = Self::default();
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(receive))
            .with_state(collector.clone());
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("the collector cannot listen on {addr}: {e}"));
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (collector, base)
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits until spans named each of `names` arrived in the trace `trace_id` (the batch
    /// exporter sends every 100 ms here, and a request's span may close after the turn's, in a
    /// later batch); returns that trace's spans.
    async fn wait_for(&self, trace_id: &str, names: &[&str]) -> Vec<Span> {
        for _ in 0..200 {
            let spans: Vec<Span> =
                self.spans().into_iter().filter(|s| hex(&s.trace_id) == trace_id).collect();
            if names.iter().all(|n| spans.iter().any(|s| s.name == *n)) {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "not all of {names:?} arrived; got {:?}",
            self.spans().iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }

    /// Every byte the collector received, as text where it is text: a secret must be nowhere.
    fn everything(&self) -> String {
        self.bodies.lock().unwrap().iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect()
    }
}

async fn receive(State(c): State<Collector>, headers: axum::http::HeaderMap, body: Bytes) -> Vec<u8> {
    assert_eq!(headers["content-type"], "application/x-protobuf");
    let request = ExportTraceServiceRequest::decode(body.as_ref()).expect("a valid OTLP protobuf export");
    c.bodies.lock().unwrap().push(body.to_vec());
    let mut spans = c.spans.lock().unwrap();
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            spans.extend(scope.spans);
        }
    }
    // An empty ExportTraceServiceResponse.
    Vec::new()
}

/// A span's attributes as strings (ints and bools printed).
fn attrs(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::BoolValue(b)) => b.to_string(),
                Some(Any::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), v)
        })
        .collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "one {name} span; got {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

fn tackle(home: &Path, fake: &FakeModel, collector: Option<&str>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("TACKLE_PROVIDER", "openai")
        .env("TACKLE_MODEL", "gpt-test")
        .env("OPENAI_API_KEY", API_KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdin(Stdio::null());
    if let Some(endpoint) = collector {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    }
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage { input_tokens: input, cache_read_tokens: cached, output_tokens: output, ..Usage::default() }
}

/// Reads `hello.txt`, then answers: two steps, one tool call, with cache reads on the second.
fn two_step_script() -> Script {
    Script::new(vec![
        Turn::text("Reading.")
            .with_call_id("call_read_1", "read_file", r#"{"path": "hello.txt"}"#)
            .with_usage(usage(1200, 0, 30)),
        Turn::text(ANSWER).with_usage(usage(1300, 1024, 12)),
    ])
}

/// A served turn with a caller's `traceparent`: its spans reach the collector as children of
/// the caller's trace, named and attributed after the GenAI conventions, with no content and
/// no secret; a retried rate limit is an event of its call; `/metrics` (scrape token only)
/// counts exactly that turn.
#[tokio::test]
async fn a_served_tool_turn_is_traced_to_an_otlp_collector_and_counted_in_metrics() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), FILE_TEXT).unwrap();
    // The provider answers with a dated snapshot of the requested alias, as OpenAI does.
    let mut script = two_step_script();
    script.model = Some("gpt-test-2026-01-01".into());
    let fake = FakeModel::start(script).await.unwrap();
    let (collector, endpoint) = Collector::start().await;
    let mut cmd = tackle(home.path(), &fake, Some(&endpoint));
    cmd.env("TACKLE_SERVER_TOKENS", format!("alice:{USER_TOKEN}"))
        .env("TACKLE_SERVER_METRICS_TOKEN_ENV", "SCRAPE")
        .env("SCRAPE", SCRAPE_TOKEN)
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    let base = first.trim().strip_prefix("tackle serving on ").expect(&first).to_owned();
    let client = reqwest::Client::new();

    // /metrics: the scrape token or a user's opens it; nothing else does, and the scrape token
    // opens nothing but /metrics.
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(status(client.get(format!("{base}/metrics")).send().await.unwrap()), 401);
    let wrong = client.get(format!("{base}/metrics")).bearer_auth("scrape-token-SECRET-0123456789abcdeX");
    assert_eq!(status(wrong.send().await.unwrap()), 401);
    let as_scraper = client.get(format!("{base}/v1/sessions")).bearer_auth(SCRAPE_TOKEN);
    assert_eq!(status(as_scraper.send().await.unwrap()), 401);
    let as_user = client.get(format!("{base}/metrics")).bearer_auth(USER_TOKEN);
    assert_eq!(status(as_user.send().await.unwrap()), 200);

    let session: Value = client
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(USER_TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    // The first model request is rate limited once; the provider retries it.
    fake.push_fault(Fault::Status {
        status: 429,
        body: None,
        retry_after: None,
        retry_after_ms: Some(10),
        should_retry: None,
    });
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let turn: Value = client
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .bearer_auth(USER_TOKEN)
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&json!({"message": PROMPT, "stream": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(turn["end"], "completed", "{turn}");
    assert_eq!(turn["steps"], 2);

    let spans = collector.wait_for(trace_id, &["invoke_agent tackle", "request"]).await;
    // Named `invoke_agent {gen_ai.agent.name}`, and no span carries the `tracing` target.
    let agent = one(&spans, "invoke_agent tackle");
    for span in &spans {
        assert!(!attrs(span).contains_key("target"), "{}: {:?}", span.name, attrs(span));
    }
    let tool = one(&spans, "execute_tool read_file");
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat gpt-test").collect();
    assert_eq!(chats.len(), 2, "{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    // The request's span is the caller's child; the turn's spans hang under it.
    let request = spans.iter().find(|s| s.name == "request").expect("the request's span");
    assert_eq!(hex(&request.parent_span_id), caller_span);
    assert_eq!(agent.parent_span_id, request.span_id);
    for child in chats.iter().copied().chain([tool]) {
        assert_eq!(child.parent_span_id, agent.span_id, "{} is a child of invoke_agent", child.name);
    }

    let a = attrs(agent);
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.provider.name"], "openai");
    assert_eq!(a["gen_ai.request.model"], "gpt-test");
    assert_eq!(a["gen_ai.conversation.id"], id);
    assert_eq!(a["gen_ai.usage.input_tokens"], "2500");
    assert_eq!(a["gen_ai.usage.output_tokens"], "42");
    assert_eq!(a["tackle.turn.steps"], "2");
    assert_eq!(a["tackle.turn.end"], "completed");

    let mut chats: Vec<HashMap<String, String>> = chats.iter().map(|s| attrs(s)).collect();
    chats.sort_by_key(|c| c["gen_ai.usage.input_tokens"].parse::<u64>().unwrap());
    for (c, span) in chats.iter().zip(spans.iter().filter(|s| s.name == "chat gpt-test")) {
        assert_eq!(span.kind, SpanKind::Client as i32);
        assert_eq!(c["gen_ai.operation.name"], "chat");
        assert_eq!(c["gen_ai.provider.name"], "openai");
        assert_eq!(c["gen_ai.request.model"], "gpt-test");
        assert_eq!(c["gen_ai.response.model"], "gpt-test-2026-01-01", "{c:?}");
        assert_eq!(c["gen_ai.request.stream"], "true");
        assert!(c["gen_ai.response.time_to_first_chunk"].parse::<f64>().unwrap() >= 0.0, "{c:?}");
        assert!(!c.contains_key("error.type"), "{c:?}");
    }
    assert_eq!(chats[0]["gen_ai.usage.input_tokens"], "1200");
    assert_eq!(chats[0]["gen_ai.usage.output_tokens"], "30");
    assert_eq!(chats[0]["gen_ai.response.finish_reasons"], "tool_use");
    // The provider's own ids of the two responses (the fake numbers them by script turn).
    assert_eq!(chats[0]["gen_ai.response.id"], "chatcmpl-fake0", "{:?}", chats[0]);
    assert_eq!(chats[1]["gen_ai.response.id"], "chatcmpl-fake1", "{:?}", chats[1]);
    // The retried rate limit is an event of the first call's span, with its class.
    let first =
        spans.iter().find(|s| s.name == "chat gpt-test" && attrs(s)["gen_ai.usage.input_tokens"] == "1200");
    let events = &first.unwrap().events;
    let retries: Vec<_> = events.iter().filter(|e| e.name == "provider error; retrying").collect();
    assert_eq!(retries.len(), 1, "{events:?}");
    let event =
        retries[0].attributes.iter().find(|kv| kv.key == "error.type").and_then(|kv| kv.value.clone());
    assert!(format!("{event:?}").contains("rate_limited"), "{events:?}");
    assert_eq!(chats[1]["gen_ai.usage.input_tokens"], "1300");
    assert_eq!(chats[1]["gen_ai.usage.cache_read.input_tokens"], "1024");
    assert_eq!(chats[1]["gen_ai.usage.output_tokens"], "12");
    assert_eq!(chats[1]["gen_ai.response.finish_reasons"], "end_turn");

    let t = attrs(tool);
    assert_eq!(t["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t["gen_ai.tool.name"], "read_file");
    assert_eq!(t["gen_ai.tool.call.id"], "call_read_1");
    assert_eq!(t["gen_ai.tool.type"], "function");
    assert_eq!(t["tackle.tool.outcome"], "ok");

    // No content without the opt-in, and no secret ever: not in any attribute, not in any byte.
    let everything = collector.everything();
    for secret in
        [API_KEY, USER_TOKEN, SCRAPE_TOKEN, FILE_TEXT, "PROMPT-PRIVATE", "ANSWER-PRIVATE", "hello.txt"]
    {
        assert!(!everything.contains(secret), "{secret} was exported");
    }
    assert!(!a.contains_key("gen_ai.output.messages") && !t.contains_key("gen_ai.tool.call.result"));

    // /metrics counts exactly this turn.
    let text = client
        .get(format!("{base}/metrics"))
        .bearer_auth(SCRAPE_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let m = parse_metrics(&text);
    assert_eq!(m["tackle_turns_total{end=completed}"], 1.0, "{text}");
    assert_eq!(m["tackle_steps_total{}"], 2.0);
    assert_eq!(m["tackle_model_calls_total{model=gpt-test,outcome=ok,provider=openai}"], 2.0);
    assert_eq!(m["tackle_tool_calls_total{outcome=ok,tool=read_file}"], 1.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-test,provider=openai,type=input}"], 2500.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-test,provider=openai,type=cached}"], 1024.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-test,provider=openai,type=output}"], 42.0);
    assert!((m["tackle_prompt_cache_hit_ratio{}"] - 1024.0 / 2500.0).abs() < 1e-9);
    assert_eq!(m["tackle_turn_duration_seconds_count{}"], 1.0);
    assert_eq!(m["tackle_model_call_duration_seconds_count{model=gpt-test,provider=openai}"], 2.0);
    assert_eq!(m["tackle_tool_call_duration_seconds_count{tool=read_file}"], 1.0);
    assert_eq!(m["tackle_provider_errors_total{class=rate_limited,provider=openai}"], 1.0, "{text}");
    assert_eq!(m.keys().filter(|k| k.starts_with("tackle_provider_errors_total")).count(), 1, "{text}");
    assert!(!text.contains("SECRET") && !text.contains("PRIVATE"));

    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert!(status.success());
}

/// `tackle run` with `telemetry.record_content` on: the answer, the tool's arguments and its
/// result are on the spans, flushed before the process exits; the API key still is not.
#[tokio::test]
async fn content_is_exported_only_when_opted_in_and_spans_are_flushed_at_exit() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), FILE_TEXT).unwrap();
    let fake = FakeModel::start(two_step_script()).await.unwrap();
    let (collector, endpoint) = Collector::start().await;
    let mut cmd = tackle(home.path(), &fake, Some(&endpoint));
    // A long schedule delay: only the flush at exit can deliver the spans in time.
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .env("TACKLE_TELEMETRY_RECORD_CONTENT", "true")
        .args(["run", PROMPT, "--json", "--workspace"])
        .arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spans = collector.spans();
    let tool = attrs(one(&spans, "execute_tool read_file"));
    assert_eq!(tool["gen_ai.tool.call.arguments"], r#"{"path":"hello.txt"}"#);
    assert!(tool["gen_ai.tool.call.result"].contains(FILE_TEXT), "{tool:?}");
    let answers: Vec<String> = spans
        .iter()
        .filter(|s| s.name == "chat gpt-test")
        .filter_map(|s| attrs(s).get("gen_ai.output.messages").cloned())
        .collect();
    assert!(answers.iter().any(|m| m.contains("ANSWER-PRIVATE")), "{answers:?}");
    assert!(!collector.everything().contains(API_KEY));
}

/// Without `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is exported, not even to the OTLP default
/// address (`localhost:4318`, where the collector listens: an exporter built with defaults would
/// reach it, as the positive control shows); an unsupported protocol is a usage error before any
/// model request.
#[tokio::test]
async fn no_endpoint_exports_nothing_and_an_unsupported_protocol_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(Script::new(vec![Turn::text("hi"), Turn::text("hi")])).await.unwrap();
    let (collector, endpoint) = Collector::start_on("127.0.0.1:4318").await;
    // Positive control: given the address, the process exports before it exits.
    let mut cmd = tackle(home.path(), &fake, Some(&endpoint));
    cmd.args(["run", "hi", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!collector.spans().is_empty(), "the exporter flushes at exit");
    collector.spans.lock().unwrap().clear();

    let mut cmd = tackle(home.path(), &fake, None);
    cmd.env("OTEL_SERVICE_NAME", "x").args(["run", "hi", "--workspace"]).arg(home.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(collector.spans().is_empty(), "exported without an endpoint: {:?}", collector.spans().len());

    let mut cmd = tackle(home.path(), &fake, Some(&endpoint));
    cmd.env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc").args(["run", "hi", "--workspace"]).arg(home.path());
    let requests_before = fake.requests().len();
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && stderr.contains("http/protobuf"), "{stderr}");
    assert_eq!(fake.requests().len(), requests_before);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every sample of a Prometheus text page by name and sorted labels (histogram counts and sums
/// as `_count` / `_sum`), parsed by `prometheus-parse`.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text");
    let mut out = HashMap::new();
    for s in scrape.samples {
        let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let labels = labels.join(",");
        match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => {
                out.insert(format!("{}{{{labels}}}", s.metric), v);
            }
            prometheus_parse::Value::Histogram(buckets) => {
                let count = buckets.iter().map(|b| b.count).fold(0.0, f64::max);
                out.insert(format!("{}_count{{{labels}}}", s.metric), count);
            }
            prometheus_parse::Value::Summary(_) => {}
        }
    }
    out
}
