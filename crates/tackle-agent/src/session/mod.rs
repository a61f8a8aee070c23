//! [`Session`]: one conversation, its history, and the turns run on it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tackle_protocol::{
    AgentEvent, CachePolicy, ContentBlock, Message, Role, SessionId, SystemSection, ToolCallId, ToolResult,
    TurnEnd, Usage,
};
use tackle_store::{SessionRecord, ToolCallStatus};

mod history;
mod loop_guard;
mod model_call;
mod prefix;
mod system_prompt;
mod tail_note;
mod tool_calls;
mod turn;

pub(crate) use history::{Change, History};
pub use loop_guard::LoopGuardConfig;
pub use model_call::{Streaming, UnknownStreaming};
pub(crate) use prefix::PrefixTracker;
pub(crate) use system_prompt::system_sections;
pub(crate) use tail_note::{NOTE_PREFIX, TailNotes};

use crate::agent::LoadedMessage;
use crate::context::{CALIBRATION_KEY, ContextState};
use crate::conversation::interrupted_result;
use crate::tools::{SessionTools, SkillSet, StepTools};
use crate::{Agent, AgentError, ToolCatalog, ToolMask, TurnFailure};

/// What the user sends in a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnInput {
    /// The user's message.
    pub message: String,
    /// Steps for this turn instead of the agent's default.
    pub max_steps: Option<u32>,
    /// Which tools the model may call in this turn (see [`ToolMask`]); all when `None`.
    pub tool_mask: Option<ToolMask>,
    /// What happens to calls that need confirmation in this turn; `None`: the executor's
    /// approver decides, however long it takes (a front end where nobody may answer sets one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<tackle_tools::ApprovalPolicy>,
    /// What happens to questions tools ask in this turn (MCP elicitation); `None`: the agent's
    /// policy, else the one matching `approval`.
    #[serde(skip)]
    pub elicitation: Option<tackle_tools::ElicitationPolicy>,
    /// The final answer must be JSON matching this schema ([`crate::OutputSchema`]); the
    /// outcome's `output` holds it. `None`: a free-text answer.
    #[serde(skip)]
    pub output_schema: Option<crate::OutputSchema>,
}

impl TurnInput {
    /// A turn with this message and default limits.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            max_steps: None,
            tool_mask: None,
            approval: None,
            elicitation: None,
            output_schema: None,
        }
    }

    /// Asks for a final answer matching `schema` (structured output).
    pub fn with_output_schema(mut self, schema: crate::OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the tool mask.
    pub fn with_mask(mut self, mask: Option<ToolMask>) -> Self {
        self.tool_mask = mask;
        self
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnOutcome {
    /// Session id.
    pub session_id: SessionId,
    /// Steps taken.
    pub steps: u32,
    /// How it ended.
    pub end: TurnEnd,
    /// Final answer text (of the last step); with an output schema, the validated JSON answer
    /// serialized compactly.
    pub text: String,
    /// The validated final answer, when the turn asked for an output schema and completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// Usage summed over the turn.
    pub usage: Usage,
    /// Why the turn failed or stopped short (`None` when it completed).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "serialize_failure")]
    pub error: Option<TurnFailure>,
}

fn serialize_failure<S: serde::Serializer>(failure: &Option<TurnFailure>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&failure.as_ref().map(TurnFailure::report), s)
}

/// A conversation with its history, loaded in memory and persisted message by message.
pub struct Session {
    pub(crate) agent: Agent,
    pub(crate) record: SessionRecord,
    /// The conversation, each message with its store row and token count.
    pub(crate) history: History,
    pub(crate) next_turn: i64,
    pub(crate) workspace: PathBuf,
    /// The catalog, skills and deferred tools of the session.
    pub(crate) tools: SessionTools,
    /// System sections, read once when the session is opened so every request of the session
    /// shares them byte for byte.
    pub(crate) system: Vec<SystemSection>,
    pub(crate) notes: TailNotes,
    pub(crate) prefix: PrefixTracker,
    /// Messages in the previous request (where its cache entry ends).
    pub(crate) last_request_len: usize,
    /// Warnings found while opening, reported at the next turn.
    pub(crate) pending_warnings: Vec<AgentEvent>,
    /// The open todo items the tail note states, read once per turn and again only after a
    /// tool asked for it ([`crate::tools::Requests::tail_state_changed`]; only the todo tool
    /// changes them during a turn): one store query less per step.
    pub(crate) open_todos: Option<Vec<String>>,
    /// Token accounting of the fixed parts and calibration.
    pub(crate) context: ContextState,
    /// The history was rewritten by compaction since the last request (a cache break is
    /// expected, not a bug). (A sub-agent's first request, measured against its parent's, is
    /// no break either: its [`PrefixTracker`] knows its baseline is the parent's.)
    pub(crate) compacted: bool,
    /// The running turn's end (the session's status after it) was committed with its last step.
    pub(crate) turn_ended: bool,
    /// Index of the current turn's user message.
    pub(crate) turn_start: usize,
    /// The session's permission mode (stored in its state).
    pub(crate) mode: tackle_tools::PermissionMode,
    /// `SessionStart` hooks run at the first turn of this value: `startup` or `resume`; `None`
    /// once run, or for a front end that reopens the session per request.
    pub(crate) start_source: Option<&'static str>,
    /// How deep this session is in a tree of sub-agents (0: started by a person).
    pub(crate) depth: u32,
    /// The prompt-cache key its requests carry: its parent's for a sub-agent (so the child
    /// reads the parent's cache entry), else its own id.
    pub(crate) cache_key: Option<String>,
}

/// What [`Session::start`] opens.
pub(crate) enum Opening {
    /// A stored session with its history (latest snapshot plus later messages).
    Existing { record: SessionRecord, loaded: Vec<LoadedMessage> },
    /// A session to create, with the history it starts from (stored as turn 0).
    New { session: tackle_store::NewSession, history: Vec<tackle_protocol::Message> },
    /// A sub-agent's session to create, linked to the parent's call in the same commit.
    Child { session: tackle_store::NewSession, child: ChildOpening },
}

/// What a sub-agent's session takes from its parent when it is created.
pub(crate) struct ChildOpening {
    /// The parent session and the call that starts the child.
    pub(crate) link: tackle_store::ParentLink,
    /// The child's depth (its parent's plus one).
    pub(crate) depth: u32,
    /// The system sections its requests send: its parent's byte for byte, then the
    /// sub-agent's instructions (**[subagent-shares-prefix]**).
    pub(crate) system: Vec<SystemSection>,
    /// The parent's prompt-cache key, so the child reads the parent's cache entry.
    pub(crate) cache_key: String,
    /// Its prefix baseline: the parent's request ([`PrefixTracker::child_of`]).
    pub(crate) prefix: PrefixTracker,
}

/// Session-state key of the vocabulary the stored token counts were made with.
const COUNT_ENCODING_KEY: &str = "context.count_encoding";

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.record.id).field("messages", &self.history.len()).finish()
    }
}

impl Session {
    /// Opens a session: an existing one with its loaded history, or a new one (a sub-agent's
    /// too, with its parent link), whose row is created here together with its first state
    /// values (one commit). A session's depth among sub-agents is its own when created, and
    /// counted from the stored parent links when reopened (only an agent with sub-agents asks).
    pub(crate) async fn start(agent: Agent, mut opening: Opening) -> Result<Self, AgentError> {
        let store = agent.store().clone();
        let config = agent.config();
        let mut pending_warnings = Vec::new();
        // Everything this needs from the session's state, in one query; a new session has none.
        let (workspace, state, next_turn) = match &opening {
            Opening::Existing { record, .. } => {
                let state = store.sessions().state(&record.id).await?;
                let last = store.messages().last_turn(&record.id).await?;
                (PathBuf::from(&record.workspace), state, last.map(|t| t + 1).unwrap_or(1))
            }
            // A new session's history, if it was given one, is stored as turn 0.
            Opening::New { session, .. } | Opening::Child { session, .. } => {
                (PathBuf::from(&session.workspace), tackle_store::SessionState::default(), 1)
            }
        };
        let session_id = match &opening {
            Opening::Existing { record, .. } => record.id.as_str(),
            Opening::New { .. } | Opening::Child { .. } => "(new)",
        };
        // The tool list is frozen for the session's life: every request sends these exact specs.
        let (tools, mut state_updates) =
            SessionTools::open(&agent, session_id, &workspace, &state, &mut pending_warnings)?;
        let system = match &mut opening {
            // A sub-agent's, as its parent sent them (plus its instructions).
            Opening::Child { child, .. } => std::mem::take(&mut child.system),
            Opening::Existing { .. } | Opening::New { .. } => {
                let mut system = system_sections(&workspace);
                system.extend(tools.skills().system_section());
                // Cacheable sections first: dynamic text may only follow them.
                system.sort_by_key(|s| s.cache == CachePolicy::Dynamic);
                system
            }
        };
        let catalog = tools.catalog();
        let mut context = ContextState::new(
            &config.model,
            &config.context,
            &system,
            (catalog.specs(), catalog.fingerprint()),
            &agent.inner.fixed_counts,
        );
        if let Some(c) = state.get::<f64>(CALIBRATION_KEY)? {
            context.calibration = c;
        }
        // Messages are stored with their token counts, so a resumed session counts only what has
        // none, as long as the vocabulary is the one they were counted with.
        let encoding = context.encoding().name();
        let counted_with: Option<String> = state.get(COUNT_ENCODING_KEY)?;
        let stored_counts_valid = counted_with.as_deref() == Some(encoding);
        if !stored_counts_valid {
            state_updates.push((COUNT_ENCODING_KEY, serde_json::json!(encoding)));
        }
        let stored_mode = state.get::<tackle_tools::PermissionMode>(crate::tools::MODE_KEY)?;
        let mode =
            Self::usable_mode(&agent, stored_mode.unwrap_or(config.permission_mode), &mut pending_warnings);
        if !matches!(opening, Opening::Existing { .. })
            && config.permission_mode != tackle_tools::PermissionMode::Default
        {
            state_updates.push((crate::tools::MODE_KEY, serde_json::json!(config.permission_mode)));
        }
        let mut depth = 0;
        let mut cache_key = None;
        let mut prefix = PrefixTracker::default();
        let (record, loaded) = match opening {
            Opening::Existing { record, loaded } => {
                if counted_with.is_some() && !stored_counts_valid {
                    store.messages().clear_token_counts(&record.id).await?;
                }
                store.sessions().set_states(&record.id, &state_updates).await?;
                // A reopened sub-agent keeps its depth: the `agent` tool's limit counts it.
                if agent.inner.subagents.is_some() {
                    depth = store.sessions().depth(&record.id).await?;
                }
                (record, loaded)
            }
            Opening::Child { session, child } => {
                let record = store.sessions().create_child(session, &child.link, &state_updates).await?;
                depth = child.depth;
                cache_key = Some(child.cache_key);
                prefix = child.prefix;
                (record, Vec::new())
            }
            Opening::New { session, history } => {
                let record = store.sessions().create_with_state(session, &state_updates).await?;
                let loaded = if history.is_empty() {
                    Vec::new()
                } else {
                    let seqs = store.messages().append_all(&record.id, 0, &history).await?;
                    seqs.into_iter()
                        .zip(history)
                        .map(|(seq, message)| LoadedMessage { seq: Some(seq), message, tokens: None })
                        .collect()
                };
                (record, loaded)
            }
        };
        let history = History::from_entries(loaded.into_iter().map(|m| {
            let tokens = match m.tokens {
                Some(n) if stored_counts_valid => n,
                _ => context.count_message(&m.message),
            };
            (m.message, m.seq, tokens)
        }));
        let notes = TailNotes::from_history(history.messages());
        let start_source = Some(if history.is_empty() { "startup" } else { "resume" });
        agent.purge_expired_if_due().await?;
        Ok(Self {
            agent,
            record,
            history,
            next_turn,
            workspace,
            tools,
            system,
            notes,
            prefix,
            last_request_len: 0,
            pending_warnings,
            open_todos: None,
            context,
            compacted: false,
            turn_ended: false,
            turn_start: 0,
            mode,
            start_source,
            depth,
            cache_key,
        })
    }

    /// `mode` if this agent can run it, else `default` with a warning for the next turn.
    fn usable_mode(
        agent: &Agent,
        mode: tackle_tools::PermissionMode,
        warnings: &mut Vec<AgentEvent>,
    ) -> tackle_tools::PermissionMode {
        match agent.mode_available(mode) {
            Ok(()) => mode,
            Err(why) => {
                warnings.push(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::ModeUnavailable,
                    message: format!("the session was in {mode} mode, which this agent cannot run ({why}); it runs in default mode"),
                });
                tackle_tools::PermissionMode::Default
            }
        }
    }

    /// The prompt-cache key of this session's requests.
    pub(crate) fn cache_key(&self) -> String {
        self.cache_key.clone().unwrap_or_else(|| self.record.id.to_string())
    }

    /// The session's permission mode.
    pub fn mode(&self) -> tackle_tools::PermissionMode {
        self.mode
    }

    /// Changes the session's permission mode (stored with the session). `bypass` is refused
    /// unless the sandbox is enforced, `plan` unless plan mode is on for the agent.
    pub async fn set_mode(&mut self, mode: tackle_tools::PermissionMode) -> Result<(), AgentError> {
        self.agent.mode_available(mode).map_err(AgentError::Mode)?;
        self.agent.store().sessions().set_state(&self.record.id, crate::tools::MODE_KEY, &mode).await?;
        self.mode = mode;
        Ok(())
    }

    /// This value continues a conversation a front end already started (a server that loads
    /// sessions per request): its first turn runs no `SessionStart` hooks, unless the session has
    /// no messages yet.
    pub fn mark_continuing(&mut self) {
        if !self.history.is_empty() {
            self.start_source = None;
        }
    }

    /// Runs the `SessionEnd` hooks: a front end leaves the session (`reason`: `clear`,
    /// `prompt_input_exit`, `other`).
    pub async fn end(&self, reason: &str, sink: &tackle_tools::EventSink) {
        let hooks = self.agent.executor().script_hooks();
        if !hooks.has(tackle_tools::HookEvent::SessionEnd) {
            return;
        }
        let scope =
            tackle_tools::HookScope { session_id: &self.record.id, cwd: &self.workspace, mode: self.mode };
        hooks
            .run_event(&tackle_tools::HookPayload::SessionEnd { reason: reason.to_owned() }, &scope, sink)
            .await;
    }

    /// Applies tool-source changes (an MCP server's `list_changed`) at a turn boundary: pulls
    /// them into the agent, and when the agent's tools moved on since this session last looked,
    /// re-freezes the catalog (if its definitions changed) and queues a `catalog_changed` event.
    pub(crate) async fn apply_tool_changes(&mut self) -> Result<(), AgentError> {
        if let Some((event, cache_break)) = self.tools.apply_changes(&self.agent, &self.record.id).await? {
            if cache_break {
                self.context.set_tools(self.tools.catalog().specs());
            }
            self.pending_warnings.push(event);
        }
        Ok(())
    }

    /// Writes this session's next turns under `lease` (see [`Agent::under_lease`]): once the
    /// lease moves on (another instance took the session over), the turn stops at its next
    /// write with [`tackle_store::StoreError::LeaseLost`], having written nothing after the
    /// takeover.
    pub fn hold_lease(&mut self, lease: &tackle_store::Lease) {
        self.agent = self.agent.under_lease(lease);
    }

    /// The tool catalog of the session.
    pub fn catalog(&self) -> &ToolCatalog {
        self.tools.catalog()
    }

    /// The skills of the session.
    pub fn skills(&self) -> &SkillSet {
        self.tools.skills()
    }

    /// The tools of the next step under `mask` (for front ends showing active and masked tools).
    pub async fn step_tools(
        &self,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepTools, AgentError> {
        self.tools.step_tools(&self.agent, &self.record.id, mask, last_step).await
    }

    /// Deferred tools found by `tool_search` in this session, in the order found.
    pub async fn found_tools(&self) -> Result<Vec<String>, AgentError> {
        let found: crate::tools::FoundTools = self
            .agent
            .store()
            .sessions()
            .get_state(&self.record.id, crate::tools::FOUND_TOOLS_KEY)
            .await?
            .unwrap_or_default();
        Ok(found.0)
    }

    /// The skills active in this session, oldest first.
    pub async fn active_skills(&self) -> Result<Vec<String>, AgentError> {
        let active: crate::tools::ActiveSkills = self
            .agent
            .store()
            .sessions()
            .get_state(&self.record.id, crate::tools::ACTIVE_SKILLS_KEY)
            .await?
            .unwrap_or_default();
        Ok(active.0.into_iter().collect())
    }

    /// Session id.
    pub fn id(&self) -> &SessionId {
        &self.record.id
    }

    /// The stored record (title, provider, model, status, ...).
    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// The conversation as the model sees it.
    pub fn history(&self) -> &[Message] {
        self.history.messages()
    }

    /// The workspace root.
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// Appends a message to the history and commits it to the store before returning.
    pub(crate) async fn append(&mut self, turn: i64, message: Message) -> Result<(), AgentError> {
        // Counted now and stored with the message: the count is needed before the next request
        // anyway, and a resumed session then need not count it again.
        let tokens = self.context.count_message(&message);
        let seq = self
            .agent
            .store()
            .messages()
            .append_counted(&self.record.id, turn, &message, i64::try_from(tokens).ok())
            .await?;
        self.history.push(message, Some(seq), tokens);
        Ok(())
    }

    /// Appends the assistant message that makes `calls` (id, tool, arguments) and records each
    /// as running, in one store call; returns each call's outcome.
    pub(crate) async fn append_with_calls(
        &mut self,
        turn: i64,
        message: Message,
        calls: &[(String, String, serde_json::Value)],
    ) -> Result<Vec<tackle_store::BeginOutcome>, AgentError> {
        let tokens = self.context.count_message(&message);
        let starts: Vec<tackle_store::CallStart<'_>> = calls
            .iter()
            .map(|(call_id, name, args)| tackle_store::CallStart { call_id, name, args })
            .collect();
        let (seq, begun) = self
            .agent
            .store()
            .calls()
            .append_with_calls(&self.record.id, turn, &message, i64::try_from(tokens).ok(), &starts)
            .await?;
        self.history.push(message, Some(seq), tokens);
        Ok(begun)
    }

    /// Answers tool calls left open by a crash or a cancelled turn: with the recorded result if
    /// the call finished (it never runs twice), else with an `interrupted` error.
    pub(crate) async fn close_open_calls(&mut self, turn: i64) -> Result<(), AgentError> {
        let messages = self.history.messages();
        let Some(pos) = messages.iter().rposition(|m| m.role == Role::Assistant) else { return Ok(()) };
        let answered: Vec<ToolCallId> = messages[pos + 1..]
            .iter()
            .flat_map(|m| m.tool_results_iter().map(|r| r.tool_use_id.clone()))
            .collect();
        let open: Vec<(ToolCallId, String)> = messages[pos]
            .tool_uses()
            .filter(|u| !answered.contains(&u.id))
            .map(|u| (u.id.clone(), u.name.clone()))
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        let store = self.agent.store().clone();
        let mut results: Vec<ToolResult> = Vec::new();
        for (id, name) in open {
            let recorded = store.calls().get(&self.record.id, &id).await?;
            let result = match recorded {
                Some(rec)
                    if rec.status != ToolCallStatus::Running && rec.status != ToolCallStatus::Interrupted =>
                {
                    rec.result.unwrap_or_else(|| interrupted_result(&id, &name))
                }
                _ => interrupted_result(&id, &name),
            };
            results.push(result);
        }
        store.calls().mark_running_as_interrupted(&self.record.id).await?;
        let message = Message {
            role: Role::Tool,
            content: results.into_iter().map(ContentBlock::ToolResult).collect(),
        };
        self.append(turn, message).await
    }
}
