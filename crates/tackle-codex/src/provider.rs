//! [`CodexProvider`]: Codex as the model of Tackle's agent.
//!
//! One Tackle session is one Codex thread. The session's callable tools go to Codex once, as
//! the thread's dynamic tools. A model call of the agent starts or continues a Codex turn:
//!
//! 1. What is new in the history since Codex's last answer is delivered: tool results answer
//!    the `item/tool/call` requests still open; user messages (the prompt, runtime notes)
//!    start a turn, or steer the running one.
//! 2. The turn streams: text deltas as they come; when Codex asks for tools, the call ends
//!    with a tool-use stop while the requests stay open, and the agent runs the calls through
//!    its own executor (validation, hooks, approvals, sandbox, offloading, audit,
//!    at-most-once). The next model call carries their results.
//!
//! Each response starts with a marker block (opaque reasoning of format `codex`) naming the
//! thread, so the thread id is stored with the session: a session opened again, or a Codex
//! process that died, continues with `thread/resume`, and results Codex never received are
//! injected into the thread. A changed tool set (the agent reports `catalog_changed` with
//! `cache_break`) starts a new thread seeded with the conversation so far.
//!
//! A request that does not continue the session's conversation (no cache breakpoint at its
//! last message, such as a compaction summary) runs on a throwaway thread.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tackle_protocol::{
    CacheBreakpoint, Message, ModelRequest, Role, StopReason, StreamEvent, ToolChoice, ToolInput, ToolUse,
    Usage,
};
use tackle_provider::{CallOptions, Capabilities, EncodedRequest, EventStream, Provider, ProviderError};
use tokio::sync::OwnedMutexGuard;

use crate::CodexError;
use crate::approvals::{CodexApprovals, DenyNativeTools};
use crate::convert::{self, ThreadMarker};
use crate::server::{CodexServer, ThreadOptions};
use crate::thread::{Answer, CodexThread, TurnEnd, TurnEvent};
use crate::wire::{CallId, DynamicToolSpec, UserInput};

/// What the encoded body of a model call carries (tools and messages under the keys the
/// agent's prefix measurement reads).
#[derive(Debug, Serialize, Deserialize)]
struct Step {
    /// The session (`prompt_cache_key`); none for one-off requests.
    session: Option<String>,
    /// Whether the request continues the session's conversation.
    continues: bool,
    model: String,
    instructions: String,
    tools: Vec<DynamicToolSpec>,
    tool_choice: ToolChoice,
    messages: Vec<Message>,
}

/// Makes the approval policy of a session's Codex-native tools.
pub type ApprovalsFactory = Arc<dyn Fn(&str) -> Arc<dyn CodexApprovals> + Send + Sync>;

/// A conversation's thread and what of its history was delivered.
#[derive(Default)]
pub(crate) struct Link {
    pub(crate) thread: Option<CodexThread>,
    /// Fingerprint of the thread's dynamic tools.
    pub(crate) tools: String,
    /// `(nonce of the latest marker, messages delivered)` of the last delivery.
    pub(crate) delivered: Option<(String, usize)>,
}

/// Codex as a [`Provider`]: see the module docs.
///
/// ```no_run
/// use tackle_codex::{CodexConfig, CodexProvider, CodexServer};
/// let provider = CodexProvider::new(CodexServer::new(CodexConfig::default()), std::env::current_dir().ok());
/// ```
pub struct CodexProvider {
    server: CodexServer,
    cwd: Option<PathBuf>,
    approvals: ApprovalsFactory,
    links: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Link>>>>,
}

impl std::fmt::Debug for CodexProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexProvider")
            .field("server", &self.server)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl CodexProvider {
    /// A provider whose threads run on `server` in `cwd`; Codex's own tools are declined
    /// unless [`CodexProvider::with_approvals`] says otherwise.
    pub fn new(server: CodexServer, cwd: Option<PathBuf>) -> Self {
        Self {
            server,
            cwd,
            approvals: Arc::new(|_: &str| Arc::new(DenyNativeTools) as Arc<dyn CodexApprovals>),
            links: Mutex::new(HashMap::new()),
        }
    }

    /// Decides the approval requests of Codex's own tools with a policy per session.
    pub fn with_approvals(mut self, approvals: ApprovalsFactory) -> Self {
        self.approvals = approvals;
        self
    }

    /// The server the threads run on.
    pub fn server(&self) -> &CodexServer {
        &self.server
    }

    /// The Codex thread of `session`, when one is open in this process.
    pub async fn thread_of(&self, session: &str) -> Option<crate::wire::ThreadId> {
        let link = self.links.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned()?;
        let link = link.lock().await;
        link.thread.as_ref().map(|t| t.id().clone())
    }

    fn link(&self, session: &str) -> Arc<tokio::sync::Mutex<Link>> {
        self.links.lock().unwrap_or_else(|p| p.into_inner()).entry(session.to_owned()).or_default().clone()
    }

    fn options(&self, step: &Step, tools: Vec<DynamicToolSpec>, ephemeral: bool) -> ThreadOptions {
        ThreadOptions {
            model: model_param(&step.model),
            cwd: self.cwd.clone(),
            instructions: Some(step.instructions.clone()).filter(|s| !s.is_empty()),
            tools,
            ephemeral,
            approvals: (self.approvals)(step.session.as_deref().unwrap_or_default()),
        }
    }

    /// Continues (or starts) the session's thread with what is new, then streams the turn.
    async fn continue_session(&self, step: Step, session: String) -> Result<EventStream, CodexError> {
        let mut link = self.link(&session).lock_owned().await;
        let fingerprint = convert::fingerprint(&step.tools);
        let marker = convert::latest_marker(&step.messages);
        // The thread this history continues, and where the part new to it starts: the
        // marker's, or (before any response was recorded, e.g. when the first one broke off)
        // the thread this link started from the same history.
        let candidate = match &marker {
            Some((i, m)) if m.tools == fingerprint => Some((m.thread.clone(), i + 1)),
            Some(_) => {
                tracing::info!(%session, "the tool set changed; starting a new Codex thread");
                None
            }
            None => match (&link.thread, &link.delivered) {
                (Some(t), Some((nonce, _))) if nonce.is_empty() && link.tools == fingerprint => {
                    Some((t.id().clone(), 0))
                }
                _ => None,
            },
        };
        let tail_start = match candidate {
            Some((id, start)) if link.thread.as_ref().is_some_and(|t| t.id() == &id && t.is_connected()) => {
                Some(start)
            }
            Some((id, start)) => {
                match self.server.resume_thread(&id, self.options(&step, step.tools.clone(), false)).await {
                    Ok(thread) => {
                        tracing::info!(%session, thread = %id, "resumed the Codex thread of the session");
                        link.thread = Some(thread);
                        link.tools = fingerprint.clone();
                        Some(start)
                    }
                    Err(e) if e.is_connection_lost() => return Err(e),
                    Err(e) => {
                        tracing::warn!(%session, thread = %id, error = %e, "cannot resume the Codex thread; starting a new one");
                        None
                    }
                }
            }
            None => None,
        };
        let mut inputs = Vec::new();
        let tail_start = match tail_start {
            Some(start) => start,
            None => {
                // A new thread: everything before the trailing user messages is seeded into it,
                // and those messages are the turn's input.
                let mut thread =
                    self.server.start_thread(self.options(&step, step.tools.clone(), false)).await?;
                tracing::info!(%session, thread = %thread.id(), "started a Codex thread for the session");
                let split = convert::trailing_user_start(&step.messages);
                thread.inject(convert::history_items(&step.messages[..split])).await?;
                inputs = user_inputs(&step.messages[split..]);
                link.thread = Some(thread);
                link.tools = fingerprint.clone();
                link.delivered = None;
                step.messages.len()
            }
        };
        // Deliver what is new since the latest marker.
        let nonce = marker.as_ref().map(|(_, m)| m.nonce.clone()).unwrap_or_default();
        let already = match &link.delivered {
            Some((n, count)) if *n == nonce => *count,
            _ => 0,
        };
        let Some(thread) = link.thread.as_mut() else {
            return Err(CodexError::Unexpected {
                method: "thread/start".into(),
                message: "no thread".into(),
            });
        };
        let mut inject = Vec::new();
        for (i, message) in step.messages.iter().enumerate().skip(tail_start) {
            match message.role {
                Role::Tool => {
                    for result in message.tool_results_iter() {
                        let call = codex_call(thread, result.tool_use_id.as_str());
                        match thread.answer(&call, convert::tool_answer(result))? {
                            Answer::Delivered | Answer::Duplicate => {}
                            Answer::Late if i >= already => inputs.push(UserInput::text(format!(
                                "[late tool result] The result of tool call {} arrived after the call was released:\n{}",
                                result.tool_use_id, result.content
                            ))),
                            Answer::Late => {}
                            Answer::Unknown if !thread.has_result_for(&call) => inject.push(convert::output_item(result)),
                            Answer::Unknown => {}
                        }
                    }
                }
                Role::User if i >= already => inputs.extend(user_inputs(std::slice::from_ref(message))),
                // Tackle's own records of Codex output (e.g. text kept from a cancelled call).
                Role::User | Role::Assistant => {}
            }
        }
        thread.inject(inject).await?;
        if thread.turn_active() {
            if !inputs.is_empty() {
                thread.steer(inputs).await?;
            }
        } else {
            thread.start_turn(inputs).await?;
        }
        let thread_id = thread.id().clone();
        link.delivered = Some((nonce, step.messages.len()));

        let marker =
            ThreadMarker { thread: thread_id, tools: fingerprint, nonce: uuid::Uuid::now_v7().to_string() };
        Ok(turn_stream(link, Some(marker)))
    }

    /// A request outside the session's conversation, on a throwaway thread.
    async fn one_off(&self, step: Step) -> Result<EventStream, CodexError> {
        let tools = if step.tool_choice == ToolChoice::None { Vec::new() } else { step.tools.clone() };
        let fingerprint = convert::fingerprint(&tools);
        let mut thread = self.server.start_thread(self.options(&step, tools, true)).await?;
        let split = convert::trailing_user_start(&step.messages);
        thread.inject(convert::history_items(&step.messages[..split])).await?;
        thread.start_turn(user_inputs(&step.messages[split..])).await?;
        let marker = ThreadMarker {
            thread: thread.id().clone(),
            tools: fingerprint.clone(),
            nonce: uuid::Uuid::now_v7().to_string(),
        };
        let link = Arc::new(tokio::sync::Mutex::new(Link {
            thread: Some(thread),
            tools: fingerprint,
            delivered: None,
        }));
        Ok(turn_stream(link.lock_owned().await, Some(marker)))
    }
}

/// The model name Codex should use; `default` (or empty) leaves Codex's configured model.
pub(crate) fn model_param(model: &str) -> Option<String> {
    let m = model.strip_prefix("codex/").unwrap_or(model);
    (!m.is_empty() && m != "default").then(|| m.to_owned())
}

/// The Codex call a tool result answers. The agent gives a reused call id a fresh one,
/// `<id>_<n>`, before running it (every call the model makes runs once): such a result answers
/// the open call `<id>`.
fn codex_call(thread: &CodexThread, id: &str) -> CallId {
    let exact = CallId::from(id);
    if thread.is_pending(&exact) {
        return exact;
    }
    match id.rsplit_once('_') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let base = CallId::from(base);
            if thread.is_pending(&base) { base } else { exact }
        }
        _ => exact,
    }
}

pub(crate) fn user_inputs(messages: &[Message]) -> Vec<UserInput> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .filter(|t| !t.is_empty())
        .map(UserInput::text)
        .collect()
}

/// Streams the running turn until it asks for tools or ends, after the marker if one is
/// given. Dropped early (the client cancelled), it interrupts the turn.
pub(crate) fn turn_stream(link: OwnedMutexGuard<Link>, marker: Option<ThreadMarker>) -> EventStream {
    struct State {
        link: OwnedMutexGuard<Link>,
        queue: VecDeque<Result<StreamEvent, ProviderError>>,
        usage: Usage,
        done: bool,
    }
    impl Drop for State {
        fn drop(&mut self) {
            if !self.done
                && let Some(thread) = self.link.thread.as_mut()
            {
                thread.abandon_turn();
            }
        }
    }
    let mut queue = VecDeque::new();
    if let Some(marker) = marker {
        queue.push_back(Ok(StreamEvent::Reasoning(marker.to_reasoning())));
    }
    let state = State { link, queue, usage: Usage::default(), done: false };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            let Some(thread) = state.link.thread.as_mut() else {
                state.done = true;
                return Some((
                    Err(ProviderError::Protocol { message: "the Codex thread is gone".into() }),
                    state,
                ));
            };
            match thread.next_event().await {
                Ok(TurnEvent::TextDelta(text)) => return Some((Ok(StreamEvent::TextDelta { text }), state)),
                Ok(TurnEvent::ReasoningDelta(text)) => {
                    return Some((Ok(StreamEvent::ReasoningDelta { text }), state));
                }
                Ok(TurnEvent::Usage(u)) => {
                    state.usage.add(&u);
                    return Some((Ok(StreamEvent::Usage(state.usage)), state));
                }
                Ok(TurnEvent::ToolCalls(calls)) => {
                    for (index, call) in (0u32..).zip(calls) {
                        let arguments = call.arguments.to_string();
                        let id = call.call_id.to_string();
                        state.queue.push_back(Ok(StreamEvent::ToolCallStart {
                            index,
                            id: id.clone(),
                            name: call.tool.clone(),
                        }));
                        state.queue.push_back(Ok(StreamEvent::ToolCallDelta { index, arguments }));
                        let call = ToolUse {
                            id: id.into(),
                            name: call.tool,
                            input: ToolInput::Json { value: call.arguments },
                        };
                        state.queue.push_back(Ok(StreamEvent::ToolCallEnd { index, call }));
                    }
                    state.queue.push_back(Ok(StreamEvent::Stop { reason: StopReason::ToolUse }));
                    state.done = true;
                }
                Ok(TurnEvent::Ended(end)) => {
                    let reason = match end {
                        TurnEnd::Completed => StopReason::EndTurn,
                        TurnEnd::Interrupted => StopReason::Other("interrupted".into()),
                    };
                    state.queue.push_back(Ok(StreamEvent::Stop { reason }));
                    state.done = true;
                }
                Err(e) => {
                    state.done = true;
                    return Some((Err(e.into()), state));
                }
            }
        }
    })
    .boxed()
}

#[async_trait]
impl Provider for CodexProvider {
    fn name(&self) -> &str {
        "codex"
    }

    fn capabilities(&self) -> Capabilities {
        // Dynamic tools are fixed at thread start: per-step masks are tail notes plus the
        // executor's refusal. Codex keys its prompt cache by thread itself.
        let mut caps = Capabilities::default();
        caps.parallel_tool_calls = true;
        caps
    }

    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        let last = request.messages.len().checked_sub(1);
        let continues =
            last.is_some_and(|l| request.cache_breakpoints.contains(&CacheBreakpoint::Message { index: l }));
        let instructions = request.system.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
        #[derive(Serialize)]
        struct StepRef<'a> {
            session: Option<&'a str>,
            continues: bool,
            model: &'a str,
            instructions: String,
            tools: Vec<DynamicToolSpec>,
            tool_choice: &'a ToolChoice,
            messages: &'a [Message],
        }
        let step = StepRef {
            session: request.prompt_cache_key.as_deref(),
            continues,
            model: &request.model,
            instructions,
            tools: convert::dynamic_tools(&request.tools),
            tool_choice: &request.tool_choice,
            messages: &request.messages,
        };
        let body =
            serde_json::to_vec(&step).map_err(|e| ProviderError::Protocol { message: e.to_string() })?;
        Ok(EncodedRequest {
            path: "codex:turn",
            body: Bytes::from(body),
            betas: &[],
            cache_order: &["tools", "messages"],
            delivery: tackle_provider::Delivery::Stream,
        })
    }

    async fn send(
        &self,
        encoded: EncodedRequest,
        _options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let step: Step = serde_json::from_slice(&encoded.body)
            .map_err(|e| ProviderError::Protocol { message: format!("not a Codex step: {e}") })?;
        if step.messages.is_empty() {
            return Err(ProviderError::BadRequest {
                message: "a Codex turn needs at least one message".into(),
            });
        }
        let stream = match step.session.clone() {
            Some(session) if step.continues => self.continue_session(step, session).await,
            _ => self.one_off(step).await,
        };
        stream.map_err(ProviderError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_map_to_codex_models() {
        assert_eq!(model_param("gpt-5-codex"), Some("gpt-5-codex".into()));
        assert_eq!(model_param("codex/gpt-5"), Some("gpt-5".into()));
        assert_eq!(model_param("default"), None);
        assert_eq!(model_param(""), None);
    }

    #[test]
    fn encoding_marks_which_requests_continue_the_session() {
        let provider = CodexProvider::new(CodexServer::new(crate::CodexConfig::default()), None);
        let mut request =
            ModelRequest::new("m", vec![Message::user("a"), Message::assistant("b"), Message::user("c")]);
        request.prompt_cache_key = Some("s1".into());
        request.cache_breakpoints = vec![CacheBreakpoint::System, CacheBreakpoint::Message { index: 2 }];
        let step: Step = serde_json::from_slice(&provider.encode(&request).unwrap().body).unwrap();
        assert!(step.continues);
        assert_eq!(step.session.as_deref(), Some("s1"));
        // A compaction summary has no breakpoint at its end: it runs on a throwaway thread.
        request.cache_breakpoints.clear();
        let step: Step = serde_json::from_slice(&provider.encode(&request).unwrap().body).unwrap();
        assert!(!step.continues);
    }
}
