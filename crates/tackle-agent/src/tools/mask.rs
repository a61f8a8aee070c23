//! [`ToolMask`]: which tools a request allows, as data, resolved per step against the frozen
//! catalog without ever changing the tool definitions sent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request-level tool mask: tool name to enabled.
///
/// Semantics: with any `true` entry the mask is an allowlist (only tools marked `true` are
/// active); with only `false` entries it is a denylist (every tool but those). An empty mask
/// is no mask.
///
/// ```
/// use serde_json::json;
/// use tackle_agent::ToolMask;
/// let (mask, dropped) = ToolMask::normalize(&json!({"shell": false, "read_file": "yes"}));
/// let mask = mask.unwrap();
/// assert_eq!(dropped, ["read_file"]);
/// assert!(!mask.allows("shell"));
/// assert!(mask.allows("write_file"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolMask(BTreeMap<String, bool>);

impl ToolMask {
    /// A mask from entries.
    pub fn new(entries: impl IntoIterator<Item = (String, bool)>) -> Self {
        Self(entries.into_iter().collect())
    }

    /// Normalizes arbitrary JSON: non-boolean entries are dropped (their names returned), a
    /// non-object or an empty result is no mask.
    pub fn normalize(value: &Value) -> (Option<Self>, Vec<String>) {
        let Value::Object(map) = value else { return (None, Vec::new()) };
        let mut entries = BTreeMap::new();
        let mut dropped = Vec::new();
        for (name, v) in map {
            match v {
                Value::Bool(b) => {
                    entries.insert(name.clone(), *b);
                }
                _ => dropped.push(name.clone()),
            }
        }
        let mask = (!entries.is_empty()).then_some(Self(entries));
        (mask, dropped)
    }

    /// Parses the CLI form (`{"shell":false}`), reporting what is wrong.
    pub fn parse_cli(text: &str) -> Result<Option<Self>, MaskError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| MaskError::NotJson { detail: e.to_string() })?;
        if !value.is_object() {
            return Err(MaskError::NotAnObject);
        }
        let (mask, dropped) = Self::normalize(&value);
        if let Some(name) = dropped.into_iter().next() {
            return Err(MaskError::NotABoolean { tool: name });
        }
        Ok(mask)
    }

    /// Whether the mask lets `tool` be active.
    pub fn allows(&self, tool: &str) -> bool {
        let allowlist = self.0.values().any(|v| *v);
        match self.0.get(tool) {
            Some(v) => *v,
            None => !allowlist,
        }
    }

    /// Names the mask mentions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn normalization_follows_the_contract() {
        assert_eq!(ToolMask::normalize(&json!({})).0, None);
        assert_eq!(ToolMask::normalize(&json!([1])).0, None);
        let (m, dropped) = ToolMask::normalize(&json!({"a": true, "b": false, "c": 1, "d": null}));
        assert_eq!(m.unwrap(), ToolMask::new([("a".into(), true), ("b".into(), false)]));
        assert_eq!(dropped, ["c", "d"]);
    }

    #[test]
    fn allowlist_and_denylist() {
        let allow = ToolMask::new([("read_file".into(), true), ("shell".into(), false)]);
        assert!(allow.allows("read_file"));
        assert!(!allow.allows("write_file"));
        let deny = ToolMask::new([("shell".into(), false)]);
        assert!(deny.allows("write_file"));
        assert!(!deny.allows("shell"));
    }

    #[test]
    fn cli_errors_say_what_to_type() {
        assert!(ToolMask::parse_cli("shell=false").unwrap_err().to_string().contains("example"));
        assert!(ToolMask::parse_cli(r#"{"shell":"no"}"#).unwrap_err().to_string().contains("shell"));
        assert_eq!(ToolMask::parse_cli("{}").unwrap(), None);
    }
}

/// Why a `--tool-mask` value was refused; each message shows what to type instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// The text is not JSON.
    #[error("--tool-mask is not JSON ({detail}); example: '{{\"shell\": false}}'")]
    NotJson {
        /// The parser's message.
        detail: String,
    },
    /// The JSON is not an object.
    #[error("--tool-mask must be a JSON object of tool name to true/false, e.g. '{{\"shell\": false}}'")]
    NotAnObject,
    /// An entry is not a boolean.
    #[error("--tool-mask entry {tool:?} is not true or false")]
    NotABoolean {
        /// The tool named.
        tool: String,
    },
}
