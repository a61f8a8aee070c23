//! Doom-loop guard: notices a model repeating the same failing call and first nudges it, then
//! stops the turn with a clear error.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_protocol::{ErrorCategory, ToolError};

/// Thresholds of the [`LoopGuard`]. Counts are per turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct LoopGuardConfig {
    /// Identical failures (same tool, arguments and category) after which a reminder is added.
    pub remind_after: u32,
    /// Repeats of an identical non-retryable failure, after the first, that stop the turn.
    pub non_retryable_repeats: u32,
    /// Repeats of an identical retryable failure, after the first, that stop the turn.
    pub retryable_repeats: u32,
    /// Identical calls (same tool and arguments, any outcome) that stop the turn.
    pub identical_calls: u32,
    /// Most calls of one tool in a turn, by tool name.
    pub per_tool_cap: HashMap<String, u32>,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        Self {
            remind_after: 2,
            non_retryable_repeats: 2,
            retryable_repeats: 4,
            identical_calls: 5,
            per_tool_cap: HashMap::new(),
        }
    }
}

/// What the loop should do after a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to do.
    Continue,
    /// Append this reminder at the tail of the conversation (once per failure signature).
    Remind(String),
    /// Stop the turn with this message.
    Stop(String),
}

/// Tracks the calls of one turn.
#[derive(Debug, Default)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    failures: HashMap<(String, String, ErrorCategory), u32>,
    calls: HashMap<(String, String), u32>,
    per_tool: HashMap<String, u32>,
    reminded: HashSet<(String, String, ErrorCategory)>,
}

impl LoopGuard {
    /// A guard with the given thresholds and no history.
    pub fn new(config: LoopGuardConfig) -> Self {
        Self { config, ..Self::default() }
    }

    /// Records a finished call (`error` is its envelope when it failed) and says what to do.
    pub fn observe(&mut self, tool: &str, args: &Value, error: Option<&ToolError>) -> Verdict {
        let args = canonical_json(args);
        let calls = bump(&mut self.calls, (tool.to_owned(), args.clone()));
        let per_tool = bump(&mut self.per_tool, tool.to_owned());
        let mut verdict = Verdict::Continue;

        if let Some(err) = error {
            let key = (tool.to_owned(), args, err.category);
            let n = bump(&mut self.failures, key.clone());
            let repeats =
                if err.retryable { self.config.retryable_repeats } else { self.config.non_retryable_repeats };
            if n > repeats {
                return Verdict::Stop(format!(
                    "stopped: `{tool}` failed {n} times in a row with the same arguments ({}: {}). \
                     The model is not making progress; rephrase the request or fix the cause and continue.",
                    err.category, err.message
                ));
            }
            if n >= self.config.remind_after && self.reminded.insert(key) {
                verdict = Verdict::Remind(format!(
                    "[runtime note] `{tool}` has now failed {n} times with the same arguments ({}). \
                     Read the error message and its hint before trying again, change the arguments, \
                     or take a different approach.",
                    err.category
                ));
            }
        }
        if calls >= self.config.identical_calls {
            return Verdict::Stop(format!(
                "stopped: `{tool}` was called {calls} times with identical arguments in one turn. \
                 Ask again with more detail, or continue the session to let the model try another way."
            ));
        }
        if let Some(cap) = self.config.per_tool_cap.get(tool)
            && per_tool >= *cap
        {
            return Verdict::Stop(format!(
                "stopped: `{tool}` reached its limit of {cap} calls per turn (configured in [loop.per_tool_cap])."
            ));
        }
        verdict
    }
}

fn bump<K: std::hash::Hash + Eq>(map: &mut HashMap<K, u32>, key: K) -> u32 {
    let n = map.entry(key).or_insert(0);
    *n += 1;
    *n
}

/// JSON text with object keys sorted at every depth, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are
/// the same call.
pub fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_guard_reminds_then_stops() {
        use serde_json::json;
        use tackle_protocol::{ErrorCategory, ToolError};
        let mut guard = LoopGuard::new(LoopGuardConfig::default());
        let err = ToolError::new("read_file", ErrorCategory::NotFound, "no such file");
        assert_eq!(guard.observe("read_file", &json!({"path": "x"}), Some(&err)), Verdict::Continue);
        assert!(matches!(guard.observe("read_file", &json!({"path": "x"}), Some(&err)), Verdict::Remind(_)));
        assert!(matches!(guard.observe("read_file", &json!({"path": "x"}), Some(&err)), Verdict::Stop(_)));
    }

    fn err(category: ErrorCategory) -> ToolError {
        ToolError::new("t", category, "boom")
    }

    #[test]
    fn non_retryable_failures_remind_then_stop() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        let e = err(ErrorCategory::Permission);
        assert_eq!(g.observe("t", &json!({"a": 1}), Some(&e)), Verdict::Continue);
        assert!(matches!(g.observe("t", &json!({"a": 1}), Some(&e)), Verdict::Remind(_)));
        assert!(matches!(g.observe("t", &json!({"a": 1}), Some(&e)), Verdict::Stop(_)));
    }

    #[test]
    fn retryable_failures_get_more_attempts() {
        let mut g = LoopGuard::new(LoopGuardConfig { identical_calls: 100, ..LoopGuardConfig::default() });
        let e = err(ErrorCategory::Network);
        let verdicts: Vec<Verdict> = (0..5).map(|_| g.observe("t", &json!({}), Some(&e))).collect();
        assert_eq!(verdicts[0], Verdict::Continue);
        assert!(matches!(verdicts[1], Verdict::Remind(_)));
        assert_eq!(verdicts[2], Verdict::Continue, "reminded once per signature");
        assert_eq!(verdicts[3], Verdict::Continue);
        assert!(matches!(verdicts[4], Verdict::Stop(_)));
    }

    #[test]
    fn different_arguments_or_categories_are_different_failures() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        let e = err(ErrorCategory::NotFound);
        for i in 0..4 {
            assert_eq!(g.observe("t", &json!({"path": i}), Some(&e)), Verdict::Continue);
        }
        assert_eq!(
            g.observe("t", &json!({"path": 0}), Some(&err(ErrorCategory::Permission))),
            Verdict::Continue
        );
    }

    #[test]
    fn identical_successful_calls_stop_at_five() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        for _ in 0..4 {
            assert_eq!(g.observe("t", &json!({"b": 2, "a": 1}), None), Verdict::Continue);
        }
        assert!(
            matches!(g.observe("t", &json!({"a": 1, "b": 2}), None), Verdict::Stop(_)),
            "key order ignored"
        );
    }

    #[test]
    fn per_tool_cap_stops() {
        let mut cfg = LoopGuardConfig::default();
        cfg.per_tool_cap.insert("shell".into(), 3);
        let mut g = LoopGuard::new(cfg);
        assert_eq!(g.observe("shell", &json!({"c": 1}), None), Verdict::Continue);
        assert_eq!(g.observe("shell", &json!({"c": 2}), None), Verdict::Continue);
        assert!(matches!(g.observe("shell", &json!({"c": 3}), None), Verdict::Stop(_)));
    }
}
