//! The fake model server: routes, script playback, faults, recording.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::wire::{self, Frame, RenderCtx};
use crate::{Fault, Script, ScriptMode, validate};

/// The wire format of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    OpenAiChat,
    /// Anthropic Messages (`/v1/messages`).
    AnthropicMessages,
    /// OpenAI Responses (`/v1/responses`).
    OpenAiResponses,
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Its wire format.
    pub wire: WireFormat,
    /// Request path.
    pub path: String,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Parsed body (`null` if it was not JSON).
    pub body: Value,
    /// The exact body bytes.
    pub raw_body: Bytes,
}

impl RecordedRequest {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Counters of the model requests a fake server received, served at `GET /_fake/stats` (and
/// zeroed by `POST /_fake/reset`) so a benchmark driver in another process can check the traffic
/// each client made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FakeStats {
    /// Model requests received.
    pub requests: u64,
    /// Their body bytes.
    pub bytes_in: u64,
    /// When the first one arrived, in microseconds since the Unix epoch.
    pub first_request_unix_us: Option<u64>,
    /// When the last one arrived, in microseconds since the Unix epoch.
    pub last_request_unix_us: Option<u64>,
    /// TCP connections accepted (clients that reuse connections open one).
    pub connections: u64,
}

struct Inner {
    script: Script,
    cache: crate::SimulatedCache,
    cursor: usize,
    faults: VecDeque<Fault>,
    requests: Vec<RecordedRequest>,
    record: bool,
    stats: FakeStats,
}

type Shared = Arc<Mutex<Inner>>;

/// A running fake model server. Dropping it shuts the server down.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// use tackle_testkit::{FakeModel, Script, Turn};
/// let fake = FakeModel::start(Script::new(vec![Turn::text("hello")])).await.unwrap();
/// assert!(fake.base_url().starts_with("http://127.0.0.1:"));
/// fake.shutdown().await;
/// # });
/// ```
pub struct FakeModel {
    addr: SocketAddr,
    inner: Shared,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel").field("addr", &self.addr).finish()
    }
}

impl FakeModel {
    /// Starts a server on `127.0.0.1` with a free port.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Starts a server on `addr`.
    pub async fn start_on(addr: SocketAddr, script: Script) -> std::io::Result<Self> {
        let inner: Shared = Arc::new(Mutex::new(Inner {
            script,
            cache: crate::SimulatedCache::default(),
            cursor: 0,
            faults: VecDeque::new(),
            requests: Vec::new(),
            record: true,
            stats: FakeStats::default(),
        }));
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let router = router(inner.clone());
        // Real providers answer with TCP_NODELAY; without it small SSE frames wait for delayed ACKs.
        let counted = inner.clone();
        let listener = axum::serve::ListenerExt::tap_io(listener, move |tcp| {
            let _ = tcp.set_nodelay(true);
            lock(&counted).stats.connections += 1;
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self { addr, inner, stop: Some(stop), task: Some(task) })
    }

    /// `http://127.0.0.1:PORT`, without `/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every model request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.inner).requests.clone()
    }

    /// Whether requests are recorded for [`FakeModel::requests`] (the default). A long benchmark
    /// turns it off: every recorded request keeps its body.
    pub fn set_recording(&self, record: bool) {
        lock(&self.inner).record = record;
    }

    /// Counters of the model requests received (also at `GET /_fake/stats`).
    pub fn stats(&self) -> FakeStats {
        lock(&self.inner).stats
    }

    /// Queues a fault; each request consumes the oldest one.
    pub fn push_fault(&self, fault: Fault) {
        lock(&self.inner).faults.push_back(fault);
    }

    /// Replaces the script and rewinds it.
    pub fn set_script(&self, script: Script) {
        let mut inner = lock(&self.inner);
        inner.script = script;
        inner.cursor = 0;
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn lock(inner: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

fn router(inner: Shared) -> Router {
    Router::new()
        .route(
            "/v1/chat/completions",
            post(|s: State<Shared>, h: HeaderMap, b: Bytes| handle(s, h, b, WireFormat::OpenAiChat)),
        )
        .route(
            "/v1/messages",
            post(|s: State<Shared>, h: HeaderMap, b: Bytes| handle(s, h, b, WireFormat::AnthropicMessages)),
        )
        .route(
            "/v1/responses",
            post(|s: State<Shared>, h: HeaderMap, b: Bytes| handle(s, h, b, WireFormat::OpenAiResponses)),
        )
        .route("/v1/models", get(models))
        .route(
            "/_fake/stats",
            get(|State(inner): State<Shared>| async move { axum::Json(lock(&inner).stats) }),
        )
        .route(
            "/_fake/reset",
            post(|State(inner): State<Shared>| async move {
                lock(&inner).stats = FakeStats::default();
                StatusCode::NO_CONTENT
            }),
        )
        // The real APIs accept requests of up to 32 MB; axum's default is 2 MB.
        .layer(axum::extract::DefaultBodyLimit::max(32 * 1024 * 1024))
        .with_state(inner)
}

async fn models(State(inner): State<Shared>) -> Response {
    let model = lock(&inner).script.model.clone().unwrap_or_else(|| "fake-model".into());
    axum::Json(json!({"object": "list", "data": [{"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "tackle-testkit"}]}))
        .into_response()
}

fn error_response(wire: WireFormat, status: StatusCode, kind: &str, message: &str) -> Response {
    let body = match wire {
        WireFormat::AnthropicMessages => wire::anthropic::error_body(kind, message),
        _ => wire::openai_chat::error_body(kind, message),
    };
    (status, axum::Json(body)).into_response()
}

fn path_of(wire: WireFormat) -> &'static str {
    match wire {
        WireFormat::OpenAiChat => "/v1/chat/completions",
        WireFormat::AnthropicMessages => "/v1/messages",
        WireFormat::OpenAiResponses => "/v1/responses",
    }
}

async fn handle(State(inner): State<Shared>, headers: HeaderMap, raw: Bytes, wire: WireFormat) -> Response {
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let fault = {
        let mut state = lock(&inner);
        let stats = &mut state.stats;
        stats.requests += 1;
        stats.bytes_in += raw.len() as u64;
        stats.first_request_unix_us.get_or_insert(now_us);
        stats.last_request_unix_us = Some(now_us);
        if state.record {
            state.requests.push(RecordedRequest {
                wire,
                path: path_of(wire).to_owned(),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                    .collect(),
                body: body.clone(),
                raw_body: raw.clone(),
            });
        }
        state.faults.pop_front()
    };

    let mut stream_fault = None;
    match fault {
        Some(Fault::Status { status, body: text, retry_after, retry_after_ms, should_retry }) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = match text {
                Some(t) => (code, t).into_response(),
                None => {
                    let kind = match status {
                        429 => "rate_limit_error",
                        529 => "overloaded_error",
                        401 => "authentication_error",
                        s if s >= 500 => "api_error",
                        _ => "invalid_request_error",
                    };
                    error_response(wire, code, kind, &format!("injected fault: HTTP {status}"))
                }
            };
            let h = response.headers_mut();
            if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                h.insert("retry-after", v);
            }
            if let Some(v) = retry_after_ms.and_then(|v| HeaderValue::from_str(&v.to_string()).ok()) {
                h.insert("retry-after-ms", v);
            }
            if let Some(b) = should_retry {
                h.insert("x-should-retry", HeaderValue::from_static(if b { "true" } else { "false" }));
            }
            return response;
        }
        Some(Fault::Html { status }) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            let page = format!(
                "<html><head><title>{status} Bad Gateway</title></head><body><center><h1>{status}</h1></center><hr><center>nginx</center></body></html>"
            );
            return (code, [(header::CONTENT_TYPE, "text/html")], page).into_response();
        }
        Some(Fault::Latency { ms }) => tokio::time::sleep(Duration::from_millis(ms)).await,
        Some(f @ (Fault::CutAfter { .. } | Fault::MalformedChunk { .. } | Fault::Trickle { .. })) => {
            stream_fault = Some(f)
        }
        Some(Fault::Pass) | None => {}
    }

    if body.is_null() {
        return error_response(
            wire,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the request body is not valid JSON",
        );
    }
    if wire == WireFormat::AnthropicMessages {
        if !headers.contains_key("x-api-key") && !headers.contains_key(header::AUTHORIZATION) {
            return error_response(
                wire,
                StatusCode::UNAUTHORIZED,
                "authentication_error",
                "x-api-key header is required",
            );
        }
        if !headers.contains_key("anthropic-version") {
            return error_response(
                wire,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "anthropic-version: header is required",
            );
        }
    }
    if wire == WireFormat::OpenAiResponses
        && let Err(r) = validate::responses(&body)
    {
        let code = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
        let body = wire::responses::error_body(
            "invalid_request_error",
            &r.message,
            r.param.as_deref(),
            r.code.as_deref(),
        );
        return (code, axum::Json(body)).into_response();
    }
    let checked = match wire {
        WireFormat::OpenAiChat => validate::openai_chat(&body),
        WireFormat::AnthropicMessages => {
            let betas: Vec<&str> = headers
                .get_all("anthropic-beta")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .collect();
            validate::anthropic(&body, &betas)
        }
        WireFormat::OpenAiResponses => Ok(()),
    };
    if let Err(message) = checked {
        return error_response(wire, StatusCode::BAD_REQUEST, "invalid_request_error", &message);
    }

    let latency = lock(&inner).script.latency_ms;
    if let Some(ms) = latency {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let (turn, index, chunk, model, whole_items) = {
        let mut state = lock(&inner);
        let requested = body.get("model").and_then(Value::as_str).unwrap_or_default();
        let exhausted = |n: usize| {
            let message =
                format!("fake model script exhausted after {n} turns (no turn matches this request)");
            error_response(wire, StatusCode::INTERNAL_SERVER_ERROR, "api_error", &message)
        };
        let script = &state.script;
        let played = match script.mode {
            ScriptMode::Sequential => {
                let i = state.cursor;
                state.cursor += 1;
                state
                    .script
                    .turns
                    .get(i)
                    .map(|t| (t.clone(), i))
                    .ok_or_else(|| exhausted(state.script.turns.len()))
            }
            ScriptMode::Stateless => script
                .stateless_index(validate::count_tool_results(wire, &body))
                .map(|i| (script.turns[i].clone(), i))
                .ok_or_else(|| exhausted(script.turns.len())),
            ScriptMode::Replay => script
                .stateless_index(validate::count_tool_results_since_user(wire, &body))
                .map(|i| (script.turns[i].clone(), i))
                .ok_or_else(|| exhausted(script.turns.len())),
            ScriptMode::Loop => script
                .loop_turn(requested, validate::count_tool_results(wire, &body))
                .map_err(|m| error_response(wire, StatusCode::BAD_REQUEST, "invalid_request_error", &m)),
        };
        let played = match played {
            Ok(played) => played,
            Err(response) => return response,
        };
        let (mut turn, index) = played;
        let model = state.script.model.clone().unwrap_or_else(|| requested.to_owned());
        if state.script.simulate_cache {
            turn.usage = state.cache.usage(wire, &body, turn.usage.output_tokens);
        }
        (turn, index, state.script.chunk_chars, model, state.script.whole_items)
    };
    let include_usage =
        body.get("stream_options").and_then(|o| o.get("include_usage")).and_then(Value::as_bool)
            == Some(true);
    let ctx = RenderCtx { turn: index, model, chunk, include_usage };
    // What a Responses request asked to be echoed; read only for that format (it copies the
    // request's tools, which Chat Completions and Messages requests do not need).
    let asked = || wire::responses::Asked::from_request(&body);
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    if !stream {
        let json = match wire {
            WireFormat::OpenAiChat => wire::openai_chat::json(&turn, &ctx),
            WireFormat::AnthropicMessages => wire::anthropic::json(&turn, &ctx),
            WireFormat::OpenAiResponses => wire::responses::json(&turn, &ctx, &asked()),
        };
        return json_response(&json, stream_fault);
    }
    let frames = match wire {
        WireFormat::OpenAiChat => wire::openai_chat::stream(&turn, &ctx),
        WireFormat::AnthropicMessages => wire::anthropic::stream(&turn, &ctx),
        WireFormat::OpenAiResponses => {
            let mut frames = wire::responses::stream(&turn, &ctx, &asked());
            if whole_items {
                frames.retain(|f| {
                    !matches!(f.event, Some(e) if e.starts_with("response.") && e != "response.output_item.done"
                        && e != "response.created" && e != "response.in_progress" && e != "response.completed"
                        && e != "response.incomplete")
                });
            }
            frames
        }
    };
    sse_response(frames, stream_fault)
}

#[derive(Debug)]
struct ConnectionCut;

impl std::fmt::Display for ConnectionCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection cut by an injected fault")
    }
}

impl std::error::Error for ConnectionCut {}

/// A whole answer: its JSON, or what a fault makes of it (cut after half its bytes, or half of
/// it sent as if it were all).
fn json_response(json: &Value, fault: Option<Fault>) -> Response {
    let bytes = Bytes::from(serde_json::to_vec(json).unwrap_or_default());
    let half = bytes.slice(..bytes.len() / 2);
    let body = match fault {
        Some(Fault::CutAfter { .. }) => {
            let items: Vec<Result<Bytes, Box<dyn std::error::Error + Send + Sync>>> =
                vec![Ok(half), Err(Box::new(ConnectionCut))];
            // Pause before the cut, so what was sent reaches the client first.
            Body::from_stream(futures::stream::iter(items).then(|item| async move {
                if item.is_err() {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
                item
            }))
        }
        Some(Fault::MalformedChunk { .. }) => Body::from(half),
        _ => Body::from(bytes),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn sse_response(frames: Vec<Frame>, fault: Option<Fault>) -> Response {
    let mut items: Vec<Result<Bytes, Box<dyn std::error::Error + Send + Sync>>> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        match &fault {
            Some(Fault::CutAfter { events }) if i == *events => {
                items.push(Err(Box::new(ConnectionCut)));
                break;
            }
            Some(Fault::MalformedChunk { after_events }) if i == *after_events => {
                items.push(Ok(Bytes::from_static(b"data: {\"choices\": [ this is not json\n\n")));
            }
            _ => {}
        }
        items.push(Ok(Bytes::from(frame.render())));
    }
    // Each frame is its own chunk, as a real server flushes them. Before a cut, pause so what
    // was sent reaches the client first (a real connection dies after the bytes left).
    let trickle = match fault {
        Some(Fault::Trickle { ms }) => Duration::from_millis(ms),
        _ => Duration::ZERO,
    };
    let stream = futures::stream::iter(items).then(move |item| async move {
        if item.is_err() {
            tokio::time::sleep(Duration::from_millis(30)).await;
        } else if !trickle.is_zero() {
            tokio::time::sleep(trickle).await;
        }
        item
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
