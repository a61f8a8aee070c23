use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::*;
use crate::schema::{derived_schema_for, input_schema_for};

/// Arguments of a test `notes` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
#[allow(dead_code)]
enum NotesArgs {
    /// Create a note.
    Create {
        /// Title of the note.
        title: String,
        /// Body text.
        #[serde(default)]
        body: Option<String>,
    },
    /// Change a note.
    Update {
        /// Note id.
        id: u32,
        /// Title of the note.
        #[serde(default)]
        title: Option<String>,
    },
    /// Delete a note.
    Remove {
        /// Note id.
        id: u32,
        /// Must be true.
        confirm: bool,
    },
}

/// Arguments of a plain tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ReadArgs {
    /// Path to read.
    path: String,
    /// Lines to return.
    #[serde(default)]
    limit: Option<u32>,
}

#[test]
fn flattened_action_schema_snapshot() {
    insta::assert_json_snapshot!(input_schema_for::<NotesArgs>());
}

#[test]
fn per_action_requirements_are_explicit() {
    let v = ArgsValidator::new(&derived_schema_for::<NotesArgs>()).unwrap();
    assert!(v.validate(&json!({"action": "create", "title": "t"})).is_ok());
    let cases = [
        (json!({"action": "update"}), r#"action "update": (root): missing required property "id""#),
        (json!({"title": "x"}), r#"missing required property "action": one of "create", "update", "remove""#),
        (
            json!({"action": "archive"}),
            r#"/action: unknown action "archive"; valid values are "create", "update", "remove""#,
        ),
        (json!({"action": 3}), r#"/action: expected a string, one of "create", "update", "remove""#),
    ];
    for (args, expected) in cases {
        assert_eq!(v.validate(&args).unwrap_err(), expected, "{args}");
    }
}

#[test]
fn errors_name_the_pointer_and_the_expectation() {
    let v = ArgsValidator::new(&derived_schema_for::<ReadArgs>()).unwrap();
    let messages: Vec<String> = [json!({"limit": "ten"}), json!({"path": 3, "limit": -1}), json!([])]
        .iter()
        .map(|a| v.validate(a).unwrap_err())
        .collect();
    insta::assert_snapshot!(messages.join("\n"));
}

#[test]
fn many_errors_are_capped() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"},
        "d": {"type": "string"}, "e": {"type": "string"}, "f": {"type": "string"}, "g": {"type": "string"}}});
    let v = ArgsValidator::new(&schema).unwrap();
    let msg = v.validate(&json!({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1})).unwrap_err();
    assert!(msg.ends_with("and 2 more"), "{msg}");
}

#[test]
fn invalid_schemas_are_rejected() {
    assert!(ArgsValidator::new(&json!({"type": "no-such-type"})).is_err());
}
