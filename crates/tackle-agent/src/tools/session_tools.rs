//! [`SessionTools`]: everything about a session's tools in one place: the frozen catalog, the
//! skills it offers, the deferred tools and what search found, and tool-source changes applied
//! at turn boundaries. Per step, the session's tool state is read from the store once
//! ([`SessionTools::step`]) and every later decision of the step (tail note, deferred calls)
//! uses that view.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use tackle_protocol::{AgentEvent, ErrorCategory, ToolError, ToolUse};
use tackle_store::SessionState;

use super::deferral::unwrap_call;
use super::{
    ACTIVATE_SKILL, ACTIVE_SKILLS_KEY, ActiveSkills, Availability, CALL_TOOL, DeferralMode, DeferredTools,
    FOUND_TOOLS_KEY, FoundTools, SkillSet, StepTools, ToolCatalog, ToolMask, resolve_step,
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
    /// Tools behind `tool_search`.
    deferred: Option<Arc<DeferredTools>>,
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

/// A call ready to run, or refused before it runs.
pub(crate) enum Planned {
    /// Run `call`; `unwrapped` calls came through `call_tool` and skip the step's mask (the mask
    /// allowed `call_tool`, and search decides which deferred tools exist for the model).
    Run { call: ToolUse, unwrapped: bool },
    /// Answer with this envelope without running anything.
    Refuse { call: ToolUse, error: ToolError },
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
        let deferred = agent.deferred().cloned();
        let known = reachable_tools(&catalog, deferred.as_deref());
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
        if deferred.as_ref().is_some_and(|d| d.fell_back()) {
            warnings.push(AgentEvent::Warning { code: tackle_protocol::WarningCode::StrategyFallback,
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
        Ok((Self { catalog, skills, deferred, generation, known }, updates))
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
        let now = reachable_tools(&catalog, self.deferred.as_deref());
        let cache_break = catalog.fingerprint() != self.catalog.fingerprint();
        if now == self.known && !cache_break {
            return Ok(None);
        }
        let store = agent.store();
        let event = catalog_changed("tool_source", &self.known, &now, cache_break, &catalog);
        tracing::info!(session = %session_id, cache_break, fingerprint = %catalog.fingerprint(), "tools changed at a turn boundary");
        if cache_break {
            store.set_state(session_id, CATALOG_KEY, catalog.fingerprint()).await?;
            self.catalog = catalog;
        }
        store.set_state(session_id, TOOL_NAMES_KEY, &now).await?;
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
        let needs_state = !self.skills.is_empty() || self.deferred.is_some();
        let state = if needs_state { Some(agent.store().session_state(session_id).await?) } else { None };
        self.view(agent, state.as_ref(), mask, last_step)
    }

    fn view(
        &self,
        agent: &Agent,
        state: Option<&SessionState>,
        mask: Option<&ToolMask>,
        last_step: bool,
    ) -> Result<StepView, AgentError> {
        let found: FoundTools = match (state, &self.deferred) {
            (Some(state), Some(_)) => state.get(FOUND_TOOLS_KEY)?.unwrap_or_default(),
            _ => FoundTools::default(),
        };
        let mut availability = Availability { mask, ..Availability::default() };
        if let Some(state) = state
            && !self.skills.is_empty()
        {
            let active: ActiveSkills = state.get(ACTIVE_SKILLS_KEY)?.unwrap_or_default();
            availability.gated = self.skills.gated_tools();
            availability.unlocked = self.skills.unlocked_tools(active.0.iter());
        }
        if let Some(deferred) = &self.deferred
            && deferred.mode() == DeferralMode::Native
        {
            // Deferred tools are in the catalog; those not found yet are not callable.
            availability.deferred = deferred.names().into_iter().filter(|n| !found.0.contains(n)).collect();
            availability.native_deferral = true;
        }
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
        let deferred = self.deferred.as_ref()?;
        let found = &view.found.0;
        let more = deferred.len().saturating_sub(found.len());
        Some(if deferred.mode() == DeferralMode::Native {
            // Found tools are loaded into the model's context by the provider itself.
            format!("{more} more tools can be loaded with tool_search, then called directly.")
        } else if found.is_empty() {
            format!("{} more tools are available through tool_search, then call_tool.", deferred.len())
        } else {
            format!(
                "Found with tool_search, call them with call_tool: {}. {more} more tools can be searched.",
                found.join(", ")
            )
        })
    }

    /// Plans the calls of a step: deferred tools called through `call_tool` (or by name) become
    /// calls of the found tool with the same id; tools not found yet are refused.
    pub(crate) fn plan_calls(&self, view: &StepView, calls: Vec<ToolUse>) -> Vec<Planned> {
        let Some(deferred) = &self.deferred else {
            return calls.into_iter().map(|call| Planned::Run { call, unwrapped: false }).collect();
        };
        let found = &view.found;
        let allowed = view.tools.allowed();
        let mask_allows_proxy = allowed.is_none_or(|a| a.iter().any(|n| n == CALL_TOOL));
        let native = deferred.mode() == DeferralMode::Native;
        calls
            .into_iter()
            .map(|call| {
                if native && deferred.contains(&call.name) {
                    // Loaded tools are called by name; the executor checks the step's active set
                    // (found tools are in it) and the tool's own schema.
                    return match unwrap_call(&serde_json::json!({"name": call.name}), deferred, found) {
                        Ok(_) => Planned::Run { call, unwrapped: false },
                        Err(failure) => Planned::Refuse { error: failure.into_envelope(&call.name), call },
                    };
                }
                let args = if call.name == CALL_TOOL {
                    call.input.to_value()
                } else if deferred.contains(&call.name) {
                    // The model called a deferred tool by name: treat it as call_tool.
                    serde_json::json!({"name": call.name, "arguments": call.input.to_value()})
                } else {
                    return Planned::Run { call, unwrapped: false };
                };
                match unwrap_call(&args, deferred, found) {
                    Ok((name, arguments)) if mask_allows_proxy => Planned::Run {
                        call: ToolUse { id: call.id.clone(), name, input: arguments.into() },
                        unwrapped: true,
                    },
                    Ok(_) => Planned::Refuse {
                        error: ToolError::new(
                            &call.name,
                            ErrorCategory::Denied,
                            "call_tool is not available in this step",
                        ),
                        call,
                    },
                    Err(failure) => Planned::Refuse { error: failure.into_envelope(&call.name), call },
                }
            })
            .collect()
    }
}

/// Every tool a session with `catalog` can reach: the catalog and the deferred tools.
fn reachable_tools(catalog: &ToolCatalog, deferred: Option<&DeferredTools>) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = catalog.names().into_iter().collect();
    if let Some(d) = deferred {
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
