//! The session's view of its context window: token counts per message (memoized), the budget of
//! the next request, and calibration against the provider's reported usage.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tackle_context::{
    Components, ContextBudget, CountSource, Thresholds, TokenCounter, context_window, is_exact,
};
use tackle_protocol::{ContextReport, Message, SystemSection, ToolSpec};

use crate::session::History;

/// Settings of context management.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ContextConfig {
    /// The model's context window; from a built-in table when unset.
    pub window: Option<u64>,
    /// Tokens reserved for the answer (also the requested output limit when none is set).
    pub reserved_output: u64,
    /// When to compact and when to refuse.
    pub thresholds: Thresholds,
    /// Tool results kept verbatim when old ones are cleared.
    pub keep_tool_results: usize,
    /// Tool outputs larger than this (bytes) are offloaded to the store.
    pub offload_bytes: usize,
    /// Days offloaded outputs are kept.
    pub offload_ttl_days: u64,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            window: None,
            reserved_output: 8_192,
            thresholds: Thresholds::default(),
            keep_tool_results: 5,
            offload_bytes: crate::context::DEFAULT_OFFLOAD_BYTES,
            offload_ttl_days: 7,
        }
    }
}

/// Session-state key of the calibration factor.
pub(crate) const CALIBRATION_KEY: &str = "context.calibration";

/// Token accounting of one session.
#[derive(Debug, Clone)]
pub(crate) struct ContextState {
    counter: TokenCounter,
    exact: bool,
    window: u64,
    reserved_output: u64,
    /// System, skills and tools: fixed for the session.
    fixed: Components,
    /// Reported tokens per counted token, for models whose tokenizer is not public.
    pub(crate) calibration: f64,
    /// The provider's input tokens for the last request and how many messages it had.
    last_reported: Option<(usize, u64)>,
    /// Uncalibrated estimate of the last request, to learn the calibration from its report.
    last_estimate: Option<u64>,
}

impl ContextState {
    /// The accounting of a session whose fixed parts are `system` and `tools` (the catalog with
    /// `fingerprint`); their counts come from `memo` when an earlier session had the same parts.
    pub(crate) fn new(
        model: &str,
        config: &ContextConfig,
        system: &[SystemSection],
        tools: (&[ToolSpec], &str),
        memo: &FixedCounts,
    ) -> Self {
        let counter = TokenCounter::for_model(model);
        let fixed = memo.get_or_count(&counter, system, tools);
        Self {
            counter,
            exact: is_exact(model),
            window: config.window.unwrap_or_else(|| context_window(model)),
            reserved_output: config.reserved_output,
            fixed,
            calibration: 1.0,
            last_reported: None,
            last_estimate: None,
        }
    }

    /// Counts the tool definitions again after the catalog changed at a turn boundary.
    pub(crate) fn set_tools(&mut self, tools: &[ToolSpec]) {
        // Rare (a tool source changed mid-session): counted afresh, not memoized.
        self.fixed.tools = count_loaded_tools(&self.counter, tools);
    }

    /// The vocabulary counts are made with.
    pub(crate) fn encoding(&self) -> tackle_context::Encoding {
        self.counter.encoding()
    }

    /// Tokens of one message.
    pub(crate) fn count_message(&self, message: &Message) -> u64 {
        self.counter.count_message(message)
    }

    /// Forgets the last report (after the history changed in place: positions moved).
    pub(crate) fn forget_report(&mut self) {
        self.last_reported = None;
    }

    /// The budget of a request with `history`.
    pub(crate) fn budget(&mut self, history: &History) -> ContextBudget {
        let conversation = history.total_tokens();
        let counted = self.fixed.total() + conversation;
        self.last_estimate = Some(counted);
        let cal = if self.exact { 1.0 } else { self.calibration };
        let scale = |v: u64| (v as f64 * cal).round() as u64;
        if let Some((n, reported)) = self.last_reported
            && n <= history.len()
        {
            // The provider counted everything up to its last request; count only what follows.
            let fresh: u64 = history.tokens()[n..].iter().sum();
            let conversation = reported.saturating_sub(self.fixed.total()) + scale(fresh);
            let components = Components { conversation, ..self.fixed };
            return ContextBudget::new(self.window, self.reserved_output, components, CountSource::Reported);
        }
        let components = Components {
            system: scale(self.fixed.system),
            skills: scale(self.fixed.skills),
            tools: scale(self.fixed.tools),
            conversation: scale(conversation),
        };
        let source = if self.exact { CountSource::Exact } else { CountSource::Estimated };
        ContextBudget::new(self.window, self.reserved_output, components, source)
    }

    /// Learns from the input tokens the provider reported for a request of `messages` messages.
    /// Returns the new calibration when it moved by more than 1% (worth persisting).
    pub(crate) fn observe_usage(&mut self, messages: usize, input_tokens: u64) -> Option<f64> {
        if input_tokens == 0 {
            return None;
        }
        self.last_reported = Some((messages, input_tokens));
        let estimate = self.last_estimate.take()?;
        if self.exact || estimate == 0 {
            return None;
        }
        let observed = input_tokens as f64 / estimate as f64;
        // A running average: one odd report does not swing the estimate.
        let previous = self.calibration;
        self.calibration = if previous == 1.0 { observed } else { 0.5 * previous + 0.5 * observed };
        // Worth a store write only when it moved: a steady provider would otherwise cost one per step.
        ((self.calibration - previous).abs() > 0.01 * previous).then_some(self.calibration)
    }

    /// Conversation tokens as shown to people: the counted messages, calibrated when the
    /// tokenizer is not the model's own. The one figure `/context`, step metrics and compaction
    /// reports use (the budget may start from the provider's report instead; see
    /// [`ContextReport::reported_input`]).
    pub(crate) fn conversation(&self, history: &History) -> u64 {
        let cal = if self.exact { 1.0 } else { self.calibration };
        (history.total_tokens() as f64 * cal).round() as u64
    }

    /// The budget as reported in events (call after [`ContextState::budget`]).
    pub(crate) fn report(&self, budget: &ContextBudget, history: &History) -> ContextReport {
        ContextReport {
            window: budget.window,
            reserved_output: budget.reserved_output,
            used: budget.used(),
            remaining: budget.remaining(),
            percent: (budget.percent() * 10.0).round() / 10.0,
            system: budget.components.system,
            skills: budget.components.skills,
            tools: budget.components.tools,
            conversation: self.conversation(history),
            reported_input: match budget.source {
                CountSource::Reported => self.last_reported.map(|(_, n)| n),
                _ => None,
            },
        }
    }
}

/// The counted fixed parts (system, skills, tools) of recent sessions, keyed by a digest of
/// what was counted: the sessions of one agent mostly share their system text and catalog, and
/// counting them (a BPE pass over every tool schema) costs more than opening the session's rows.
#[derive(Debug, Default)]
pub(crate) struct FixedCounts(Mutex<HashMap<blake3::Hash, Components>>);

/// Distinct fixed parts remembered (one per workspace and catalog in practice); the memo starts
/// over when full.
const FIXED_COUNTS_KEPT: usize = 64;

impl FixedCounts {
    fn get_or_count(
        &self,
        counter: &TokenCounter,
        system: &[SystemSection],
        (tools, fingerprint): (&[ToolSpec], &str),
    ) -> Components {
        let key = fixed_key(counter, system, fingerprint);
        if let Some(found) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *found;
        }
        let (base, skills): (Vec<&SystemSection>, Vec<&SystemSection>) =
            system.iter().partition(|s| s.name != "skills");
        let base: Vec<SystemSection> = base.into_iter().cloned().collect();
        let counted = Components {
            system: counter.count_system(&base),
            skills: skills.iter().map(|s| counter.count_text(&s.text)).sum(),
            tools: count_loaded_tools(counter, tools),
            conversation: 0,
        };
        let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= FIXED_COUNTS_KEPT {
            memo.clear();
        }
        memo.insert(key, counted);
        counted
    }
}

/// A digest of everything the fixed counts depend on: the vocabulary, each section's name and
/// text (length-prefixed, so no two lists collide), and the catalog's fingerprint (a digest of
/// its definitions, `defer_loading` included).
fn fixed_key(counter: &TokenCounter, system: &[SystemSection], fingerprint: &str) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(counter.encoding().name().as_bytes());
    field(fingerprint.as_bytes());
    for s in system {
        field(s.name.as_bytes());
        field(s.text.as_bytes());
    }
    h.finalize()
}

/// Tokens of the definitions the model sees up front: deferred ones (`defer_loading`) enter its
/// context only when a search loads them, as part of that tool result.
fn count_loaded_tools(counter: &TokenCounter, tools: &[ToolSpec]) -> u64 {
    if tools.iter().any(|t| t.defer_loading) {
        let loaded: Vec<ToolSpec> = tools.iter().filter(|t| !t.defer_loading).cloned().collect();
        counter.count_tools(&loaded)
    } else {
        counter.count_tools(tools)
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
