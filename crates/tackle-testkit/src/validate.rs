//! Request validation as strict as the real APIs, so a client bug fails here as it would there.

use std::collections::HashSet;

use serde_json::Value;

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// OpenAI Chat Completions.
pub(crate) fn openai_chat(body: &Value) -> Result<(), String> {
    if str_at(body, "model").is_none_or(str::is_empty) {
        return Err("you must provide a model parameter".into());
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array).filter(|m| !m.is_empty()) else {
        return Err("Invalid 'messages': empty array. Expected an array with minimum length 1.".into());
    };
    let mut names = HashSet::new();
    if let Some(tools) = body.get("tools") {
        let tools = tools.as_array().ok_or("Invalid 'tools': expected an array.")?;
        for (i, t) in tools.iter().enumerate() {
            if str_at(t, "type") != Some("function") {
                return Err(format!("Invalid 'tools[{i}].type': expected 'function'."));
            }
            let name = t.get("function").and_then(|f| str_at(f, "name")).unwrap_or("");
            if !valid_name(name) {
                return Err(format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern '^[a-zA-Z0-9_-]+$'."
                ));
            }
            if !names.insert(name.to_owned()) {
                return Err(format!("Duplicate tool name: {name}"));
            }
        }
    }
    if let Some(choice) = body.get("tool_choice") {
        openai_tool_choice(choice, &names)?;
    }
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = str_at(m, "role").unwrap_or("");
        match role {
            "tool" => {
                let id = str_at(m, "tool_call_id").unwrap_or("");
                let Some(pos) = pending.iter().position(|p| p == id) else {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}], tool_call_id {id:?})."
                    ));
                };
                pending.remove(pos);
            }
            "system" | "developer" | "user" | "assistant" => {
                if !pending.is_empty() {
                    return Err(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        pending.join(", ")
                    ));
                }
                if role == "assistant"
                    && let Some(calls) = m.get("tool_calls").and_then(Value::as_array)
                {
                    for c in calls {
                        pending.push(str_at(c, "id").unwrap_or("").to_owned());
                    }
                }
                let content = m.get("content");
                let has_calls = m.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
                if role != "assistant" && content.is_none_or(Value::is_null) {
                    return Err(format!(
                        "Invalid 'messages[{i}].content': content is required for role '{role}'."
                    ));
                }
                if role == "assistant" && !has_calls && content.is_none_or(Value::is_null) {
                    return Err(format!(
                        "Invalid 'messages[{i}]': assistant messages need content or tool_calls."
                    ));
                }
            }
            other => return Err(format!("Invalid 'messages[{i}].role': unknown role {other:?}.")),
        }
    }
    if !pending.is_empty() {
        return Err(format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            pending.join(", ")
        ));
    }
    Ok(())
}

fn openai_tool_choice(choice: &Value, names: &HashSet<String>) -> Result<(), String> {
    if let Some(s) = choice.as_str() {
        return match s {
            "none" | "auto" | "required" => Ok(()),
            other => Err(format!("Invalid 'tool_choice': {other:?}")),
        };
    }
    match str_at(choice, "type") {
        Some("function") => {
            let name = choice.get("function").and_then(|f| str_at(f, "name")).unwrap_or("");
            if names.contains(name) {
                Ok(())
            } else {
                Err(format!("Invalid 'tool_choice': function {name:?} is not in tools"))
            }
        }
        Some("allowed_tools") => {
            let allowed =
                choice.get("allowed_tools").ok_or("Invalid 'tool_choice.allowed_tools': missing")?;
            if !matches!(str_at(allowed, "mode"), Some("auto" | "required")) {
                return Err("Invalid 'tool_choice.allowed_tools.mode': expected 'auto' or 'required'.".into());
            }
            let tools = allowed
                .get("tools")
                .and_then(Value::as_array)
                .ok_or("Invalid 'tool_choice.allowed_tools.tools'")?;
            for t in tools {
                let name = t.get("function").and_then(|f| str_at(f, "name")).unwrap_or("");
                if !names.contains(name) {
                    return Err(format!(
                        "Invalid 'tool_choice.allowed_tools.tools': {name:?} is not in tools"
                    ));
                }
            }
            Ok(())
        }
        _ => Err("Invalid 'tool_choice': unknown shape".into()),
    }
}

/// Breakpoints: `cache_control` on tools, system blocks, message content blocks and blocks
/// inside tool results (not on keys inside tool schemas or inputs).
fn count_cache_control(body: &Value) -> usize {
    let has = |b: &Value| usize::from(b.get("cache_control").is_some());
    let list = |k: &str| body.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut n: usize =
        list("tools").iter().map(has).sum::<usize>() + list("system").iter().map(has).sum::<usize>();
    for m in list("messages") {
        for b in m.get("content").and_then(Value::as_array).into_iter().flatten() {
            n += has(b);
            if let Some(inner) = b.get("content").and_then(Value::as_array) {
                n += inner.iter().map(has).sum::<usize>();
            }
        }
    }
    n
}

/// The beta that allows `defer_loading` and `tool_reference` blocks.
const DEFERRED_TOOLS_BETA: &str = "advanced-tool-use-2025-11-20";

/// Anthropic Messages, with the `anthropic-beta` features the request declared.
pub(crate) fn anthropic(body: &Value, betas: &[&str]) -> Result<(), String> {
    if str_at(body, "model").is_none_or(str::is_empty) {
        return Err("model: Field required".into());
    }
    if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return Err("max_tokens: Field required".into());
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array).filter(|m| !m.is_empty()) else {
        return Err("messages: at least one message is required".into());
    };
    let breakpoints = count_cache_control(body);
    if breakpoints > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    let mut names = HashSet::new();
    let mut deferred = HashSet::new();
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for (i, t) in tools.iter().enumerate() {
            let name = str_at(t, "name").unwrap_or("");
            if !valid_name(name) {
                return Err(format!(
                    "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                ));
            }
            if t.get("input_schema").and_then(|s| str_at(s, "type")) != Some("object") {
                return Err(format!("tools.{i}.custom.input_schema.type: Input should be 'object'"));
            }
            match t.get("defer_loading") {
                None => {}
                Some(Value::Bool(_)) if !betas.contains(&DEFERRED_TOOLS_BETA) => {
                    return Err(format!("tools.{i}.custom.defer_loading: Extra inputs are not permitted"));
                }
                Some(Value::Bool(true)) => {
                    if t.get("cache_control").is_some() {
                        return Err(format!(
                            "tools.{i}: cache_control cannot be set on a tool with defer_loading"
                        ));
                    }
                    deferred.insert(name.to_owned());
                }
                Some(Value::Bool(false)) => {}
                Some(_) => {
                    return Err(format!("tools.{i}.custom.defer_loading: Input should be a valid boolean"));
                }
            }
            names.insert(name.to_owned());
        }
        if !tools.is_empty() && deferred.len() == tools.len() {
            return Err("tools: all tools have defer_loading set; at least one tool must be loaded".into());
        }
    }
    if let Some(choice) = body.get("tool_choice") {
        match str_at(choice, "type") {
            Some("auto" | "any" | "none") => {}
            Some("tool") => {
                let name = str_at(choice, "name").unwrap_or("");
                if !names.contains(name) {
                    return Err(format!("tool_choice.tool.name: tool {name:?} not found in tools"));
                }
            }
            _ => return Err("tool_choice: unknown type".into()),
        }
    }
    if str_at(&messages[0], "role") != Some("user") {
        return Err("messages: first message must use the \"user\" role".into());
    }
    let mut previous_uses: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = str_at(m, "role").unwrap_or("");
        if role != "user" && role != "assistant" {
            return Err(format!("messages.{i}.role: Input should be 'user' or 'assistant'"));
        }
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) if s.is_empty() => {
                return Err(format!("messages.{i}: text content blocks must be non-empty"));
            }
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(a)) if a.is_empty() => {
                return Err(format!("messages.{i}: all messages must have non-empty content"));
            }
            Some(Value::Array(a)) => a.clone(),
            _ => return Err(format!("messages.{i}.content: Field required")),
        };
        let mut results = Vec::new();
        let mut uses = Vec::new();
        for (j, b) in blocks.iter().enumerate() {
            match str_at(b, "type") {
                Some("text") if str_at(b, "text").is_none_or(str::is_empty) => {
                    return Err(format!("messages.{i}.content.{j}: text content blocks must be non-empty"));
                }
                Some("tool_use") => {
                    if role != "assistant" {
                        return Err(format!(
                            "messages.{i}.content.{j}: tool_use blocks are only allowed in assistant messages"
                        ));
                    }
                    if !b.get("input").is_some_and(Value::is_object) {
                        return Err(format!(
                            "messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                        ));
                    }
                    uses.push(str_at(b, "id").unwrap_or("").to_owned());
                }
                Some("tool_result") => {
                    if role != "user" {
                        return Err(format!(
                            "messages.{i}.content.{j}: tool_result blocks are only allowed in user messages"
                        ));
                    }
                    let id = str_at(b, "tool_use_id").unwrap_or("");
                    if !previous_uses.iter().any(|u| u == id) {
                        return Err(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                    if let Some(Value::Array(content)) = b.get("content") {
                        for (k, c) in content.iter().enumerate() {
                            match str_at(c, "type") {
                                Some("text" | "image" | "document" | "search_result") => {}
                                Some("tool_reference") => {
                                    let tool = str_at(c, "tool_name").unwrap_or("");
                                    if !betas.contains(&DEFERRED_TOOLS_BETA) {
                                        return Err(format!(
                                            "messages.{i}.content.{j}.content.{k}: tool_reference blocks need the {DEFERRED_TOOLS_BETA} beta"
                                        ));
                                    }
                                    if !deferred.contains(tool) {
                                        return Err(format!(
                                            "messages.{i}.content.{j}.content.{k}: tool_reference {tool:?} does not name a tool with defer_loading"
                                        ));
                                    }
                                }
                                _ => {
                                    return Err(format!(
                                        "messages.{i}.content.{j}.content.{k}.type: Input tag does not match any of the expected tags"
                                    ));
                                }
                            }
                        }
                    }
                    results.push(id.to_owned());
                }
                _ => {}
            }
        }
        if !previous_uses.is_empty() {
            let missing: Vec<&String> = previous_uses.iter().filter(|u| !results.contains(u)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        previous_uses = uses;
    }
    if !previous_uses.is_empty() && str_at(&messages[messages.len() - 1], "role") == Some("assistant") {
        // A trailing assistant message with tool_use is a prefill; the API rejects it.
        return Err("messages: the final assistant message cannot contain tool_use blocks".into());
    }
    Ok(())
}

/// OpenAI Responses.
pub(crate) fn responses(body: &Value) -> Result<(), String> {
    if str_at(body, "model").is_none_or(str::is_empty) {
        return Err("Missing required parameter: 'model'.".into());
    }
    if body.get("input").is_none() {
        return Err("Missing required parameter: 'input'.".into());
    }
    Ok(())
}

/// Tool results carried by a request, for stateless turn matching.
pub(crate) fn count_tool_results(wire: crate::WireFormat, body: &Value) -> usize {
    match wire {
        crate::WireFormat::OpenAiChat => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter(|m| str_at(m, "role") == Some("tool")).count())
            .unwrap_or(0),
        crate::WireFormat::AnthropicMessages => body
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m.get("content").and_then(Value::as_array))
                    .flatten()
                    .filter(|b| str_at(b, "type") == Some("tool_result"))
                    .count()
            })
            .unwrap_or(0),
        crate::WireFormat::OpenAiResponses => body
            .get("input")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter(|i| str_at(i, "type") == Some("function_call_output")).count())
            .unwrap_or(0),
    }
}
