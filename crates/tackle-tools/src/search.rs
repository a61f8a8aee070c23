//! [`ToolSearchIndex`]: BM25 ranking of tools for a free-text query.
//!
//! Each tool is a bag of tokens from its name (split on `_`, `-` and camelCase, counted twice),
//! its description, and the parameter names of its input schema (`properties`, nested ones
//! included). Tokens are lowercased, a few English stop words are dropped and plurals are folded
//! (`files` → `file`).
//!
//! BM25 weights (k1 = 1.2, b = 0.75) are computed once per (term, tool) when the index is built,
//! so a query only looks up its own terms and adds precomputed weights: 1,000 tools are searched
//! in microseconds. Equal scores are ordered by tool name. Pure: no IO.

use std::collections::HashMap;

use serde_json::Value;
use tackle_protocol::ToolSpec;

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// BM25 length normalization.
pub const BM25_B: f32 = 0.75;

/// How many times name tokens count compared with description tokens.
const NAME_BOOST: u32 = 2;
/// Deepest nesting of `properties` whose parameter names are indexed.
const MAX_SCHEMA_DEPTH: usize = 4;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into", "is", "it", "its",
    "of", "on", "or", "that", "the", "this", "to", "with",
];

/// A BM25 index over tool definitions.
///
/// ```
/// use serde_json::json;
/// use tackle_tools::ToolSearchIndex;
/// use tackle_protocol::ToolSpec;
/// let tools = [
///     ToolSpec::new("fs__read_text_file", "Read a file as text.", json!({"type": "object"})),
///     ToolSpec::new("web__fetch", "Fetch a URL.", json!({"type": "object"})),
/// ];
/// let index = ToolSearchIndex::new(&tools);
/// let hits = index.search("read file", 5);
/// assert_eq!(hits[0].0, "fs__read_text_file");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSearchIndex {
    /// Tool names, sorted: a document id is an index here, so id order is name order.
    names: Vec<String>,
    /// Term → id into `postings`.
    terms: HashMap<String, u32>,
    /// Per term: (document, precomputed BM25 weight), by document id.
    postings: Vec<Vec<(u32, f32)>>,
}

impl ToolSearchIndex {
    /// Builds the index; tools with the same name are indexed once (the first one).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let mut specs: Vec<&ToolSpec> = tools.into_iter().collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs.dedup_by(|b, a| a.name == b.name);

        // Term frequencies per document.
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut doc_terms: Vec<Vec<(u32, u32)>> = Vec::with_capacity(specs.len());
        let mut doc_lens: Vec<u32> = Vec::with_capacity(specs.len());
        let mut scratch: Vec<String> = Vec::new();
        for spec in &specs {
            scratch.clear();
            let mut name_tokens = Vec::new();
            tokenize_identifier(&spec.name, &mut name_tokens);
            for _ in 0..NAME_BOOST {
                scratch.extend(name_tokens.iter().cloned());
            }
            tokenize(&spec.description, &mut scratch);
            parameter_names(&spec.input_schema, 0, &mut |name| tokenize_identifier(name, &mut scratch));

            let mut counts: HashMap<u32, u32> = HashMap::new();
            for token in scratch.drain(..) {
                let next = u32::try_from(terms.len()).unwrap_or(u32::MAX);
                let id = *terms.entry(token).or_insert(next);
                *counts.entry(id).or_default() += 1;
            }
            doc_lens.push(counts.values().sum());
            let mut counts: Vec<(u32, u32)> = counts.into_iter().collect();
            counts.sort_unstable();
            doc_terms.push(counts);
        }

        // Document frequencies, then precomputed weights.
        let n_docs = specs.len() as f32;
        let avg_len =
            if specs.is_empty() { 1.0 } else { doc_lens.iter().sum::<u32>() as f32 / n_docs }.max(1.0);
        let mut postings: Vec<Vec<(u32, u32)>> = vec![Vec::new(); terms.len()];
        for (doc, counts) in doc_terms.iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            for &(term, tf) in counts {
                if let Some(list) = postings.get_mut(term as usize) {
                    list.push((doc, tf));
                }
            }
        }
        let postings = postings
            .into_iter()
            .map(|list| {
                let df = list.len() as f32;
                let idf = ((n_docs - df + 0.5) / (df + 0.5) + 1.0).ln();
                list.into_iter()
                    .map(|(doc, tf)| {
                        let tf = tf as f32;
                        let len = doc_lens.get(doc as usize).copied().unwrap_or(0) as f32;
                        let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len / avg_len);
                        (doc, idf * tf * (BM25_K1 + 1.0) / (tf + norm))
                    })
                    .collect()
            })
            .collect();

        Self { names: specs.iter().map(|s| s.name.clone()).collect(), terms, postings }
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The best `limit` tools for `query`, best first, as (name, score). Tools that share no
    /// term with the query are never returned; equal scores are ordered by name.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(String, f32)> {
        if limit == 0 || self.names.is_empty() {
            return Vec::new();
        }
        let mut tokens = Vec::new();
        tokenize_identifier(query, &mut tokens);
        let mut term_ids: Vec<u32> =
            tokens.iter().filter_map(|t| self.terms.get(t.as_str()).copied()).collect();
        term_ids.sort_unstable();
        term_ids.dedup();
        if term_ids.is_empty() {
            return Vec::new();
        }

        let mut scores: Vec<f32> = vec![0.0; self.names.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in term_ids {
            for &(doc, weight) in self.postings.get(term as usize).map(Vec::as_slice).unwrap_or_default() {
                let Some(score) = scores.get_mut(doc as usize) else { continue };
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += weight;
            }
        }

        let score_of = |doc: u32| scores.get(doc as usize).copied().unwrap_or(0.0);
        // Higher score first, then lower id (= name order).
        let order = |a: &u32, b: &u32| score_of(*b).total_cmp(&score_of(*a)).then(a.cmp(b));
        if touched.len() > limit {
            touched.select_nth_unstable_by(limit - 1, order);
            touched.truncate(limit);
        }
        touched.sort_unstable_by(order);
        touched
            .into_iter()
            .filter_map(|doc| self.names.get(doc as usize).map(|name| (name.clone(), score_of(doc))))
            .collect()
    }
}

/// Calls `f` with every parameter name under `properties`, recursing into nested objects and
/// array items.
fn parameter_names(schema: &Value, depth: usize, f: &mut impl FnMut(&str)) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            f(name);
            parameter_names(sub, depth + 1, f);
        }
    }
    if let Some(items) = schema.get("items") {
        parameter_names(items, depth + 1, f);
    }
}

/// Tokens of an identifier-like string: words split on non-alphanumerics and camelCase, plus the
/// whole lowercased compound (`getSum` → `get`, `sum`, `getsum`).
fn tokenize_identifier(text: &str, out: &mut Vec<String>) {
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let start = out.len();
        split_camel(word, out);
        if out.len() - start > 1 {
            push_token(word.to_lowercase(), out);
        }
    }
}

/// Tokens of prose: the same rules as identifiers (descriptions mention `camelCase` names too).
fn tokenize(text: &str, out: &mut Vec<String>) {
    tokenize_identifier(text, out);
}

/// Splits `getHTTPResponse2` into `get`, `http`, `response2`.
fn split_camel(word: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = word.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (prev, cur) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
        if boundary {
            push_token(chars[start..i].iter().collect::<String>().to_lowercase(), out);
            start = i;
        }
    }
    push_token(chars[start..].iter().collect::<String>().to_lowercase(), out);
}

/// Adds a lowercased token unless it is a stop word, folding plurals.
fn push_token(token: String, out: &mut Vec<String>) {
    if token.is_empty() || STOP_WORDS.contains(&token.as_str()) {
        return;
    }
    out.push(fold_plural(token));
}

/// `files` → `file`, `entries` → `entry`; leaves `class`, `status`, `bus` and short words alone.
fn fold_plural(mut token: String) -> String {
    let n = token.len();
    if n > 4 && token.ends_with("ies") {
        token.truncate(n - 3);
        token.push('y');
    } else if n > 3 && token.ends_with('s') && !token.ends_with("ss") && !token.ends_with("us") {
        token.truncate(n - 1);
    }
    token
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    fn spec(name: &str, description: &str, props: &[&str]) -> ToolSpec {
        let properties: serde_json::Map<String, Value> =
            props.iter().map(|p| ((*p).to_owned(), json!({"type": "string"}))).collect();
        ToolSpec::new(name, description, json!({"type": "object", "properties": properties}))
    }

    fn catalog() -> Vec<ToolSpec> {
        vec![
            spec("fs__read_text_file", "Read the complete contents of a file as text.", &["path", "head"]),
            spec("fs__write_file", "Create a new file or overwrite an existing file.", &["path", "content"]),
            spec("fs__list_directory", "List all files and directories in a path.", &["path"]),
            spec(
                "github__createIssue",
                "Open a new issue in a GitHub repository.",
                &["owner", "repo", "title"],
            ),
            spec("github__searchCode", "Search code across repositories.", &["query"]),
            spec("everything__get-sum", "Returns the sum of two numbers", &["a", "b"]),
            spec("everything__echo", "Echoes back the input string", &["message"]),
        ]
    }

    fn names(hits: &[(String, f32)]) -> Vec<&str> {
        hits.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn tokenizes_names_and_camel_case() {
        let mut out = Vec::new();
        tokenize_identifier("github__createIssue", &mut out);
        assert_eq!(out, ["github", "create", "issue", "createissue"]);
        out.clear();
        tokenize_identifier("get-HTTPResponse files", &mut out);
        assert_eq!(out, ["get", "http", "response", "httpresponse", "file"]);
        out.clear();
        tokenize_identifier("The status of the class", &mut out);
        assert_eq!(out, ["status", "class"]);
    }

    #[test]
    fn ranks_by_relevance() {
        let index = ToolSearchIndex::new(&catalog());
        assert_eq!(index.len(), 7);
        let hits = index.search("read a text file", 3);
        assert_eq!(hits[0].0, "fs__read_text_file");
        let hits = index.search("create issue", 2);
        assert_eq!(hits[0].0, "github__createIssue", "camelCase name matches");
        let hits = index.search("createIssue", 1);
        assert_eq!(names(&hits), ["github__createIssue"]);
        let hits = index.search("sum of numbers", 5);
        assert_eq!(hits[0].0, "everything__get-sum");
        let hits = index.search("owner repo", 5);
        assert_eq!(names(&hits), ["github__createIssue"], "parameter names are indexed");
        let hits = index.search("files", 10);
        assert!(names(&hits).contains(&"fs__list_directory"), "plurals fold: {hits:?}");
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "sorted by score");
    }

    #[test]
    fn edge_cases_return_nothing() {
        let index = ToolSearchIndex::new(&catalog());
        assert!(index.search("", 5).is_empty());
        assert!(index.search("   --__  ", 5).is_empty());
        assert!(index.search("the of a", 5).is_empty(), "stop words only");
        assert!(index.search("zebra quantum", 5).is_empty(), "unknown words");
        assert!(index.search("file", 0).is_empty(), "limit 0");
        let empty = ToolSearchIndex::new(&[]);
        assert!(empty.is_empty());
        assert!(empty.search("file", 5).is_empty());
    }

    #[test]
    fn ties_break_by_name_and_limit_applies() {
        let tools = vec![
            spec("tool_zulu", "shared word", &[]),
            spec("tool_alpha", "shared word", &[]),
            spec("tool_bravo", "shared word", &[]),
        ];
        let index = ToolSearchIndex::new(&tools);
        let hits = index.search("shared", 10);
        assert_eq!(names(&hits), ["tool_alpha", "tool_bravo", "tool_zulu"]);
        assert!(hits[0].1 == hits[1].1 && hits[1].1 == hits[2].1);
        assert_eq!(names(&index.search("shared", 2)), ["tool_alpha", "tool_bravo"]);
        assert_eq!(
            names(&index.search("word shared word", 1)),
            ["tool_alpha"],
            "query terms are deduplicated"
        );
    }

    #[test]
    fn nested_parameter_names_are_indexed() {
        let tool = ToolSpec::new(
            "x__y",
            "",
            json!({"type": "object", "properties": {"edits": {"type": "array",
                "items": {"type": "object", "properties": {"oldText": {"type": "string"}}}}}}),
        );
        let index = ToolSearchIndex::new(&[tool]);
        assert_eq!(names(&index.search("old text", 1)), ["x__y"]);
    }

    #[test]
    fn searches_a_thousand_tools() {
        let words = [
            "file", "read", "write", "issue", "repo", "search", "fetch", "url", "image", "query", "database",
            "table", "row", "user", "email", "calendar", "event", "message", "channel", "deploy",
        ];
        let tools: Vec<ToolSpec> = (0..1_000)
            .map(|i| {
                let w = |k: usize| words[(i * 7 + k * 13) % words.len()];
                spec(
                    &format!("srv{}__{}_{}_{i}", i % 10, w(0), w(1)),
                    &format!("Does {} with the {} and {} of a {}.", w(2), w(3), w(4), w(5)),
                    &[w(6), w(7)],
                )
            })
            .collect();
        let index = ToolSearchIndex::new(&tools);
        assert_eq!(index.len(), 1_000);
        let queries =
            ["read file", "search issue in repo", "send email to user", "deploy table rows", "nothing"];
        // Speed is measured by `cargo bench -p tackle-mcp --bench tool_search`, not here.
        for q in queries {
            let hits = index.search(q, 10);
            assert!(hits.len() <= 10);
            assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "ranked by score");
        }
        assert!(!index.search("read file", 10).is_empty());
    }
}
