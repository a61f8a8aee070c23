//! Deferred tools: when tool definitions would take too much of the context window, non-core
//! tools (MCP first) leave the catalog and are reached through `tool_search` and `call_tool`.
//!
//! The catalog never changes for it: it holds the core tools plus these two from the start, so
//! every request's prefix stays byte-identical while the model discovers tools. `tool_search`
//! ranks deferred tools (BM25F by default, see [`tackle_tools::Ranker`]), answers with each
//! found tool in a compact form within a fixed token budget ([`super::search_result`]), never
//! offloaded, and records what it found in the session; found tools are named in the tail note
//! and called as `call_tool(name, arguments)`, which the loop unwraps into an ordinary call of
//! the deferred tool (its own full-schema validation, hooks, timeout, cap).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_context::TokenCounter;
use tackle_protocol::{ErrorCategory, ToolAnnotations, ToolSpec};
use tackle_store::Store;
use tackle_tools::{Ranker, Tool, ToolContext, ToolDoc, ToolFailure, ToolOutput, ToolSearchIndex};

use super::search_result::{SEARCH_RESULT_TOKENS, render_results};

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
    /// Native loading was asked for (`[deferral] native`).
    native_requested: AtomicBool,
    /// Native loading is in use: asked for, and the provider has it.
    native: AtomicBool,
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
            native_requested: AtomicBool::new(false),
            native: AtomicBool::new(false),
        }
    }

    /// How the deferred tools reach the model.
    pub fn mode(&self) -> DeferralMode {
        if self.native.load(Ordering::Acquire) { DeferralMode::Native } else { DeferralMode::Proxy }
    }

    /// Asks for `mode`; native takes effect once [`DeferredTools::resolve`] confirms the provider
    /// has it.
    pub fn request_mode(&self, mode: DeferralMode) {
        self.native_requested.store(mode == DeferralMode::Native, Ordering::Release);
    }

    /// Settles the mode for a provider that has (or lacks) native deferred loading. Called when
    /// the agent is built, before any session opens.
    pub fn resolve(&self, provider_has_native: bool) {
        let native = provider_has_native && self.native_requested.load(Ordering::Acquire);
        self.native.store(native, Ordering::Release);
    }

    /// Native loading was asked for but the provider lacks it, so the proxy is used.
    pub fn fell_back(&self) -> bool {
        self.native_requested.load(Ordering::Acquire) && self.mode() == DeferralMode::Proxy
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

/// Arguments of `tool_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchArgs {
    /// What the tool should do, in a few words.
    pub query: String,
    /// Most tools returned (default 5, at most 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Parses a call's arguments (already validated against the tool's schema; unknown fields are
/// refused here, which keeps `additionalProperties` out of the always-sent definitions).
fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolFailure> {
    serde_json::from_value(args).map_err(|e| ToolFailure::invalid_args(e.to_string()))
}

/// `tool_search`: finds deferred tools and makes them callable through `call_tool`.
///
/// Its definition is always sent, whatever is deferred, so it is written by hand to stay small
/// (`the_deferral_tools_stay_small`): a 100-tool deferred catalogue must keep its always-loaded
/// part under 15% of its definition bytes.
pub struct ToolSearch {
    deferred: Arc<DeferredTools>,
    store: Store,
    spec: ToolSpec,
}

impl ToolSearch {
    /// A search over `deferred`, recording found tools in `store`.
    pub fn new(deferred: Arc<DeferredTools>, store: Store) -> Self {
        let description = ToolDoc::new("Find tools not listed here by what they do.")
            .use_when("no listed tool fits")
            .does_not("run tools")
            .arg("query", "what the tool should do")
            .returns("Tools with their parameters.")
            .example(r#"{"query": "create a github issue"}"#)
            .render();
        let schema = json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What the tool should do."},
            "limit": {"type": "integer", "description": "1 to 20, default 5."}
        }, "required": ["query"]});
        // It updates the session's found list; calls in one step run in order.
        let spec =
            ToolSpec::new(TOOL_SEARCH, description, schema).with_annotations(ToolAnnotations::default());
        Self { deferred, store, spec }
    }
}

#[async_trait]
impl Tool for ToolSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let args: ToolSearchArgs = parse_args(args)?;
        if args.query.trim().is_empty() {
            return Err(
                ToolFailure::invalid_args("query is empty").with_hint("describe what the tool should do")
            );
        }
        let limit = args.limit.unwrap_or(5).clamp(1, 20) as usize;
        let (text, hits) = self.deferred.answer(&args.query, limit);
        if hits.is_empty() {
            return Err(ToolFailure::not_found(format!("no deferred tool matches {:?}", args.query))
                .with_hint("try other words, e.g. the service or the object the tool works on"));
        }
        let internal = |e: tackle_store::StoreError| ToolFailure::internal(e.to_string());
        let store = super::store_for(&ctx, &self.store);
        let mut found: FoundTools =
            store.get_state(&ctx.session_id, FOUND_TOOLS_KEY).await.map_err(internal)?.unwrap_or_default();
        for spec in &hits {
            if !found.0.contains(&spec.name) {
                found.0.push(spec.name.clone());
            }
        }
        store.set_state(&ctx.session_id, FOUND_TOOLS_KEY, &found).await.map_err(internal)?;
        if self.deferred.mode() == DeferralMode::Native {
            // The provider loads each referenced definition into the model's context; the text
            // is what other readers (the store, front ends, a later provider) see.
            return Ok(
                ToolOutput::text(text).with_tool_references(hits.into_iter().map(|s| s.name).collect())
            );
        }
        Ok(ToolOutput::text(text))
    }
}

/// Arguments of `call_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallToolArgs {
    /// Name of a tool found by `tool_search`.
    pub name: String,
    /// Its arguments, matching the input schema `tool_search` returned.
    #[serde(default)]
    // Part of the schema the model sees; the loop unwraps calls before this type is read.
    #[allow(dead_code)]
    pub arguments: Option<Value>,
}

/// `call_tool`: calls a tool found by `tool_search`. The agent loop unwraps it into a call of
/// that tool, so this implementation only runs if a runtime forgot to. Written by hand to stay
/// small, like [`ToolSearch`].
pub struct CallTool {
    spec: ToolSpec,
}

impl Default for CallTool {
    fn default() -> Self {
        let description = ToolDoc::new("Run a tool tool_search found.")
            .use_when("tool_search found it")
            .does_not("run tools not found")
            .arg("name", "the tool's name")
            .arg("arguments", "its arguments")
            .returns("The tool's output.")
            .example(r#"{"name": "gh__new_issue", "arguments": {"title": "Bug"}}"#)
            .render();
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "As found."},
            "arguments": {"type": "object", "description": "Its arguments."}
        }, "required": ["name"]});
        Self {
            spec: ToolSpec::new(CALL_TOOL, description, schema).with_annotations(ToolAnnotations::default()),
        }
    }
}

#[async_trait]
impl Tool for CallTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let args: CallToolArgs = parse_args(args)?;
        Err(ToolFailure::new(
            ErrorCategory::Internal,
            format!(
                "call_tool({}) reached the tool itself; the agent loop should have run that tool",
                args.name
            ),
        ))
    }
}

/// The tool a `call_tool` call stands for, or the envelope to answer instead.
pub(crate) fn unwrap_call(
    args: &Value,
    deferred: &DeferredTools,
    found: &FoundTools,
) -> Result<(String, Value), ToolFailure> {
    let name = args.get("name").and_then(Value::as_str).ok_or_else(|| {
        ToolFailure::invalid_args("call_tool needs a string `name`")
            .with_hint("call tool_search first, then call_tool with a name it returned")
    })?;
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
            ToolFailure::invalid_args(format!("`arguments` is a string that is not a JSON object: {e}"))
                .with_hint("pass arguments as a JSON object")
        })?,
        Some(v) => v.clone(),
    };
    if !deferred.contains(name) {
        return Err(ToolFailure::not_found(format!("{name:?} is not a deferred tool"))
            .with_hint("call tool_search to find tools; listed tools are called directly"));
    }
    if !found.0.iter().any(|f| f == name) {
        return Err(ToolFailure::denied(format!("{name} has not been found by tool_search in this session"))
            .with_hint(format!("call tool_search with what you need first; it returns {name} if it fits")));
    }
    Ok((name.to_owned(), arguments))
}

/// Decides whether to defer: when the definitions of all `specs` take more than
/// `config.share` of the effective window of `model`, the `deferrable` ones are deferred.
/// Returns them indexed for search, or `None` when everything fits (or deferral is off).
pub fn plan_deferral(
    specs: &[ToolSpec],
    deferrable: &[String],
    model: &str,
    context: &crate::ContextConfig,
    config: &DeferralConfig,
) -> Option<Arc<DeferredTools>> {
    if !config.enabled || deferrable.is_empty() {
        return None;
    }
    let counter = tackle_context::TokenCounter::for_model(model);
    let tokens = counter.count_tools(specs);
    let window = context.window.unwrap_or_else(|| tackle_context::context_window(model));
    let effective = window.saturating_sub(context.reserved_output);
    let budget = (effective as f64 * config.share) as u64;
    if tokens <= budget {
        return None;
    }
    let deferred: Vec<ToolSpec> = specs.iter().filter(|s| deferrable.contains(&s.name)).cloned().collect();
    tracing::info!(
        tokens,
        budget,
        deferred = deferred.len(),
        "tool definitions over budget: deferring non-core tools"
    );
    let deferred = DeferredTools::with_ranker(deferred, config.ranker).with_model(model);
    if config.native {
        deferred.request_mode(DeferralMode::Native);
    }
    Some(Arc::new(deferred))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec::new(
            name,
            description,
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
    }

    #[test]
    fn call_tool_needs_a_found_deferred_tool() {
        let deferred =
            DeferredTools::new(vec![spec("docs__read", "Read a document"), spec("git__log", "Show history")]);
        let found = FoundTools(vec!["docs__read".into()]);
        let (name, args) =
            unwrap_call(&json!({"name": "docs__read", "arguments": {"path": "a"}}), &deferred, &found)
                .unwrap();
        assert_eq!((name.as_str(), args), ("docs__read", json!({"path": "a"})));
        let (_, args) =
            unwrap_call(&json!({"name": "docs__read", "arguments": "{\"path\":\"b\"}"}), &deferred, &found)
                .unwrap();
        assert_eq!(args, json!({"path": "b"}), "stringified arguments are accepted");
        let e = unwrap_call(&json!({"name": "git__log"}), &deferred, &found).unwrap_err();
        assert_eq!(e.category, ErrorCategory::Denied);
        assert!(e.hint.unwrap().contains("tool_search"));
        let e = unwrap_call(&json!({"name": "shell"}), &deferred, &found).unwrap_err();
        assert_eq!(e.category, ErrorCategory::NotFound);
        assert_eq!(
            unwrap_call(&json!({}), &deferred, &found).unwrap_err().category,
            ErrorCategory::InvalidArgs
        );
        assert_eq!(deferred.search("history of commits", 3)[0].name, "git__log");
    }

    #[tokio::test]
    async fn the_deferral_tools_stay_small() {
        // Always sent: with the builtins (~14.4 KB) they must stay under 15% of a 100-tool
        // deferred catalogue of ~700 B tools (tests/deferral.rs and tests/tool_sources.rs
        // measure that share).
        let store = tackle_store::Store::open_in_memory().await.unwrap();
        let search = ToolSearch::new(Arc::new(DeferredTools::new(Vec::new())), store);
        let call = CallTool::default();
        let bytes: usize =
            [search.spec(), call.spec()].iter().map(|s| serde_json::to_string(s).unwrap().len()).sum();
        assert!(bytes <= 1_200, "tool_search + call_tool take {bytes} B");
        for spec in [search.spec(), call.spec()] {
            assert_eq!(tackle_tools::lint::lint_tool(spec), Vec::<String>::new(), "{}", spec.name);
        }
    }
}
