//! Conversation messages and their content blocks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolCallId;

/// Who authored a message.
///
/// System instructions are not messages: they live in [`crate::ModelRequest::system`] so that
/// every provider can place them where it caches best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or application) driving the agent, and runtime notes addressed to the model.
    User,
    /// The model.
    Assistant,
    /// Results of tool calls; holds only [`ContentBlock::ToolResult`] blocks.
    Tool,
}

/// One message of a conversation.
///
/// ```
/// use tackle_protocol::{Message, Role};
/// let m = Message::user("list the files");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "list the files");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: vec![ContentBlock::text(text)] }
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self { role: Role::Assistant, content: vec![ContentBlock::text(text)] }
    }

    /// A tool message carrying the given results.
    pub fn tool_results(results: impl IntoIterator<Item = ToolResult>) -> Self {
        Self { role: Role::Tool, content: results.into_iter().map(ContentBlock::ToolResult).collect() }
    }

    /// The concatenated text blocks of the message.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The text blocks that are not empty, in order.
    ///
    /// ```
    /// use tackle_protocol::{ContentBlock, Message, Role};
    /// let m = Message { role: Role::User, content: vec![ContentBlock::text("a"), ContentBlock::text(""), ContentBlock::text("b")] };
    /// assert_eq!(m.texts().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
    }

    /// Tool calls made in this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u),
            _ => None,
        })
    }

    /// Tool results carried by this message, in order.
    pub fn tool_results_iter(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
    }

    /// True when the message has no block worth sending (no blocks, or only empty text).
    pub fn is_empty(&self) -> bool {
        self.content.iter().all(ContentBlock::is_empty)
    }
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call made by the model.
    ToolUse(ToolUse),
    /// The result of a tool call, sent back to the model.
    ToolResult(ToolResult),
    /// Model reasoning, kept opaque so it can be sent back unchanged.
    Reasoning(Reasoning),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// True for a text block with no characters; other blocks are never empty.
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Text { text } if text.is_empty())
    }
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// Provider-assigned call id; the matching [`ToolResult::tool_use_id`] must repeat it.
    pub id: ToolCallId,
    /// Name of the tool the model asked for (not necessarily one that exists).
    pub name: String,
    /// The call's arguments.
    pub input: ToolInput,
}

/// Arguments of a tool call as the model produced them.
///
/// Models sometimes emit arguments that are not valid JSON. They are kept raw and flagged, never
/// dropped, so the loop can tell the model exactly what it sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolInput {
    /// Valid JSON arguments.
    Json {
        /// The parsed arguments.
        value: Value,
    },
    /// Arguments that failed to parse.
    Invalid {
        /// The exact text the model produced.
        raw: String,
        /// Why it did not parse.
        error: String,
    },
}

impl ToolInput {
    /// Parses the accumulated argument text of a streamed tool call. Empty text means `{}`.
    ///
    /// ```
    /// use tackle_protocol::ToolInput;
    /// assert!(matches!(ToolInput::parse(""), ToolInput::Json { .. }));
    /// assert!(matches!(ToolInput::parse("{\"a\":"), ToolInput::Invalid { .. }));
    /// ```
    pub fn parse(raw: &str) -> Self {
        if raw.trim().is_empty() {
            return Self::Json { value: Value::Object(Default::default()) };
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(value) => Self::Json { value },
            Err(e) => Self::Invalid { raw: raw.to_owned(), error: e.to_string() },
        }
    }

    /// The arguments as JSON, or `None` when they did not parse.
    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Self::Json { value } => Some(value),
            Self::Invalid { .. } => None,
        }
    }

    /// The arguments as JSON; arguments that did not parse become the string the model sent
    /// (for events and audit records, which must show what was called).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Json { value } => value.clone(),
            Self::Invalid { raw, .. } => Value::String(raw.clone()),
        }
    }

    /// The arguments as the text a provider expects back (OpenAI `arguments`).
    pub fn to_wire_string(&self) -> String {
        match self {
            Self::Json { value } => value.to_string(),
            Self::Invalid { raw, .. } => raw.clone(),
        }
    }
}

impl From<Value> for ToolInput {
    fn from(value: Value) -> Self {
        Self::Json { value }
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolUse::id`] this answers.
    pub tool_use_id: ToolCallId,
    /// What the model reads: the tool's output, or a serialized [`crate::ToolError`] envelope.
    pub content: String,
    /// True when `content` is an error envelope (Anthropic `is_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Deferred tools this result loads (a `tool_search` result under native deferral):
    /// Anthropic receives them as `tool_reference` blocks instead of `content`, which other
    /// providers read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_references: Vec<String>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<ToolCallId>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
            tool_references: Vec::new(),
        }
    }

    /// An error result; `content` should be a serialized [`crate::ToolError`].
    pub fn error(tool_use_id: impl Into<ToolCallId>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: true,
            tool_references: Vec::new(),
        }
    }

    /// The same result, loading `tools` (see [`ToolResult::tool_references`]).
    pub fn with_tool_references(mut self, tools: Vec<String>) -> Self {
        self.tool_references = tools;
        self
    }
}

/// Reasoning emitted by a model, kept verbatim.
///
/// Providers require some reasoning blocks (Anthropic `thinking` with its `signature`) to be sent
/// back byte-for-byte in later requests. Tackle never interprets `data`; it only displays `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// Wire format the block came from (e.g. `anthropic`); other providers drop it.
    pub format: String,
    /// Readable reasoning text when the provider gives one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The provider's block, exactly as received.
    pub data: Value,
}
