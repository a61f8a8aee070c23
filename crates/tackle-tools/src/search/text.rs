//! Turning tool definitions and queries into terms: identifier splitting (`snake_case`,
//! `camelCase`, dots, slashes), lowercasing, stop words, and either Snowball English stemming
//! ([`Ranker::Bm25f`](super::Ranker::Bm25f)) or plain plural folding
//! ([`Ranker::Bm25`](super::Ranker::Bm25)). Pure: no IO.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// The few stop words of the plain lexical ranker (sorted: looked up by binary search) (kept as it always was, so its figures stay
/// comparable).
const SHORT_STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into", "is", "it", "its",
    "of", "on", "or", "that", "the", "this", "to", "with",
];

/// English function words: they say nothing about what a tool does, and requests written to
/// an assistant are full of them ("can you please tell me what ..."). A general list (the
/// classic English stop list plus `please`), not one made from any evaluation data. Sorted:
/// looked up by binary search.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// How words become terms.
pub(crate) struct Analyzer {
    /// Snowball English stemming and the long stop list; `None`: plural folding and the short
    /// list.
    stemmer: Option<Stemmer>,
    /// Stems already computed (a catalogue repeats the same few thousand words).
    memo: HashMap<String, String>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer").field("stemming", &self.stemmer.is_some()).finish()
    }
}

impl Analyzer {
    /// Stemming analyzer (BM25F ranker).
    pub(crate) fn stemming() -> Self {
        Self { stemmer: Some(Stemmer::create(Algorithm::English)), memo: HashMap::new() }
    }

    /// Plural-folding analyzer (plain BM25 ranker).
    pub(crate) fn plain() -> Self {
        Self { stemmer: None, memo: HashMap::new() }
    }

    /// Terms of `text`: words split on non-alphanumerics and camelCase, plus the whole
    /// lowercased compound (`getSum` → `get`, `sum`, `getsum`), stop words dropped.
    pub(crate) fn terms(&mut self, text: &str, out: &mut Vec<String>) {
        let mut parts = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            parts.clear();
            split_camel(word, &mut parts);
            let compound = (parts.len() > 1).then(|| word.to_lowercase());
            for part in parts.drain(..).chain(compound) {
                self.push(part, out);
            }
        }
    }

    /// Words of `text` as a word-vector table spells them: split like [`terms`](Self::terms)
    /// (without the compound), lowercased, English stop words dropped, not stemmed.
    pub(crate) fn words(text: &str, out: &mut Vec<String>) {
        let mut parts = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            parts.clear();
            split_camel(word, &mut parts);
            out.extend(
                parts.drain(..).filter(|p| !p.is_empty() && STOP_WORDS.binary_search(&p.as_str()).is_err()),
            );
        }
    }

    fn push(&mut self, token: String, out: &mut Vec<String>) {
        match &self.stemmer {
            None => {
                if !token.is_empty() && SHORT_STOP_WORDS.binary_search(&token.as_str()).is_err() {
                    out.push(fold_plural(token));
                }
            }
            Some(stemmer) => {
                if token.is_empty() || STOP_WORDS.binary_search(&token.as_str()).is_ok() {
                    return;
                }
                if let Some(stem) = self.memo.get(&token) {
                    out.push(stem.clone());
                    return;
                }
                let stem = stemmer.stem(&token).into_owned();
                self.memo.insert(token, stem.clone());
                out.push(stem);
            }
        }
    }
}

/// Splits `getHTTPResponse2` into `get`, `http`, `response2` (lowercased).
fn split_camel(word: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = word.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (prev, cur) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
        if boundary {
            out.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    out.push(chars[start..].iter().collect::<String>().to_lowercase());
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
    use super::*;

    fn terms(analyzer: &mut Analyzer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        analyzer.terms(text, &mut out);
        out
    }

    #[test]
    fn plain_terms_split_identifiers_and_fold_plurals() {
        let mut a = Analyzer::plain();
        assert_eq!(terms(&mut a, "github__createIssue"), ["github", "create", "issue", "createissue"]);
        assert_eq!(
            terms(&mut a, "get-HTTPResponse files"),
            ["get", "http", "response", "httpresponse", "file"]
        );
        assert_eq!(terms(&mut a, "The status of the class"), ["status", "class"]);
    }

    #[test]
    fn stemmed_terms_conflate_word_forms() {
        let mut a = Analyzer::stemming();
        assert_eq!(terms(&mut a, "Calculates the distances"), terms(&mut a, "calculating distance"));
        assert_eq!(terms(&mut a, "Movies_3_FindMovies"), ["movi", "3", "find", "movi", "findmovi"]);
        assert_eq!(terms(&mut a, "math.gcd"), ["math", "gcd"]);
        assert_eq!(terms(&mut a, "Can you please tell me what it is?"), ["tell"]);
        assert_eq!(terms(&mut a, "order 123 for 2 people"), ["order", "123", "2", "peopl"]);
        assert!(terms(&mut a, "").is_empty());
    }

    #[test]
    fn stop_lists_are_sorted_for_binary_search() {
        for list in [SHORT_STOP_WORDS, STOP_WORDS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
    }

    #[test]
    fn words_are_split_but_not_stemmed() {
        let mut out = Vec::new();
        Analyzer::words("Movies_3_FindMovies: can you find the cartoons?", &mut out);
        assert_eq!(out, ["movies", "3", "find", "movies", "find", "cartoons"]);
    }
}
