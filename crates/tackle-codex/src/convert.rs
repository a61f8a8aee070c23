//! Tackle's conversation and tools in Codex's terms: tool specs as dynamic tools, history as
//! Responses items for `thread/inject_items`, tool results as `item/tool/call` answers, and
//! the marker that keeps a thread id in Tackle's stored history.

use serde::{Deserialize, Serialize};
use tackle_protocol::{ContentBlock, Message, Reasoning, Role, ToolResult, ToolSpec};
use tackle_wire::responses::{
    FunctionCallItem, FunctionCallOutputItem, InputItem, MessageContent, MessageRole, Part,
};

use crate::wire::{DynamicToolCallResponse, DynamicToolSpec, ThreadId};

/// `Reasoning::format` of the marker a Codex response starts with.
pub const MARKER_FORMAT: &str = "codex";

/// What a Codex response records in Tackle's history (as an opaque reasoning block, which
/// other providers drop): the thread it came from, the tool set that thread was started with,
/// and a nonce naming the response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadMarker {
    /// The Codex thread.
    pub thread: ThreadId,
    /// Fingerprint of the thread's dynamic tools.
    pub tools: String,
    /// Unique per response.
    pub nonce: String,
}

impl ThreadMarker {
    /// The history block carrying this marker.
    pub fn to_reasoning(&self) -> Reasoning {
        // A struct of strings always serializes.
        let data = serde_json::to_value(self).unwrap_or_default();
        Reasoning { format: MARKER_FORMAT.into(), text: String::new(), data }
    }

    /// The marker in a content block, if it is one.
    pub fn from_block(block: &ContentBlock) -> Option<Self> {
        match block {
            ContentBlock::Reasoning(r) if r.format == MARKER_FORMAT => {
                serde_json::from_value(r.data.clone()).ok()
            }
            _ => None,
        }
    }
}

/// The latest marker of a history and the index of its message.
pub fn latest_marker(messages: &[Message]) -> Option<(usize, ThreadMarker)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::Assistant)
        .find_map(|(i, m)| m.content.iter().find_map(ThreadMarker::from_block).map(|marker| (i, marker)))
}

/// Tackle tool specs as Codex dynamic tools (names, descriptions and schemas unchanged).
pub fn dynamic_tools(specs: &[ToolSpec]) -> Vec<DynamicToolSpec> {
    specs
        .iter()
        .map(|s| DynamicToolSpec::Function {
            name: s.name.clone(),
            description: s.description.clone(),
            input_schema: s.input_schema.clone(),
        })
        .collect()
}

/// A short stable fingerprint of a dynamic tool list: a changed list needs a new thread.
pub fn fingerprint(tools: &[DynamicToolSpec]) -> String {
    let bytes = serde_json::to_vec(tools).unwrap_or_default();
    blake3::hash(&bytes).to_hex()[..16].to_owned()
}

/// A tool result as Codex's answer to `item/tool/call`.
pub fn tool_answer(result: &ToolResult) -> DynamicToolCallResponse {
    DynamicToolCallResponse::text(result.content.clone(), !result.is_error)
}

/// A tool result as a Responses `function_call_output` item (for a call whose request died
/// with its process).
pub fn output_item(result: &ToolResult) -> InputItem<'static> {
    InputItem::FunctionCallOutput(FunctionCallOutputItem {
        call_id: result.tool_use_id.to_string().into(),
        output: MessageContent::Text(result.content.clone().into()),
    })
}

/// Messages as Responses items, to seed a new thread with a conversation it did not have.
/// Markers and other opaque reasoning stay out.
pub fn history_items(messages: &[Message]) -> Vec<InputItem<'static>> {
    let mut items = Vec::new();
    for m in messages {
        match m.role {
            Role::User => {
                let text = m.text();
                if !text.is_empty() {
                    items.push(InputItem::message(
                        MessageRole::User,
                        vec![Part::InputText { text: text.into() }],
                    ));
                }
            }
            Role::Assistant => {
                for block in &m.content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => items.push(InputItem::message(
                            MessageRole::Assistant,
                            vec![Part::OutputText {
                                text: text.clone().into(),
                                annotations: None,
                                logprobs: None,
                            }],
                        )),
                        ContentBlock::ToolUse(u) => items.push(InputItem::FunctionCall(FunctionCallItem {
                            id: None,
                            call_id: u.id.to_string().into(),
                            name: u.name.clone().into(),
                            namespace: None,
                            arguments: u.input.to_wire_string().into(),
                            status: None,
                        })),
                        _ => {}
                    }
                }
            }
            Role::Tool => items.extend(m.tool_results_iter().map(output_item)),
        }
    }
    items
}

/// Where the trailing user messages (the new input of a turn) begin.
pub fn trailing_user_start(messages: &[Message]) -> usize {
    messages.iter().rposition(|m| m.role != Role::User).map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tackle_protocol::{ToolInput, ToolUse};

    use super::*;

    #[test]
    fn the_latest_marker_is_found_and_survives_serialization() {
        let marker = ThreadMarker { thread: "th-1".into(), tools: "abc".into(), nonce: "n1".into() };
        let mut with_marker = Message::assistant("hi");
        with_marker.content.insert(0, ContentBlock::Reasoning(marker.to_reasoning()));
        let stored: Message = serde_json::from_str(&serde_json::to_string(&with_marker).unwrap()).unwrap();
        let history = vec![Message::user("a"), stored, Message::user("b")];
        assert_eq!(latest_marker(&history), Some((1, marker)));
        assert_eq!(latest_marker(&history[..1]), None);
        assert_eq!(trailing_user_start(&history), 2);
        assert_eq!(trailing_user_start(&history[..1]), 0);
    }

    #[test]
    fn history_becomes_responses_items_without_markers() {
        let marker = ThreadMarker { thread: "t".into(), tools: "f".into(), nonce: "n".into() };
        let call =
            ToolUse { id: "c1".into(), name: "read_file".into(), input: ToolInput::parse(r#"{"path":"a"}"#) };
        let history = vec![
            Message::user("read a"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Reasoning(marker.to_reasoning()),
                    ContentBlock::text("sure"),
                    ContentBlock::ToolUse(call),
                ],
            },
            Message::tool_results([ToolResult::error("c1", "{\"error\":\"nope\"}")]),
        ];
        let items: Vec<Value> =
            history_items(&history).iter().map(|i| serde_json::to_value(i).unwrap()).collect();
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[0],
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a"}]}),
            "the bytes codex receives, key order included"
        );
        assert_eq!(
            serde_json::to_string(&items[1]).unwrap(),
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"sure"}]}"#
        );
        assert_eq!(
            serde_json::to_string(&items[3]).unwrap(),
            r#"{"type":"function_call_output","call_id":"c1","output":"{\"error\":\"nope\"}"}"#
        );
        assert_eq!(items[0]["content"][0]["text"], "read a");
        assert_eq!(items[1]["content"][0]["type"], "output_text");
        assert_eq!(
            items[2],
            json!({"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"a\"}"})
        );
        assert_eq!(items[3]["type"], "function_call_output");
        assert!(!tool_answer(&ToolResult::error("c1", "x")).success);
    }

    #[test]
    fn fingerprints_change_with_any_definition_byte() {
        let a = dynamic_tools(&[ToolSpec::new("t", "d", json!({"type": "object"}))]);
        let b = dynamic_tools(&[ToolSpec::new("t", "d.", json!({"type": "object"}))]);
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a).len(), 16);
    }
}
