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
    let native = TurnOutput::new(verdict(), true, &catalog, |_| false);
    let mut request = ModelRequest::new("m", vec![]);
    request.tools = catalog.clone();
    native.apply(&mut request);
    assert_eq!(request.output.as_ref().map(|o| o.name.as_str()), Some("verdict"));
    assert!(Arc::ptr_eq(&request.tools, &catalog));
    assert_eq!(request.tool_choice, ToolChoice::Auto);

    let tool = TurnOutput::new(verdict(), false, &catalog, |_| false);
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

#[test]
fn the_final_answer_tool_takes_a_name_no_tool_of_the_session_has() {
    let spec = |name: &str| ToolSpec::new(name, "A user's tool.", json!({"type": "object"}));
    let catalog: Arc<[ToolSpec]> = Arc::from(vec![spec("read_file"), spec("final_answer")]);
    // `final_answer_2` is a deferred tool's: not in the catalog, but callable.
    let output = TurnOutput::new(verdict(), false, &catalog, |name| name == "final_answer_2");
    let mut request = ModelRequest::new("m", vec![]);
    request.tool_choice = ToolChoice::None;
    output.apply(&mut request);
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_file", "final_answer", "final_answer_3"]);
    assert_eq!(request.tools[1], catalog[1], "the user's tool is sent as it is");
    assert_eq!(request.tool_choice, ToolChoice::Named { name: "final_answer_3".into() });
    let call =
        |name: &str| ToolUse { id: "c1".into(), name: name.to_owned(), input: json!({"ok": true}).into() };
    assert!(output.is_final_answer(&call("final_answer_3")));
    assert!(!output.is_final_answer(&call("final_answer")), "the user's tool is no final answer");
    // The same tools give the same name.
    let again = TurnOutput::new(verdict(), false, &catalog, |name| name == "final_answer_2");
    assert_eq!(again.tools.as_deref(), output.tools.as_deref());
    // A native plan has no final-answer tool: no call is the answer.
    let native = TurnOutput::new(verdict(), true, &catalog, |_| false);
    assert!(!native.is_final_answer(&call("final_answer")));
    assert!(native.text_answer("{\"ok\": true}").is_ok());
    let refused = output.text_answer("{\"ok\": true}").unwrap_err();
    assert!(refused.contains("`final_answer_3`"), "{refused}");
}

#[test]
fn a_schema_whose_root_is_not_an_object_travels_as_the_tools_value() {
    let list = OutputSchema::new(
        "cities",
        json!({"type": "array", "items": {"$ref": "#/$defs/city"}, "$defs": {"city": {"type": "string"}}}),
    )
    .unwrap();
    let catalog: Arc<[ToolSpec]> = Arc::from(Vec::<ToolSpec>::new());
    let plan = TurnOutput::new(list, false, &catalog, |_| false);
    let tool = plan.tools.as_ref().unwrap().last().unwrap().clone();
    assert_eq!(tool.input_schema["type"], "object");
    assert_eq!(tool.input_schema["required"], json!(["value"]));
    assert_eq!(tool.input_schema["properties"]["value"]["type"], "array");
    assert!(tool.input_schema["$defs"]["city"].is_object(), "definitions stay at the root");
    let call =
        |input: serde_json::Value| ToolUse { id: "c1".into(), name: tool.name.clone(), input: input.into() };
    assert_eq!(
        plan.call_answer(&call(json!({"value": ["Paris", "Rome"]}))).unwrap(),
        json!(["Paris", "Rome"])
    );
    assert!(plan.call_answer(&call(json!({"value": [1]}))).is_err(), "validated against the caller's schema");
    assert!(plan.call_answer(&call(json!({"answer": []}))).unwrap_err().contains("`value`"));
    // An object schema is sent as it is, and a native provider never wraps.
    let object = TurnOutput::new(verdict(), false, &catalog, |_| false);
    assert_eq!(object.tools.as_ref().unwrap().last().unwrap().input_schema, *verdict().schema());
    assert!(!TurnOutput::new(verdict(), true, &catalog, |_| false).wrapped);
}
