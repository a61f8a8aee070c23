use serde_json::json;

use super::*;

#[test]
fn valid_schemas_are_sent_as_they_are() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}},
        "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["a"]});
    for rules in [ToolSchemaRules::strictest(), ToolSchemaRules::anthropic(), ToolSchemaRules::default()] {
        assert!(matches!(adapt_schema(&schema, rules), Cow::Borrowed(_)));
        assert!(schema_problems(&schema, rules).is_empty());
    }
}

#[test]
fn arrays_get_items_at_any_depth() {
    let schema = json!({"type": "object", "properties": {
        "tags": {"type": "array", "description": "Tags."},
        "meta": {"type": "array", "items": {"type": "object", "properties": {
            "value": {"type": ["string", "array"]}}}}}});
    let adapted = adapt_schema(&schema, ToolSchemaRules::strictest());
    assert_eq!(adapted["properties"]["tags"], json!({"type": "array", "description": "Tags.", "items": {}}));
    assert_eq!(adapted["properties"]["meta"]["items"]["properties"]["value"]["items"], json!({}));
    assert_eq!(
        schema_problems(&schema, ToolSchemaRules::strictest()),
        ["/tags: array schema without `items`", "/meta/items/value: array schema without `items`"]
    );
    // Anthropic accepts arrays without items: nothing changes.
    assert!(matches!(adapt_schema(&schema, ToolSchemaRules::anthropic()), Cow::Borrowed(_)));
}

#[test]
fn boolean_required_moves_to_the_parent_list() {
    let schema = json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"},
        "b": {"type": "string", "required": true},
        "c": {"type": "string", "required": false},
        "d": {"type": "object", "properties": {"e": {"type": "integer", "required": true}}}}});
    let adapted = adapt_schema(&schema, ToolSchemaRules::anthropic());
    assert_eq!(adapted["required"], json!(["a", "b"]));
    assert!(adapted["properties"]["b"].get("required").is_none());
    assert!(adapted["properties"]["c"].get("required").is_none());
    assert_eq!(adapted["properties"]["d"]["required"], json!(["e"]));
    assert_eq!(schema_problems(&adapted, ToolSchemaRules::strictest()), Vec::<String>::new());
}

#[test]
fn root_unions_are_merged_into_one_object() {
    let schema = json!({"oneOf": [
        {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}, "required": ["id", "name"]},
        {"type": "object", "properties": {"id": {"type": "string"}, "email": {"type": "string"}}, "required": ["id"]}
    ], "description": "Find a user."});
    let adapted = adapt_schema(&schema, ToolSchemaRules::strictest());
    assert_eq!(
        adapted.as_ref(),
        &json!({"description": "Find a user.", "type": "object", "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "email": {"type": "string"}}, "required": ["id"]})
    );
    let all = json!({"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]}], "not": {"required": ["c"]}});
    let adapted = adapt_schema(&all, ToolSchemaRules::strictest());
    assert_eq!(adapted["required"], json!(["a", "b"]));
    assert!(adapted.get("not").is_none() && adapted.get("allOf").is_none());
    assert_eq!(adapt_schema(&json!(true), ToolSchemaRules::strictest()).as_ref(), &json!({"type": "object"}));
    assert_eq!(
        adapt_schema(&json!({"properties": {}}), ToolSchemaRules::anthropic()).as_ref(),
        &json!({"type": "object", "properties": {}})
    );
    // Without the rule, nothing changes.
    assert!(matches!(adapt_schema(&schema, ToolSchemaRules::default()), Cow::Borrowed(_)));
}

#[test]
fn deep_or_odd_schemas_never_panic() {
    let mut deep = json!({"type": "array"});
    for _ in 0..200 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let _ = adapt_schema(&deep, ToolSchemaRules::strictest());
    for odd in [json!(null), json!([1, 2]), json!("s"), json!({"type": 5, "required": {}, "properties": []})]
    {
        let _ = adapt_schema(&odd, ToolSchemaRules::strictest());
        let _ = schema_problems(&odd, ToolSchemaRules::strictest());
    }
}
