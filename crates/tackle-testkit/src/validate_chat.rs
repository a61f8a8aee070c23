//! OpenAI Chat Completions requests checked as the API checks them: the body is read into the
//! wire types Tackle's provider sends (`tackle_wire::chat`), so a field of the wrong shape fails
//! with its path (`messages[2].tool_calls[0].function: missing field `name``); then the rules
//! the types cannot say (tool names, the tool choice naming a tool, every tool call answered)
//! are checked, worded as the API words them.

use std::collections::HashSet;

use serde_json::Value;
use tackle_wire::chat::{ChatRequest, ResponseFormat, Role, ToolChoice, ToolChoiceObject};

use super::{answer_format_error, read, valid_name};

/// OpenAI Chat Completions.
pub(crate) fn openai_chat(body: &Value) -> Result<(), String> {
    let request: ChatRequest = read(body)?;
    if request.model.is_empty() {
        return Err("you must provide a model parameter".into());
    }
    if request.messages.is_empty() {
        return Err("Invalid 'messages': empty array. Expected an array with minimum length 1.".into());
    }
    let mut names = HashSet::new();
    for (i, t) in request.tools.iter().flatten().enumerate() {
        if t.kind != "function" {
            return Err(format!("Invalid 'tools[{i}].type': expected 'function'."));
        }
        let name = &t.function.name;
        if !valid_name(name) {
            return Err(format!(
                "Invalid 'tools[{i}].function.name': string does not match pattern '^[a-zA-Z0-9_-]+$'."
            ));
        }
        if !names.insert(name.as_ref()) {
            return Err(format!("Duplicate tool name: {name}"));
        }
    }
    if let Some(choice) = &request.tool_choice {
        tool_choice(choice, &names)?;
    }
    if let Some(ResponseFormat::JsonSchema { json_schema }) = &request.response_format
        && let Some((message, _)) = answer_format_error(json_schema, "response_format.json_schema")
    {
        return Err(message);
    }
    let unanswered = |pending: &[&str]| {
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            pending.join(", ")
        )
    };
    let mut pending: Vec<&str> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            let Some(pos) = pending.iter().position(|p| *p == id) else {
                return Err(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}], tool_call_id {id:?})."
                ));
            };
            pending.remove(pos);
            if m.content.is_none() {
                return Err(format!("Invalid 'messages[{i}].content': content is required for role 'tool'."));
            }
            continue;
        }
        if !pending.is_empty() {
            return Err(unanswered(&pending));
        }
        match m.role {
            Role::Assistant if m.content.is_none() && m.tool_calls.is_empty() => {
                return Err(format!(
                    "Invalid 'messages[{i}]': assistant messages need content or tool_calls."
                ));
            }
            Role::Assistant => pending.extend(m.tool_calls.iter().map(|c| c.id.as_ref())),
            _ if !m.tool_calls.is_empty() => {
                return Err(format!(
                    "Invalid 'messages[{i}].tool_calls': only assistant messages make tool calls."
                ));
            }
            role if m.content.is_none() => {
                let role = serde_json::to_value(role).unwrap_or_default();
                return Err(format!("Invalid 'messages[{i}].content': content is required for role {role}."));
            }
            _ => {}
        }
    }
    if !pending.is_empty() {
        return Err(unanswered(&pending));
    }
    Ok(())
}

fn tool_choice(choice: &ToolChoice, names: &HashSet<&str>) -> Result<(), String> {
    match choice {
        ToolChoice::Mode(_) => Ok(()),
        ToolChoice::Object(ToolChoiceObject::Function { function }) => {
            if names.contains(function.name.as_ref()) {
                Ok(())
            } else {
                Err(format!("Invalid 'tool_choice': function {:?} is not in tools", function.name))
            }
        }
        ToolChoice::Object(ToolChoiceObject::AllowedTools { allowed_tools }) => {
            if matches!(allowed_tools.mode, tackle_wire::chat::ToolChoiceMode::None) {
                return Err("Invalid 'tool_choice.allowed_tools.mode': expected 'auto' or 'required'.".into());
            }
            for (k, t) in allowed_tools.tools.iter().enumerate() {
                let Some(function) = &t.function else {
                    return Err(format!(
                        "Missing required parameter: 'tool_choice.allowed_tools.tools[{k}].function'."
                    ));
                };
                if !names.contains(function.name.as_ref()) {
                    return Err(format!(
                        "Invalid 'tool_choice.allowed_tools.tools': {:?} is not in tools",
                        function.name
                    ));
                }
            }
            Ok(())
        }
        // Tackle's provider sends no custom tools.
        ToolChoice::Object(ToolChoiceObject::Custom { custom }) => {
            Err(format!("Invalid 'tool_choice': custom tool {:?} is not in tools", custom.name))
        }
        // The Responses API's spelling, which the real API refuses here.
        ToolChoice::Object(ToolChoiceObject::Responses(_)) => {
            Err("Missing required parameter: 'tool_choice.function'.".into())
        }
        ToolChoice::Object(ToolChoiceObject::Other(v)) => {
            Err(format!("Invalid value for 'tool_choice.type': {}.", v.get("type").unwrap_or(&Value::Null)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::openai_chat;

    fn request(messages: serde_json::Value) -> serde_json::Value {
        json!({"model": "m", "messages": messages,
               "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}]})
    }

    #[test]
    fn a_wrong_field_is_named_by_its_path() {
        let e = openai_chat(&request(json!([{"role": "user", "content": {"text": "x"}}]))).unwrap_err();
        assert!(e.starts_with("messages[0].content: invalid type: map"), "{e}");
        let e = openai_chat(&request(json!([{"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]}])))
        .unwrap_err();
        assert!(e.starts_with("messages[1].tool_calls[0].function: missing field `name`"), "{e}");
        let e = openai_chat(
            &json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}),
        )
        .unwrap_err();
        assert!(e.starts_with("max_tokens: invalid value: integer `-1`"), "{e}");
    }

    #[test]
    fn the_rules_the_types_cannot_say_are_checked() {
        let ok = request(json!([{"role": "user", "content": "x"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "done"}]));
        openai_chat(&ok).unwrap();
        let e = openai_chat(&request(json!([{"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "a"}}]},
            {"role": "user", "content": "y"}])))
        .unwrap_err();
        assert!(e.contains("did not have response messages: c"), "{e}");
        let e = openai_chat(&request(json!([{"role": "tool", "tool_call_id": "z", "content": "x"}])))
            .unwrap_err();
        assert!(e.contains("must be a response to a preceeding message"), "{e}");
        let e = openai_chat(&request(json!([{"role": "system"}]))).unwrap_err();
        assert_eq!(e, "Invalid 'messages[0].content': content is required for role \"system\".");
        let mut bad_choice = request(json!([{"role": "user", "content": "x"}]));
        bad_choice["tool_choice"] = json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto",
            "tools": [{"type": "function", "function": {"name": "b"}}]}});
        assert!(openai_chat(&bad_choice).unwrap_err().contains("\"b\" is not in tools"));
        // What the real API refuses though the types read it: the Responses API's spelling, an
        // entry without its function, another kind.
        for (choice, want) in [
            (json!({"type": "function", "name": "a"}), "'tool_choice.function'"),
            (
                json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "name": "a"}]}}),
                "'tool_choice.allowed_tools.tools[0].function'",
            ),
            (json!({"type": "web_search"}), "'tool_choice.type'"),
        ] {
            bad_choice["tool_choice"] = choice;
            let e = openai_chat(&bad_choice).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let mut duplicate = request(json!([{"role": "user", "content": "x"}]));
        let first = duplicate["tools"][0].clone();
        duplicate["tools"].as_array_mut().unwrap().push(first);
        assert_eq!(openai_chat(&duplicate).unwrap_err(), "Duplicate tool name: a");
    }

    #[test]
    fn a_response_format_schema_is_checked_as_the_api_checks_it() {
        let with = |format: serde_json::Value| {
            let mut body = request(json!([{"role": "user", "content": "x"}]));
            body["response_format"] = format;
            openai_chat(&body)
        };
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
            "additionalProperties": false});
        with(
            json!({"type": "json_schema", "json_schema": {"name": "out", "schema": closed, "strict": true}}),
        )
        .unwrap();
        with(json!({"type": "json_object"})).unwrap();
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        with(json!({"type": "json_schema", "json_schema": {"name": "out", "schema": open, "strict": false}}))
            .unwrap();
        let e = with(
            json!({"type": "json_schema", "json_schema": {"name": "out", "schema": open, "strict": true}}),
        )
        .unwrap_err();
        assert!(
            e.starts_with("Invalid schema for response_format 'out': In context=(), 'additionalProperties'"),
            "{e}"
        );
        let e = with(json!({"type": "json_schema", "json_schema": {"name": "a b", "schema": closed}}))
            .unwrap_err();
        assert!(e.contains("'response_format.json_schema.name'"), "{e}");
        let e = with(json!({"type": "json_schema", "json_schema": {"name": "out"}})).unwrap_err();
        assert_eq!(e, "Missing required parameter: 'response_format.json_schema.schema'.");
        let e = with(json!({"type": "json_schema", "json_schema": {"schema": closed}})).unwrap_err();
        assert!(e.starts_with("response_format") && e.contains("missing field `name`"), "{e}");
        let e = with(json!({"type": "xml"})).unwrap_err();
        assert!(e.starts_with("response_format.type: unknown variant `xml`"), "{e}");
    }
}
