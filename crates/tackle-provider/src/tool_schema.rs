//! Tool input schemas as each provider accepts them.
//!
//! MCP servers send whatever JSON Schema they were generated with, and the providers reject
//! some of it with a 400 for the whole request: OpenAI answers `array schema missing items`
//! for an array without `items`, `True is not of type 'array'` for a property marked
//! `"required": true` (an OpenAPI habit), and both OpenAI and Anthropic refuse a root that is
//! not `type: object` or that has `oneOf`/`anyOf`/`allOf`/`enum`/`not` at the top level. A
//! provider states what it rejects in [`Capabilities::tool_schema`](crate::Capabilities), and
//! its encoder sends [`adapt_schema`]'s version of each schema.
//!
//! Nothing is lost for validation: the executor validates arguments against the tool's own
//! schema, never the adapted one, and every adaptation keeps or widens what the wire schema
//! allows (a flattened union lists every variant's properties, required only where all
//! variants require them). A schema that needs no change is sent as it is, byte for byte.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Deepest nesting adapted (deeper schemas are sent as they are).
const MAX_DEPTH: usize = 32;

/// What a provider rejects in a tool's input schema.
///
/// ```
/// use serde_json::json;
/// use tackle_provider::{ToolSchemaRules, adapt_schema};
/// let schema = json!({"type": "object", "properties": {"tags": {"type": "array"}}});
/// let adapted = adapt_schema(&schema, ToolSchemaRules::strictest());
/// assert_eq!(adapted["properties"]["tags"], json!({"type": "array", "items": {}}));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchemaRules {
    /// The root must be `type: object` without `oneOf`, `anyOf`, `allOf`, `enum` or `not`.
    pub object_root: bool,
    /// Every array schema needs `items`.
    pub array_items: bool,
    /// `required` must be a list of property names (a boolean on the property is rejected).
    pub required_lists: bool,
}

impl ToolSchemaRules {
    /// Every rule on: what OpenAI's Chat Completions and Responses APIs enforce.
    pub fn strictest() -> Self {
        Self { object_root: true, array_items: true, required_lists: true }
    }

    /// Anthropic Messages: an object root, and valid JSON Schema (`required` a list); arrays
    /// without `items` are accepted.
    pub fn anthropic() -> Self {
        Self { object_root: true, array_items: false, required_lists: true }
    }
}

/// `schema` as a provider with `rules` accepts it; borrowed when nothing needs to change.
pub fn adapt_schema(schema: &Value, rules: ToolSchemaRules) -> Cow<'_, Value> {
    if !needs_adapting(schema, rules, 0, true) {
        return Cow::Borrowed(schema);
    }
    let mut out = schema.clone();
    if rules.object_root {
        object_root(&mut out);
    }
    adapt_node(&mut out, rules, 0);
    Cow::Owned(out)
}

/// What [`adapt_schema`] would change, worded for a person (empty: nothing).
pub fn schema_problems(schema: &Value, rules: ToolSchemaRules) -> Vec<String> {
    let mut problems = Vec::new();
    if rules.object_root {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            problems.push("the root is not `type: object`".to_owned());
        }
        for key in ROOT_REJECTED.iter().filter(|k| schema.get(**k).is_some()) {
            problems.push(format!("`{key}` at the root"));
        }
    }
    collect_problems(schema, rules, "", 0, &mut problems);
    problems
}

/// Keywords the providers refuse at the root of a tool's schema.
const ROOT_REJECTED: [&str; 5] = ["oneOf", "anyOf", "allOf", "enum", "not"];

fn needs_adapting(schema: &Value, rules: ToolSchemaRules, depth: usize, root: bool) -> bool {
    let Some(node) = schema.as_object() else { return root && rules.object_root };
    if depth > MAX_DEPTH {
        return false;
    }
    if root
        && rules.object_root
        && (node.get("type").and_then(Value::as_str) != Some("object")
            || ROOT_REJECTED.iter().any(|k| node.contains_key(*k)))
    {
        return true;
    }
    if rules.array_items && is_array(node) && !node.contains_key("items") {
        return true;
    }
    if rules.required_lists && node.get("required").is_some_and(|r| !r.is_array()) {
        return true;
    }
    children(node).any(|child| needs_adapting(child, rules, depth + 1, false))
}

fn collect_problems(schema: &Value, rules: ToolSchemaRules, path: &str, depth: usize, out: &mut Vec<String>) {
    let Some(node) = schema.as_object() else { return };
    if depth > MAX_DEPTH {
        return;
    }
    let at = if path.is_empty() { "(root)" } else { path };
    if rules.array_items && is_array(node) && !node.contains_key("items") {
        out.push(format!("{at}: array schema without `items`"));
    }
    if rules.required_lists && node.get("required").is_some_and(|r| !r.is_array()) {
        out.push(format!("{at}: `required` is not a list"));
    }
    if let Some(Value::Object(props)) = node.get("properties") {
        for (name, sub) in props {
            collect_problems(sub, rules, &format!("{path}/{name}"), depth + 1, out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = node.get(key) {
            collect_problems(sub, rules, &format!("{path}/{key}"), depth + 1, out);
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = node.get(key) {
            for (i, sub) in subs.iter().enumerate() {
                collect_problems(sub, rules, &format!("{path}/{key}/{i}"), depth + 1, out);
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = node.get(key) {
            for (name, sub) in defs {
                collect_problems(sub, rules, &format!("{path}/{key}/{name}"), depth + 1, out);
            }
        }
    }
}

/// Subschemas of a node (properties, items, combinators, definitions).
fn children(node: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    let props = node.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.values());
    let single = ["items", "additionalProperties"].into_iter().filter_map(|k| node.get(k));
    let lists = ["oneOf", "anyOf", "allOf", "prefixItems"]
        .into_iter()
        .filter_map(|k| node.get(k).and_then(Value::as_array))
        .flatten();
    let defs = ["$defs", "definitions"]
        .into_iter()
        .filter_map(|k| node.get(k).and_then(Value::as_object))
        .flat_map(|d| d.values());
    props.chain(single).chain(lists).chain(defs)
}

fn is_array(node: &Map<String, Value>) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    }
}

/// Makes the root an object without top-level combinators: a union's variants are merged
/// (every property of every variant; required where all variants require it, or where any
/// `allOf` part does), `enum` and `not` dropped.
fn object_root(root: &mut Value) {
    let Value::Object(node) = root else {
        *root = serde_json::json!({"type": "object"});
        return;
    };
    let mut properties = match node.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut required: Vec<Value> = match node.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    if let Some(Value::Array(parts)) = node.remove("allOf") {
        for part in &parts {
            merge_properties(&mut properties, part);
            for name in part.get("required").and_then(Value::as_array).into_iter().flatten() {
                if !required.contains(name) {
                    required.push(name.clone());
                }
            }
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(variants)) = node.remove(key) {
            let mut common: Option<Vec<Value>> = None;
            for variant in &variants {
                merge_properties(&mut properties, variant);
                let req: Vec<Value> =
                    variant.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
                common = Some(match common {
                    None => req,
                    Some(c) => c.into_iter().filter(|n| req.contains(n)).collect(),
                });
            }
            for name in common.unwrap_or_default() {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }
    node.remove("enum");
    node.remove("not");
    node.insert("type".into(), Value::String("object".into()));
    node.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        node.insert("required".into(), Value::Array(required));
    }
}

fn merge_properties(into: &mut Map<String, Value>, variant: &Value) {
    if let Some(props) = variant.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            into.entry(name.clone()).or_insert_with(|| sub.clone());
        }
    }
}

fn adapt_node(schema: &mut Value, rules: ToolSchemaRules, depth: usize) {
    let Value::Object(node) = schema else { return };
    if depth > MAX_DEPTH {
        return;
    }
    if rules.array_items && is_array(node) && !node.contains_key("items") {
        node.insert("items".into(), Value::Object(Map::new()));
    }
    if rules.required_lists {
        if node.get("required").is_some_and(|r| !r.is_array()) {
            // A boolean on a property: its parent lists it (below), so it goes here.
            node.remove("required");
        }
        if let Some(Value::Object(props)) = node.get("properties") {
            let marked: Vec<String> = props
                .iter()
                .filter(|(_, p)| p.get("required") == Some(&Value::Bool(true)))
                .map(|(name, _)| name.clone())
                .collect();
            if !marked.is_empty() {
                let list = node.entry("required").or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = list {
                    for name in marked {
                        if !list.iter().any(|n| n == &Value::String(name.clone())) {
                            list.push(Value::String(name));
                        }
                    }
                }
            }
        }
    }
    if let Some(Value::Object(props)) = node.get_mut("properties") {
        for sub in props.values_mut() {
            adapt_node(sub, rules, depth + 1);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = node.get_mut(key) {
            adapt_node(sub, rules, depth + 1);
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = node.get_mut(key) {
            for sub in subs {
                adapt_node(sub, rules, depth + 1);
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = node.get_mut(key) {
            for sub in defs.values_mut() {
                adapt_node(sub, rules, depth + 1);
            }
        }
    }
}

#[cfg(test)]
#[path = "tool_schema_tests.rs"]
mod tests;
