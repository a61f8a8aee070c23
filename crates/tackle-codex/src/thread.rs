//! [`CodexThread`]: one Codex conversation, driven turn by turn, with the tool calls Codex
//! asks for handed out in batches and answered later.
//!
//! A model response that calls dynamic tools makes Codex send one `item/tool/call` request per
//! call. The thread collects them into one [`TurnEvent::ToolCalls`] batch: with raw events on,
//! a batch is complete when the response is (`rawResponse/completed`) and every dynamic
//! `function_call` item it announced has arrived as a request; without them, when no further
//! call comes for a short while. The requests stay open while the batch is out; [`CodexThread::answer`]
//! answers them one by one, and the turn goes on. A call nobody answers within
//! [`crate::CodexConfig::tool_call_timeout_secs`] is released with an error result and its
//! turn interrupted, so Codex is never left waiting.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_protocol::Usage;
use tackle_wire::responses::{InputItem, OutputItem};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::approvals::{self, CodexApprovals};
use crate::connection::{Responder, ServerRequest};
use crate::server::{Live, ThreadEvent, ThreadOptions, parse, to_value};
use crate::wire::{
    self, CallId, DynamicToolCallParams, DynamicToolCallResponse, Notification, ThreadId, ThreadItem,
    ThreadResult, TurnId, UserInput, method,
};
use crate::{CodexError, CodexServer, rpc};

/// Without raw events, a batch closes when no further call arrives for this long.
const SETTLE: Duration = Duration::from_millis(300);
/// With raw events, once the response is complete, the calls it announced must arrive within
/// this long (they are sent right after it; the limit only guards against a protocol change).
const ANNOUNCED_CALLS_GRACE: Duration = Duration::from_secs(2);

/// A tool call Codex asks the client to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's call id.
    pub call_id: CallId,
    /// Tool name.
    pub tool: String,
    /// Arguments (already parsed by Codex).
    pub arguments: Value,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered without (further) tool calls.
    Completed,
    /// The turn was interrupted.
    Interrupted,
}

/// What a running turn produces.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text (display only).
    ReasoningDelta(String),
    /// Token usage of one model response.
    Usage(Usage),
    /// The model called tools; the turn waits for [`CodexThread::answer`].
    ToolCalls(Vec<ToolCall>),
    /// The turn is over.
    Ended(TurnEnd),
}

/// What became of an answer to a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Codex has it.
    Delivered,
    /// It was answered before; this one was ignored.
    Duplicate,
    /// The call was released after the timeout (answered with an error); too late.
    Late,
    /// This thread never saw the call (or lost it with a process that died).
    Unknown,
}

enum CallState {
    Pending { responder: Responder, timer: AbortHandle },
    Answered,
    Released,
}

/// Tool calls of a thread and their states, shared with the release timers.
#[derive(Default)]
struct CallBook {
    calls: Mutex<HashMap<CallId, CallState>>,
}

impl CallBook {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallId, CallState>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Batch collection state of the current model response.
#[derive(Default)]
struct Batch {
    calls: Vec<ToolCall>,
    /// Dynamic calls the response announced that have not arrived yet.
    announced: HashSet<CallId>,
    /// Calls that arrived (so a late announcement does not wait for them again).
    arrived: HashSet<CallId>,
    /// The response's dynamic calls in the model's order (requests may arrive in any order).
    order: Vec<CallId>,
    /// The response is complete.
    response_done: bool,
    /// Raw events are flowing on this thread.
    raw_events: bool,
}

impl Batch {
    fn ready(&self) -> bool {
        !self.calls.is_empty() && self.raw_events && self.response_done && self.announced.is_empty()
    }

    /// How long to wait for more before handing out the calls collected so far.
    fn patience(&self) -> Option<Duration> {
        if self.calls.is_empty() {
            None
        } else if !self.raw_events {
            Some(SETTLE)
        } else if self.response_done {
            Some(ANNOUNCED_CALLS_GRACE)
        } else {
            None
        }
    }
}

/// One Codex thread. Dropping it interrupts its running turn and answers its open calls with
/// errors.
pub struct CodexThread {
    server: CodexServer,
    live: Live,
    id: ThreadId,
    model: Option<String>,
    events: mpsc::UnboundedReceiver<ThreadEvent>,
    tool_names: HashSet<String>,
    approvals: Arc<dyn CodexApprovals>,
    calls: Arc<CallBook>,
    turn: Option<TurnId>,
    batch: Batch,
    raw_usage: bool,
    /// Answer text streamed so far, by `agentMessage` item id: the completed item supplies
    /// what its deltas did not (all of it when the backend's stream carried none).
    streamed: HashMap<String, String>,
    /// Codex's notices, in a row, that it is trying its model backend again; reset when the
    /// backend answers.
    backend_retries: u32,
    ready: VecDeque<TurnEvent>,
    /// Dynamic tool calls the stored thread has results for (from `thread/resume`).
    completed_calls: HashSet<CallId>,
}

impl std::fmt::Debug for CodexThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexThread").field("id", &self.id).field("turn", &self.turn).finish_non_exhaustive()
    }
}

impl CodexThread {
    pub(crate) fn new(
        server: CodexServer,
        live: Live,
        result: ThreadResult,
        events: mpsc::UnboundedReceiver<ThreadEvent>,
        tool_names: HashSet<String>,
        approvals: Arc<dyn CodexApprovals>,
    ) -> Self {
        let mut completed_calls = HashSet::new();
        let mut turn = None;
        for t in &result.thread.turns {
            if t.status == "inProgress" {
                turn = Some(t.id.clone());
            }
            for item in &t.items {
                if let ThreadItem::DynamicToolCall { id: Some(id), status } = item
                    && status.as_deref() != Some("inProgress")
                {
                    completed_calls.insert(CallId::from(id.as_str()));
                }
            }
        }
        Self {
            server,
            live,
            id: result.thread.id,
            model: result.model,
            events,
            tool_names,
            approvals,
            calls: Arc::default(),
            turn,
            batch: Batch::default(),
            raw_usage: false,
            streamed: HashMap::new(),
            backend_retries: 0,
            ready: VecDeque::new(),
            completed_calls,
        }
    }

    /// The thread id (keep it to resume the thread later).
    pub fn id(&self) -> &ThreadId {
        &self.id
    }

    /// The model Codex reports for the thread.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Whether the process this thread runs on is still alive.
    pub fn is_connected(&self) -> bool {
        !self.live.conn.is_closed()
    }

    /// Whether a turn is running (possibly waiting for tool results).
    pub fn turn_active(&self) -> bool {
        self.turn.is_some()
    }

    /// Whether the stored thread already has a result for `call` (learned on resume).
    pub fn has_result_for(&self, call: &CallId) -> bool {
        self.completed_calls.contains(call)
    }

    /// Whether a call handed out by this thread is still waiting for its answer.
    pub fn is_pending(&self, call: &CallId) -> bool {
        matches!(self.calls.lock().get(call), Some(CallState::Pending { .. }))
    }

    /// Starts a turn with `input` (which may be empty: the model continues from the history).
    pub async fn start_turn(&mut self, input: Vec<UserInput>) -> Result<TurnId, CodexError> {
        let params = wire::TurnStartParams { thread_id: self.id.clone(), input };
        let answer = self.request(method::TURN_START, &params).await?;
        let started: wire::TurnStartResult = parse(method::TURN_START, answer)?;
        self.turn = Some(started.turn.id.clone());
        self.batch = Batch { raw_events: self.batch.raw_events, ..Batch::default() };
        Ok(started.turn.id)
    }

    /// Adds `input` to the running turn (or starts a turn if none runs).
    pub async fn steer(&mut self, input: Vec<UserInput>) -> Result<(), CodexError> {
        let Some(turn) = self.turn.clone() else {
            self.start_turn(input).await?;
            return Ok(());
        };
        let params = wire::TurnSteerParams {
            thread_id: self.id.clone(),
            expected_turn_id: turn,
            input: input.clone(),
        };
        match self.request(method::TURN_STEER, &params).await {
            Ok(_) => Ok(()),
            // The turn ended in the meantime: the input starts the next one.
            Err(CodexError::Rejected { .. }) => {
                self.turn = None;
                self.start_turn(input).await.map(|_| ())
            }
            Err(e) => Err(e),
        }
    }

    /// Appends raw Responses items to the thread's history (`thread/inject_items`).
    pub async fn inject(&mut self, items: Vec<InputItem<'static>>) -> Result<(), CodexError> {
        if items.is_empty() {
            return Ok(());
        }
        let params = wire::ThreadInjectItemsParams { thread_id: self.id.clone(), items };
        self.request(method::THREAD_INJECT_ITEMS, &params).await.map(|_| ())
    }

    /// Interrupts the running turn; its open calls are answered with errors.
    pub async fn interrupt(&mut self) -> Result<(), CodexError> {
        let Some(turn) = self.turn.take() else { return Ok(()) };
        self.release_all("the turn was interrupted");
        let params = wire::TurnInterruptParams { thread_id: self.id.clone(), turn_id: turn };
        self.request(method::TURN_INTERRUPT, &params).await.map(|_| ())
    }

    /// Stops the running turn without waiting (its owner stopped listening): open calls are
    /// answered with errors, and the interrupt is sent without waiting for its answer.
    pub fn abandon_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            self.release_all("the client stopped listening to this turn");
            self.batch = Batch { raw_events: self.batch.raw_events, ..Batch::default() };
            self.live.conn.fire(method::TURN_INTERRUPT, json!({"threadId": self.id, "turnId": turn}));
        }
    }

    /// Answers tool call `call` with `response`.
    pub fn answer(&self, call: &CallId, response: DynamicToolCallResponse) -> Result<Answer, CodexError> {
        let mut calls = self.calls.lock();
        let Some(state) = calls.get_mut(call) else { return Ok(Answer::Unknown) };
        match std::mem::replace(state, CallState::Answered) {
            CallState::Pending { responder, timer } => {
                timer.abort();
                match responder.answer(&response) {
                    Ok(()) => Ok(Answer::Delivered),
                    Err(e) if e.is_connection_lost() => {
                        // The process died with the call: the caller injects the result after resuming.
                        calls.remove(call);
                        Ok(Answer::Unknown)
                    }
                    Err(e) => Err(e),
                }
            }
            CallState::Answered => Ok(Answer::Duplicate),
            CallState::Released => {
                *state = CallState::Released;
                Ok(Answer::Late)
            }
        }
    }

    /// The next event of the running turn. Returns [`TurnEvent::ToolCalls`] when the model
    /// called tools (answer them, then call this again) and [`TurnEvent::Ended`] at the end.
    pub async fn next_event(&mut self) -> Result<TurnEvent, CodexError> {
        let idle = self.server.config().idle_timeout();
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(event);
            }
            if self.batch.ready() {
                return Ok(self.take_batch());
            }
            let wait = self.batch.patience().unwrap_or(idle);
            let event = match tokio::time::timeout(wait, self.events.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => return Err(self.live.conn.close_reason().unwrap_or_else(router_gone)),
                Err(_) if !self.batch.calls.is_empty() => return Ok(self.take_batch()),
                Err(_) => return Err(CodexError::Idle { secs: idle.as_secs() }),
            };
            match event {
                ThreadEvent::Closed(e) => {
                    self.turn = None;
                    return Err(e);
                }
                ThreadEvent::Request(request) => self.on_request(request).await,
                ThreadEvent::Notification { method, params } => {
                    if let Some(event) = self.on_notification(&method, params)? {
                        return Ok(event);
                    }
                }
            }
        }
    }

    fn take_batch(&mut self) -> TurnEvent {
        let mut calls = std::mem::take(&mut self.batch.calls);
        let order = &self.batch.order;
        calls.sort_by_key(|c| order.iter().position(|id| *id == c.call_id).unwrap_or(usize::MAX));
        if self.batch.announced.is_empty() {
            // The response's calls are all out; the next calls belong to a new response.
            self.batch.response_done = false;
            self.batch.arrived.clear();
            self.batch.order.clear();
        }
        TurnEvent::ToolCalls(calls)
    }

    async fn on_request(&mut self, request: ServerRequest) {
        if request.method != method::TOOL_CALL {
            return approvals::answer(request, self.approvals.as_ref()).await;
        }
        let params: DynamicToolCallParams = match serde_json::from_value(request.params.clone()) {
            Ok(p) => p,
            Err(e) => {
                let _ =
                    request.reject(rpc::INTERNAL_ERROR, &format!("unreadable item/tool/call params: {e}"));
                return;
            }
        };
        match &self.turn {
            // A late call of a turn this thread stopped following (interrupted or abandoned).
            Some(active) if *active != params.turn_id => {
                let _ = request.answer(&release_result("the turn that made this call was stopped"));
                return;
            }
            Some(_) => {}
            None => self.turn = Some(params.turn_id.clone()),
        }
        self.batch.announced.remove(&params.call_id);
        self.batch.arrived.insert(params.call_id.clone());
        let timer = self.release_timer(params.call_id.clone(), params.turn_id.clone());
        let responder = request.into_responder();
        let previous =
            self.calls.lock().insert(params.call_id.clone(), CallState::Pending { responder, timer });
        if let Some(CallState::Pending { timer, .. }) = previous {
            // The same call id again: the older request is answered by its drop.
            timer.abort();
        }
        let tool = match &params.namespace {
            Some(ns) => format!("{ns}__{}", params.tool),
            None => params.tool,
        };
        self.batch.calls.push(ToolCall { call_id: params.call_id, tool, arguments: params.arguments });
    }

    fn on_notification(&mut self, method_name: &str, params: Value) -> Result<Option<TurnEvent>, CodexError> {
        let notification = match Notification::read(method_name, params) {
            Ok(n) => n,
            // The end of a turn, and its usage where no raw event gave it, cannot be skipped:
            // the turn fails.
            Err(e)
                if method_name == method::TURN_COMPLETED
                    || (method_name == method::TOKEN_USAGE && !self.raw_usage) =>
            {
                return Err(CodexError::Unexpected { method: e.method.clone(), message: e.to_string() });
            }
            Err(e) => {
                tracing::warn!(thread = %self.id, "{e}; the notification is skipped");
                return Ok(None);
            }
        };
        let for_other_turn = match (notification.turn(), &self.turn) {
            (Some(t), Some(active)) => t != active,
            _ => false,
        };
        if !for_other_turn
            && matches!(
                notification,
                Notification::AgentMessageDelta(_)
                    | Notification::ReasoningSummaryDelta(_)
                    | Notification::ReasoningTextDelta(_)
                    | Notification::RawItemCompleted(_)
                    | Notification::RawResponseCompleted(_)
                    | Notification::TokenUsage(_)
            )
        {
            // The backend answered.
            self.backend_retries = 0;
        }
        Ok(match notification {
            Notification::TurnStarted(started) => {
                if self.turn.is_none() {
                    self.turn = Some(started.turn.id);
                }
                None
            }
            Notification::AgentMessageDelta(d) if !for_other_turn => {
                self.streamed.entry(d.item_id).or_default().push_str(&d.delta);
                Some(TurnEvent::TextDelta(d.delta))
            }
            Notification::ItemCompleted(completed) if !for_other_turn => {
                self.completed_message(completed.item)
            }
            Notification::ReasoningSummaryDelta(d) | Notification::ReasoningTextDelta(d)
                if !for_other_turn =>
            {
                Some(TurnEvent::ReasoningDelta(d.delta))
            }
            Notification::RawItemCompleted(raw) if !for_other_turn => {
                self.batch.raw_events = true;
                if let Some(call) = self.announced_call(raw.item) {
                    self.batch.response_done = false;
                    self.batch.order.push(call.clone());
                    if !self.batch.arrived.contains(&call) {
                        self.batch.announced.insert(call);
                    }
                }
                None
            }
            Notification::RawResponseCompleted(raw) if !for_other_turn => {
                self.batch.raw_events = true;
                self.batch.response_done = true;
                raw.usage.map(|u| {
                    self.raw_usage = true;
                    TurnEvent::Usage(u.into())
                })
            }
            // Reported after the response's tool calls are answered; the raw event has the same
            // counts in time, so this is only the fallback.
            Notification::TokenUsage(update) if !self.raw_usage => {
                Some(TurnEvent::Usage(update.token_usage.last.into()))
            }
            Notification::TurnCompleted(completed) if !for_other_turn => {
                self.turn = None;
                self.streamed.clear();
                self.release_all("the turn ended");
                let collected = std::mem::take(&mut self.batch.calls);
                if !collected.is_empty() {
                    tracing::warn!(thread = %self.id, calls = collected.len(), "the turn ended with tool calls not handed out");
                }
                self.batch = Batch { raw_events: self.batch.raw_events, ..Batch::default() };
                match completed.turn.status.as_str() {
                    "interrupted" => Some(TurnEvent::Ended(TurnEnd::Interrupted)),
                    "failed" => {
                        let error = completed.turn.error;
                        return Err(CodexError::TurnFailed {
                            kind: error.as_ref().and_then(wire::TurnError::kind),
                            message: error.map(|e| e.message).unwrap_or_else(|| "no reason given".into()),
                        });
                    }
                    _ => Some(TurnEvent::Ended(TurnEnd::Completed)),
                }
            }
            Notification::Error(failure) if !for_other_turn => {
                let message = failure.error.message;
                // Codex's retries are its business until they exceed Tackle's: then the turn
                // stops, rather than waiting out Codex's backoff (unbounded by default).
                if failure.will_retry && self.turn.is_some() {
                    self.backend_retries += 1;
                    let limit = self.server.config().backend_retries();
                    if self.backend_retries > limit {
                        let details =
                            failure.error.additional_details.filter(|d| !d.is_empty()).unwrap_or(message);
                        tracing::debug!(thread = %self.id, retries = self.backend_retries - 1, "{details}; stopping the turn");
                        self.abandon_turn();
                        return Err(CodexError::BackendUnreachable { message: details, retries: limit });
                    }
                }
                tracing::debug!(thread = %self.id, retry = failure.will_retry, "codex error: {message}");
                None
            }
            Notification::Warning(warning) => {
                tracing::debug!(thread = %self.id, "codex warning: {}", warning.message);
                None
            }
            _ => None,
        })
    }

    /// A completed `agentMessage`: the part of its text its deltas did not stream (all of it
    /// when none came: a backend stream without `response.output_item.added` makes Codex send
    /// the message only whole).
    fn completed_message(&mut self, item: ThreadItem) -> Option<TurnEvent> {
        let ThreadItem::AgentMessage { id, text: Some(text) } = item else {
            return None;
        };
        let id = id.unwrap_or_default();
        let streamed = self.streamed.remove(&id).unwrap_or_default();
        match text.strip_prefix(streamed.as_str()) {
            Some(rest) if !rest.is_empty() => Some(TurnEvent::TextDelta(rest.to_owned())),
            Some(_) => None,
            None => {
                tracing::debug!(thread = %self.id, item = id, "the completed message differs from its deltas; the deltas stand");
                None
            }
        }
    }

    /// The call id of a raw `function_call` item of one of this thread's dynamic tools whose
    /// arguments Codex will accept (it answers unparseable ones itself, without a request).
    fn announced_call(&self, item: Result<OutputItem<'_>, String>) -> Option<CallId> {
        let item = item
            .inspect_err(|e| tracing::debug!(thread = %self.id, "a raw item that does not read: {e}"))
            .ok()?;
        let OutputItem::FunctionCall(call) = item else { return None };
        let name = call.name.as_ref();
        let qualified = match &call.namespace {
            Some(ns) => format!("{ns}__{name}"),
            None => name.to_owned(),
        };
        if !self.tool_names.contains(name) && !self.tool_names.contains(&qualified) {
            return None;
        }
        // Codex parses the arguments first and answers unparseable ones itself.
        serde_json::from_str::<Value>(&call.arguments).ok()?;
        Some(CallId::from(call.call_id.as_ref()))
    }

    /// Answers every open call with an error (the turn is ending or being abandoned).
    fn release_all(&self, why: &str) {
        let mut calls = self.calls.lock();
        for state in calls.values_mut() {
            if matches!(state, CallState::Pending { .. })
                && let CallState::Pending { responder, timer } = std::mem::replace(state, CallState::Released)
            {
                timer.abort();
                let _ = responder.answer(&release_result(why));
            }
        }
    }

    fn release_timer(&self, call: CallId, turn: TurnId) -> AbortHandle {
        let timeout = self.server.config().tool_call_timeout();
        let (book, conn, thread) = (Arc::downgrade(&self.calls), self.live.conn.clone(), self.id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(book) = book.upgrade() else { return };
            let responder = {
                let mut calls = book.lock();
                match calls.get_mut(&call) {
                    Some(state @ CallState::Pending { .. }) => match std::mem::replace(state, CallState::Released) {
                        CallState::Pending { responder, .. } => responder,
                        _ => return,
                    },
                    _ => return,
                }
            };
            tracing::warn!(%thread, %call, secs = timeout.as_secs(), "no result for a Codex tool call; releasing it");
            let why = format!("no result arrived within {} s; the call was released", timeout.as_secs());
            let _ = responder.answer(&release_result(&why));
            // Nobody is following this turn any more: stop it rather than let it run unseen.
            conn.fire(
                method::TURN_INTERRUPT,
                json!({"threadId": thread, "turnId": turn}),
            );
        })
        .abort_handle()
    }

    async fn request(&self, method_name: &str, params: &impl serde::Serialize) -> Result<Value, CodexError> {
        let value = serde_json::to_value(params)
            .map_err(|e| CodexError::Unexpected { method: method_name.into(), message: e.to_string() })?;
        self.live.conn.request(method_name, value).await
    }
}

fn release_result(why: &str) -> DynamicToolCallResponse {
    DynamicToolCallResponse::text(why, false)
}

fn router_gone() -> CodexError {
    CodexError::Exited { status: "connection closed".into(), stderr: String::new() }
}

impl Drop for CodexThread {
    fn drop(&mut self) {
        if !self.live.conn.is_closed() {
            self.abandon_turn();
        }
        self.server.detach(&self.id, self.live.generation);
    }
}

/// Threads are made by the server they run on.
impl CodexServer {
    /// Starts a new thread with `options.tools` as its dynamic tools.
    pub async fn start_thread(&self, options: ThreadOptions) -> Result<CodexThread, CodexError> {
        let live = self.live().await?;
        let params = wire::ThreadStartParams {
            cwd: options.cwd.as_ref().map(|p| p.display().to_string()),
            model: options.model.clone(),
            base_instructions: options.instructions.clone(),
            dynamic_tools: options.tools.clone(),
            ephemeral: Some(options.ephemeral),
            experimental_raw_events: true,
            approval_policy: Some(self.approval_policy().into()),
            sandbox: Some(self.sandbox().into()),
            config: Some(self.thread_config()),
        };
        let answer = live.conn.request(wire::method::THREAD_START, to_value(&params)?).await?;
        let result: ThreadResult = parse(wire::method::THREAD_START, answer)?;
        let names = options.tools.iter().map(|t| t.name().to_owned()).collect();
        Ok(self.attach(live, result, names, options.approvals))
    }

    /// Loads a stored thread (on a new process if the old one died). Its dynamic tools are
    /// the ones it was started with; `tool_names` names them.
    pub async fn resume_thread(
        &self,
        id: &ThreadId,
        options: ThreadOptions,
    ) -> Result<CodexThread, CodexError> {
        let live = self.live().await?;
        let params = wire::ThreadResumeParams {
            thread_id: id.clone(),
            cwd: options.cwd.as_ref().map(|p| p.display().to_string()),
            model: options.model.clone(),
            base_instructions: options.instructions.clone(),
            approval_policy: Some(self.approval_policy().into()),
            sandbox: Some(self.sandbox().into()),
            config: Some(self.thread_config()),
        };
        let answer = live.conn.request(wire::method::THREAD_RESUME, to_value(&params)?).await?;
        let result: ThreadResult = parse(wire::method::THREAD_RESUME, answer)?;
        let names = options.tools.iter().map(|t| t.name().to_owned()).collect();
        Ok(self.attach(live, result, names, options.approvals))
    }

    fn attach(
        &self,
        live: Live,
        result: ThreadResult,
        tool_names: std::collections::HashSet<String>,
        approvals: Arc<dyn CodexApprovals>,
    ) -> CodexThread {
        let rx = self.route(result.thread.id.clone(), live.generation);
        CodexThread::new(self.clone(), live, result, rx, tool_names, approvals)
    }
}

#[cfg(test)]
#[path = "thread_tests.rs"]
mod tests;
