//! `tool_search` and `call_tool`: the two tools through which the model reaches deferred tools.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tackle_protocol::{ErrorCategory, ToolAnnotations, ToolSpec};
use tackle_store::Store;
use tackle_tools::{Tool, ToolContext, ToolDoc, ToolFailure, ToolOutput};

use super::{CALL_TOOL, DeferralMode, DeferredTools, FOUND_TOOLS_KEY, FoundTools, TOOL_SEARCH};

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
        // It updates the session's found list (calls in one step run in order), and answers
        // within its own token budget: an answer the model cannot see would defeat deferral.
        let annotations = ToolAnnotations { sized_output: true, ..ToolAnnotations::session_only() };
        let spec = ToolSpec::new(TOOL_SEARCH, description, schema).with_annotations(annotations);
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
        let store = crate::tools::store_for(&ctx, &self.store);
        let mut found: FoundTools = store
            .sessions()
            .get_state(&ctx.session_id, FOUND_TOOLS_KEY)
            .await
            .map_err(internal)?
            .unwrap_or_default();
        for spec in &hits {
            if !found.0.contains(&spec.name) {
                found.0.push(spec.name.clone());
            }
        }
        store.sessions().set_state(&ctx.session_id, FOUND_TOOLS_KEY, &found).await.map_err(internal)?;
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
            // It only unwraps into the found tool's call, which is checked as that tool.
            spec: ToolSpec::new(CALL_TOOL, description, schema)
                .with_annotations(ToolAnnotations::session_only()),
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
