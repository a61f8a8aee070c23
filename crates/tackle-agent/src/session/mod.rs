//! [`Session`]: one conversation, its history, and the turns run on it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod loop_guard;
mod model_call;
mod prefix;
mod system_prompt;
mod tail_note;
mod tool_calls;
mod turn;

pub use loop_guard::{LoopGuard, LoopGuardConfig, Verdict, canonical_json};
pub use prefix::{PrefixStats, PrefixTracker};
pub use system_prompt::{BASE_PROMPT, system_sections};
use tackle_protocol::{
    AgentEvent, CachePolicy, ContentBlock, Message, Role, SystemSection, ToolResult, TurnEnd, Usage,
};
use tackle_store::{SessionRecord, ToolCallStatus};
pub use tail_note::{NOTE_PREFIX, TailNotes, TailState};

use crate::agent::LoadedMessage;
use crate::context::{CALIBRATION_KEY, ContextState};
use crate::invariants::interrupted_result;
use crate::tools::{ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActiveSkills, SkillSet};
use crate::tools::{Availability, StepTools, resolve_step};

use crate::{Agent, AgentError, DeferralMode, FOUND_TOOLS_KEY, FoundTools, ToolCatalog, ToolMask};

/// What the user sends in a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnInput {
    /// The user's message.
    pub message: String,
    /// Steps for this turn instead of the agent's default.
    pub max_steps: Option<u32>,
    /// Which tools the model may call in this turn (see [`ToolMask`]); all when `None`.
    pub tool_mask: Option<ToolMask>,
}

impl TurnInput {
    /// A turn with this message and default limits.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), max_steps: None, tool_mask: None }
    }

    /// Sets the tool mask.
    pub fn with_mask(mut self, mask: Option<ToolMask>) -> Self {
        self.tool_mask = mask;
        self
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnOutcome {
    /// Session id.
    pub session_id: String,
    /// Steps taken.
    pub steps: u32,
    /// How it ended.
    pub end: TurnEnd,
    /// Final answer text (of the last step).
    pub text: String,
    /// Usage summed over the turn.
    pub usage: Usage,
    /// Error message when the turn failed or was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A conversation with its history, loaded in memory and persisted message by message.
pub struct Session {
    pub(crate) agent: Agent,
    pub(crate) record: SessionRecord,
    pub(crate) history: Vec<Message>,
    pub(crate) next_turn: i64,
    pub(crate) workspace: PathBuf,
    /// The tool definitions, frozen for the session.
    pub(crate) catalog: ToolCatalog,
    /// Skills found in the workspace and the user config dir when the session was opened.
    pub(crate) skills: SkillSet,
    /// System sections, read once when the session is opened so every request of the session
    /// shares them byte for byte.
    pub(crate) system: Vec<SystemSection>,
    pub(crate) notes: TailNotes,
    pub(crate) prefix: PrefixTracker,
    /// Messages in the previous request (where its cache entry ends).
    pub(crate) last_request_len: usize,
    /// Warnings found while opening, reported at the next turn.
    pub(crate) pending_warnings: Vec<AgentEvent>,
    /// Store sequence numbers of the history's messages (`None` for snapshot-made ones).
    pub(crate) seqs: Vec<Option<i64>>,
    /// Token accounting.
    pub(crate) context: ContextState,
    /// The history was rewritten by compaction since the last request (a cache break is
    /// expected, not a bug).
    pub(crate) compacted: bool,
    /// Index of the current turn's user message.
    pub(crate) turn_start: usize,
    /// The agent's tool-source generation this session's tools reflect.
    pub(crate) tools_generation: u64,
    /// Every tool the session can reach (listed and deferred), to report what a change did.
    pub(crate) known_tools: BTreeSet<String>,
}

/// Session-state key of the vocabulary the stored token counts were made with.
const COUNT_ENCODING_KEY: &str = "context.count_encoding";

/// Session-state key of the catalog fingerprint.
const CATALOG_KEY: &str = "catalog.fingerprint";
/// Session-state key of the names of the tools the session could reach (listed and deferred).
const TOOL_NAMES_KEY: &str = "catalog.tools";

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.record.id).field("messages", &self.history.len()).finish()
    }
}

impl Session {
    pub(crate) async fn start(
        agent: Agent,
        record: SessionRecord,
        loaded: Vec<LoadedMessage>,
    ) -> Result<Self, AgentError> {
        let mut seqs = Vec::with_capacity(loaded.len());
        let mut history = Vec::with_capacity(loaded.len());
        let mut stored_counts = Vec::with_capacity(loaded.len());
        for m in loaded {
            seqs.push(m.seq);
            history.push(m.message);
            stored_counts.push(m.tokens);
        }
        let workspace = PathBuf::from(&record.workspace);
        let store = agent.store().clone();
        let mut pending_warnings = Vec::new();
        // The tool list is frozen for the session's life: every request sends these exact specs.
        let tools_generation = agent.tools_generation();
        let catalog = agent.catalog();
        let known_tools = reachable_tools(&agent, &catalog);
        // Everything this needs from the session's state, in one query.
        let state = store.session_state(&record.id).await?;
        let mut state_updates: Vec<(&str, serde_json::Value)> = Vec::new();
        let known: Option<String> = state.get(CATALOG_KEY)?;
        let known_names: Option<BTreeSet<String>> =
            state.get::<Vec<String>>(TOOL_NAMES_KEY)?.map(|names| names.into_iter().collect());
        let cache_break = known.as_deref() != Some(catalog.fingerprint());
        if cache_break || known_names.as_ref() != Some(&known_tools) {
            // A changed tool set (new version, new tool source) is applied only here, at a turn
            // boundary, and said out loud; a changed catalog restarts the provider cache from the
            // tools, changed deferred tools do not. (A server opens the session per message, so
            // this is also where it learns of a change another session's turn applied.)
            // Sessions stored before tool names were kept get them recorded, without an event.
            if known.is_some() && (cache_break || known_names.is_some()) {
                tracing::info!(session = %record.id, cache_break, to = %catalog.fingerprint(), "tools changed since the session was last open");
                let before = known_names.unwrap_or_default();
                pending_warnings.push(catalog_changed(
                    "resumed",
                    &before,
                    &known_tools,
                    cache_break,
                    &catalog,
                ));
            }
            state_updates.push((CATALOG_KEY, serde_json::json!(catalog.fingerprint())));
            state_updates.push((TOOL_NAMES_KEY, serde_json::json!(known_tools)));
        }
        if agent.deferred().is_some_and(|d| d.fell_back()) {
            pending_warnings.push(AgentEvent::Warning {
                code: "strategy_fallback".into(),
                message: format!(
                    "[deferral] native is set but {} has no native deferred loading: deferred tools are reached \
                     through tool_search and call_tool",
                    agent.provider().name()
                ),
            });
        }
        // The skills `activate_skill` knows for this workspace, offered only when the catalog
        // has the tool (so the prompt never offers a skill nothing can activate).
        let skills = if catalog.contains(ACTIVATE_SKILL) {
            let discovered = agent.skills().for_workspace(&workspace);
            for w in &discovered.warnings {
                tracing::warn!("{w}");
                pending_warnings
                    .push(AgentEvent::Warning { code: "skill_invalid".into(), message: w.clone() });
            }
            discovered.skills.clone()
        } else {
            SkillSet::default()
        };
        let mut system = system_sections(&workspace);
        system.extend(skills.system_section());
        // Cacheable sections first: dynamic text may only follow them.
        system.sort_by_key(|s| s.cache == CachePolicy::Dynamic);
        let next_turn = store.last_turn(&record.id).await?.map(|t| t + 1).unwrap_or(1);
        let notes = TailNotes::from_history(&history);
        let config = agent.config();
        let mut context = ContextState::new(&config.model, &config.context, &system, catalog.specs());
        if let Some(c) = state.get::<f64>(CALIBRATION_KEY)? {
            context.calibration = c;
        }
        // Messages are stored with their token counts, so a resumed session counts only what has
        // none, as long as the vocabulary is the one they were counted with.
        let encoding = context.encoding().name();
        let counted_with: Option<String> = state.get(COUNT_ENCODING_KEY)?;
        if counted_with.as_deref() == Some(encoding) {
            context.seed(&history, &stored_counts);
        } else {
            if counted_with.is_some() {
                store.clear_token_counts(&record.id).await?;
            }
            state_updates.push((COUNT_ENCODING_KEY, serde_json::json!(encoding)));
        }
        store.set_states(&record.id, &state_updates).await?;
        agent.purge_expired_if_due().await?;
        Ok(Self {
            agent,
            record,
            history,
            next_turn,
            workspace,
            catalog,
            skills,
            system,
            notes,
            prefix: PrefixTracker::default(),
            last_request_len: 0,
            pending_warnings,
            seqs,
            context,
            compacted: false,
            turn_start: 0,
            tools_generation,
            known_tools,
        })
    }

    /// Applies tool-source changes (an MCP server's `list_changed`) at a turn boundary: pulls
    /// them into the agent, and when the agent's tools moved on since this session last looked,
    /// re-freezes the catalog (if its definitions changed) and queues a `catalog_changed` event.
    pub(crate) async fn apply_tool_changes(&mut self) -> Result<(), AgentError> {
        self.agent.refresh_tools().await;
        let generation = self.agent.tools_generation();
        if generation == self.tools_generation {
            return Ok(());
        }
        self.tools_generation = generation;
        let catalog = self.agent.catalog();
        let now = reachable_tools(&self.agent, &catalog);
        let cache_break = catalog.fingerprint() != self.catalog.fingerprint();
        if now == self.known_tools && !cache_break {
            return Ok(());
        }
        let store = self.agent.store();
        let event = catalog_changed("tool_source", &self.known_tools, &now, cache_break, &catalog);
        tracing::info!(session = %self.record.id, cache_break, fingerprint = %catalog.fingerprint(), "tools changed at a turn boundary");
        if cache_break {
            store.set_state(&self.record.id, CATALOG_KEY, catalog.fingerprint()).await?;
            self.context.set_tools(catalog.specs());
            self.catalog = catalog;
        }
        store.set_state(&self.record.id, TOOL_NAMES_KEY, &now).await?;
        self.known_tools = now;
        self.pending_warnings.push(event);
        Ok(())
    }

    /// The tool catalog of the session.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// The skills of the session.
    pub fn skills(&self) -> &SkillSet {
        &self.skills
    }

    /// The tools of the next step under `mask` (for front ends showing active and masked tools).
    pub async fn step_tools(
        &self,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepTools, AgentError> {
        let mut availability = Availability { mask, ..Availability::default() };
        if !self.skills.is_empty() {
            let active: ActiveSkills =
                self.agent.store().get_state(&self.record.id, ACTIVE_SKILLS_KEY).await?.unwrap_or_default();
            availability.gated = self.skills.gated_tools();
            availability.unlocked = self.skills.unlocked_tools(active.0.iter());
        }
        if let Some(deferred) = self.agent.deferred()
            && deferred.mode() == DeferralMode::Native
        {
            // Deferred tools are in the catalog; those not found yet are not callable.
            let found: FoundTools =
                self.agent.store().get_state(&self.record.id, FOUND_TOOLS_KEY).await?.unwrap_or_default();
            availability.deferred = deferred.names().into_iter().filter(|n| !found.0.contains(n)).collect();
            availability.native_deferral = true;
        }
        let caps = self.agent.provider().capabilities();
        Ok(resolve_step(&self.catalog, &availability, &caps, last_step, self.agent.config().dynamic_tools))
    }

    /// Session id.
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The stored record (title, provider, model, status, ...).
    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// The conversation as the model sees it.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The workspace root.
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// Takes the history back from a request it was moved into.
    pub(crate) fn restore_history(&mut self, messages: Vec<Message>) {
        self.history = messages;
    }

    /// Appends a message to the history and commits it to the store before returning.
    pub(crate) async fn append(&mut self, turn: i64, message: Message) -> Result<(), AgentError> {
        // Counted now and stored with the message: the count is needed before the next request
        // anyway, and a resumed session then need not count it again.
        let tokens = self.context.count_message(&message);
        let seq = self
            .agent
            .store()
            .append_counted_message(&self.record.id, turn, &message, i64::try_from(tokens).ok())
            .await?;
        let synced = self.context.counts.len() == self.history.len();
        self.history.push(message);
        self.seqs.push(Some(seq));
        if synced {
            self.context.counts.push(tokens);
        }
        Ok(())
    }

    /// Answers tool calls left open by a crash or a cancelled turn: with the recorded result if
    /// the call finished (it never runs twice), else with an `interrupted` error.
    pub(crate) async fn close_open_calls(&mut self, turn: i64) -> Result<(), AgentError> {
        let Some(pos) = self.history.iter().rposition(|m| m.role == Role::Assistant) else { return Ok(()) };
        let answered: Vec<String> = self.history[pos + 1..]
            .iter()
            .flat_map(|m| m.tool_results_iter().map(|r| r.tool_use_id.clone()))
            .collect();
        let open: Vec<(String, String)> = self.history[pos]
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
            let recorded = store.get_tool_call(&self.record.id, &id).await?;
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
        store.mark_running_as_interrupted(&self.record.id).await?;
        let message = Message {
            role: Role::Tool,
            content: results.into_iter().map(ContentBlock::ToolResult).collect(),
        };
        self.append(turn, message).await
    }
}

/// Every tool a session with `catalog` can reach: the catalog and the deferred tools.
fn reachable_tools(agent: &Agent, catalog: &ToolCatalog) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = catalog.names().into_iter().collect();
    if let Some(d) = agent.deferred() {
        names.extend(d.names());
    }
    names
}

fn catalog_changed(
    reason: &str,
    before: &BTreeSet<String>,
    after: &BTreeSet<String>,
    cache_break: bool,
    catalog: &ToolCatalog,
) -> AgentEvent {
    AgentEvent::CatalogChanged {
        reason: reason.to_owned(),
        added: after.difference(before).cloned().collect(),
        removed: before.difference(after).cloned().collect(),
        cache_break,
        fingerprint: catalog.fingerprint().to_owned(),
    }
}
