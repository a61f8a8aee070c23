//! The tools' schemas as derived, and the structured content the handler sends checked against
//! the declared `outputSchema` with a JSON Schema validator, as an MCP client checks it.

use super::*;

fn validator(schema: &JsonObject) -> jsonschema::Validator {
    jsonschema::validator_for(&Value::Object(schema.clone())).unwrap()
}

/// No `$ref`, `$defs` or `$schema` anywhere: a client's validator needs nothing but the schema.
fn assert_self_contained(value: &Value) {
    match value {
        Value::Object(map) => {
            for key in ["$ref", "$defs", "definitions", "$schema"] {
                assert!(!map.contains_key(key), "{key} in {value}");
            }
            map.values().for_each(assert_self_contained);
        }
        Value::Array(items) => items.iter().for_each(assert_self_contained),
        _ => {}
    }
}

fn answer(end: End, output: Option<Value>, error: Option<Failure>) -> Answer {
    Answer { session_id: "s_1".to_owned(), answer: "done".to_owned(), end, steps: 2, output, error }
}

#[test]
fn the_schemas_are_self_contained_objects() {
    for tool in [task_tool(), reply_tool()] {
        let input = Value::Object(tool.input_schema.as_ref().clone());
        let output = Value::Object(tool.output_schema.as_deref().unwrap().clone());
        for schema in [&input, &output] {
            assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
            assert_self_contained(schema);
            // Optional means left out, never `null`; no schemars-only integer formats.
            let text = schema.to_string();
            assert!(!text.contains("null") && !text.contains("uint32"), "{}: {text}", tool.name);
        }
        assert_eq!(input["additionalProperties"], false, "{}", tool.name);
        assert_eq!(input["properties"]["output_schema"]["type"], "object");
        assert!(
            input["properties"]["output_schema"]["description"].as_str().unwrap().contains("JSON Schema")
        );
    }
    let task = Value::Object(task_tool().input_schema.as_ref().clone());
    assert_eq!(task["required"], json!(["prompt"]));
    assert_eq!(task["properties"]["model"]["type"], "string", "optional, not nullable: {task}");
    assert_eq!(task["properties"]["mode"]["enum"], json!(["default", "accept-edits", "plan", "bypass"]));
    let reply = Value::Object(reply_tool().input_schema.as_ref().clone());
    assert_eq!(reply["required"], json!(["session_id", "prompt"]));
    let output = Value::Object(answer_schema());
    assert_eq!(output["required"], json!(["session_id", "answer", "end", "steps"]));
    assert_eq!(output["properties"]["end"]["enum"], json!(["completed", "max_steps", "cancelled", "failed"]));
}

#[test]
fn every_answer_the_handler_sends_matches_the_declared_output_schema() {
    let schema = validator(&answer_schema());
    let failure = || Failure { code: "output_invalid".to_owned(), message: "no".to_owned() };
    let cases = [
        (answer(End::Completed, None, None), false),
        (answer(End::Completed, Some(json!({"ok": true})), None), true),
        (answer(End::Completed, Some(json!([1, "two"])), None), true),
        (answer(End::Failed, None, Some(failure())), true),
        (answer(End::MaxSteps, None, None), true),
        (answer(End::Cancelled, None, Some(failure())), false),
    ];
    for (answer, typed) in cases {
        let result = answer_result(answer, typed);
        let sent = result.structured_content.clone().unwrap();
        assert!(schema.is_valid(&sent), "{sent} against {}", Value::Object(answer_schema()));
        // The check can fail: a value off the schema is refused.
        let mut broken = sent.clone();
        broken["end"] = json!("finished");
        assert!(!schema.is_valid(&broken));
        broken["end"] = sent["end"].clone();
        broken.as_object_mut().unwrap().remove("session_id");
        assert!(!schema.is_valid(&broken));
    }
}

#[test]
fn a_typed_answer_is_its_json_and_its_absence_an_error() {
    let ok = answer_result(answer(End::Completed, Some(json!({"ok": true})), None), true);
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(ok.structured_content.as_ref().unwrap()["output"], json!({"ok": true}));
    let invalid =
        Failure { code: "output_invalid".to_owned(), message: "the answer never matched".to_owned() };
    let failed = answer_result(answer(End::Failed, None, Some(invalid)), true);
    assert_eq!(failed.is_error, Some(true));
    let text = failed.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("output_invalid"), "{text}");
    assert_eq!(failed.structured_content.as_ref().unwrap()["error"]["code"], "output_invalid");
    // A turn that stopped at its step limit without the typed answer gave the caller nothing
    // it asked for.
    let short = answer_result(answer(End::MaxSteps, None, None), true);
    assert_eq!(short.is_error, Some(true));
    assert_eq!(answer_result(answer(End::MaxSteps, None, None), false).is_error, Some(false));
}

#[test]
fn a_bad_output_schema_is_refused_naming_the_argument() {
    for bad in [json!("an object please"), json!({"type": "objekt"}), json!({"type": 3})] {
        let Err(Refusal(message)) = output_schema(Some(bad.clone())) else { panic!("{bad} accepted") };
        assert!(message.contains("`output_schema`") && message.contains("JSON Schema"), "{message}");
    }
    assert!(output_schema(None).unwrap().is_none());
    let schema = output_schema(Some(json!({"type": "object"}))).unwrap().unwrap();
    assert_eq!(schema.name(), OUTPUT_SCHEMA_NAME);
}

#[test]
fn modes_parse_by_their_names_and_aliases() {
    for (text, mode) in [
        ("default", PermissionMode::Default),
        ("accept-edits", PermissionMode::AcceptEdits),
        ("acceptEdits", PermissionMode::AcceptEdits),
        ("plan", PermissionMode::Plan),
        ("bypassPermissions", PermissionMode::Bypass),
    ] {
        let args: TaskArgs = serde_json::from_value(json!({"prompt": "p", "mode": text})).unwrap();
        assert_eq!(args.mode.map(PermissionMode::from), Some(mode), "{text}");
    }
    let Err(Refusal(message)) =
        parse::<TaskArgs>(TASK_TOOL, Some(object(json!({"prompt": "p", "mode": "yolo"}))))
    else {
        panic!("yolo accepted")
    };
    assert!(message.contains("accept-edits") && message.contains("yolo"), "{message}");
}

fn object(value: Value) -> JsonObject {
    let Value::Object(map) = value else { unreachable!() };
    map
}
