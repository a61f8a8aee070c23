//! Checks that a tool definition follows Tackle's rules (see [`crate::ToolDoc`]).

use serde_json::Value;
use tackle_protocol::{ToolSpec, is_valid_tool_name};

use crate::doc::SECTIONS;

/// Template sections missing from a description.
pub fn missing_sections(description: &str) -> Vec<&'static str> {
    SECTIONS.iter().copied().filter(|s| !description.contains(s)).collect()
}

/// Every problem with a tool definition: its name, its description's sections, and schema
/// properties without a description (at any depth). Empty when the tool follows the rules.
pub fn lint_tool(spec: &ToolSpec) -> Vec<String> {
    let mut problems = Vec::new();
    if !is_valid_tool_name(&spec.name) {
        problems.push(format!("name {:?} does not match ^[a-zA-Z0-9_-]{{1,64}}$", spec.name));
    }
    for section in missing_sections(&spec.description) {
        problems.push(format!("description lacks the section {section:?}"));
    }
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push("input schema is not of type object".to_owned());
    }
    undocumented_properties(&spec.input_schema, "", &mut problems);
    problems
}

fn undocumented_properties(schema: &Value, path: &str, problems: &mut Vec<String>) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, prop) in props {
            let here = format!("{path}/{name}");
            let described =
                prop.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty());
            if !described {
                problems.push(format!("property {here} has no description"));
            }
            undocumented_properties(prop, &here, problems);
        }
    }
    for key in ["items", "oneOf", "anyOf", "allOf"] {
        match map.get(key) {
            Some(Value::Array(items)) => {
                for item in items {
                    undocumented_properties(item, path, problems);
                }
            }
            Some(item @ Value::Object(_)) => undocumented_properties(item, &format!("{path}[]"), problems),
            _ => {}
        }
    }
}
