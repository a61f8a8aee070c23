//! [`ToolSearchIndex`]: ranking tools for a free-text query.
//!
//! Two rankers, chosen with [`Ranker`] (`[deferral] ranker` in `tackle.toml`):
//!
//! - [`Ranker::Bm25f`] (the default): field-weighted BM25 (BM25F) over five fields of a
//!   definition: its name (split on `_`, `-`, `.`, `/` and camelCase), its description, its
//!   parameter names, their descriptions and their enum values, nested ones included. Each field
//!   has its own weight and length normalisation ([`FieldWeights`]); words are lowercased,
//!   English stop words dropped, and stemmed with Snowball English (Porter 2),
//!   so `calculating distances` finds `calculate_distance`.
//! - [`Ranker::Hybrid`]: BM25F's matches re-ranked by a 50/50 mix of their BM25F score
//!   (divided by the best one) and the cosine between the query's and the tool's static word
//!   embeddings (min-max scaled over the catalogue): GloVe 6B 50-d vectors of 20,000 English
//!   words shipped inside the binary (1.2 MB), so `cartoon film` finds `FindMovies`.
//! - [`Ranker::Bm25`]: plain BM25 over one bag of words (name tokens counted twice, the
//!   description, parameter names) with plural folding; Tackle's first ranker, kept selectable.
//!
//! Weights are computed once per (term, tool) when the index is built, so a query only looks up
//! its own terms and adds precomputed weights: 1,233 real tools are searched in microseconds
//! (`bench/tool-search`). Equal scores are ordered by tool name. Pure: no IO.

mod text;
mod vectors;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::ToolSpec;

use self::text::Analyzer;

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// BM25 length normalization (plain ranker).
pub const BM25_B: f32 = 0.75;

/// How many times name tokens count compared with description tokens (plain ranker).
const NAME_BOOST: u32 = 2;
/// Deepest nesting of `properties` whose parameters are indexed.
const MAX_SCHEMA_DEPTH: usize = 4;
/// Most enum values of one parameter that are indexed (long enums are lists of ids).
const MAX_ENUM_VALUES: usize = 64;
/// Share of the lexical score in [`Ranker::Hybrid`] (the rest is the embedding cosine); chosen
/// on the tuning half of the BFCL requests.
pub const HYBRID_LEXICAL_SHARE: f32 = 0.5;

/// How [`ToolSearchIndex`] ranks tools.
///
/// ```
/// use tackle_tools::Ranker;
/// assert_eq!(Ranker::default(), Ranker::Bm25f);
/// assert_eq!("bm25".parse::<Ranker>().unwrap(), Ranker::Bm25);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ranker {
    /// Field-weighted BM25 with stemming ([`FieldWeights::default`]).
    #[default]
    Bm25f,
    /// Plain BM25 over one bag of words, with plural folding.
    Bm25,
    /// BM25F's matches re-ranked with static word embeddings shipped in the binary.
    Hybrid,
}

impl Ranker {
    /// Its name in `tackle.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ranker::Bm25f => "bm25f",
            Ranker::Bm25 => "bm25",
            Ranker::Hybrid => "hybrid",
        }
    }
}

impl std::fmt::Display for Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `[deferral] ranker` that names none of the rankers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ranker {0:?}: use \"bm25f\" (default), \"hybrid\" or \"bm25\"")]
pub struct UnknownRanker(pub String);

impl std::str::FromStr for Ranker {
    type Err = UnknownRanker;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bm25f" => Ok(Ranker::Bm25f),
            "bm25" => Ok(Ranker::Bm25),
            "hybrid" => Ok(Ranker::Hybrid),
            other => Err(UnknownRanker(other.to_owned())),
        }
    }
}

/// Weights of the BM25F ranker: how much a term counts in each field of a definition, and the
/// length normalisation `b` (0: none, 1: full) and saturation `k1` shared by all fields.
///
/// The defaults were chosen on one half of the BFCL queries (a fixed split by id) and are
/// reported on the other half in BENCHMARKS.md (`bench/tool-search --tune` reruns the search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    /// The tool's name.
    pub name: f32,
    /// Its description.
    pub description: f32,
    /// Parameter names.
    pub parameter_names: f32,
    /// Parameter descriptions.
    pub parameter_descriptions: f32,
    /// Enum values of parameters.
    pub enum_values: f32,
    /// Length normalisation, per field.
    pub b: f32,
    /// Term-frequency saturation.
    pub k1: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        Self {
            name: 2.0,
            description: 1.0,
            parameter_names: 1.0,
            parameter_descriptions: 0.5,
            enum_values: 0.5,
            b: 0.5,
            k1: BM25_K1,
        }
    }
}

impl FieldWeights {
    fn of(&self, field: Field) -> f32 {
        match field {
            Field::Name => self.name,
            Field::Description => self.description,
            Field::ParameterNames => self.parameter_names,
            Field::ParameterDescriptions => self.parameter_descriptions,
            Field::EnumValues => self.enum_values,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Description,
    ParameterNames,
    ParameterDescriptions,
    EnumValues,
}

/// One field of one tool: (term, count) by term id, and the field's length in terms.
type FieldTerms = (Vec<(u32, u32)>, u32);

const FIELDS: [Field; 5] =
    [Field::Name, Field::Description, Field::ParameterNames, Field::ParameterDescriptions, Field::EnumValues];

/// An index over tool definitions.
///
/// ```
/// use serde_json::json;
/// use tackle_tools::{Ranker, ToolSearchIndex};
/// use tackle_protocol::ToolSpec;
/// let tools = [
///     ToolSpec::new("fs__read_text_file", "Read a file as text.", json!({"type": "object"})),
///     ToolSpec::new("web__fetch", "Fetch a URL.", json!({"type": "object"})),
/// ];
/// let index = ToolSearchIndex::new(&tools);
/// let hits = index.search("reading files", 5);
/// assert_eq!(hits[0].0, "fs__read_text_file");
/// // The plain ranker is still there.
/// let plain = ToolSearchIndex::with_ranker(&tools, Ranker::Bm25);
/// assert_eq!(plain.search("read file", 5)[0].0, "fs__read_text_file");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSearchIndex {
    ranker: Ranker,
    /// Tool names, sorted: a document id is an index here, so id order is name order.
    names: Vec<String>,
    /// Term → id into `postings`.
    terms: HashMap<String, u32>,
    /// Per term: (document, precomputed weight), by document id.
    postings: Vec<Vec<(u32, f32)>>,
    /// [`Ranker::Hybrid`]: each document's normalised embedding (zero if none of its words is
    /// known), `vectors::DIMS` floats per document; empty otherwise.
    vectors: Vec<f32>,
}

impl ToolSearchIndex {
    /// Builds the index with the default ranker; tools with the same name are indexed once
    /// (the first one).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        Self::with_ranker(tools, Ranker::default())
    }

    /// Builds the index with `ranker`.
    pub fn with_ranker<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>, ranker: Ranker) -> Self {
        match ranker {
            Ranker::Bm25f => Self::with_weights(tools, FieldWeights::default()),
            Ranker::Bm25 => Self::plain(tools),
            Ranker::Hybrid => {
                let specs = unique_by_name(tools);
                let mut index = Self::with_weights(specs.iter().copied(), FieldWeights::default());
                if let Some(table) = vectors::shipped() {
                    index.ranker = Ranker::Hybrid;
                    index.vectors = document_vectors(table, &specs);
                }
                index
            }
        }
    }

    /// Builds a BM25F index with these field weights.
    pub fn with_weights<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>, weights: FieldWeights) -> Self {
        let specs = unique_by_name(tools);
        let mut analyzer = Analyzer::stemming();
        let mut terms: HashMap<String, u32> = HashMap::new();
        // Per document, per field: (term, count), and the field's length.
        let mut docs: Vec<[FieldTerms; 5]> = Vec::with_capacity(specs.len());
        let mut scratch = Vec::new();
        for spec in &specs {
            let fields = FIELDS.map(|field| {
                scratch.clear();
                match field {
                    Field::Name => analyzer.terms(&spec.name, &mut scratch),
                    Field::Description => analyzer.terms(&spec.description, &mut scratch),
                    Field::ParameterNames => {
                        parameters(&spec.input_schema, 0, &mut |name, _| analyzer.terms(name, &mut scratch))
                    }
                    Field::ParameterDescriptions => parameters(&spec.input_schema, 0, &mut |_, schema| {
                        if let Some(d) = schema.get("description").and_then(Value::as_str) {
                            analyzer.terms(d, &mut scratch);
                        }
                    }),
                    Field::EnumValues => parameters(&spec.input_schema, 0, &mut |_, schema| {
                        let values = schema.get("enum").and_then(Value::as_array).map(Vec::as_slice);
                        for v in values.unwrap_or_default().iter().take(MAX_ENUM_VALUES) {
                            if let Some(s) = v.as_str() {
                                analyzer.terms(s, &mut scratch);
                            }
                        }
                    }),
                }
                let len = u32::try_from(scratch.len()).unwrap_or(u32::MAX);
                (count_terms(&mut terms, scratch.drain(..)), len)
            });
            docs.push(fields);
        }

        let n_docs = specs.len().max(1) as f32;
        let avg: [f32; 5] = std::array::from_fn(|f| {
            (docs.iter().map(|d| d[f].1 as f64).sum::<f64>() / n_docs as f64).max(1.0) as f32
        });
        // Per document: term → pseudo-frequency, the weighted, length-normalised sum over fields.
        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms.len()];
        let mut merged: HashMap<u32, f32> = HashMap::new();
        for (doc, fields) in docs.iter().enumerate() {
            merged.clear();
            for (f, (counts, len)) in fields.iter().enumerate() {
                let weight = weights.of(FIELDS[f]);
                if weight == 0.0 {
                    continue;
                }
                let norm = 1.0 - weights.b + weights.b * *len as f32 / avg[f];
                for &(term, tf) in counts {
                    *merged.entry(term).or_default() += weight * tf as f32 / norm;
                }
            }
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            for (&term, &tf) in &merged {
                if let Some(list) = postings.get_mut(term as usize) {
                    list.push((doc, tf));
                }
            }
        }
        let k1 = weights.k1;
        for list in &mut postings {
            list.sort_unstable_by_key(|&(doc, _)| doc);
            let idf = idf(n_docs, list.len() as f32);
            for (_, w) in list.iter_mut() {
                *w = idf * *w * (k1 + 1.0) / (*w + k1);
            }
        }
        Self {
            ranker: Ranker::Bm25f,
            names: specs.iter().map(|s| s.name.clone()).collect(),
            terms,
            postings,
            vectors: Vec::new(),
        }
    }

    /// The plain BM25 index: one bag of words per tool.
    fn plain<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let specs = unique_by_name(tools);
        let mut analyzer = Analyzer::plain();
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut doc_terms: Vec<Vec<(u32, u32)>> = Vec::with_capacity(specs.len());
        let mut doc_lens: Vec<u32> = Vec::with_capacity(specs.len());
        let mut scratch: Vec<String> = Vec::new();
        for spec in &specs {
            scratch.clear();
            let mut name_tokens = Vec::new();
            analyzer.terms(&spec.name, &mut name_tokens);
            for _ in 0..NAME_BOOST {
                scratch.extend(name_tokens.iter().cloned());
            }
            analyzer.terms(&spec.description, &mut scratch);
            parameters(&spec.input_schema, 0, &mut |name, _| analyzer.terms(name, &mut scratch));
            doc_lens.push(u32::try_from(scratch.len()).unwrap_or(u32::MAX));
            doc_terms.push(count_terms(&mut terms, scratch.drain(..)));
        }

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
                let idf = idf(n_docs, list.len() as f32);
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
        Self {
            ranker: Ranker::Bm25,
            names: specs.iter().map(|s| s.name.clone()).collect(),
            terms,
            postings,
            vectors: Vec::new(),
        }
    }

    /// The ranker this index was built with.
    pub fn ranker(&self) -> Ranker {
        self.ranker
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Heap bytes the index holds (names, the term table, postings), from their capacities.
    pub fn heap_bytes(&self) -> usize {
        let strings = |s: &String| s.capacity() + std::mem::size_of::<String>();
        let names: usize = self.names.iter().map(strings).sum();
        // A hashbrown table: the keys and values plus one control byte per bucket.
        let terms: usize = self.terms.keys().map(strings).sum::<usize>()
            + self.terms.capacity() * (std::mem::size_of::<u32>() + 1);
        let postings: usize = self
            .postings
            .iter()
            .map(|p| {
                p.capacity() * std::mem::size_of::<(u32, f32)>() + std::mem::size_of::<Vec<(u32, f32)>>()
            })
            .sum();
        let vectors = self.vectors.capacity() * std::mem::size_of::<f32>();
        names + terms + postings + vectors
    }

    /// Heap bytes shared by every [`Ranker::Hybrid`] index of the process: the word table's
    /// lookup (its vectors stay in the binary's read-only data). Zero for the other rankers.
    pub fn shared_heap_bytes(&self) -> usize {
        match (self.ranker, vectors::shipped()) {
            (Ranker::Hybrid, Some(table)) => table.heap_bytes(),
            _ => 0,
        }
    }

    /// The best `limit` tools for `query`, best first, as (name, score). Tools that share no
    /// term with the query are never returned; equal scores are ordered by name.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(String, f32)> {
        if limit == 0 || self.names.is_empty() {
            return Vec::new();
        }
        let mut analyzer = match self.ranker {
            Ranker::Bm25f | Ranker::Hybrid => Analyzer::stemming(),
            Ranker::Bm25 => Analyzer::plain(),
        };
        let mut tokens = Vec::new();
        analyzer.terms(query, &mut tokens);
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

        if self.ranker == Ranker::Hybrid {
            self.mix_in_embeddings(query, &touched, &mut scores);
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

impl ToolSearchIndex {
    /// Replaces the lexical scores of the matched `docs` with the hybrid mix: the lexical score
    /// divided by the best one, and the embedding cosine min-max scaled over all documents.
    /// Leaves them lexical if the query has no known word.
    fn mix_in_embeddings(&self, query: &str, docs: &[u32], scores: &mut [f32]) {
        let Some(table) = vectors::shipped() else { return };
        let mut words = Vec::new();
        Analyzer::words(query, &mut words);
        let Some(q) = table.embed(words.iter().map(String::as_str)) else { return };
        let cosines: Vec<f32> = self
            .vectors
            .chunks_exact(vectors::DIMS)
            .map(|d| d.iter().zip(&q).map(|(a, b)| a * b).sum())
            .collect();
        let (lo, hi) = cosines.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &c| (lo.min(c), hi.max(c)));
        let span = (hi - lo).max(1e-9);
        let best = docs.iter().filter_map(|&d| scores.get(d as usize)).fold(0.0f32, |m, &s| m.max(s));
        if best <= 0.0 {
            return;
        }
        for &doc in docs {
            let cosine = cosines.get(doc as usize).copied().unwrap_or(lo);
            if let Some(score) = scores.get_mut(doc as usize) {
                *score = HYBRID_LEXICAL_SHARE * *score / best
                    + (1.0 - HYBRID_LEXICAL_SHARE) * (cosine - lo) / span;
            }
        }
    }
}

/// Each spec's embedding (its name, description and parameter names), flattened.
fn document_vectors(table: &vectors::WordVectors, specs: &[&ToolSpec]) -> Vec<f32> {
    let mut out = Vec::with_capacity(specs.len() * vectors::DIMS);
    let mut words = Vec::new();
    for spec in specs {
        words.clear();
        Analyzer::words(&spec.name, &mut words);
        Analyzer::words(&spec.description, &mut words);
        parameters(&spec.input_schema, 0, &mut |name, _| Analyzer::words(name, &mut words));
        let v = table.embed(words.iter().map(String::as_str)).unwrap_or([0.0; vectors::DIMS]);
        out.extend_from_slice(&v);
    }
    out
}

/// The specs sorted by name, the first of each name kept.
fn unique_by_name<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Vec<&'a ToolSpec> {
    let mut specs: Vec<&ToolSpec> = tools.into_iter().collect();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs.dedup_by(|b, a| a.name == b.name);
    specs
}

/// Interns `tokens` into `terms` and counts them, sorted by term id.
fn count_terms(terms: &mut HashMap<String, u32>, tokens: impl Iterator<Item = String>) -> Vec<(u32, u32)> {
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for token in tokens {
        let next = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        let id = *terms.entry(token).or_insert(next);
        *counts.entry(id).or_default() += 1;
    }
    let mut counts: Vec<(u32, u32)> = counts.into_iter().collect();
    counts.sort_unstable();
    counts
}

/// BM25's inverse document frequency (never negative).
fn idf(n_docs: f32, df: f32) -> f32 {
    ((n_docs - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// Calls `f` with every parameter (name and schema) under `properties`, recursing into nested
/// objects and array items.
fn parameters(schema: &Value, depth: usize, f: &mut impl FnMut(&str, &Value)) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            f(name, sub);
            parameters(sub, depth + 1, f);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters(items, depth + 1, f);
    }
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

    const RANKERS: [Ranker; 3] = [Ranker::Bm25f, Ranker::Hybrid, Ranker::Bm25];

    #[test]
    fn ranks_by_relevance() {
        for ranker in RANKERS {
            ranks_by_relevance_with(ranker);
        }
    }

    fn ranks_by_relevance_with(ranker: Ranker) {
        let index = ToolSearchIndex::with_ranker(&catalog(), ranker);
        assert_eq!(index.ranker(), ranker);
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
        for ranker in RANKERS {
            edge_cases_return_nothing_with(ranker);
        }
    }

    fn edge_cases_return_nothing_with(ranker: Ranker) {
        let index = ToolSearchIndex::with_ranker(&catalog(), ranker);
        assert!(index.search("", 5).is_empty());
        assert!(index.search("   --__  ", 5).is_empty());
        assert!(index.search("the of a", 5).is_empty(), "stop words only");
        assert!(index.search("zebra quantum", 5).is_empty(), "unknown words");
        assert!(index.search("file", 0).is_empty(), "limit 0");
        let empty = ToolSearchIndex::with_ranker(&[], ranker);
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
    fn bm25f_stems_and_weighs_fields() {
        let tools = vec![
            ToolSpec::new(
                "geo__calculate_distance",
                "Distance between two places.",
                json!({"type": "object", "properties": {"from": {"type": "string"}}}),
            ),
            // Says "distance" more often, but only in a parameter's description.
            ToolSpec::new(
                "fleet__route",
                "Plan a delivery route.",
                json!({"type": "object", "properties": {"max": {"type": "number",
                    "description": "Longest distance in km; distance over it is refused (distance)."}}}),
            ),
            ToolSpec::new(
                "weather__get",
                "Current weather.",
                json!({"type": "object", "properties": {"unit": {"type": "string",
                    "enum": ["celsius", "fahrenheit"]}}}),
            ),
        ];
        let index = ToolSearchIndex::new(&tools);
        assert_eq!(index.search("calculating distances", 1)[0].0, "geo__calculate_distance", "stemming");
        assert_eq!(names(&index.search("distance", 2)), ["geo__calculate_distance", "fleet__route"]);
        assert_eq!(names(&index.search("in fahrenheit", 5)), ["weather__get"], "enum values are indexed");
        let plain = ToolSearchIndex::with_ranker(&tools, Ranker::Bm25);
        assert!(plain.search("calculating", 1).is_empty(), "the plain ranker does not stem");
        assert!(plain.search("fahrenheit", 1).is_empty(), "nor index enums");
        // No field counted: nothing matches.
        let none = FieldWeights {
            name: 0.0,
            description: 0.0,
            parameter_names: 0.0,
            parameter_descriptions: 0.0,
            enum_values: 0.0,
            ..FieldWeights::default()
        };
        assert!(ToolSearchIndex::with_weights(&tools, none).search("distance", 5).is_empty());
    }

    #[test]
    fn rankers_parse_and_print() {
        for ranker in RANKERS {
            assert_eq!(ranker.as_str().parse::<Ranker>().unwrap(), ranker);
            assert_eq!(serde_json::to_value(ranker).unwrap(), json!(ranker.as_str()));
        }
        assert_eq!(" BM25F ".parse::<Ranker>().unwrap(), Ranker::Bm25f);
        let e = "vector".parse::<Ranker>().unwrap_err().to_string();
        assert!(e.contains("bm25f") && e.contains("hybrid") && e.contains("bm25"), "{e}");
    }

    #[test]
    fn hybrid_ranks_by_meaning_among_lexical_matches() {
        let tools = vec![
            spec("files__find_files", "Find files by their name.", &["pattern"]),
            spec("media__find_movies", "Find movies by genre and starring actors.", &["genre"]),
            spec("billing__send_invoice", "Email an invoice to a customer.", &["customer"]),
        ];
        let query = "find me a cartoon film";
        let hybrid = ToolSearchIndex::with_ranker(&tools, Ranker::Hybrid);
        assert_eq!(hybrid.ranker(), Ranker::Hybrid);
        let hits = hybrid.search(query, 5);
        assert_eq!(names(&hits), ["media__find_movies", "files__find_files"], "{hits:?}");
        assert!(hits[0].1 > hits[1].1 && hits[0].1 <= 1.0, "{hits:?}");
        // Lexically the two only share `find`: BM25F cannot tell them apart by meaning.
        let lexical = ToolSearchIndex::new(&tools).search(query, 5);
        assert_eq!(names(&lexical)[0], "files__find_files", "{lexical:?}");
        // Only lexical matches are returned: the invoice tool shares no word.
        assert!(hybrid.search("cartoon film", 5).is_empty());
        assert!(hybrid.heap_bytes() > ToolSearchIndex::new(&tools).heap_bytes());
        assert!(hybrid.shared_heap_bytes() > 0 && ToolSearchIndex::new(&tools).shared_heap_bytes() == 0);
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
