//! Deferral: when tool definitions would take too much of the context window, non-core tools
//! (MCP first) leave the model's view and are reached through `tool_search` (and `call_tool`).
//!
//! Everything about it is one value, [`Deferral`], decided once when the agent is built
//! ([`Deferral::plan`]): whether anything is deferred and how the deferred tools reach the model
//! (the proxy works with every provider; native loading needs `Capabilities::deferred_tools`).
//! It owns each decision that depends on it: the catalog ([`Deferral::catalog`]), which tools a
//! step may call ([`Deferral::restrict`]), the tail note ([`Deferral::tail_note`]) and how a
//! step's calls of deferred tools run ([`Deferral::plan_calls`]).
//!
//! The catalog never changes for it: it holds the core tools plus the deferral tools from the
//! start, so every request's prefix stays byte-identical while the model discovers tools.
//! `tool_search` ranks deferred tools (BM25F by default, see [`tackle_tools::Ranker`]), answers
//! with each found tool in a compact form within a fixed token budget
//! ([`super::search_result`]), never offloaded, and records what it found in the session; found
//! tools are named in the tail note and called as `call_tool(name, arguments)`, which the loop
//! unwraps into an ordinary call of the deferred tool (its own full-schema validation, hooks,
//! timeout, cap).

mod index;
mod proxy;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tackle_protocol::{AgentEvent, ErrorCategory, ToolError, ToolSpec, ToolUse};
use tackle_store::{SessionState, Store};
use tackle_tools::{Ranker, Tool};

pub use index::{DeferredTools, FoundTools};
pub(crate) use proxy::{CallTool, ToolSearch};

use super::{Availability, ToolCatalog};
use crate::AgentError;

/// Name of the search tool.
pub const TOOL_SEARCH: &str = "tool_search";
/// Name of the proxy tool.
pub const CALL_TOOL: &str = "call_tool";
/// Session-state key of the tools found by search.
pub const FOUND_TOOLS_KEY: &str = "tools.found";

/// When to defer (`[deferral]` in `tackle.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DeferralConfig {
    /// Defer at all (`false` sends every definition, whatever it costs).
    pub enabled: bool,
    /// Share of the effective context window the tool definitions may take before non-core
    /// tools are deferred.
    pub share: f64,
    /// Use the provider's own deferred loading where it has one (Anthropic `defer_loading` with
    /// `tool_reference` results, beta): deferred definitions are sent but stay out of the
    /// model's context until `tool_search` loads them, and found tools are called directly.
    /// Elsewhere (or when off) the proxy is used: `tool_search` plus `call_tool`.
    pub native: bool,
    /// How `tool_search` ranks deferred tools: `bm25f` (fields weighted, stemming; the
    /// default), `hybrid` (BM25F re-ranked with static word embeddings) or `bm25` (the plain
    /// lexical ranker).
    pub ranker: Ranker,
}

impl Default for DeferralConfig {
    fn default() -> Self {
        Self { enabled: true, share: 0.10, native: false, ranker: Ranker::default() }
    }
}

/// How deferred tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeferralMode {
    /// Left out of the catalog; found with `tool_search`, called through `call_tool`. Works with
    /// every provider.
    Proxy,
    /// In the catalog with `defer_loading`; `tool_search` loads them with tool references and
    /// the model calls them directly (providers with `Capabilities::deferred_tools`).
    Native,
}

/// How an agent's tools are deferred: decided once, when the agent is built, and never changed
/// (a tool source's change re-indexes the deferred set, never the mode).
#[derive(Debug, Clone, Default)]
pub(crate) enum Deferral {
    /// Every definition is sent: they fit the budget, deferral is off, or nothing is deferrable.
    #[default]
    Off,
    /// Deferred tools are left out of the catalog; `tool_search` finds them and `call_tool` runs
    /// them. `native_unavailable`: native loading was asked for but the provider lacks it.
    Proxy { tools: Arc<DeferredTools>, native_unavailable: bool },
    /// Deferred tools are in the catalog marked `defer_loading`; `tool_search` loads them with
    /// tool references and the model calls them by name.
    Native(Arc<DeferredTools>),
}

/// A call ready to run, or refused before it runs.
pub(crate) enum Planned {
    /// Run `call`; `unwrapped` calls came through `call_tool` and skip the step's mask (the mask
    /// allowed `call_tool`, and search decides which deferred tools exist for the model).
    Run { call: ToolUse, unwrapped: bool },
    /// Answer with this envelope without running anything.
    Refuse { call: ToolUse, error: ToolError },
}

impl Deferral {
    /// Decides whether to defer: when the definitions of all `specs` take more than
    /// `config.share` of the effective window of `model`, the `deferrable` ones are deferred,
    /// natively when `config.native` asks for it and the provider has it (`provider_has_native`).
    pub(crate) fn plan(
        specs: &[ToolSpec],
        deferrable: &[String],
        model: &str,
        context: &crate::ContextConfig,
        config: &DeferralConfig,
        provider_has_native: bool,
    ) -> Self {
        if !config.enabled || deferrable.is_empty() {
            return Self::Off;
        }
        let counter = tackle_context::TokenCounter::for_model(model);
        let tokens = counter.count_tools(specs);
        let window = context.window.unwrap_or_else(|| tackle_context::context_window(model));
        let effective = window.saturating_sub(context.reserved_output);
        let budget = (effective as f64 * config.share) as u64;
        if tokens <= budget {
            return Self::Off;
        }
        let deferred: Vec<ToolSpec> =
            specs.iter().filter(|s| deferrable.contains(&s.name)).cloned().collect();
        tracing::info!(
            tokens,
            budget,
            deferred = deferred.len(),
            "tool definitions over budget: deferring non-core tools"
        );
        let tools = DeferredTools::with_ranker(deferred, config.ranker).with_model(model);
        if config.native && provider_has_native {
            return Self::Native(Arc::new(tools.in_mode(DeferralMode::Native)));
        }
        if config.native {
            tracing::warn!("native deferred loading unavailable; using tool_search + call_tool");
        }
        Self::Proxy { tools: Arc::new(tools), native_unavailable: config.native }
    }

    /// The deferred tools, unless nothing is deferred.
    pub(crate) fn tools(&self) -> Option<&Arc<DeferredTools>> {
        match self {
            Self::Off => None,
            Self::Proxy { tools, .. } | Self::Native(tools) => Some(tools),
        }
    }

    /// The tools the registry needs for it: `tool_search` and `call_tool` (registered under
    /// native loading too: a model may still call a found tool through `call_tool`).
    pub(crate) fn registry_tools(&self, store: &Store) -> Vec<Arc<dyn Tool>> {
        match self.tools() {
            None => Vec::new(),
            Some(tools) => {
                vec![
                    Arc::new(ToolSearch::new(Arc::clone(tools), store.clone())),
                    Arc::new(CallTool::default()),
                ]
            }
        }
    }

    /// The catalog of the registry's `specs`, in order: without the deferral tools when nothing
    /// is deferred; without the deferred tools under the proxy; under native loading every
    /// definition from the start (deferred ones marked, after the core tools), so loading one
    /// never changes the list, and without `call_tool`.
    pub(crate) fn catalog(&self, specs: Vec<ToolSpec>) -> ToolCatalog {
        match self {
            Self::Off => ToolCatalog::freeze(
                specs.into_iter().filter(|s| s.name != TOOL_SEARCH && s.name != CALL_TOOL).collect(),
                Vec::new(),
            ),
            Self::Proxy { tools, .. } => ToolCatalog::freeze(
                specs.into_iter().filter(|s| !tools.contains(&s.name)).collect(),
                Vec::new(),
            ),
            Self::Native(tools) => {
                let (deferred, core): (Vec<ToolSpec>, Vec<ToolSpec>) =
                    specs.into_iter().filter(|s| s.name != CALL_TOOL).partition(|s| tools.contains(&s.name));
                ToolCatalog::freeze(core, deferred.into_iter().map(ToolSpec::deferred).collect())
            }
        }
    }

    /// Every tool a session with `catalog` can reach: the catalog and the deferred tools.
    pub(crate) fn reachable(&self, catalog: &ToolCatalog) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = catalog.names().into_iter().collect();
        if let Some(tools) = self.tools() {
            names.extend(tools.names());
        }
        names
    }

    /// The warning a session opens with when native loading was asked for and `provider` lacks it.
    pub(crate) fn fallback_warning(&self, provider: &str) -> Option<AgentEvent> {
        matches!(self, Self::Proxy { native_unavailable: true, .. }).then(|| AgentEvent::Warning {
            code: tackle_protocol::WarningCode::StrategyFallback,
            message: format!(
                "[deferral] native is set but {provider} has no native deferred loading: deferred tools are \
                 reached through tool_search and call_tool"
            ),
        })
    }

    /// Whether a step needs the session's state to decide (what search found so far).
    pub(crate) fn reads_state(&self) -> bool {
        !matches!(self, Self::Off)
    }

    /// The tools search found in a session, from its `state`.
    pub(crate) fn found(&self, state: Option<&SessionState>) -> Result<FoundTools, AgentError> {
        match (state, self) {
            (Some(state), Self::Proxy { .. } | Self::Native(_)) => {
                Ok(state.get(FOUND_TOOLS_KEY)?.unwrap_or_default())
            }
            _ => Ok(FoundTools::default()),
        }
    }

    /// Narrows a step's `availability`: under native loading, deferred tools are in the catalog,
    /// and those not `found` yet are not callable (the provider hides them until loaded). Under
    /// the proxy they are not in the catalog at all.
    pub(crate) fn restrict(&self, found: &FoundTools, availability: &mut Availability<'_>) {
        if let Self::Native(tools) = self {
            availability.deferred = tools.names().into_iter().filter(|n| !found.0.contains(n)).collect();
            availability.native_deferral = true;
        }
    }

    /// What the tail note says about deferred tools in a step where search found `found`.
    pub(crate) fn tail_note(&self, found: &FoundTools) -> Option<String> {
        let found = &found.0;
        match self {
            Self::Off => None,
            // Found tools are loaded into the model's context by the provider itself.
            Self::Native(tools) => Some(format!(
                "{} more tools can be loaded with tool_search, then called directly.",
                tools.len().saturating_sub(found.len())
            )),
            Self::Proxy { tools, .. } if found.is_empty() => {
                Some(format!("{} more tools are available through tool_search, then call_tool.", tools.len()))
            }
            Self::Proxy { tools, .. } => Some(format!(
                "Found with tool_search, call them with call_tool: {}. {} more tools can be searched.",
                found.join(", "),
                tools.len().saturating_sub(found.len())
            )),
        }
    }

    /// Plans the calls of a step whose executor accepts `allowed` (`None`: every tool): deferred
    /// tools called through `call_tool` (or by name) become calls of the found tool with the
    /// same id; tools not `found` yet are refused.
    pub(crate) fn plan_calls(
        &self,
        found: &FoundTools,
        allowed: Option<&[String]>,
        calls: Vec<ToolUse>,
    ) -> Vec<Planned> {
        let (tools, native) = match self {
            Self::Off => {
                return calls.into_iter().map(|call| Planned::Run { call, unwrapped: false }).collect();
            }
            Self::Proxy { tools, .. } => (tools, false),
            Self::Native(tools) => (tools, true),
        };
        let mask_allows_proxy = allowed.is_none_or(|a| a.iter().any(|n| n == CALL_TOOL));
        calls
            .into_iter()
            .map(|call| {
                if native && tools.contains(&call.name) {
                    // Loaded tools are called by name; the executor checks the step's active set
                    // (found tools are in it) and the tool's own schema.
                    return match proxy::unwrap_call(&serde_json::json!({"name": call.name}), tools, found) {
                        Ok(_) => Planned::Run { call, unwrapped: false },
                        Err(failure) => Planned::Refuse { error: failure.into_envelope(&call.name), call },
                    };
                }
                let args = if call.name == CALL_TOOL {
                    call.input.to_value()
                } else if tools.contains(&call.name) {
                    // The model called a deferred tool by name: treat it as call_tool.
                    serde_json::json!({"name": call.name, "arguments": call.input.to_value()})
                } else {
                    return Planned::Run { call, unwrapped: false };
                };
                match proxy::unwrap_call(&args, tools, found) {
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

#[cfg(test)]
#[path = "deferral_tests.rs"]
mod tests;
