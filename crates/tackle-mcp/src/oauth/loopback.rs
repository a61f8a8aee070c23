//! The loopback redirect listener of a sign-in (RFC 8252 §7.3): the authorization server sends
//! the browser to `http://127.0.0.1:PORT/callback?code=...&state=...&iss=...`, and this listener
//! takes the parameters and tells the person they may close the tab.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the authorization code is sent to.
pub const CALLBACK_PATH: &str = "/callback";
/// Largest request head read from the browser.
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A listener waiting for the redirect.
#[derive(Debug)]
pub struct Loopback {
    listener: TcpListener,
    addr: SocketAddr,
}

/// The query parameters of the redirect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Callback {
    /// Every parameter (`code`, `state`, `iss`, `error`, `error_description`, ...).
    pub params: HashMap<String, String>,
}

impl Callback {
    /// One parameter.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

impl Loopback {
    /// Listens on `127.0.0.1:port` (`0`: a free port).
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        Ok(Self { listener, addr })
    }

    /// The redirect URI to register and send.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.addr.port())
    }

    /// Waits for the browser to arrive at the callback path; other requests (a favicon) get a
    /// 404 and are ignored. `server` names the MCP server on the page shown.
    pub async fn wait(self, server: &str) -> std::io::Result<Callback> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            match tokio::time::timeout(READ_TIMEOUT, handle(stream, server)).await {
                Ok(Ok(Some(callback))) => return Ok(callback),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "sign-in callback connection failed"),
                Err(_) => tracing::debug!("sign-in callback connection timed out"),
            }
        }
    }
}

async fn handle(mut stream: TcpStream, server: &str) -> std::io::Result<Option<Callback>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() + n > MAX_REQUEST_HEAD {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.lines().next().and_then(|line| line.split_whitespace().nth(1)).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "Not found.").await?;
        return Ok(None);
    }
    let params: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let page = if params.contains_key("error") {
        format!("Signing in to {} failed. You can close this tab and return to Tackle.", escape(server))
    } else {
        format!("Signed in to {}. You can close this tab and return to Tackle.", escape(server))
    };
    respond(&mut stream, "200 OK", &page).await?;
    Ok(Some(Callback { params }))
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Tackle</title><p style=\"font-family:sans-serif\">{text}</p>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, target: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn takes_the_callback_and_ignores_other_paths() {
        let loopback = Loopback::bind(0).await.unwrap();
        let uri = loopback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"), "{uri}");
        let addr = loopback.addr;
        let waiting = tokio::spawn(async move { loopback.wait("files <prod>").await });
        assert!(get(addr, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let page = get(addr, "/callback?code=abc%20d&state=s1&iss=https%3A%2F%2Fas.example").await;
        assert!(page.starts_with("HTTP/1.1 200") && page.contains("files &lt;prod&gt;"), "{page}");
        let callback = waiting.await.unwrap().unwrap();
        assert_eq!(callback.get("code"), Some("abc d"));
        assert_eq!(callback.get("state"), Some("s1"));
        assert_eq!(callback.get("iss"), Some("https://as.example"));
    }
}
