//! `ModelRequest` -> Anthropic Messages request body.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tackle_protocol::{
    AllowedToolsMode, CacheBreakpoint, CachePolicy, ContentBlock, ModelRequest, Role, ToolChoice, ToolSpec,
};

use crate::{ToolSchemaRules, adapt_schema};

/// Anthropic's limit of `cache_control` breakpoints per request, across tools, system and messages.
pub const MAX_BREAKPOINTS: usize = 4;

/// Output tokens requested when the request sets none (the field is mandatory).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body; tools, system and messages first, in the order Anthropic caches them.
#[derive(Serialize)]
pub(crate) struct MessagesBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Value>,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    stream: bool,
}

/// The beta that `defer_loading` and `tool_reference` blocks need.
pub const DEFERRED_TOOLS_BETA: &str = "advanced-tool-use-2025-11-20";

/// Tool definitions in the Messages `tools` format; `cache_last` marks the last tool loaded up
/// front as a cache breakpoint (deferred tools are not part of the rendered prompt).
pub(crate) fn render_tools(tools: &[ToolSpec], cache_last: bool) -> Value {
    let mut out: Vec<Value> = tools
        .iter()
        .map(|t| {
            let schema = adapt_schema(&t.input_schema, ToolSchemaRules::anthropic());
            let mut v = json!({ "name": t.name, "description": t.description, "input_schema": schema });
            if t.defer_loading {
                v["defer_loading"] = Value::Bool(true);
            }
            v
        })
        .collect();
    if cache_last && let Some(last) = out.iter_mut().rev().find(|t| t.get("defer_loading").is_none()) {
        last["cache_control"] = json!({ "type": "ephemeral" });
    }
    Value::Array(out)
}

/// The breakpoints that will be honoured: the first four distinct ones, in priority order.
pub(crate) fn effective_breakpoints(request: &ModelRequest) -> Vec<CacheBreakpoint> {
    let mut out: Vec<CacheBreakpoint> = Vec::new();
    for bp in &request.cache_breakpoints {
        if out.contains(bp) {
            continue;
        }
        if out.len() == MAX_BREAKPOINTS {
            tracing::warn!(dropped = ?bp, "more than {MAX_BREAKPOINTS} cache breakpoints requested; extra ones dropped");
            continue;
        }
        out.push(*bp);
    }
    out
}

pub(crate) fn body<'a>(
    request: &'a ModelRequest,
    tools: Option<&'a RawValue>,
    breakpoints: &[CacheBreakpoint],
    stream: bool,
) -> MessagesBody<'a> {
    let has_tools = tools.is_some();
    MessagesBody {
        model: &request.model,
        tools,
        system: system(request, breakpoints.contains(&CacheBreakpoint::System)),
        messages: messages(request, breakpoints),
        tool_choice: has_tools.then(|| tool_choice(&request.tool_choice, request.parallel_tool_calls)),
        max_tokens: request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        temperature: request.temperature,
        stream,
    }
}

fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

fn system(request: &ModelRequest, cache: bool) -> Vec<Value> {
    let sections: Vec<_> = request.system.iter().filter(|s| !s.text.is_empty()).collect();
    let last_cacheable = sections.iter().rposition(|s| s.cache == CachePolicy::Cacheable);
    sections
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut block = json!({ "type": "text", "text": s.text });
            if cache && Some(i) == last_cacheable {
                block["cache_control"] = ephemeral();
            }
            block
        })
        .collect()
}

fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> Value {
    let mut v = match choice {
        ToolChoice::Auto => json!({ "type": "auto" }),
        ToolChoice::None => return json!({ "type": "none" }),
        ToolChoice::Required => json!({ "type": "any" }),
        ToolChoice::Named { name } => json!({ "type": "tool", "name": name }),
        // No native subset: the executor refuses inactive tools and a tail note names the
        // active ones. A single required tool can still be forced natively.
        ToolChoice::Allowed { tools, mode } => match (mode, tools.as_slice()) {
            (AllowedToolsMode::Required, [only]) => json!({ "type": "tool", "name": only }),
            (AllowedToolsMode::Required, _) => json!({ "type": "any" }),
            (AllowedToolsMode::Auto, _) => json!({ "type": "auto" }),
        },
    };
    if parallel == Some(false) {
        v["disable_parallel_tool_use"] = Value::Bool(true);
    }
    v
}

fn block_json(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({ "type": "text", "text": text }),
        ContentBlock::ToolUse(u) => {
            // Unparseable arguments cannot be sent as an object; the paired error result tells
            // the model what it sent.
            let input = u.input.as_json().cloned().unwrap_or_else(|| json!({}));
            json!({ "type": "tool_use", "id": u.id, "name": u.name, "input": input })
        }
        ContentBlock::ToolResult(r) if !r.tool_references.is_empty() && !r.is_error => {
            // A search result that loads deferred tools: the API expands each reference into
            // the tool's definition, so the text listing them is not sent.
            let refs: Vec<Value> = r
                .tool_references
                .iter()
                .map(|n| json!({ "type": "tool_reference", "tool_name": n }))
                .collect();
            json!({ "type": "tool_result", "tool_use_id": r.tool_use_id, "content": refs })
        }
        ContentBlock::ToolResult(r) => {
            let content = if r.content.is_empty() { "(no output)" } else { r.content.as_str() };
            let mut v = json!({ "type": "tool_result", "tool_use_id": r.tool_use_id, "content": content });
            if r.is_error {
                v["is_error"] = Value::Bool(true);
            }
            v
        }
        ContentBlock::Reasoning(r) if r.format == "anthropic" => r.data.clone(),
        ContentBlock::Reasoning(_) => return None,
    })
}

fn messages(request: &ModelRequest, breakpoints: &[CacheBreakpoint]) -> Vec<Value> {
    // Consecutive messages of one wire role merge (tool results and a following note are one
    // user turn); tool results lead their user message as the API requires.
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool => "user",
        };
        let mut blocks: Vec<Value> = Vec::new();
        let mut results: Vec<Value> = Vec::new();
        for block in &message.content {
            if let Some(v) = block_json(block) {
                if matches!(block, ContentBlock::ToolResult(_)) { results.push(v) } else { blocks.push(v) }
            }
        }
        if breakpoints.contains(&CacheBreakpoint::Message { index }) {
            // The breakpoint goes on this message's own last block (never a thinking block),
            // before merging moves blocks around.
            let cacheable = |b: &&mut Value| b["type"] != "thinking" && b["type"] != "redacted_thinking";
            if let Some(block) =
                blocks.iter_mut().rev().find(cacheable).or_else(|| results.iter_mut().next_back())
            {
                block["cache_control"] = ephemeral();
            }
        }
        if results.is_empty() && blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, content)) if *last_role == role => {
                if !results.is_empty() {
                    let lead = content.iter().take_while(|b| b["type"] == "tool_result").count();
                    content.splice(lead..lead, results);
                }
                content.extend(blocks);
            }
            _ => {
                results.extend(blocks);
                out.push((role, results));
            }
        }
    }
    out.into_iter().map(|(role, content)| json!({ "role": role, "content": content })).collect()
}
