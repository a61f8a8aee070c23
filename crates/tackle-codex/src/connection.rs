//! One app-server process and its JSON-RPC connection: requests with bounded waits, the
//! server's requests with answers that cannot be forgotten, and a death that fails everything
//! waiting on it at once.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::rpc::{self, Incoming, RequestId};
use crate::{CodexConfig, CodexError};

/// Longest line accepted from the app-server (a tool call's arguments can be large).
const MAX_LINE: usize = 64 * 1024 * 1024;
/// Stderr lines kept for error messages.
const STDERR_LINES: usize = 20;

/// What the connection hands to its owner.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A request of the app-server; dropping it unanswered answers it with an error.
    Request(ServerRequest),
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// The connection is gone; nothing more will come.
    Closed(CodexError),
}

/// A request of the app-server, with the means to answer it exactly once.
#[derive(Debug)]
pub struct ServerRequest {
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Value,
    responder: Responder,
}

impl ServerRequest {
    /// Answers with a typed `result` (one of [`crate::wire`]'s responses). Fails when the
    /// process is gone.
    pub fn answer<T: serde::Serialize>(self, result: &T) -> Result<(), CodexError> {
        self.responder.answer(result)
    }

    /// Answers with `result`. Fails when the process is gone.
    pub fn respond(self, result: Value) -> Result<(), CodexError> {
        self.responder.respond(result)
    }

    /// Answers with a JSON-RPC error.
    pub fn reject(self, code: i64, message: &str) -> Result<(), CodexError> {
        self.responder.reject(code, message)
    }

    /// Splits off the responder (to answer later, e.g. after a tool ran).
    pub(crate) fn into_responder(self) -> Responder {
        self.responder
    }
}

/// Answers one request of the app-server. Dropped unanswered, it answers with an error: the
/// app-server never waits for an answer that will not come.
#[derive(Debug)]
pub(crate) struct Responder {
    writer: mpsc::UnboundedSender<String>,
    closed: Arc<Closed>,
    id: RequestId,
    method: String,
    answered: bool,
}

impl Responder {
    /// Answers with a typed `result`; one that cannot be written as JSON is answered with an
    /// error, so the app-server is never left waiting.
    pub(crate) fn answer<T: serde::Serialize>(self, result: &T) -> Result<(), CodexError> {
        match serde_json::to_value(result) {
            Ok(value) => self.respond(value),
            Err(e) => {
                let method = self.method.clone();
                self.reject(rpc::INTERNAL_ERROR, "Tackle could not write its answer")?;
                Err(CodexError::Unexpected { method, message: e.to_string() })
            }
        }
    }

    pub(crate) fn respond(mut self, result: Value) -> Result<(), CodexError> {
        self.answered = true;
        self.send(rpc::response_line(&self.id, &result))
    }

    pub(crate) fn reject(mut self, code: i64, message: &str) -> Result<(), CodexError> {
        self.answered = true;
        self.send(rpc::error_line(&self.id, code, message))
    }

    fn send(&self, line: String) -> Result<(), CodexError> {
        if let Some(e) = self.closed.error() {
            return Err(e);
        }
        self.writer.send(line).map_err(|_| self.closed.error().unwrap_or_else(gone))
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.answered {
            tracing::debug!(method = %self.method, id = %self.id, "answering a dropped app-server request with an error");
            let _ = self.writer.send(rpc::error_line(
                &self.id,
                rpc::INTERNAL_ERROR,
                "the client dropped this request without an answer",
            ));
        }
    }
}

fn gone() -> CodexError {
    CodexError::Exited { status: "connection closed".into(), stderr: String::new() }
}

/// The first reason the connection closed, and a token cancelled when it does.
#[derive(Debug, Default)]
struct Closed {
    token: CancellationToken,
    error: Mutex<Option<CodexError>>,
}

impl Closed {
    fn error(&self) -> Option<CodexError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records `error` unless already closed; true when this call closed it.
    fn close(&self, error: CodexError) -> bool {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return false;
        }
        *slot = Some(error);
        self.token.cancel();
        true
    }
}

type Pending = Arc<Mutex<HashMap<i64, (String, oneshot::Sender<Result<Value, CodexError>>)>>>;

/// A running app-server connection.
#[derive(Debug)]
pub(crate) struct Connection {
    writer: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: AtomicI64,
    closed: Arc<Closed>,
    request_timeout: Duration,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Kills the process when the connection is dropped or broken.
    kill: CancellationToken,
    /// The process id, when there is a process.
    pid: Option<u32>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill.cancel();
    }
}

impl Connection {
    /// Starts the configured command with piped stdio and returns the connection and the
    /// stream of what the app-server sends.
    pub(crate) fn spawn(
        config: &CodexConfig,
    ) -> Result<(Arc<Self>, mpsc::UnboundedReceiver<Inbound>), CodexError> {
        let mut command = Command::new(&config.command);
        command
            .args(&config.args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .env_clear()
            .envs(child_env(std::env::vars_os(), config));
        if let Some(home) = &config.home {
            command.env("CODEX_HOME", home);
        }
        let mut child = command
            .spawn()
            .map_err(|e| CodexError::Spawn { command: config.command_line(), message: e.to_string() })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(CodexError::Spawn {
                command: config.command_line(),
                message: "no stdio pipes".into(),
            });
        };
        let (conn, inbound) =
            Self::start(BufReader::new(stdout), stdin, config.request_timeout(), child.id());
        conn.watch_stderr(stderr);
        conn.supervise(child);
        Ok((conn, inbound))
    }

    /// A connection over any byte streams (tests use in-memory pipes).
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        request_timeout: Duration,
        pid: Option<u32>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Inbound>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (line_tx, line_rx) = mpsc::unbounded_channel::<String>();
        let (inbound_tx, inbound_rx) = mpsc::unbounded_channel();
        let conn = Arc::new(Self {
            writer: line_tx,
            pending: Pending::default(),
            next_id: AtomicI64::new(1),
            closed: Arc::new(Closed::default()),
            request_timeout,
            stderr: Arc::default(),
            kill: CancellationToken::new(),
            pid,
        });
        tokio::spawn(write_loop(writer, line_rx, conn.closed.clone(), conn.stderr.clone()));
        let reader_state = ReaderState {
            writer: conn.writer.clone(),
            pending: conn.pending.clone(),
            closed: conn.closed.clone(),
            stderr: conn.stderr.clone(),
            kill: conn.kill.clone(),
            inbound: inbound_tx.clone(),
        };
        tokio::spawn(read_loop(reader, reader_state));
        // Whoever closes the connection, everyone waiting learns why.
        let (closed, pending) = (conn.closed.clone(), conn.pending.clone());
        tokio::spawn(async move {
            closed.token.cancelled().await;
            let error = closed.error().unwrap_or_else(gone);
            fail_pending(&pending, &error);
            let _ = inbound_tx.send(Inbound::Closed(error));
        });
        (conn, inbound_rx)
    }

    fn watch_stderr(&self, stderr: tokio::process::ChildStderr) {
        let lines = self.stderr.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                tracing::debug!(target: "tackle_codex::stderr", "{line}");
                let mut buf = lines.lock().unwrap_or_else(|p| p.into_inner());
                if buf.len() == STDERR_LINES {
                    buf.pop_front();
                }
                buf.push_back(line);
            }
        });
    }

    /// Waits for the process: its exit closes the connection; a kill request kills it.
    fn supervise(&self, mut child: Child) {
        let (closed, kill, stderr) = (self.closed.clone(), self.kill.clone(), self.stderr.clone());
        tokio::spawn(async move {
            let status = tokio::select! {
                s = child.wait() => s,
                () = kill.cancelled() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let status = match status {
                Ok(s) => s.to_string(),
                Err(e) => format!("cannot wait for it: {e}"),
            };
            // Give the stderr reader a moment to collect the last lines.
            tokio::time::sleep(Duration::from_millis(50)).await;
            closed.close(CodexError::Exited { status, stderr: tail(&stderr) });
        });
    }

    /// The app-server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the connection is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.token.is_cancelled()
    }

    /// Why the connection closed, once it has.
    pub(crate) fn close_reason(&self) -> Option<CodexError> {
        self.closed.error()
    }

    /// Resolves when the connection closes.
    #[cfg(test)]
    pub(crate) async fn closed(&self) {
        self.closed.token.cancelled().await;
    }

    /// Kills the process and fails everything waiting on it.
    pub(crate) fn shut_down(&self, error: CodexError) {
        self.closed.close(error);
        self.kill.cancel();
    }

    /// Sends a request and waits (bounded) for its answer.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, CodexError> {
        if let Some(e) = self.closed.error() {
            return Err(e);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (method.to_owned(), tx));
        if self.writer.send(rpc::request_line(id, method, &params)).is_err() {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            return Err(self.closed.error().unwrap_or_else(gone));
        }
        // The pending entry may have been failed between the check above and the insert.
        if let Some(e) = self.closed.error() {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            return Err(e);
        }
        match tokio::time::timeout(self.request_timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(self.closed.error().unwrap_or_else(gone)),
            Err(_) => {
                self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                Err(CodexError::Timeout { method: method.to_owned(), secs: self.request_timeout.as_secs() })
            }
        }
    }

    /// Sends a request whose answer nobody waits for (used where waiting is impossible, e.g.
    /// interrupting a turn when its owner is dropped).
    pub(crate) fn fire(&self, method: &str, params: Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.writer.send(rpc::request_line(id, method, &params));
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<&Value>) -> Result<(), CodexError> {
        self.writer
            .send(rpc::notification_line(method, params))
            .map_err(|_| self.closed.error().unwrap_or_else(gone))
    }
}

/// The child's environment: the parent's allowlisted variables
/// ([`tackle_sandbox::child_env`]), the configured pass-throughs, and the inherited
/// `CODEX_HOME` only when none is configured. A secret with an innocent name
/// (`DATABASE_URL=postgres://app:pw@...`) is not passed unless named in `pass_env`.
pub(crate) fn child_env(
    inherited: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    config: &CodexConfig,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut allow = config.pass_env.clone();
    if config.home.is_none() {
        allow.push("CODEX_HOME".to_owned());
    }
    tackle_sandbox::child_env(inherited, &allow, &std::collections::BTreeMap::new())
}

fn tail(stderr: &Mutex<VecDeque<String>>) -> String {
    let buf = stderr.lock().unwrap_or_else(|p| p.into_inner());
    buf.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
}

fn fail_pending(pending: &Pending, error: &CodexError) {
    let waiting: Vec<_> = pending.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
    for (_, (_, tx)) in waiting {
        let _ = tx.send(Err(error.clone()));
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::UnboundedReceiver<String>,
    closed: Arc<Closed>,
    stderr: Arc<Mutex<VecDeque<String>>>,
) {
    loop {
        let line = tokio::select! {
            l = lines.recv() => l,
            () = closed.token.cancelled() => None,
        };
        let Some(mut line) = line else { break };
        line.push('\n');
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await
        };
        if let Err(e) = written.await {
            closed.close(CodexError::Exited {
                status: format!("its input closed ({e})"),
                stderr: tail(&stderr),
            });
            break;
        }
    }
}

struct ReaderState {
    writer: mpsc::UnboundedSender<String>,
    pending: Pending,
    closed: Arc<Closed>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    kill: CancellationToken,
    inbound: mpsc::UnboundedSender<Inbound>,
}

async fn read_loop<R: AsyncBufRead + Unpin>(mut reader: R, state: ReaderState) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let read = tokio::select! {
            r = read_line(&mut reader, &mut buf) => r,
            () = state.closed.token.cancelled() => return,
        };
        match read {
            Ok(0) => {
                // The output closed: the process is exiting. Let the supervisor report the
                // exit status if it comes quickly.
                tokio::time::sleep(Duration::from_millis(200)).await;
                state.closed.close(CodexError::Exited {
                    status: "closed its output".into(),
                    stderr: tail(&state.stderr),
                });
                return;
            }
            Ok(_) => {}
            Err(e) => {
                state.closed.close(CodexError::Malformed { excerpt: String::new(), error: e.to_string() });
                state.kill.cancel();
                return;
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim();
        if line.is_empty() {
            continue;
        }
        match rpc::parse_line(line) {
            Ok(Incoming::Response { id, result }) => {
                let RequestId::Int(n) = id else {
                    tracing::debug!(%id, "answer to an id Tackle never used");
                    continue;
                };
                let waiter = state.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&n);
                match waiter {
                    Some((method, tx)) => {
                        let answer =
                            result.map_err(|(code, message)| CodexError::Rejected { method, code, message });
                        let _ = tx.send(answer);
                    }
                    None => tracing::debug!(id = n, "answer to a request nobody waits for"),
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                let responder = Responder {
                    writer: state.writer.clone(),
                    closed: state.closed.clone(),
                    id,
                    method: method.clone(),
                    answered: false,
                };
                // If nobody listens, the request comes back here and its drop answers it.
                let _ = state.inbound.send(Inbound::Request(ServerRequest { method, params, responder }));
            }
            Ok(Incoming::Notification { method, params }) => {
                let _ = state.inbound.send(Inbound::Notification { method, params });
            }
            Err(e) => {
                tracing::warn!(error = %e.error, "codex app-server sent a malformed line; dropping the connection");
                state.closed.close(CodexError::Malformed { excerpt: e.excerpt, error: e.error });
                state.kill.cancel();
                return;
            }
        }
    }
}

/// Reads one line (without bounding memory by the peer's goodwill): `Ok(0)` at end of input.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(buf.len());
        }
        let (chunk, done) = match memchr_newline(available) {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        if buf.len() + chunk.len() > MAX_LINE {
            return Err(std::io::Error::other(format!("a line longer than {MAX_LINE} bytes")));
        }
        buf.extend_from_slice(chunk);
        let n = chunk.len();
        reader.consume(n);
        if done {
            return Ok(buf.len());
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// For tests: a connection over in-memory pipes; returns the peer's ends.
#[cfg(test)]
pub(crate) fn in_memory(
    request_timeout: Duration,
) -> (Arc<Connection>, mpsc::UnboundedReceiver<Inbound>, impl AsyncBufRead + Unpin, impl AsyncWrite + Unpin) {
    let (client_out, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    let (conn, inbound) = Connection::start(BufReader::new(client_in), client_out, request_timeout, None);
    (conn, inbound, BufReader::new(server_in), server_out)
}

/// Reads from a peer end in tests.
#[cfg(test)]
pub(crate) async fn read_peer<R: AsyncBufRead + Unpin>(reader: &mut R) -> Value {
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    serde_json::from_str(&line).unwrap()
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
