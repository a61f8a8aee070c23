//! Deferred tools: when tool definitions would take too much of the context window, non-core
//! tools (MCP first) leave the catalog and are reached through `tool_search` and `call_tool`.
//!
//! The catalog never changes for it: it holds the core tools plus these two from the start, so
//! every request's prefix stays byte-identical while the model discovers tools. `tool_search`
//! ranks deferred tools with BM25 and records what it found in the session; found tools are
//! named in the tail note and called as `call_tool(name, arguments)`, which the loop unwraps
//! into an ordinary call of the deferred tool (its own schema validation, hooks, timeout, cap).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_protocol::{ErrorCategory, ToolAnnotations, ToolSpec};
use tackle_store::Store;
use tackle_tools::ToolSearchIndex;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

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
}

impl Default for DeferralConfig {
    fn default() -> Self {
        Self { enabled: true, share: 0.10, native: false }
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
    fn new(specs: Vec<ToolSpec>) -> Self {
        let index = ToolSearchIndex::new(specs.iter());
        Self { specs: specs.into_iter().map(|s| (s.name.clone(), s)).collect(), index }
    }
}

impl DeferredTools {
    /// Indexes `specs`.
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        Self {
            set: RwLock::new(Arc::new(DeferredSet::new(specs))),
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

    /// Replaces the deferred tools (and re-indexes them).
    pub fn replace(&self, specs: Vec<ToolSpec>) {
        let set = Arc::new(DeferredSet::new(specs));
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

/// `tool_search`: finds deferred tools and makes them callable through `call_tool`.
pub struct ToolSearch {
    deferred: Arc<DeferredTools>,
    store: Store,
}

impl ToolSearch {
    /// A search over `deferred`, recording found tools in `store`.
    pub fn new(deferred: Arc<DeferredTools>, store: Store) -> Self {
        Self { deferred, store }
    }
}

#[async_trait]
impl TypedTool for ToolSearch {
    type Args = ToolSearchArgs;

    fn name(&self) -> &str {
        TOOL_SEARCH
    }

    fn description(&self) -> String {
        ToolDoc::new("Search the tools that are not listed (from MCP servers) by what they do.")
            .use_when("no listed tool fits the task; many more tools exist than are listed")
            .does_not("run the tools it finds; call them with call_tool(name, arguments)")
            .arg("query", "What the tool should do. Example: \"create a github issue\"")
            .arg("limit", "Most tools returned, default 5")
            .returns(
                "Matching tools with name, description and input schema; they stay callable for the session.",
            )
            .example(r#"{"query": "read a file from the docs server"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        // It updates the session's found list; calls in one step run in order.
        ToolAnnotations::default()
    }

    async fn run(&self, args: ToolSearchArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        if args.query.trim().is_empty() {
            return Err(
                ToolFailure::invalid_args("query is empty").with_hint("describe what the tool should do")
            );
        }
        let limit = args.limit.unwrap_or(5).clamp(1, 20) as usize;
        let hits = self.deferred.search(&args.query, limit);
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
        let to_text =
            |v: Value| serde_json::to_string_pretty(&v).map_err(|e| ToolFailure::internal(e.to_string()));
        if self.deferred.mode() == DeferralMode::Native {
            // The provider loads each referenced definition into the model's context; the text
            // is what other readers (the store, front ends, a later provider) see.
            let tools: Vec<Value> =
                hits.iter().map(|s| json!({"name": s.name, "description": s.description})).collect();
            let text = to_text(
                json!({"tools": tools, "how_to_call": "call them directly by name; they are loaded now"}),
            )?;
            return Ok(
                ToolOutput::text(text).with_tool_references(hits.into_iter().map(|s| s.name).collect())
            );
        }
        let tools: Vec<Value> = hits
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "input_schema": s.input_schema}))
            .collect();
        let text = to_text(json!({
            "tools": tools,
            "how_to_call": "call_tool with {\"name\": <tool name>, \"arguments\": {...matching its input_schema}}",
        }))?;
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
/// that tool, so this implementation only runs if a runtime forgot to.
pub struct CallTool;

#[async_trait]
impl TypedTool for CallTool {
    type Args = CallToolArgs;

    fn name(&self) -> &str {
        CALL_TOOL
    }

    fn description(&self) -> String {
        ToolDoc::new("Call a tool found by tool_search.")
            .use_when("tool_search returned the tool you need")
            .does_not("work for tools that tool_search did not return in this session")
            .arg("name", "The tool's name as tool_search returned it")
            .arg("arguments", "An object matching the tool's input_schema")
            .returns("What the tool returns.")
            .example(r#"{"name": "github__create_issue", "arguments": {"title": "Bug"}}"#)
            .render()
    }

    async fn run(&self, args: CallToolArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
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
    let deferred = DeferredTools::new(deferred);
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
}
