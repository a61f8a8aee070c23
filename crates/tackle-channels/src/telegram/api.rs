//! [`BotApi`]: Bot API calls over reqwest, with Telegram's retry rules: a `429` waits the
//! `retry_after` it names, network errors and `5xx` are retried with backoff, anything else is an
//! error at once. Optional calls ([`BotApi::call_once`]) get one attempt and a short limit. The token is in every URL, so no URL ever reaches an error, a log or `Debug`.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::BotToken;
use super::wire::{ApiResponse, File};
use crate::ChannelError;

/// Time limit of an ordinary call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest backoff between retries of a network error.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest `retry_after` honoured; a longer one fails the call (the caller's loop retries later).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// A Bot API client for one bot.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    api_url: String,
    token: BotToken,
    max_retries: u32,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotApi").field("api_url", &self.api_url).field("token", &self.token).finish()
    }
}

/// How one attempt ended.
enum Attempt {
    Done(Value),
    /// Retry after this long.
    Retry(Duration, String),
    Fail(ChannelError),
}

impl BotApi {
    /// A client of the Bot API at `api_url` (no trailing slash needed).
    pub fn new(api_url: &str, token: BotToken, max_retries: u32) -> Result<Self, ChannelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ChannelError::Config(format!("cannot build an HTTP client: {}", e.without_url())))?;
        Ok(Self { http, api_url: api_url.trim_end_matches('/').to_owned(), token, max_retries })
    }

    /// Calls `method` with JSON `params`; retries as Telegram asks. `timeout` bounds one attempt
    /// (long polls pass their poll time plus a margin).
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &Value,
        timeout: Option<Duration>,
    ) -> Result<T, ChannelError> {
        let mut backoff = Duration::from_millis(500);
        let mut attempt = 0;
        loop {
            match self.attempt(method, params, timeout.unwrap_or(CALL_TIMEOUT)).await {
                Attempt::Done(v) => {
                    return serde_json::from_value(v)
                        .map_err(|e| self.error(method, format!("unexpected result: {e}"), None));
                }
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(wait, why) => {
                    attempt += 1;
                    if attempt > self.max_retries {
                        return Err(self.error(
                            method,
                            format!("{why} (gave up after {attempt} attempts)"),
                            None,
                        ));
                    }
                    let wait = if wait.is_zero() {
                        let w = backoff;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        w
                    } else {
                        wait
                    };
                    tracing::info!(method, attempt, wait_ms = wait.as_millis() as u64, reason = %why, "retrying a Telegram call");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Calls `method` once, without retries, within `timeout`: for optional calls (the typing
    /// indicator, the command menu) whose failure must never delay the bot.
    pub async fn call_once<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<T, ChannelError> {
        match self.attempt(method, params, timeout).await {
            Attempt::Done(v) => serde_json::from_value(v)
                .map_err(|e| self.error(method, format!("unexpected result: {e}"), None)),
            Attempt::Fail(e) => Err(e),
            Attempt::Retry(_, why) => {
                Err(self.error(method, format!("{why} (not retried: the call is optional)"), None))
            }
        }
    }

    async fn attempt(&self, method: &str, params: &Value, timeout: Duration) -> Attempt {
        let url = format!("{}/bot{}/{method}", self.api_url, self.token.expose());
        let response = match self.http.post(url).json(params).timeout(timeout).send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Retry(Duration::ZERO, format!("network error: {}", e.without_url())),
        };
        let status = response.status();
        let body = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return Attempt::Retry(Duration::ZERO, format!("network error: {}", e.without_url())),
        };
        let parsed: ApiResponse = match serde_json::from_slice(&body) {
            Ok(p) => p,
            Err(_) if status.is_server_error() || status.as_u16() == 429 => {
                return Attempt::Retry(Duration::ZERO, format!("HTTP {status} without a Bot API answer"));
            }
            Err(_) => {
                return Attempt::Fail(self.error(
                    method,
                    format!("HTTP {status} without a Bot API answer: is api_url a Bot API server?"),
                    Some(i64::from(status.as_u16())),
                ));
            }
        };
        if parsed.ok {
            return Attempt::Done(parsed.result.unwrap_or(Value::Bool(true)));
        }
        let code = parsed.error_code.unwrap_or_else(|| i64::from(status.as_u16()));
        let description = parsed.description.unwrap_or_else(|| format!("error {code}"));
        if code == 429 {
            let after = parsed.parameters.and_then(|p| p.retry_after).unwrap_or(1);
            let wait = Duration::from_secs(after);
            if wait > MAX_RETRY_AFTER {
                return Attempt::Fail(self.error(method, description, Some(code)));
            }
            return Attempt::Retry(wait, description);
        }
        if code >= 500 {
            return Attempt::Retry(Duration::ZERO, description);
        }
        Attempt::Fail(self.error(method, description, Some(code)))
    }

    fn error(&self, method: &str, message: String, code: Option<i64>) -> ChannelError {
        ChannelError::Api { channel: "telegram".into(), method: method.to_owned(), message, code }
    }

    /// Downloads the file `file_id` into `dest` (through a temporary file, so `dest` appears
    /// whole or not at all); fails beyond `max_bytes`.
    pub async fn download(&self, file_id: &str, dest: &Path, max_bytes: u64) -> Result<u64, ChannelError> {
        let file: File = self.call("getFile", &serde_json::json!({ "file_id": file_id }), None).await?;
        if let Some(size) = file.file_size
            && size > max_bytes
        {
            return Err(ChannelError::TooLarge { size, max: max_bytes });
        }
        let path =
            file.file_path.ok_or_else(|| self.error("getFile", "no file_path in the answer".into(), None))?;
        let url =
            format!("{}/file/bot{}/{}", self.api_url, self.token.expose(), path.trim_start_matches('/'));
        let response = self
            .http
            .get(url)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| self.error("download", format!("network error: {}", e.without_url()), None))?;
        if !response.status().is_success() {
            let code = i64::from(response.status().as_u16());
            return Err(self.error("download", format!("HTTP {}", response.status()), Some(code)));
        }
        let tmp = dest.with_extension("part");
        let mut out = tokio::fs::File::create(&tmp).await?;
        let mut written: u64 = 0;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk
                .map_err(|e| self.error("download", format!("network error: {}", e.without_url()), None))?;
            written += chunk.len() as u64;
            if written > max_bytes {
                drop(out);
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(ChannelError::TooLarge { size: written, max: max_bytes });
            }
            out.write_all(&chunk).await?;
        }
        out.flush().await?;
        drop(out);
        tokio::fs::rename(&tmp, dest).await?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "987654:very-secret-part";

    /// An HTTP server that answers every request with `response`, once per connection.
    async fn answering(response: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let mut buf = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn errors_never_show_the_token() {
        // Nothing listens there: a network error, retried, then reported.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let api = BotApi::new(&format!("http://{closed}"), BotToken::new(SECRET).unwrap(), 1).unwrap();
        let err = api.call::<Value>("getMe", &serde_json::json!({}), None).await.unwrap_err().to_string();
        assert!(err.contains("network error") && err.contains("gave up after 2 attempts"), "{err}");
        assert!(!err.contains("very-secret"), "{err}");
        assert!(!format!("{api:?}").contains("very-secret"));

        // Not a Bot API: said so, without the URL.
        let html = answering(
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: 9\r\n\r\n<h1>x</h1",
        )
        .await;
        let api = BotApi::new(&html, BotToken::new(SECRET).unwrap(), 0).unwrap();
        let err = api.call::<Value>("getMe", &serde_json::json!({}), None).await.unwrap_err().to_string();
        assert!(err.contains("is api_url a Bot API server?") && !err.contains("very-secret"), "{err}");
    }

    #[tokio::test]
    async fn api_errors_are_not_retried_and_keep_their_code() {
        let body = r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#;
        let response: &'static str = Box::leak(
            format!("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len())
                .into_boxed_str(),
        );
        let url = answering(response).await;
        let api = BotApi::new(&url, BotToken::new(SECRET).unwrap(), 5).unwrap();
        let started = std::time::Instant::now();
        let err = api.call::<Value>("sendMessage", &serde_json::json!({}), None).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(400), "no retry of a 400");
        match err {
            ChannelError::Api { code, message, method, .. } => {
                assert_eq!((code, method.as_str()), (Some(400), "sendMessage"));
                assert_eq!(message, "Bad Request: chat not found");
            }
            other => panic!("{other}"),
        }
    }
}
