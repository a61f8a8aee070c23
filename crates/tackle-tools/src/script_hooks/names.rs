//! Which tool names (and argument names) a hook sees: Tackle's own, or Claude Code's, so that a
//! hook script written for Claude Code (`if tool_name == "Bash"`, `tool_input["file_path"]`)
//! runs unchanged against Tackle's built-in tools.
//!
//! | Tackle | Claude Code | arguments renamed |
//! |---|---|---|
//! | `shell` | `Bash` | `timeout_secs` (s) ↔ `timeout` (ms) |
//! | `read_file` | `Read` | `path` ↔ `file_path` |
//! | `write_file` | `Write` | `path` ↔ `file_path` |
//! | `edit_file` | `Edit` | `path` ↔ `file_path` |
//! | `web_fetch` | `WebFetch` | |
//!
//! Other tools (MCP tools, `list_files`, your own) keep their names. An `updatedInput` a hook
//! returns is translated back before the call runs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The names a script hook sees (`names = "claude-code"` in its `[[hooks]]` entry).
///
/// ```
/// use serde_json::json;
/// use tackle_tools::HookToolNames;
/// let names = HookToolNames::ClaudeCode;
/// assert_eq!(names.tool_name("shell"), "Bash");
/// assert_eq!(names.input_for_hook("write_file", &json!({"path": "a.txt", "content": "x"})),
///            json!({"file_path": "a.txt", "content": "x"}));
/// assert_eq!(names.input_from_hook("shell", json!({"command": "ls", "timeout": 30000})),
///            json!({"command": "ls", "timeout_secs": 30}));
/// assert_eq!(HookToolNames::Tackle.tool_name("shell"), "shell");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookToolNames {
    /// Tackle's tool and argument names (`shell`, `path`).
    #[default]
    Tackle,
    /// Claude Code's names for the built-in tools (`Bash`, `Write`, `file_path`); the hook's
    /// `matcher` is matched against them too.
    ClaudeCode,
}

/// Tackle's built-in tools and their Claude Code counterparts.
const CLAUDE_CODE: &[(&str, &str)] = &[
    ("shell", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("web_fetch", "WebFetch"),
];

impl HookToolNames {
    /// The name the hook sees for the tool Tackle calls `tackle_name`.
    pub fn tool_name<'a>(&self, tackle_name: &'a str) -> &'a str {
        match self {
            Self::Tackle => tackle_name,
            Self::ClaudeCode => {
                CLAUDE_CODE.iter().find(|(t, _)| *t == tackle_name).map_or(tackle_name, |(_, c)| c)
            }
        }
    }

    /// The arguments of a call to `tackle_name`, as the hook sees them.
    pub fn input_for_hook(&self, tackle_name: &str, input: &Value) -> Value {
        match (self, input) {
            (Self::ClaudeCode, Value::Object(map)) => {
                Value::Object(rename(tackle_name, map, Direction::ToClaude))
            }
            _ => input.clone(),
        }
    }

    /// A hook's `updatedInput` for a call to `tackle_name`, as the tool takes it.
    pub fn input_from_hook(&self, tackle_name: &str, input: Value) -> Value {
        match (self, &input) {
            (Self::ClaudeCode, Value::Object(map)) => {
                Value::Object(rename(tackle_name, map, Direction::FromClaude))
            }
            _ => input,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    ToClaude,
    FromClaude,
}

fn rename(tool: &str, map: &Map<String, Value>, direction: Direction) -> Map<String, Value> {
    let file_tool = matches!(tool, "read_file" | "write_file" | "edit_file");
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let (key, value) = match (direction, tool, key.as_str()) {
            (Direction::ToClaude, _, "path") if file_tool => ("file_path".to_owned(), value.clone()),
            (Direction::FromClaude, _, "file_path") if file_tool => ("path".to_owned(), value.clone()),
            (Direction::ToClaude, "shell", "timeout_secs") => (
                "timeout".to_owned(),
                value.as_u64().map_or(value.clone(), |s| Value::from(s.saturating_mul(1000))),
            ),
            (Direction::FromClaude, "shell", "timeout") => (
                "timeout_secs".to_owned(),
                // Milliseconds to whole seconds, rounded up so a short timeout stays non-zero.
                value.as_u64().map_or(value.clone(), |ms| Value::from(ms.div_ceil(1000))),
            ),
            _ => (key.clone(), value.clone()),
        };
        out.insert(key, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claude_code_names_round_trip_and_leave_other_tools_alone() {
        let n = HookToolNames::ClaudeCode;
        for (tool, input) in [
            ("shell", json!({"command": "ls", "cwd": "sub", "timeout_secs": 5})),
            ("edit_file", json!({"path": "a", "old_string": "x", "new_string": "y", "replace_all": true})),
            ("read_file", json!({"path": "a", "offset": 3, "limit": 2})),
            ("github__create_issue", json!({"path": "kept", "timeout": 9})),
        ] {
            assert_eq!(n.input_from_hook(tool, n.input_for_hook(tool, &input)), input, "{tool}");
        }
        assert_eq!(n.input_for_hook("edit_file", &json!({"path": "a"})), json!({"file_path": "a"}));
        assert_eq!(n.input_for_hook("github__x", &json!({"path": "a"})), json!({"path": "a"}));
        assert_eq!(n.tool_name("github__x"), "github__x");
        assert_eq!(n.tool_name("list_files"), "list_files");
        assert_eq!(n.input_from_hook("shell", json!({"timeout": 1})), json!({"timeout_secs": 1}));
        assert_eq!(n.input_from_hook("shell", json!("not an object")), json!("not an object"));
    }
}
