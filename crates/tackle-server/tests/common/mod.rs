//! A server over a real store and real tools, talking to the scripted fake model.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tackle_agent::Agent;
use tackle_provider::{
    OpenAiChat, OpenAiDialect, OpenAiResponses, Provider, ProviderConfig, ProviderKind, RetryPolicy,
};
use tackle_server::{AppState, ServerConfig, UserToken, router};
use tackle_store::Store;
use tackle_testkit::{FakeModel, Script};
use tackle_tools::{ApprovalMode, ApprovalQueue};
use tower::ServiceExt;

pub const ALICE: &str = "alice-token-0123456789";
pub const BOB: &str = "bob-token-0123456789ab";

pub struct Harness {
    pub fake: FakeModel,
    pub state: AppState,
    pub store: Store,
    pub workspace: tempfile::TempDir,
    pub db: tempfile::TempDir,
}

pub fn tokens() -> Vec<UserToken> {
    vec![UserToken::new("alice", ALICE), UserToken::new("bob", BOB)]
}

impl Harness {
    /// A server without tokens (the `local` user).
    pub async fn new(script: Script) -> Self {
        Self::with(script, Vec::new()).await
    }

    pub async fn with(script: Script, tokens: Vec<UserToken>) -> Self {
        Self::configured(script, tokens, |_| {}).await
    }

    /// A server whose agent and gateway speak `kind` (Chat Completions, Responses or Anthropic
    /// Messages) to the fake.
    pub async fn with_provider(script: Script, tokens: Vec<UserToken>, kind: ProviderKind) -> Self {
        Self::build(script, tokens, kind, |_| {}).await
    }

    /// A server whose configuration `configure` adjusts.
    pub async fn configured(
        script: Script,
        tokens: Vec<UserToken>,
        configure: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::build(script, tokens, ProviderKind::Openai, configure).await
    }

    async fn build(
        script: Script,
        tokens: Vec<UserToken>,
        kind: ProviderKind,
        configure: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::build_with(script, tokens, kind, configure, |b| b).await
    }

    /// A server without tokens whose agent `customize` adjusts (plan mode, checkpoints, hooks).
    pub async fn customized(
        script: Script,
        customize: impl FnOnce(tackle_agent::AgentBuilder) -> tackle_agent::AgentBuilder,
    ) -> Self {
        Self::build_with(script, Vec::new(), ProviderKind::Openai, |_| {}, customize).await
    }

    async fn build_with(
        script: Script,
        tokens: Vec<UserToken>,
        kind: ProviderKind,
        configure: impl FnOnce(&mut ServerConfig),
        customize: impl FnOnce(tackle_agent::AgentBuilder) -> tackle_agent::AgentBuilder,
    ) -> Self {
        let fake = FakeModel::start(script).await.unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let db = tempfile::tempdir().unwrap();
        let store = Store::open(&db.path().join("tackle.db")).await.unwrap();
        let approvals = ApprovalQueue::default();
        let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
        // Anthropic's base URL has no `/v1` (its client adds `/v1/messages`).
        let base = match kind {
            ProviderKind::Anthropic => fake.base_url(),
            _ => format!("{}/v1", fake.base_url()),
        };
        let config = ProviderConfig::new(kind).with_base_url(base).with_api_key("sk-test").with_retry(retry);
        let provider: Arc<dyn Provider> = match kind {
            ProviderKind::OpenaiResponses => Arc::new(OpenAiResponses::new(config).unwrap()),
            ProviderKind::Anthropic => Arc::new(tackle_provider::Anthropic::new(config).unwrap()),
            _ => Arc::new(OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap()),
        };
        let builder = Agent::builder(provider)
            .model("model-x")
            .store(store.clone())
            .workspace(workspace.path())
            .hooks(Vec::new(), ApprovalMode::Server)
            .approver(approvals.clone());
        let agent = customize(builder).build().await.unwrap();
        let mut server = ServerConfig::new(workspace.path().to_owned());
        server.tokens = tokens;
        server.models = vec!["model-y".into()];
        server.body_limit = 64 * 1024;
        server.heartbeat = Duration::from_millis(200);
        server.shutdown_grace = Duration::from_secs(5);
        configure(&mut server);
        let state = AppState::new(agent, approvals, server);
        Self { fake, state, store, workspace, db }
    }

    pub fn app(&self) -> Router {
        router(self.state.clone())
    }

    /// Sends a request through the router (no socket).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, bytes) = self.call_raw(method, path, token, body.map(|b| b.to_string())).await;
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        (status, value)
    }

    pub async fn call_raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<String>,
    ) -> (StatusCode, Vec<u8>) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        let request = match body {
            Some(b) => request.header("content-type", "application/json").body(Body::from(b)).unwrap(),
            None => request.body(Body::empty()).unwrap(),
        };
        let response = self.app().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        (status, bytes)
    }

    /// Creates a session and returns its id.
    pub async fn session(&self, token: Option<&str>) -> String {
        let (status, body) =
            self.call(Method::POST, "/v1/sessions", token, Some(serde_json::json!({}))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// Serves on a real socket; returns the base URL.
    pub async fn listen(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = self.app();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}")
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// Parses an SSE body (comments and heartbeats skipped).
pub fn parse_sse(text: &str) -> Vec<Sse> {
    let mut out = Vec::new();
    for frame in text.split("\n\n") {
        let mut id = None;
        let mut event = String::from("message");
        let mut data = String::new();
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
            out.push(Sse { id, event, data });
        }
    }
    out
}

/// Waits until `f` is true (polling), or panics after 10 s.
pub async fn until<F: FnMut() -> Fut, Fut: std::future::Future<Output = bool>>(what: &str, mut f: F) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The Python of the test virtualenv (scripts/test-deps.sh), if installed.
pub fn venv_python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("target/test-deps/venv/bin/python");
    python.is_file().then_some(python)
}

/// A missing peer fails the test under `TACKLE_REQUIRE_PEERS` (scripts/test.sh sets it) and skips
/// it otherwise: `tackle_testkit::peers` decides, for every test.
pub fn missing_peer(what: &str) {
    tackle_testkit::peers::missing(what, "not found where scripts/test-deps.sh installs it");
}

/// Runs `tests/peers/<script>` with the test virtualenv's Python against the server at `base`
/// as Alice; returns the JSON object it prints. Fails with the script's stderr if it fails.
pub async fn run_peer_script(python: &std::path::Path, script: &str, base: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(script);
    let out = tokio::process::Command::new(python).arg(path).arg(base).arg(ALICE).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}
