//! [`CodexBridge`]: Codex behind an OpenAI-style chat endpoint whose client runs the tools.
//!
//! Chat requests are stateless; Codex threads are not. The bridge keeps one conversation per
//! thread and recognises a client's next request by what it sends back:
//!
//! - A request ending with tool results must answer calls the bridge handed out: each
//!   `tool_call_id` is looked up among the open calls of the same user, the messages before the
//!   assistant's `tool_calls` must be the conversation the calls came from, and every call of
//!   the batch must have its result. The results answer the open `item/tool/call` requests and
//!   the same turn streams on.
//! - A request ending with user messages continues the conversation whose history it extends
//!   (same user, model, instructions and tools), or starts a thread seeded with its history.
//!
//! The client's tools are the thread's dynamic tools, chosen by `tool_choice` ([`tools_for`]):
//! `none` sends none, a named function only that one. A call the client never answers is
//! released after [`crate::CodexConfig::tool_call_timeout_secs`] with an error result, and a
//! result that comes after that is refused ([`BridgeError::ExpiredToolCall`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use tackle_protocol::{ContentBlock, Message, Role, StopReason, StreamEvent, ToolChoice, ToolSpec};
use tackle_provider::EventStream;
use thiserror::Error;

use crate::CodexError;
use crate::approvals::{CodexApprovals, DenyNativeTools};
use crate::convert;
use crate::provider::{Link, turn_stream, user_inputs};
use crate::server::{CodexServer, ThreadOptions};
use crate::thread::Answer;
use crate::wire::CallId;

/// Conversations kept at most; the least recently used idle one goes first.
const MAX_CONVERSATIONS: usize = 256;
/// An idle conversation is forgotten (its thread closed) after this long.
const IDLE_LIMIT: Duration = Duration::from_secs(3600);

/// One chat request, in Tackle's terms.
#[derive(Debug, Clone)]
pub struct BridgeRequest {
    /// The authenticated user: conversations and calls of other users are invisible.
    pub owner: String,
    /// Codex model (`default` for Codex's configured one).
    pub model: String,
    /// The system and developer messages, joined.
    pub instructions: Option<String>,
    /// The conversation (user, assistant, tool messages).
    pub messages: Vec<Message>,
    /// The client's tools, in a stable order.
    pub tools: Vec<ToolSpec>,
    /// The client's `tool_choice`.
    pub tool_choice: ToolChoice,
}

/// Why a bridge request cannot be served; each says what the client should do.
#[derive(Debug, Error)]
pub enum BridgeError {
    /// A tool result answers no call handed out to this user.
    #[error(
        "tool result {id:?} answers no open tool call of this conversation; send results only for the tool_calls \
         of the last assistant message"
    )]
    UnknownToolCall {
        /// The call id.
        id: String,
        /// Index of the message carrying it.
        at: usize,
    },
    /// The call was released after the timeout (answered with an error, turn interrupted).
    #[error(
        "tool call {id:?} was released after {secs} s without a result and its turn was stopped; send the \
         conversation again without these tool calls to continue"
    )]
    ExpiredToolCall {
        /// The call id.
        id: String,
        /// The timeout.
        secs: u64,
    },
    /// The call was already answered.
    #[error("tool call {id:?} was already answered")]
    AlreadyAnswered {
        /// The call id.
        id: String,
    },
    /// A call of the batch has no result.
    #[error("tool call {id:?} has no result; answer every tool call of the last assistant message")]
    MissingToolResult {
        /// The call id.
        id: String,
    },
    /// The messages before the tool calls are not the conversation the calls came from.
    #[error(
        "the messages before the tool calls differ from the conversation the calls came from; send the \
         conversation as it was, with the assistant message and the tool results appended"
    )]
    ConversationMismatch,
    /// Another request of the same conversation is running.
    #[error("another request of this conversation is still running; wait for it to finish")]
    Busy,
    /// The request has nothing to send.
    #[error("{0}")]
    Invalid(String),
    /// Codex failed.
    #[error(transparent)]
    Codex(#[from] CodexError),
}

/// The tools a thread gets for `choice`: `none` → none, a named function → that one,
/// `allowed_tools` → those, otherwise all.
///
/// ```
/// use serde_json::json;
/// use tackle_codex::tools_for;
/// use tackle_protocol::{ToolChoice, ToolSpec};
/// let tools = vec![ToolSpec::new("a", "", json!({})), ToolSpec::new("b", "", json!({}))];
/// assert!(tools_for(&tools, &ToolChoice::None).is_empty());
/// assert_eq!(tools_for(&tools, &ToolChoice::Named { name: "b".into() })[0].name, "b");
/// assert_eq!(tools_for(&tools, &ToolChoice::Auto).len(), 2);
/// ```
pub fn tools_for(tools: &[ToolSpec], choice: &ToolChoice) -> Vec<ToolSpec> {
    match choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Named { name } => tools.iter().filter(|t| &t.name == name).cloned().collect(),
        ToolChoice::Allowed { tools: names, .. } => {
            tools.iter().filter(|t| names.contains(&t.name)).cloned().collect()
        }
        ToolChoice::Auto | ToolChoice::Required => tools.to_vec(),
    }
}

struct Entry {
    owner: String,
    /// Model, instructions and tools: a conversation continues only with the same ones.
    setup: String,
    /// Digest of the history the client's next request must start with.
    expected: String,
    /// Calls of the last batch handed out (waiting for results).
    open: Vec<CallId>,
    /// Every call this conversation handed out.
    handed_out: HashSet<CallId>,
    last_used: Instant,
    link: Arc<tokio::sync::Mutex<Link>>,
}

#[derive(Default)]
struct Conversations {
    entries: HashMap<u64, Entry>,
    next: u64,
}

/// Codex behind a stateless chat API: see the module docs.
pub struct CodexBridge {
    server: CodexServer,
    cwd: Option<PathBuf>,
    approvals: Arc<dyn CodexApprovals>,
    state: Arc<Mutex<Conversations>>,
}

impl std::fmt::Debug for CodexBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexBridge").field("server", &self.server).finish_non_exhaustive()
    }
}

impl CodexBridge {
    /// A bridge whose threads run on `server` in `cwd`. Codex's own tools are declined (the
    /// client has no way to approve them).
    pub fn new(server: CodexServer, cwd: Option<PathBuf>) -> Self {
        Self { server, cwd, approvals: Arc::new(DenyNativeTools), state: Arc::default() }
    }

    /// The server the threads run on.
    pub fn server(&self) -> &CodexServer {
        &self.server
    }

    /// Conversations held now.
    pub fn conversations(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Conversations> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves one request: the events of the turn until it asks for tools (`Stop` with
    /// `tool_use`, the calls open) or ends.
    pub async fn turn(&self, request: BridgeRequest) -> Result<EventStream, BridgeError> {
        if request.messages.is_empty() {
            return Err(BridgeError::Invalid("send at least one user message".into()));
        }
        let tools = convert::dynamic_tools(&tools_for(&request.tools, &request.tool_choice));
        let setup = digest(&json!([request.model, request.instructions, tools]));
        let ends_with_results = request.messages.last().is_some_and(|m| m.role == Role::Tool);
        let (id, guard) = if ends_with_results {
            self.answer_calls(&request).await?
        } else {
            self.start_turn(&request, tools, setup).await?
        };
        Ok(self.track(id, guard, &request.messages))
    }

    /// Matches the trailing tool results to open calls, answers them, and hands back the
    /// conversation to stream.
    async fn answer_calls(
        &self,
        request: &BridgeRequest,
    ) -> Result<(u64, tokio::sync::OwnedMutexGuard<Link>), BridgeError> {
        let messages = &request.messages;
        let last_assistant = messages.iter().rposition(|m| m.role == Role::Assistant).ok_or_else(|| {
            BridgeError::Invalid("tool results must follow an assistant message with tool_calls".into())
        })?;
        let results: Vec<(usize, &tackle_protocol::ToolResult)> = messages
            .iter()
            .enumerate()
            .skip(last_assistant + 1)
            .flat_map(|(i, m)| m.tool_results_iter().map(move |r| (i, r)))
            .collect();
        let Some(&(first_at, first)) = results.first() else {
            return Err(BridgeError::Invalid("the tool messages carry no results".into()));
        };
        let (id, link) = {
            let state = self.lock();
            let found = state.entries.iter().find(|(_, e)| {
                e.owner == request.owner && e.handed_out.contains(&CallId::from(first.tool_use_id.as_str()))
            });
            let Some((id, entry)) = found else {
                return Err(BridgeError::UnknownToolCall { id: first.tool_use_id.to_string(), at: first_at });
            };
            for (at, r) in &results {
                if !entry.handed_out.contains(&CallId::from(r.tool_use_id.as_str())) {
                    return Err(BridgeError::UnknownToolCall { id: r.tool_use_id.to_string(), at: *at });
                }
            }
            if entry.expected != history_digest(&messages[..last_assistant]) {
                return Err(BridgeError::ConversationMismatch);
            }
            for open in &entry.open {
                if !results.iter().any(|(_, r)| r.tool_use_id == open.as_str()) {
                    return Err(BridgeError::MissingToolResult { id: open.to_string() });
                }
            }
            (*id, entry.link.clone())
        };
        let mut guard = link.try_lock_owned().map_err(|_| BridgeError::Busy)?;
        let secs = self.server.config().tool_call_timeout_secs;
        let Some(thread) = guard.thread.as_mut() else { return Err(BridgeError::Busy) };
        for (_, result) in &results {
            let call = CallId::from(result.tool_use_id.as_str());
            match thread.answer(&call, convert::tool_answer(result))? {
                Answer::Delivered => {}
                Answer::Duplicate => {
                    return Err(BridgeError::AlreadyAnswered { id: result.tool_use_id.to_string() });
                }
                Answer::Late => {
                    drop(guard);
                    self.lock().entries.remove(&id);
                    return Err(BridgeError::ExpiredToolCall { id: result.tool_use_id.to_string(), secs });
                }
                Answer::Unknown => {
                    drop(guard);
                    self.lock().entries.remove(&id);
                    return Err(CodexError::Exited {
                        status: "the app-server holding this conversation stopped".into(),
                        stderr: String::new(),
                    }
                    .into());
                }
            }
        }
        Ok((id, guard))
    }

    /// Continues the conversation the request extends, or starts one.
    async fn start_turn(
        &self,
        request: &BridgeRequest,
        tools: Vec<crate::wire::DynamicToolSpec>,
        setup: String,
    ) -> Result<(u64, tokio::sync::OwnedMutexGuard<Link>), BridgeError> {
        let split = convert::trailing_user_start(&request.messages);
        let inputs = user_inputs(&request.messages[split..]);
        if inputs.is_empty() {
            return Err(BridgeError::Invalid("the last message must be the user's (or tool results)".into()));
        }
        let prefix = history_digest(&request.messages[..split]);
        let known = {
            let state = self.lock();
            state
                .entries
                .iter()
                .find(|(_, e)| {
                    e.owner == request.owner && e.setup == setup && e.expected == prefix && e.open.is_empty()
                })
                .map(|(id, e)| (*id, e.link.clone()))
        };
        if let Some((id, link)) = known
            && let Ok(mut guard) = link.try_lock_owned()
            && let Some(thread) = guard.thread.as_mut().filter(|t| t.is_connected() && !t.turn_active())
        {
            thread.start_turn(inputs).await?;
            return Ok((id, guard));
        }
        let options = ThreadOptions {
            model: crate::provider::model_param(&request.model),
            cwd: self.cwd.clone(),
            instructions: request.instructions.clone(),
            tools,
            ephemeral: true,
            approvals: self.approvals.clone(),
        };
        let mut thread = self.server.start_thread(options).await?;
        thread.inject(convert::history_items(&request.messages[..split])).await?;
        thread.start_turn(inputs).await?;
        let link = Arc::new(tokio::sync::Mutex::new(Link {
            thread: Some(thread),
            tools: String::new(),
            delivered: None,
        }));
        let guard = link.clone().try_lock_owned().map_err(|_| BridgeError::Busy)?;
        let mut state = self.lock();
        evict(&mut state);
        state.next += 1;
        let id = state.next;
        state.entries.insert(
            id,
            Entry {
                owner: request.owner.clone(),
                setup,
                expected: String::new(),
                open: Vec::new(),
                handed_out: HashSet::new(),
                last_used: Instant::now(),
                link,
            },
        );
        Ok((id, guard))
    }

    /// Streams the turn and records, when it pauses or ends, what the client's next request
    /// must look like. A stream dropped before then (client gone) closes the conversation.
    fn track(&self, id: u64, guard: tokio::sync::OwnedMutexGuard<Link>, messages: &[Message]) -> EventStream {
        struct Tracker {
            state: Arc<Mutex<Conversations>>,
            id: u64,
            messages: Vec<Message>,
            text: String,
            calls: Vec<tackle_protocol::ToolUse>,
            finished: bool,
        }
        impl Drop for Tracker {
            fn drop(&mut self) {
                if !self.finished {
                    self.state.lock().unwrap_or_else(|p| p.into_inner()).entries.remove(&self.id);
                }
            }
        }
        let mut tracker = Tracker {
            state: self.state.clone(),
            id,
            messages: messages.to_vec(),
            text: String::new(),
            calls: Vec::new(),
            finished: false,
        };
        turn_stream(guard, None)
            .map(move |event| {
                match &event {
                    Ok(StreamEvent::TextDelta { text }) => tracker.text.push_str(text),
                    Ok(StreamEvent::ToolCallEnd { call, .. }) => tracker.calls.push(call.clone()),
                    Ok(StreamEvent::Stop { reason }) => {
                        let mut state = tracker.state.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(entry) = state.entries.get_mut(&tracker.id) {
                            entry.last_used = Instant::now();
                            if *reason == StopReason::ToolUse {
                                entry.expected = history_digest(&tracker.messages);
                                entry.open =
                                    tracker.calls.iter().map(|c| CallId::from(c.id.as_str())).collect();
                                entry.handed_out.extend(entry.open.iter().cloned());
                            } else {
                                let mut history = std::mem::take(&mut tracker.messages);
                                history.push(Message::assistant(std::mem::take(&mut tracker.text)));
                                entry.expected = history_digest(&history);
                                entry.open.clear();
                            }
                        }
                        tracker.finished = true;
                    }
                    Err(_) => {
                        tracker.state.lock().unwrap_or_else(|p| p.into_inner()).entries.remove(&tracker.id);
                        tracker.finished = true;
                    }
                    _ => {}
                }
                event
            })
            .boxed()
    }
}

/// Forgets idle conversations past the limits (their threads close when dropped).
fn evict(state: &mut Conversations) {
    let now = Instant::now();
    state.entries.retain(|_, e| now.duration_since(e.last_used) < IDLE_LIMIT || e.link.try_lock().is_err());
    while state.entries.len() >= MAX_CONVERSATIONS {
        let oldest = state
            .entries
            .iter()
            .filter(|(_, e)| e.link.try_lock().is_ok())
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| *id);
        match oldest {
            Some(id) => {
                state.entries.remove(&id);
            }
            None => break,
        }
    }
}

fn digest(value: &serde_json::Value) -> String {
    blake3::hash(value.to_string().as_bytes()).to_hex().to_string()
}

/// A digest of a history that ignores what clients re-serialize differently: assistant
/// messages count by their text and tool call ids, tool messages by result ids and text.
fn history_digest(messages: &[Message]) -> String {
    let normalized: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m.tool_uses().map(|u| u.id.as_str()).collect();
            let results: Vec<(&str, &str)> =
                m.tool_results_iter().map(|r| (r.tool_use_id.as_str(), r.content.as_str())).collect();
            let text: String = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            json!([m.role, text, calls, results])
        })
        .collect();
    digest(&serde_json::Value::Array(normalized))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tackle_protocol::{ToolInput, ToolResult, ToolUse};

    use super::*;

    #[test]
    fn tool_choice_picks_the_thread_tools() {
        let tools = vec![ToolSpec::new("a", "", json!({})), ToolSpec::new("b", "", json!({}))];
        let allowed =
            ToolChoice::Allowed { tools: vec!["a".into()], mode: tackle_protocol::AllowedToolsMode::Auto };
        assert_eq!(tools_for(&tools, &allowed).len(), 1);
        assert_eq!(tools_for(&tools, &ToolChoice::Required).len(), 2);
        assert!(tools_for(&tools, &ToolChoice::Named { name: "zzz".into() }).is_empty());
    }

    #[test]
    fn history_digests_ignore_argument_formatting_but_not_content() {
        let call = |args: &str| Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: "c1".into(),
                name: "f".into(),
                input: ToolInput::parse(args),
            })],
        };
        let a = vec![
            Message::user("hi"),
            call(r#"{"x": 1}"#),
            Message::tool_results([ToolResult::ok("c1", "r")]),
        ];
        let b =
            vec![Message::user("hi"), call(r#"{"x":1}"#), Message::tool_results([ToolResult::ok("c1", "r")])];
        assert_eq!(history_digest(&a), history_digest(&b));
        let c = vec![
            Message::user("hi!"),
            call(r#"{"x":1}"#),
            Message::tool_results([ToolResult::ok("c1", "r")]),
        ];
        assert_ne!(history_digest(&a), history_digest(&c));
    }
}
