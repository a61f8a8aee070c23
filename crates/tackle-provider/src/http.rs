//! HTTP transport shared by the clients: sending with retries and mapping failures.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::HeaderMap;
use serde_json::Value;
use tackle_protocol::StreamEvent;

use crate::retry::server_requested_wait;
use crate::sse::{SseDecoder, SseEvent};
use crate::{CallOptions, Delivery, EncodedRequest, EventStream, ProviderConfig, ProviderError, RetryNotice};

/// The HTTP clients of a provider. Streamed answers go through a client whose every read is
/// limited ([`crate::Timeouts::read`]), so a stalled stream fails; whole answers, whose first
/// byte comes only when the model is done, through a client without that limit, each request
/// limited as a whole instead ([`crate::Timeouts::whole`]). The second client is built on the
/// first whole answer, so a provider that only streams never pays for it.
#[derive(Debug)]
pub(crate) struct HttpClients {
    stream: reqwest::Client,
    whole: std::sync::OnceLock<reqwest::Client>,
}

impl HttpClients {
    /// The clients for `config` (the streaming one built now).
    pub(crate) fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            stream: client_builder(config)
                .read_timeout(config.timeouts.read)
                .build()
                .map_err(cannot_build)?,
            whole: std::sync::OnceLock::new(),
        })
    }

    /// The client of streamed answers and of every other request (model listings).
    pub(crate) fn stream(&self) -> &reqwest::Client {
        &self.stream
    }

    /// The client of whole answers.
    fn whole(&self, config: &ProviderConfig) -> Result<&reqwest::Client, ProviderError> {
        if let Some(client) = self.whole.get() {
            return Ok(client);
        }
        let client = client_builder(config).build().map_err(cannot_build)?;
        Ok(self.whole.get_or_init(|| client))
    }
}

fn client_builder(config: &ProviderConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(config.timeouts.connect)
        .user_agent(concat!("tackle/", env!("CARGO_PKG_VERSION")))
}

fn cannot_build(e: reqwest::Error) -> ProviderError {
    ProviderError::Protocol { message: format!("cannot build the HTTP client: {e}") }
}

/// The serialized body of a request.
pub(crate) fn json_body(body: &impl serde::Serialize) -> Result<Bytes, ProviderError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ProviderError::protocol(format!("cannot serialize the request: {e}")))
}

/// Headers of a streaming JSON request; the key, when there is one, is marked sensitive.
/// `key_header` names where the key goes: `None` for `Authorization: Bearer`, or a header of its
/// own (Anthropic `x-api-key`).
pub(crate) fn stream_headers(
    config: &ProviderConfig,
    key_header: Option<&'static str>,
) -> Result<HeaderMap, ProviderError> {
    use http::{HeaderValue, header};
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(key) = &config.api_key {
        let value = match key_header {
            None => format!("Bearer {}", key.expose()),
            Some(_) => key.expose().to_owned(),
        };
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| ProviderError::Auth { message: "the API key contains invalid characters".into() })?;
        value.set_sensitive(true);
        match key_header {
            None => headers.insert(header::AUTHORIZATION, value),
            Some(name) => headers.insert(name, value),
        };
    }
    Ok(headers)
}

/// Decodes a whole (non-streamed) answer's body into the events its stream would have carried.
pub(crate) type WholeDecode = fn(&[u8], &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;

/// Sends an encoded request as its [`EncodedRequest::delivery`] says: a stream decoded with
/// `wire`, or a whole answer decoded with `whole`.
pub(crate) async fn send_encoded<D: WireDecoder>(
    clients: &HttpClients,
    config: &ProviderConfig,
    headers: &HeaderMap,
    encoded: EncodedRequest,
    options: &CallOptions,
    wire: D,
    whole: WholeDecode,
) -> Result<EventStream, ProviderError> {
    match encoded.delivery {
        Delivery::Stream => send_stream(clients.stream(), config, headers, encoded, options, wire).await,
        Delivery::Whole => send_whole(clients.whole(config)?, config, headers, encoded, options, whole).await,
    }
}

/// Sends an encoded request with retries and reads its whole JSON answer. Failures before the
/// answer starts are classified and retried as for a stream; a body that fails to read or to
/// decode ends the returned stream with the error, as a broken stream does (the loop retries
/// it like one).
pub(crate) async fn send_whole(
    client: &reqwest::Client,
    config: &ProviderConfig,
    headers: &HeaderMap,
    encoded: EncodedRequest,
    options: &CallOptions,
    decode: WholeDecode,
) -> Result<EventStream, ProviderError> {
    let url = config.endpoint(encoded.path);
    let mut headers = headers.clone();
    headers.insert(http::header::ACCEPT, http::HeaderValue::from_static("application/json"));
    let limit = Some(config.timeouts.whole);
    let response = post_with_retry(client, config, &url, &headers, encoded.body, options, limit).await?;
    let mut events = VecDeque::new();
    let decoded = match response.bytes().await {
        Ok(body) => decode(&body, &mut events),
        Err(e) => Err(ProviderError::from_reqwest(e)),
    };
    let items: Vec<Result<StreamEvent, ProviderError>> = match decoded {
        Ok(()) => events.into_iter().map(Ok).collect(),
        Err(e) => vec![Err(e)],
    };
    Ok(Box::pin(futures::stream::iter(items)))
}

/// A whole answer's body that is not the expected JSON: the error its decoder saw, with the
/// start of the body.
pub(crate) fn malformed_whole(e: &serde_json::Error, body: &[u8]) -> ProviderError {
    ProviderError::protocol(format!(
        "malformed response body ({e}): {}",
        snippet(&String::from_utf8_lossy(&body[..body.len().min(4096)]))
    ))
}

/// Sends an encoded request to the configured base URL with retries, and decodes its SSE
/// response with `wire`.
pub(crate) async fn send_stream<D: WireDecoder>(
    client: &reqwest::Client,
    config: &ProviderConfig,
    headers: &HeaderMap,
    encoded: EncodedRequest,
    options: &CallOptions,
    wire: D,
) -> Result<EventStream, ProviderError> {
    let url = config.endpoint(encoded.path);
    let response = post_with_retry(client, config, &url, headers, encoded.body, options, None).await?;
    Ok(decode_sse(body_stream(response), wire))
}

/// Posts `body` to `url`, retrying per the policy, until a successful response starts. `limit`
/// bounds each attempt as a whole, its body included.
pub(crate) async fn post_with_retry(
    client: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    headers: &HeaderMap,
    body: Bytes,
    options: &CallOptions,
    limit: Option<std::time::Duration>,
) -> Result<reqwest::Response, ProviderError> {
    let policy = &config.retry;
    let mut attempt = 0u32;
    loop {
        let mut request = client.post(url).headers(headers.clone()).body(body.clone());
        if let Some(limit) = limit {
            request = request.timeout(limit);
        }
        let sent = request.send().await;
        let (error, wait) = match sent {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let resp_headers = resp.headers().clone();
                let text = resp.text().await.unwrap_or_default();
                let error = classify_http_error(status, &resp_headers, &text);
                if !policy.should_retry_status(attempt, status, &resp_headers) {
                    return Err(error);
                }
                (error, policy.delay(attempt, Some(&resp_headers)))
            }
            Err(e) => {
                let error = ProviderError::from_reqwest(e);
                if !policy.should_retry_transport(attempt) {
                    return Err(error);
                }
                (error, policy.delay(attempt, None))
            }
        };
        attempt += 1;
        tracing::warn!(attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %error, "retrying model request");
        if let Some(cb) = &options.on_retry {
            cb(&RetryNotice { attempt: attempt + 1, wait, error });
        }
        tokio::time::sleep(wait).await;
    }
}

/// Most pages of a model listing read (Anthropic pages by 1000).
const MAX_MODEL_PAGES: usize = 10;

/// The model ids at `path` (`{"data": [{"id": …}], "has_more", "last_id"}`: OpenAI's shape,
/// Anthropic's with pages), without retries: a listing is a check, not a task.
pub(crate) async fn list_model_ids(
    client: &reqwest::Client,
    config: &ProviderConfig,
    headers: &HeaderMap,
    path: &str,
) -> Result<Vec<String>, ProviderError> {
    let mut headers = headers.clone();
    headers.insert(http::header::ACCEPT, http::HeaderValue::from_static("application/json"));
    headers.remove(http::header::CONTENT_TYPE);
    let mut ids = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_MODEL_PAGES {
        let mut url = config.endpoint(path);
        if let Some(a) = &after {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&format!("after_id={a}&limit=1000"));
        }
        let response =
            client.get(&url).headers(headers.clone()).send().await.map_err(ProviderError::from_reqwest)?;
        let status = response.status().as_u16();
        let resp_headers = response.headers().clone();
        let text = response.text().await.map_err(ProviderError::from_reqwest)?;
        if !(200..300).contains(&status) {
            return Err(classify_http_error(status, &resp_headers, &text));
        }
        let page: Value = serde_json::from_str(&text).map_err(|e| {
            ProviderError::protocol(format!("the model listing is not JSON ({e}): {}", snippet(&text)))
        })?;
        let data = page.get("data").and_then(Value::as_array).ok_or_else(|| {
            ProviderError::protocol(format!("the model listing has no data array: {}", snippet(&text)))
        })?;
        ids.extend(data.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).map(str::to_owned));
        let more = page.get("has_more").and_then(Value::as_bool).unwrap_or(false);
        match page.get("last_id").and_then(Value::as_str) {
            Some(last) if more => after = Some(last.to_owned()),
            _ => break,
        }
    }
    Ok(ids)
}

/// Maps a failed HTTP response to a [`ProviderError`], reading both providers' error shapes
/// (`{"error":{"type","message","code"}}`) and recognizing HTML pages from proxies.
pub(crate) fn classify_http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |k: &str| err.and_then(|e| e.get(k)).and_then(Value::as_str).unwrap_or("");
    let (kind, code) = (field("type"), field("code"));
    let message = match err.and_then(|e| e.get("message")).and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None if looks_like_html(headers, body) => format!(
            "HTTP {status} with an HTML page{} instead of JSON; check the base URL, or a proxy in between",
            html_title(body).map(|t| format!(" ({t})")).unwrap_or_default()
        ),
        None => format!("HTTP {status}: {}", snippet(body)),
    };
    let lower = message.to_lowercase();
    let context_exceeded = code == "context_length_exceeded"
        || [
            "prompt is too long",
            "prompt too long",
            "context length",
            "context window",
            "maximum context",
            "too many tokens",
        ]
        .iter()
        .any(|p| lower.contains(p));
    match status {
        401 | 403 => ProviderError::Auth { message },
        429 => ProviderError::RateLimited { retry_after: server_requested_wait(headers), message },
        529 => ProviderError::Overloaded { message },
        _ if kind == "overloaded_error" => ProviderError::Overloaded { message },
        408 => ProviderError::Timeout { message },
        // 413: the request is too large, which a smaller conversation is the remedy for.
        413 => ProviderError::ContextExceeded { message },
        _ if context_exceeded => ProviderError::ContextExceeded { message },
        s if s >= 500 || s == 409 => ProviderError::Server { status: s, message },
        _ => ProviderError::BadRequest { message },
    }
}

fn looks_like_html(headers: &HeaderMap, body: &str) -> bool {
    let ct = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    ct.contains("text/html") || body.trim_start().starts_with('<')
}

fn html_title(body: &str) -> Option<String> {
    let lower = body.to_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = start + lower[start..].find("</title>")?;
    let title = body.get(start..end)?.trim();
    (!title.is_empty()).then(|| snippet(title))
}

/// At most 300 characters of `text`, on one line.
pub(crate) fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// A provider's stream format: turns SSE events into normalized [`StreamEvent`]s.
pub trait WireDecoder: Send + 'static {
    /// Handles one SSE event.
    fn on_event(&mut self, event: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;

    /// The byte stream ended; `Ok` only if the response was complete.
    fn on_end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;

    /// The terminal event was seen; nothing after it matters.
    fn is_done(&self) -> bool;
}

struct Driver<S, D> {
    body: S,
    sse: SseDecoder,
    wire: D,
    queue: VecDeque<StreamEvent>,
    scratch: Vec<SseEvent>,
    state: DriverState,
}

#[derive(PartialEq, Eq)]
enum DriverState {
    Reading,
    Draining,
    Done,
}

/// Decodes a byte stream of SSE into normalized events with the given wire decoder.
pub fn decode_sse<S, D>(body: S, wire: D) -> EventStream
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Send + Unpin + 'static,
    D: WireDecoder,
{
    let driver = Driver {
        body,
        sse: SseDecoder::default(),
        wire,
        queue: VecDeque::new(),
        scratch: Vec::new(),
        state: DriverState::Reading,
    };
    Box::pin(futures::stream::unfold(driver, |mut d| async move {
        loop {
            if let Some(event) = d.queue.pop_front() {
                return Some((Ok(event), d));
            }
            match d.state {
                DriverState::Done => return None,
                DriverState::Draining => {
                    d.state = DriverState::Done;
                    continue;
                }
                DriverState::Reading => {}
            }
            match d.body.next().await {
                Some(Ok(chunk)) => {
                    d.sse.push(&chunk, &mut d.scratch);
                    let events = std::mem::take(&mut d.scratch);
                    for ev in &events {
                        if let Err(e) = d.wire.on_event(ev, &mut d.queue) {
                            d.state = DriverState::Done;
                            d.queue.clear();
                            return Some((Err(e), d));
                        }
                        if d.wire.is_done() {
                            d.state = DriverState::Draining;
                            break;
                        }
                    }
                    d.scratch = events;
                    d.scratch.clear();
                }
                Some(Err(e)) => {
                    d.state = DriverState::Done;
                    d.queue.clear();
                    return Some((Err(e), d));
                }
                None => {
                    let cut = d.sse.finish();
                    d.state = DriverState::Draining;
                    let result = if cut && !d.wire.is_done() {
                        Err(ProviderError::network("the stream ended in the middle of an event"))
                    } else {
                        d.wire.on_end(&mut d.queue)
                    };
                    if let Err(e) = result {
                        d.state = DriverState::Done;
                        d.queue.clear();
                        return Some((Err(e), d));
                    }
                }
            }
        }
    }))
}

/// The response body as a stream of chunks with typed errors.
pub(crate) fn body_stream(
    response: reqwest::Response,
) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send + Unpin + 'static {
    response.bytes_stream().map(|r| r.map_err(ProviderError::from_reqwest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_map_to_typed_errors() {
        let h = HeaderMap::new();
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(classify_http_error(400, &h, openai_ctx), ProviderError::ContextExceeded { .. }));
        let anthropic_ctx = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(classify_http_error(400, &h, anthropic_ctx), ProviderError::ContextExceeded { .. }));
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(classify_http_error(529, &h, overloaded), ProviderError::Overloaded { .. }));
        assert!(matches!(classify_http_error(401, &h, "{}"), ProviderError::Auth { .. }));
        assert!(matches!(classify_http_error(400, &h, "nope"), ProviderError::BadRequest { .. }));
        assert!(matches!(classify_http_error(503, &h, ""), ProviderError::Server { status: 503, .. }));
    }

    /// A connection that fails names the URL it failed on, never its query or credentials.
    #[tokio::test]
    async fn connection_errors_name_the_url() {
        // A port that refuses: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut config = ProviderConfig::new(crate::ProviderKind::Openai);
        config.retry = crate::RetryPolicy::none();
        let url = format!("http://user:pw@127.0.0.1:{port}/v1/chat/completions?api-key=secret");
        let client = reqwest::Client::new();
        let options = CallOptions::default();
        let e = post_with_retry(&client, &config, &url, &HeaderMap::new(), Bytes::new(), &options, None)
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")), "{text}");
        assert!(!text.contains("secret") && !text.contains("pw"), "{text}");
    }

    #[test]
    fn html_pages_are_named_as_such() {
        let body =
            "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
        let e = classify_http_error(502, &HeaderMap::new(), body);
        let text = e.to_string();
        assert!(text.contains("HTML page (502 Bad Gateway)"), "{text}");
        assert!(e.is_retryable());
    }

    #[test]
    fn rate_limits_carry_the_requested_wait() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        match classify_http_error(429, &h, r#"{"error":{"message":"slow down"}}"#) {
            ProviderError::RateLimited { retry_after, message } => {
                assert_eq!(retry_after, Some(std::time::Duration::from_secs(3)));
                assert_eq!(message, "slow down");
            }
            other => panic!("{other:?}"),
        }
    }
}
