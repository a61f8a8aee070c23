use serde_json::json;
use tackle_protocol::{ModelRequest, ToolChoice};

use super::*;

fn verdict() -> OutputSchema {
    OutputSchema::new(
        "verdict",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}),
    )
    .unwrap()
}

#[test]
fn bad_schemas_are_refused_with_what_to_fix() {
    let err = OutputSchema::new("verdict", json!({"type": "nope"})).unwrap_err();
    assert!(matches!(err, OutputSchemaError::Invalid(_)), "{err}");
    let err = OutputSchema::new("verdict", json!([1])).unwrap_err();
    assert_eq!(err, OutputSchemaError::NotAnObject("an array"));
    let err = OutputSchema::new("has space", json!({})).unwrap_err();
    assert!(err.to_string().contains("letters, digits"), "{err}");
}

#[test]
fn answers_are_parsed_unfenced_and_validated_by_pointer() {
    let schema = verdict();
    assert_eq!(schema.parse("```json\n{\"ok\": true}\n```").unwrap(), json!({"ok": true}));
    assert!(schema.parse("{\"ok\": 1}").unwrap_err().contains("/ok"));
    assert!(schema.parse("sure: {\"ok\": true}").unwrap_err().contains("not valid JSON"));
}

#[test]
fn native_providers_get_the_schema_others_the_final_answer_tool() {
    let catalog: Arc<[ToolSpec]> =
        Arc::from(vec![ToolSpec::new("read_file", "Read.", json!({"type": "object"}))]);
    let native = TurnOutput::new(verdict(), true, &catalog);
    let mut request = ModelRequest::new("m", vec![]);
    request.tools = catalog.clone();
    native.apply(&mut request);
    assert_eq!(request.output.as_ref().map(|o| o.name.as_str()), Some("verdict"));
    assert!(Arc::ptr_eq(&request.tools, &catalog));
    assert_eq!(request.tool_choice, ToolChoice::Auto);

    let tool = TurnOutput::new(verdict(), false, &catalog);
    let mut first = ModelRequest::new("m", vec![]);
    tool.apply(&mut first);
    assert!(first.output.is_none());
    assert_eq!(
        first.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["read_file", FINAL_ANSWER_TOOL]
    );
    assert_eq!(first.tool_choice, ToolChoice::Required);
    // The last step (tool choice `none`) forces the final answer; the tool list is the same
    // allocation every step.
    let mut last = ModelRequest::new("m", vec![]);
    last.tool_choice = ToolChoice::None;
    tool.apply(&mut last);
    assert_eq!(last.tool_choice, ToolChoice::Named { name: FINAL_ANSWER_TOOL.into() });
    assert!(Arc::ptr_eq(&first.tools, &last.tools));
}
