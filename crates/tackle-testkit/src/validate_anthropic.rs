//! Anthropic Messages requests checked as the API checks them: the body is read into the wire
//! types Tackle's provider sends (`tackle_wire::anthropic`), so a field of the wrong shape fails
//! with its path (`messages.2.content.0.tool_use_id: invalid type ...`); then the rules the
//! types cannot say (pairing of tool calls and results, cache breakpoints, deferred tools) are
//! checked, worded as the API words them.

use std::collections::HashSet;

use serde_json::Value;
use tackle_wire::anthropic::{
    ContentBlock, MessageContent, MessagesRequest, Role, SystemBlock, ToolChoice, ToolResultBlock,
    ToolResultContent,
};

use super::{read, valid_name};

/// The beta that allows `defer_loading` and `tool_reference` blocks.
const DEFERRED_TOOLS_BETA: &str = "advanced-tool-use-2025-11-20";

/// Blocks with `cache_control`: tools, system blocks, message blocks and blocks inside tool results.
fn count_cache_control(request: &MessagesRequest) -> usize {
    let tools = request.tools.iter().flatten().filter(|t| t.cache_control.is_some()).count();
    let system = request
        .system
        .iter()
        .filter(|SystemBlock::Text { cache_control, .. }| cache_control.is_some())
        .count();
    let mut blocks = 0;
    for message in &request.messages {
        for block in message.content.blocks().iter() {
            blocks += usize::from(block.cache_control().is_some());
            if let ContentBlock::ToolResult { content: ToolResultContent::Blocks(inner), .. } = block {
                blocks += inner
                    .iter()
                    .filter(|b| matches!(b, ToolResultBlock::Text { cache_control: Some(_), .. }))
                    .count();
            }
        }
    }
    tools + system + blocks
}

/// Anthropic Messages, with the `anthropic-beta` features the request declared.
pub(crate) fn anthropic(body: &Value, betas: &[&str]) -> Result<(), String> {
    let request: MessagesRequest = read(body)?;
    if request.model.is_empty() {
        return Err("model: Field required".into());
    }
    if request.messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let breakpoints = count_cache_control(&request);
    if breakpoints > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    let deferred_allowed = betas.contains(&DEFERRED_TOOLS_BETA);
    let mut names = HashSet::new();
    let mut deferred = HashSet::new();
    let tools = request.tools.as_deref().unwrap_or_default();
    for (i, t) in tools.iter().enumerate() {
        if !valid_name(&t.name) {
            return Err(format!(
                "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if t.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!("tools.{i}.custom.input_schema.type: Input should be 'object'"));
        }
        match t.defer_loading {
            Some(_) if !deferred_allowed => {
                return Err(format!("tools.{i}.custom.defer_loading: Extra inputs are not permitted"));
            }
            Some(true) => {
                if t.cache_control.is_some() {
                    return Err(format!(
                        "tools.{i}: cache_control cannot be set on a tool with defer_loading"
                    ));
                }
                deferred.insert(t.name.to_string());
            }
            Some(false) | None => {}
        }
        names.insert(t.name.to_string());
    }
    if !tools.is_empty() && deferred.len() == tools.len() {
        return Err("tools: all tools have defer_loading set; at least one tool must be loaded".into());
    }
    if let Some(ToolChoice::Tool { name, .. }) = &request.tool_choice
        && !names.contains(name.as_ref())
    {
        return Err(format!("tool_choice.tool.name: tool {name:?} not found in tools"));
    }
    if request.messages[0].role != Role::User {
        return Err("messages: first message must use the \"user\" role".into());
    }
    let mut previous_uses: Vec<String> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        match &m.content {
            MessageContent::Text(text) if text.is_empty() => {
                return Err(format!("messages.{i}: text content blocks must be non-empty"));
            }
            MessageContent::Blocks(blocks) if blocks.is_empty() => {
                return Err(format!("messages.{i}: all messages must have non-empty content"));
            }
            _ => {}
        }
        let mut results = Vec::new();
        let mut uses = Vec::new();
        for (j, b) in m.content.blocks().iter().enumerate() {
            match b {
                ContentBlock::Text { text, .. } if text.is_empty() => {
                    return Err(format!("messages.{i}.content.{j}: text content blocks must be non-empty"));
                }
                ContentBlock::ToolUse { id, input, .. } => {
                    if m.role != Role::Assistant {
                        return Err(format!(
                            "messages.{i}.content.{j}: tool_use blocks are only allowed in assistant messages"
                        ));
                    }
                    if !input.is_object() {
                        return Err(format!(
                            "messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                        ));
                    }
                    uses.push(id.to_string());
                }
                ContentBlock::ToolResult { tool_use_id, content, .. } => {
                    if m.role != Role::User {
                        return Err(format!(
                            "messages.{i}.content.{j}: tool_result blocks are only allowed in user messages"
                        ));
                    }
                    if !previous_uses.iter().any(|u| u == tool_use_id.as_ref()) {
                        return Err(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_use_id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                    if let ToolResultContent::Blocks(inner) = content {
                        for (k, c) in inner.iter().enumerate() {
                            if let ToolResultBlock::ToolReference { tool_name } = c {
                                if !deferred_allowed {
                                    return Err(format!(
                                        "messages.{i}.content.{j}.content.{k}: tool_reference blocks need the {DEFERRED_TOOLS_BETA} beta"
                                    ));
                                }
                                if !deferred.contains(tool_name.as_ref()) {
                                    return Err(format!(
                                        "messages.{i}.content.{j}.content.{k}: tool_reference {tool_name:?} does not name a tool with defer_loading"
                                    ));
                                }
                            }
                        }
                    }
                    results.push(tool_use_id.to_string());
                }
                _ => {}
            }
        }
        if !previous_uses.is_empty() {
            let missing: Vec<&str> =
                previous_uses.iter().filter(|u| !results.contains(u)).map(String::as_str).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.join(", ")
                ));
            }
        }
        previous_uses = uses;
    }
    if !previous_uses.is_empty() && request.messages.last().is_some_and(|m| m.role == Role::Assistant) {
        // A trailing assistant message with tool_use is a prefill; the API rejects it.
        return Err("messages: the final assistant message cannot contain tool_use blocks".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 10, "messages": messages,
               "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]})
    }

    #[test]
    fn a_wrong_shape_names_its_field() {
        let err = anthropic(&json!({"model": "m", "messages": []}), &[]).unwrap_err();
        assert!(err.contains("max_tokens"), "{err}");
        let body = request(json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 7}]}]));
        let err = anthropic(&body, &[]).unwrap_err();
        assert!(
            err.starts_with("messages[0].content[0]") || err.starts_with("messages.0.content.0"),
            "{err}"
        );
        let body = request(json!([{"role": "system", "content": "hi"}]));
        assert!(anthropic(&body, &[]).unwrap_err().contains("role"));
    }

    #[test]
    fn calls_and_results_pair_as_the_api_requires() {
        let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]});
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]});
        let hi = json!({"role": "user", "content": "hi"});
        anthropic(&request(json!([hi, call, result])), &[]).unwrap();
        let err = anthropic(&request(json!([hi, call, hi])), &[]).unwrap_err();
        assert!(err.contains("without `tool_result`"), "{err}");
        let err = anthropic(&request(json!([hi, call])), &[]).unwrap_err();
        assert!(err.contains("final assistant message"), "{err}");
        let err = anthropic(&request(json!([result])), &[]).unwrap_err();
        assert!(err.contains("unexpected `tool_use_id`"), "{err}");
    }

    #[test]
    fn deferred_tools_need_the_beta_and_a_loaded_tool() {
        let body = json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "a", "input_schema": {"type": "object"}, "defer_loading": true}]});
        assert!(anthropic(&body, &[]).unwrap_err().contains("Extra inputs"));
        assert!(
            anthropic(&body, &[DEFERRED_TOOLS_BETA])
                .unwrap_err()
                .contains("at least one tool must be loaded")
        );
        let many = json!({"model": "m", "max_tokens": 1, "system": [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "d", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "e", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi"}]});
        assert!(anthropic(&many, &[]).unwrap_err().contains("Found 5"));
    }
}
