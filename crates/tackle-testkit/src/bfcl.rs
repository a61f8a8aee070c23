//! Real tool-calling data: the Berkeley Function Calling Leaderboard v4 single-turn catalogue
//! (pip `bfcl-eval`, pinned in `scripts/test-deps.sh`, Apache-2.0), read from the installed
//! wheel by `bench/tool-search/bfcl.py`: 1,233 pooled functions (BFCL types mapped to JSON Schema
//! as BFCL's own handlers do) and 2,135 user requests, each with the tools its ground truth
//! calls. Nothing of it is stored in this repository.
//!
//! ```no_run
//! use tackle_testkit::{bfcl, peers};
//! let Some(data) = peers::or_skip(bfcl::load()) else { return };
//! assert_eq!(data.tools.len(), 1_233);
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::Value;

use crate::peers::{self, MissingPeer};

/// Pinned version of the wheel the data comes from.
pub const BFCL_VERSION: &str = "2026.3.23";

/// One function of the pooled catalogue, as the test MCP server offers it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BfclTool {
    /// BFCL's name (dots included).
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its parameters as JSON Schema.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// One user request and the tools its ground truth calls.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BfclQuery {
    /// BFCL's id (`live_multiple_12-4-0`).
    pub id: String,
    /// Its category (`live_multiple`, ...).
    pub category: String,
    /// The user turns.
    pub query: String,
    /// Distinct names of the functions the ground truth calls, in order.
    pub relevant: Vec<String>,
}

/// The pooled catalogue and its requests.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Bfcl {
    /// 1,233 functions.
    pub tools: Vec<BfclTool>,
    /// 2,135 requests.
    pub queries: Vec<BfclQuery>,
}

/// `bench/tool-search/bfcl.py`: exports the data, or serves it as a stdio MCP server.
pub fn script() -> PathBuf {
    peers::repo_root().join("bench/tool-search/bfcl.py")
}

/// The data, through the test virtualenv (`scripts/test-deps.sh` installs the wheel).
pub fn load() -> Result<Bfcl, MissingPeer> {
    let python = peers::venv_python("bfcl_eval")?;
    load_with(&python).map_err(|e| MissingPeer::new(format!("bfcl-eval {BFCL_VERSION} data"), e))
}

/// The data, exported by `python` (an interpreter that can import `bfcl_eval`).
fn load_with(python: &Path) -> Result<Bfcl, String> {
    let out = Command::new(python)
        .arg(script())
        .args(["export", "-"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!("bfcl.py export failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("bfcl.py export printed bad JSON: {e}"))
}

/// A fixed sample of the queries: every `step`-th by id order, the same on every machine.
pub fn sample(queries: &[BfclQuery], step: usize) -> Vec<&BfclQuery> {
    let mut sorted: Vec<&BfclQuery> = queries.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    sorted.into_iter().step_by(step.max(1)).collect()
}

/// Ranking quality over queries: R-capped recall at 1 and 5 and the mean reciprocal rank.
///
/// For a query with relevant tools `R` and a ranking `r`, recall@k is `|R ∩ r[..k]| /
/// min(|R|, k)` (so recall@1 is "the first hit is relevant", and a request that needs three
/// tools scores 1 at 5 only when all three are in the first five); MRR uses the first relevant
/// hit in the first ten.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recall {
    /// Mean recall@1.
    pub at1: f64,
    /// Mean recall@5.
    pub at5: f64,
    /// Mean reciprocal rank (first 10).
    pub mrr: f64,
    /// Queries measured.
    pub queries: usize,
}

impl Recall {
    /// Scores `ranked` (one ranking per query, best first) against the queries' relevant tools.
    pub fn measure<'a>(pairs: impl IntoIterator<Item = (&'a [String], Vec<String>)>) -> Self {
        let (mut at1, mut at5, mut mrr, mut n) = (0.0, 0.0, 0.0, 0usize);
        for (relevant, ranked) in pairs {
            n += 1;
            if relevant.is_empty() {
                continue;
            }
            let hits = |k: usize| ranked.iter().take(k).filter(|r| relevant.contains(r)).count() as f64;
            at1 += hits(1) / relevant.len().min(1) as f64;
            at5 += hits(5) / relevant.len().min(5) as f64;
            if let Some(rank) = ranked.iter().take(10).position(|r| relevant.contains(r)) {
                mrr += 1.0 / (rank + 1) as f64;
            }
        }
        let n_f = n.max(1) as f64;
        Self { at1: at1 / n_f, at5: at5 / n_f, mrr: mrr / n_f, queries: n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn recall_is_capped_by_the_relevant_set() {
        let one = s(&["a"]);
        let three = s(&["a", "b", "c"]);
        let r = Recall::measure([
            (one.as_slice(), s(&["a", "x"])),
            (one.as_slice(), s(&["x", "y", "a"])),
            (three.as_slice(), s(&["b", "x", "a", "y", "z", "c"])),
        ]);
        assert_eq!(r.queries, 3);
        assert!((r.at1 - (1.0 + 0.0 + 1.0) / 3.0).abs() < 1e-9, "{r:?}");
        assert!((r.at5 - (1.0 + 1.0 + 2.0 / 3.0) / 3.0).abs() < 1e-9, "{r:?}");
        assert!((r.mrr - (1.0 + 1.0 / 3.0 + 1.0) / 3.0).abs() < 1e-9, "{r:?}");
        assert_eq!(Recall::measure([]).at5, 0.0);
    }

    #[test]
    fn the_sample_is_fixed_by_id() {
        let q = |id: &str| BfclQuery {
            id: id.into(),
            category: "c".into(),
            query: String::new(),
            relevant: Vec::new(),
        };
        let queries = [q("c"), q("a"), q("d"), q("b"), q("e")];
        let ids: Vec<&str> = sample(&queries, 2).iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["a", "c", "e"]);
    }
}
