//! `tackle run --provider openai-responses`: multi-step tool sessions of the real binary against
//! the testkit's fake Responses server and against an independent double
//! (`@copilotkit/aimock`, installed by scripts/test-deps.sh). The reasoning item of each response
//! must come back on the next request exactly as it was streamed, also after the process ends
//! and the session is resumed from the store.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_tackle");

/// A command with a clean environment, a private data directory, and the Responses provider
/// pointed at `base` (which includes `/v1`).
fn tackle(home: &Path, base: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", base)
        .env("TACKLE_RESPONSES_REASONING_SUMMARY", "auto")
        .stdin(Stdio::null());
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// One exchange seen by the [`Recorder`]: the exact request and response bodies.
#[derive(Clone, Debug)]
struct Exchange {
    request: String,
    response: String,
}

/// A forwarding proxy in front of a model server that records the exact bytes both ways.
#[derive(Clone)]
struct Recorder {
    upstream: String,
    client: reqwest::Client,
    seen: Arc<Mutex<Vec<Arc<Mutex<Exchange>>>>>,
}

impl Recorder {
    /// Serves on a free port; returns the recorder and its base URL.
    async fn start(upstream: String) -> (Self, String) {
        let recorder = Self { upstream, client: reqwest::Client::new(), seen: Arc::default() };
        let app = axum::Router::new().fallback(forward).with_state(recorder.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (recorder, base)
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.seen.lock().unwrap().iter().map(|e| e.lock().unwrap().clone()).collect()
    }
}

async fn forward(State(r): State<Recorder>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let exchange = Arc::new(Mutex::new(Exchange { request: text(&body), response: String::new() }));
    r.seen.lock().unwrap().push(exchange.clone());
    let mut upstream = r.client.request(parts.method, format!("{}{}", r.upstream, parts.uri));
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            upstream = upstream.header(name, value);
        }
    }
    let answer = upstream.body(body).send().await.unwrap();
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        response = response.header(name, value);
    }
    let stream = answer.bytes_stream().map(move |chunk| {
        let chunk: Bytes = chunk?;
        exchange.lock().unwrap().response.push_str(&String::from_utf8_lossy(&chunk));
        Ok::<_, reqwest::Error>(chunk)
    });
    response.body(Body::from_stream(stream)).unwrap()
}

/// The reasoning items of a streamed response, as the exact JSON text of each
/// `response.output_item.done` item.
fn streamed_reasoning(sse: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Done<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow, default)]
        item: Option<&'a serde_json::value::RawValue>,
    }
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
        .filter_map(|data| {
            let done: Done<'_> = serde_json::from_str(data).ok()?;
            let item = done.item?;
            let is_reasoning = serde_json::from_str::<Value>(item.get()).ok()?["type"] == "reasoning";
            (done.kind == "response.output_item.done" && is_reasoning).then(|| item.get().to_owned())
        })
        .collect()
}

/// Every reasoning item streamed before a request is in it, verbatim, right before the call
/// it led to.
fn assert_reasoning_returned_verbatim(exchanges: &[Exchange]) {
    let mut streamed: Vec<String> = Vec::new();
    for (i, x) in exchanges.iter().enumerate() {
        for item in &streamed {
            let at = x.request.find(item.as_str());
            assert!(at.is_some(), "request {i} lacks the reasoning item\n{item}\nin\n{}", x.request);
            let after = &x.request[at.unwrap() + item.len()..];
            assert!(after.starts_with(",{\"type\":\"function_call\""), "request {i}: {after:.80}");
        }
        let body: Value = serde_json::from_str(&x.request).unwrap();
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["truncation"], "disabled");
        streamed.extend(streamed_reasoning(&x.response));
    }
    assert!(streamed.len() >= 2, "the model reasoned in two steps: {streamed:?}");
}

#[tokio::test]
async fn run_keeps_reasoning_across_tool_calls_and_a_resume_against_the_fake() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there").unwrap();
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("read_file", r#"{"path": "hello.txt"}"#).with_reasoning("Read the file first."),
        Turn::call("list_files", r#"{"path": "."}"#).with_reasoning("Now see what else is here."),
        Turn::text("hello.txt says hi there; it is the only file."),
        Turn::text("Still just hello.txt."),
    ]))
    .await
    .unwrap();
    let (recorder, base) = Recorder::start(fake.base_url()).await;
    let events = home.path().join("events.jsonl");
    let mut cmd = tackle(home.path(), &format!("{base}/v1"));
    cmd.args(["run", "what does hello.txt say?", "--provider", "openai-responses", "--json", "--workspace"])
        .arg(ws.path())
        .arg("--events")
        .arg(&events);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((result["end"].as_str(), result["steps"].as_u64()), (Some("completed"), Some(3)), "{result}");
    assert_eq!(result["text"], "hello.txt says hi there; it is the only file.");
    let exchanges = recorder.exchanges();
    assert_eq!(exchanges.len(), 3);
    assert_reasoning_returned_verbatim(&exchanges);
    let first: Value = serde_json::from_str(&exchanges[0].request).unwrap();
    let session = result["session_id"].as_str().unwrap().to_owned();
    assert_eq!(first["prompt_cache_key"], session.as_str(), "one cache per session");
    assert!(
        first["instructions"]
            .as_str()
            .unwrap()
            .starts_with("You are an agent working in a software workspace"),
        "the system prompt is the instructions"
    );
    assert!(first["tools"].as_array().unwrap().iter().all(|t| t["strict"].is_boolean()));
    // The summaries streamed as reasoning deltas.
    let reasoning: String = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "reasoning_delta")
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reasoning, "Read the file first.Now see what else is here.");

    // A new process resumes the session from the store: the items still go back verbatim.
    let mut cmd = tackle(home.path(), &format!("{base}/v1"));
    cmd.args(["run", "anything else?", "--provider", "openai-responses", "--json", "--session", &session])
        .arg("--workspace")
        .arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let exchanges = recorder.exchanges();
    assert_eq!(exchanges.len(), 4);
    let resumed = &exchanges[3].request;
    for item in exchanges[..3].iter().flat_map(|x| streamed_reasoning(&x.response)) {
        assert!(resumed.contains(&item), "the resumed request lacks {item}");
    }
    // The fake checked every request as the API does (encrypted content untouched).
    assert!(fake.requests().iter().all(|r| r.path == "/v1/responses"));
}

/// `@copilotkit/aimock`'s CLI, or `None` (a failure under `TACKLE_REQUIRE_PEERS`).
fn aimock() -> Option<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("target/test-deps/node/node_modules/@copilotkit/aimock/dist/cli.js");
    if path.is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(), "aimock missing: run scripts/test-deps.sh");
    eprintln!("skipped: @copilotkit/aimock is not installed (run scripts/test-deps.sh)");
    None
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn run_against_aimock_an_independent_responses_double() {
    let Some(cli) = aimock() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures = dir.path().join("fixtures.json");
    std::fs::write(
        &fixtures,
        // First match wins, and a user message stays the last one through the tool rounds: the
        // fixtures answering tool results come first.
        json!({"fixtures": [
            {"match": {"toolCallId": "call_read"},
             "response": {"reasoning": "Now see what else is here.",
                          "toolCalls": [{"id": "call_list", "name": "list_files", "arguments": {"path": "."}}]}},
            {"match": {"toolCallId": "call_list"},
             "response": {"content": "hello.txt says hi there; it is the only file."}},
            {"match": {"userMessage": "what does hello.txt say"},
             "response": {"reasoning": "Read the file first.",
                          "toolCalls": [{"id": "call_read", "name": "read_file", "arguments": {"path": "hello.txt"}}]}}
        ]})
        .to_string(),
    )
    .unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let _server = Child(
        Command::new("node")
            .arg(&cli)
            .args(["--port", &port.to_string(), "--fixtures"])
            .arg(&fixtures)
            .args(["--strict", "--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("node runs aimock"),
    );
    let upstream = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..150 {
        if client
            .get(format!("{upstream}/__aimock/journal"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "aimock did not start on port {port}");
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there").unwrap();
    let (recorder, base) = Recorder::start(upstream).await;
    let mut cmd = tackle(home.path(), &format!("{base}/v1"));
    cmd.env("TACKLE_PROVIDER", "openai-responses")
        .env("TACKLE_MODEL", "gpt-5")
        .args(["run", "what does hello.txt say?", "--json", "--workspace"])
        .arg(ws.path());
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], "hello.txt says hi there; it is the only file.", "{result}");
    assert_eq!(result["steps"], 3);
    let exchanges = recorder.exchanges();
    assert_eq!(exchanges.len(), 3);
    assert_reasoning_returned_verbatim(&exchanges);
    // aimock's blob names its item; the item that went back is the one it made.
    let second: Value = serde_json::from_str(&exchanges[1].request).unwrap();
    let item = second["input"].as_array().unwrap().iter().find(|i| i["type"] == "reasoning").unwrap().clone();
    assert!(item["encrypted_content"].as_str().is_some_and(|b| !b.is_empty()), "{item}");
    assert_eq!(item["summary"][0]["text"], "Read the file first.");
}
