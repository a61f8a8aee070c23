use serde_json::json;
use tackle_wire::responses::{FunctionCallItem, MessageItem};

use super::*;

fn error<T: DeserializeOwned + std::fmt::Debug>(value: Value) -> ApiError {
    read::<T>(value, "input[2]").unwrap_err()
}

#[test]
fn a_missing_field_is_a_missing_required_parameter() {
    let e = error::<FunctionCallItem>(json!({"type": "function_call", "name": "a"}));
    assert_eq!(e.field.as_deref(), Some("input[2].call_id"));
    assert_eq!(e.message, "Missing required parameter: 'input[2].call_id'.");
    assert_eq!(e.code, "missing_required_parameter");
}

#[test]
fn a_wrong_type_and_a_wrong_value_name_the_field_inside_the_item() {
    let e = error::<MessageItem>(json!({"role": "user", "content": 42}));
    assert_eq!(e.field.as_deref(), Some("input[2].content"));
    assert_eq!(e.code, "invalid_type");
    assert!(e.message.starts_with("Invalid type for 'input[2].content': expected a string or a list of content parts, but got integer '42'"), "{}", e.message);
    let e = error::<MessageItem>(json!({"role": "robot", "content": "x"}));
    assert_eq!(e.field.as_deref(), Some("input[2].role"));
    assert_eq!(
        e.message,
        "Invalid value: 'robot'. Supported values are: 'user', 'assistant', 'system', 'developer'."
    );
    let e = error::<MessageItem>(json!({"role": "user", "content": "x", "status": 3}));
    assert_eq!(e.field.as_deref(), Some("input[2].status"), "{}", e.message);
}

#[test]
fn a_good_value_reads() {
    let item: FunctionCallItem = read(json!({"call_id": "c", "name": "a"}), "input[0]").unwrap();
    assert_eq!((item.call_id.as_ref(), item.arguments.as_ref()), ("c", ""));
}
