//! `ModelRequest` -> Anthropic Messages request body.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tackle_protocol::{
    AllowedToolsMode, CacheBreakpoint, CachePolicy, ContentBlock, ModelRequest, Role, ToolChoice, ToolSpec,
};

use tackle_wire::anthropic::{self as wire, CacheControl};

use crate::{ToolSchemaRules, adapt_schema};

/// Anthropic's limit of `cache_control` breakpoints per request, across tools, system and messages.
pub const MAX_BREAKPOINTS: usize = 4;

/// Output tokens requested when the request sets none (the field is mandatory).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body: the Messages wire type, with the tools rendered once and reused as bytes.
pub(crate) type MessagesBody<'a> = wire::MessagesRequest<'a, &'a RawValue>;

/// The beta that `defer_loading` and `tool_reference` blocks need.
pub const DEFERRED_TOOLS_BETA: &str = "advanced-tool-use-2025-11-20";

/// Tool definitions in the Messages `tools` format; `cache_last` marks the last tool loaded up
/// front as a cache breakpoint (deferred tools are not part of the rendered prompt).
pub(crate) fn render_tools(tools: &[ToolSpec], cache_last: bool) -> Vec<wire::Tool<'_>> {
    let mut out: Vec<wire::Tool<'_>> = tools
        .iter()
        .map(|t| wire::Tool {
            name: Cow::Borrowed(&t.name),
            description: Some(Cow::Borrowed(&t.description)),
            input_schema: adapt_schema(&t.input_schema, ToolSchemaRules::anthropic()),
            defer_loading: t.defer_loading.then_some(true),
            cache_control: None,
        })
        .collect();
    if cache_last && let Some(last) = out.iter_mut().rev().find(|t| t.defer_loading.is_none()) {
        last.cache_control = Some(CacheControl::ephemeral());
    }
    out
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
        model: Cow::Borrowed(&request.model),
        tools,
        system: system(request, breakpoints.contains(&CacheBreakpoint::System)),
        messages: messages(request, breakpoints),
        tool_choice: has_tools.then(|| tool_choice(&request.tool_choice, request.parallel_tool_calls)),
        max_tokens: request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        temperature: request.temperature,
        stream,
    }
}

fn system(request: &ModelRequest, cache: bool) -> Vec<wire::SystemBlock<'_>> {
    let sections: Vec<_> = request.system.iter().filter(|s| !s.text.is_empty()).collect();
    let last_cacheable = sections.iter().rposition(|s| s.cache == CachePolicy::Cacheable);
    sections
        .iter()
        .enumerate()
        .map(|(i, s)| wire::SystemBlock::Text {
            text: Cow::Borrowed(&s.text),
            cache_control: (cache && Some(i) == last_cacheable).then(CacheControl::ephemeral),
        })
        .collect()
}

fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> wire::ToolChoice<'_> {
    let single = parallel == Some(false);
    let auto = || wire::ToolChoice::Auto { disable_parallel_tool_use: single };
    let any = || wire::ToolChoice::Any { disable_parallel_tool_use: single };
    let tool = |name: &str| wire::ToolChoice::Tool {
        name: Cow::Owned(name.to_owned()),
        disable_parallel_tool_use: single,
    };
    match choice {
        ToolChoice::Auto => auto(),
        ToolChoice::None => wire::ToolChoice::None,
        ToolChoice::Required => any(),
        ToolChoice::Named { name } => tool(name),
        // No native subset: the executor refuses inactive tools and a tail note names the
        // active ones. A single required tool can still be forced natively.
        ToolChoice::Allowed { tools, mode } => match (mode, tools.as_slice()) {
            (AllowedToolsMode::Required, [only]) => tool(only),
            (AllowedToolsMode::Required, _) => any(),
            (AllowedToolsMode::Auto, _) => auto(),
        },
    }
}

/// A stored reasoning block of the Anthropic format, sent back as it came.
fn reasoning_block(data: &Value) -> Option<wire::ContentBlock<'_>> {
    let text = |key: &str| data.get(key).and_then(Value::as_str).map(Cow::Borrowed);
    match data.get("type").and_then(Value::as_str) {
        Some("thinking") => Some(wire::ContentBlock::Thinking {
            thinking: text("thinking").unwrap_or_default(),
            signature: text("signature").unwrap_or_default(),
        }),
        Some("redacted_thinking") => Some(wire::ContentBlock::RedactedThinking { data: text("data")? }),
        _ => None,
    }
}

fn block(block: &ContentBlock) -> Option<wire::ContentBlock<'_>> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => {
            wire::ContentBlock::Text { text: Cow::Borrowed(text), cache_control: None }
        }
        ContentBlock::ToolUse(u) => wire::ContentBlock::ToolUse {
            id: Cow::Borrowed(u.id.as_str()),
            name: Cow::Borrowed(&u.name),
            // Unparseable arguments cannot be sent as an object; the paired error result tells
            // the model what it sent.
            input: u.input.as_json().cloned().unwrap_or_else(|| Value::Object(Map::new())),
            cache_control: None,
        },
        ContentBlock::ToolResult(r) if !r.tool_references.is_empty() && !r.is_error => {
            // A search result that loads deferred tools: the API expands each reference into
            // the tool's definition, so the text listing them is not sent.
            let refs = r
                .tool_references
                .iter()
                .map(|n| wire::ToolResultBlock::ToolReference { tool_name: Cow::Borrowed(n) })
                .collect();
            wire::ContentBlock::ToolResult {
                tool_use_id: Cow::Borrowed(r.tool_use_id.as_str()),
                content: wire::ToolResultContent::Blocks(refs),
                is_error: false,
                cache_control: None,
            }
        }
        ContentBlock::ToolResult(r) => wire::ContentBlock::ToolResult {
            tool_use_id: Cow::Borrowed(r.tool_use_id.as_str()),
            content: wire::ToolResultContent::Text(Cow::Borrowed(if r.content.is_empty() {
                "(no output)"
            } else {
                r.content.as_str()
            })),
            is_error: r.is_error,
            cache_control: None,
        },
        ContentBlock::Reasoning(r) if r.format == "anthropic" => return reasoning_block(&r.data),
        ContentBlock::Reasoning(_) => return None,
    })
}

fn messages<'a>(request: &'a ModelRequest, breakpoints: &[CacheBreakpoint]) -> Vec<wire::Message<'a>> {
    // Consecutive messages of one wire role merge (tool results and a following note are one
    // user turn); tool results lead their user message as the API requires.
    let mut out: Vec<(wire::Role, Vec<wire::ContentBlock<'a>>)> = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        let role = match message.role {
            Role::Assistant => wire::Role::Assistant,
            Role::User | Role::Tool => wire::Role::User,
        };
        let mut blocks = Vec::new();
        let mut results = Vec::new();
        for b in &message.content {
            if let Some(v) = block(b) {
                if matches!(v, wire::ContentBlock::ToolResult { .. }) {
                    results.push(v)
                } else {
                    blocks.push(v)
                }
            }
        }
        if breakpoints.contains(&CacheBreakpoint::Message { index }) {
            // The breakpoint goes on this message's own last block (never a thinking block),
            // before merging moves blocks around.
            if let Some(last) = blocks
                .iter_mut()
                .rev()
                .find(|b| b.takes_cache_control())
                .or_else(|| results.iter_mut().next_back())
            {
                last.set_cache_control(CacheControl::ephemeral());
            }
        }
        if results.is_empty() && blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, content)) if *last_role == role => {
                if !results.is_empty() {
                    let lead = content
                        .iter()
                        .take_while(|b| matches!(b, wire::ContentBlock::ToolResult { .. }))
                        .count();
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
    out.into_iter()
        .map(|(role, content)| wire::Message { role, content: wire::MessageContent::Blocks(content) })
        .collect()
}
