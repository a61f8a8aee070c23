//! The deferred tools' definitions and the search index over them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use tackle_context::TokenCounter;
use tackle_protocol::ToolSpec;
use tackle_tools::{Ranker, ToolSearchIndex};

use super::DeferralMode;
use crate::tools::search_result::{SEARCH_RESULT_TOKENS, render_results};

/// Tools found by `tool_search` in a session, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundTools(pub Vec<String>);

/// The deferred tools of an agent: their definitions and a search index over them.
///
/// Shared by the agent, `tool_search` and the loop; replaced as a whole when a tool source
/// changes at a turn boundary ([`DeferredTools::replace`]), which leaves the catalog (and so
/// the provider cache) untouched.
#[derive(Debug)]
pub struct DeferredTools {
    set: RwLock<Arc<DeferredSet>>,
    /// How the index ranks.
    ranker: Ranker,
    /// Counts the tokens of a search answer (the model's vocabulary).
    counter: TokenCounter,
    /// How they reach the model, fixed when the agent is built ([`super::Deferral::plan`]).
    mode: DeferralMode,
}

#[derive(Debug)]
struct DeferredSet {
    specs: HashMap<String, ToolSpec>,
    index: ToolSearchIndex,
}

impl DeferredSet {
    fn new(specs: Vec<ToolSpec>, ranker: Ranker) -> Self {
        let index = ToolSearchIndex::with_ranker(specs.iter(), ranker);
        Self { specs: specs.into_iter().map(|s| (s.name.clone(), s)).collect(), index }
    }
}

impl DeferredTools {
    /// Indexes `specs` with the default ranker.
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        Self::with_ranker(specs, Ranker::default())
    }

    /// Indexes `specs` with `ranker`.
    pub fn with_ranker(specs: Vec<ToolSpec>, ranker: Ranker) -> Self {
        Self {
            set: RwLock::new(Arc::new(DeferredSet::new(specs, ranker))),
            ranker,
            counter: TokenCounter::for_model(""),
            mode: DeferralMode::Proxy,
        }
    }

    /// The same tools reached the `mode` way (set once, by [`super::Deferral::plan`]).
    pub(crate) fn in_mode(mut self, mode: DeferralMode) -> Self {
        self.mode = mode;
        self
    }

    /// How the deferred tools reach the model.
    pub fn mode(&self) -> DeferralMode {
        self.mode
    }

    fn current(&self) -> Arc<DeferredSet> {
        self.set.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Counts search answers with the vocabulary of `model`.
    pub fn with_model(mut self, model: &str) -> Self {
        self.counter = TokenCounter::for_model(model);
        self
    }

    /// How the index ranks.
    pub fn ranker(&self) -> Ranker {
        self.ranker
    }

    /// What `tool_search` answers for `query` (at most `limit` tools), as the model reads it:
    /// the compact form within [`SEARCH_RESULT_TOKENS`], and the tools found.
    pub fn answer(&self, query: &str, limit: usize) -> (String, Vec<ToolSpec>) {
        let hits = self.search(query, limit);
        let text = render_results(query, &hits, self.mode(), &self.counter, SEARCH_RESULT_TOKENS);
        (text, hits)
    }

    /// Replaces the deferred tools (and re-indexes them).
    pub fn replace(&self, specs: Vec<ToolSpec>) {
        let set = Arc::new(DeferredSet::new(specs, self.ranker));
        *self.set.write().unwrap_or_else(|p| p.into_inner()) = set;
    }

    /// The definition of a deferred tool.
    pub fn get(&self, name: &str) -> Option<ToolSpec> {
        self.current().specs.get(name).cloned()
    }

    /// Whether `name` is deferred.
    pub fn contains(&self, name: &str) -> bool {
        self.current().specs.contains_key(name)
    }

    /// Names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.current().specs.keys().cloned().collect::<BTreeSet<_>>().into_iter().collect()
    }

    /// Number of deferred tools.
    pub fn len(&self) -> usize {
        self.current().specs.len()
    }

    /// True when nothing is deferred.
    pub fn is_empty(&self) -> bool {
        self.current().specs.is_empty()
    }

    /// The best `limit` matches of `query`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<ToolSpec> {
        let set = self.current();
        set.index
            .search(query, limit)
            .into_iter()
            .filter_map(|(name, _)| set.specs.get(&name).cloned())
            .collect()
    }
}
