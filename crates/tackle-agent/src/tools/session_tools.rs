//! [`SessionTools`]: everything about a session's tools in one place: the frozen catalog, the
//! skills it offers, the deferred tools and what search found, and tool-source changes applied
//! at turn boundaries. Per step, the session's tool state is read from the store once
//! ([`SessionTools::step`]) and every later decision of the step (tail note, deferred calls)
//! uses that view.

use std::collections::BTreeSet;

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolUse};
use tackle_store::SessionState;

use super::{
    ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActiveSkills, Availability, Deferral, FoundTools, Planned, SkillSet,
    StepTools, ToolCatalog, ToolMask, resolve_step,
};
use crate::{Agent, AgentError};

/// Session-state key of the catalog fingerprint.
const CATALOG_KEY: &str = "catalog.fingerprint";
/// Session-state key of the names of the tools the session could reach (listed and deferred).
const TOOL_NAMES_KEY: &str = "catalog.tools";

/// A session-state key and the value to store under it.
pub(crate) type StateUpdate = (&'static str, Value);

/// The tools of one session.
#[derive(Debug)]
pub(crate) struct SessionTools {
    /// The tool definitions, frozen for the session (until a tool source changes them at a
    /// turn boundary).
    catalog: ToolCatalog,
    /// The skills offered (empty unless the catalog has `activate_skill`).
    skills: SkillSet,
    /// Tools behind `tool_search`, and how they are reached (the agent's, fixed at build time).
    deferral: Deferral,
    /// The agent's tool-source generation this session's tools reflect.
    generation: u64,
    /// Every tool the session can reach (listed and deferred), to report what a change did.
    known: BTreeSet<String>,
}

/// What one step may use, from one read of the session's state.
#[derive(Debug)]
pub(crate) struct StepView {
    /// Callable tools and how that is expressed to the provider.
    pub(crate) tools: StepTools,
    /// Deferred tools found by `tool_search` so far.
    pub(crate) found: FoundTools,
}

impl SessionTools {
    /// The tools of a session being opened, given its stored `state`: freezes the agent's
    /// current catalog and reports (into `warnings`) a tool set that changed since the session
    /// was last open. Returns the state updates to write.
    pub(crate) fn open(
        agent: &Agent,
        session_id: &str,
        workspace: &std::path::Path,
        state: &SessionState,
        warnings: &mut Vec<AgentEvent>,
    ) -> Result<(Self, Vec<StateUpdate>), AgentError> {
        let generation = agent.tools_generation();
        let catalog = agent.catalog();
        let deferral = agent.deferral().clone();
        let known = deferral.reachable(&catalog);
        let mut updates = Vec::new();
        let stored: Option<String> = state.get(CATALOG_KEY)?;
        let stored_names: Option<BTreeSet<String>> =
            state.get::<Vec<String>>(TOOL_NAMES_KEY)?.map(|names| names.into_iter().collect());
        let cache_break = stored.as_deref() != Some(catalog.fingerprint());
        if cache_break || stored_names.as_ref() != Some(&known) {
            // A changed tool set (new version, new tool source) is applied only here, at a turn
            // boundary, and said out loud; a changed catalog restarts the provider cache from the
            // tools, changed deferred tools do not. (A server opens the session per message, so
            // this is also where it learns of a change another session's turn applied.)
            // Sessions stored before tool names were kept get them recorded, without an event.
            if stored.is_some() && (cache_break || stored_names.is_some()) {
                tracing::info!(session = %session_id, cache_break, to = %catalog.fingerprint(), "tools changed since the session was last open");
                let before = stored_names.unwrap_or_default();
                warnings.push(catalog_changed("resumed", &before, &known, cache_break, &catalog));
            }
            updates.push((CATALOG_KEY, serde_json::json!(catalog.fingerprint())));
            updates.push((TOOL_NAMES_KEY, serde_json::json!(known)));
        }
        warnings.extend(deferral.fallback_warning(agent.provider().name()));
        // The skills `activate_skill` knows for this workspace, offered only when the catalog
        // has the tool (so the prompt never offers a skill nothing can activate).
        let skills = if catalog.contains(ACTIVATE_SKILL) {
            let discovered = agent.skills().for_workspace(workspace);
            for w in &discovered.warnings {
                tracing::warn!("{w}");
                warnings.push(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::SkillInvalid,
                    message: w.clone(),
                });
            }
            discovered.skills.clone()
        } else {
            SkillSet::default()
        };
        Ok((Self { catalog, skills, deferral, generation, known }, updates))
    }

    /// The frozen catalog.
    pub(crate) fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// The skills offered.
    pub(crate) fn skills(&self) -> &SkillSet {
        &self.skills
    }

    /// Applies tool-source changes (an MCP server's `list_changed`) at a turn boundary: pulls
    /// them into the agent, and when the agent's tools moved on since this session last looked,
    /// re-freezes the catalog (if its definitions changed). Returns the `catalog_changed` event
    /// and whether the definitions sent changed.
    pub(crate) async fn apply_changes(
        &mut self,
        agent: &Agent,
        session_id: &str,
    ) -> Result<Option<(AgentEvent, bool)>, AgentError> {
        agent.refresh_tools().await;
        let generation = agent.tools_generation();
        if generation == self.generation {
            return Ok(None);
        }
        self.generation = generation;
        let catalog = agent.catalog();
        let now = self.deferral.reachable(&catalog);
        let cache_break = catalog.fingerprint() != self.catalog.fingerprint();
        if now == self.known && !cache_break {
            return Ok(None);
        }
        let store = agent.store();
        let event = catalog_changed("tool_source", &self.known, &now, cache_break, &catalog);
        tracing::info!(session = %session_id, cache_break, fingerprint = %catalog.fingerprint(), "tools changed at a turn boundary");
        if cache_break {
            store.sessions().set_state(session_id, CATALOG_KEY, catalog.fingerprint()).await?;
            self.catalog = catalog;
        }
        store.sessions().set_state(session_id, TOOL_NAMES_KEY, &now).await?;
        self.known = now;
        Ok(Some((event, cache_break)))
    }

    /// The tools of the next step under `mask`, from one read of the session's state.
    pub(crate) async fn step(
        &self,
        agent: &Agent,
        session_id: &str,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepView, AgentError> {
        let needs_state = !self.skills.is_empty() || self.deferral.reads_state();
        let state = if needs_state { Some(agent.store().sessions().state(session_id).await?) } else { None };
        self.view(agent, state.as_ref(), mask, last_step)
    }

    fn view(
        &self,
        agent: &Agent,
        state: Option<&SessionState>,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepView, AgentError> {
        let found = self.deferral.found(state)?;
        let mut availability = Availability { mask, ..Availability::default() };
        if let Some(state) = state
            && !self.skills.is_empty()
        {
            let active: ActiveSkills = state.get(ACTIVE_SKILLS_KEY)?.unwrap_or_default();
            availability.gated = self.skills.gated_tools();
            availability.unlocked = self.skills.unlocked_tools(active.0.iter());
        }
        self.deferral.restrict(&found, &mut availability);
        let caps = agent.provider().capabilities();
        let tools =
            resolve_step(&self.catalog, &availability, &caps, last_step, agent.config().dynamic_tools);
        Ok(StepView { tools, found })
    }

    /// The tools of the next step (for front ends showing active and masked tools).
    pub(crate) async fn step_tools(
        &self,
        agent: &Agent,
        session_id: &str,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepTools, AgentError> {
        Ok(self.step(agent, session_id, mask, last_step).await?.tools)
    }

    /// What the tail note says about deferred tools in a step.
    pub(crate) fn deferred_note(&self, view: &StepView) -> Option<String> {
        self.deferral.tail_note(&view.found)
    }

    /// Plans the calls of a step (see [`Deferral::plan_calls`]).
    pub(crate) fn plan_calls(&self, view: &StepView, calls: Vec<ToolUse>) -> Vec<Planned> {
        self.deferral.plan_calls(&view.found, view.tools.allowed(), calls)
    }
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
