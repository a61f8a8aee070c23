//! Anthropic Messages: `POST /v1/messages` request bodies, stream events and error bodies.
//!
//! Strings are `Cow`: the provider borrows from its request, a deserialized value owns them.
//! Tools are a type parameter of [`MessagesRequest`] because the provider sends tool
//! definitions rendered once and reused byte for byte (`&RawValue`), while the fake model reads
//! them as [`Tool`]s.
//!
//! ```
//! use std::borrow::Cow;
//! use tackle_wire::anthropic::{CacheControl, ContentBlock, Message, MessageContent, Role};
//! let message = Message {
//!     role: Role::User,
//!     content: MessageContent::Blocks(vec![ContentBlock::Text {
//!         text: Cow::Borrowed("hello"),
//!         cache_control: Some(CacheControl::ephemeral()),
//!     }]),
//! };
//! assert_eq!(
//!     serde_json::to_string(&message).unwrap(),
//!     r#"{"role":"user","content":[{"type":"text","text":"hello","cache_control":{"type":"ephemeral"}}]}"#
//! );
//! ```

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /v1/messages`, fields in the order Anthropic caches them (tools, system,
/// messages). `T` carries the tool definitions: `Vec<Tool>` when read, the provider's rendered
/// bytes when sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessagesRequest<'a, T = Vec<Tool<'a>>> {
    /// The model.
    pub model: Cow<'a, str>,
    /// Tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<T>,
    /// System prompt blocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "system_blocks")]
    pub system: Vec<SystemBlock<'a>>,
    /// The conversation.
    pub messages: Vec<Message<'a>>,
    /// How the model may use tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice<'a>>,
    /// Output token limit (required by the API).
    pub max_tokens: u32,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Whether the answer streams as server-sent events.
    #[serde(default)]
    pub stream: bool,
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint after the block carrying it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// Always `ephemeral` today.
    #[serde(rename = "type")]
    pub kind: Cow<'static, str>,
}

impl CacheControl {
    /// The only kind there is.
    pub fn ephemeral() -> Self {
        Self { kind: Cow::Borrowed("ephemeral") }
    }
}

/// A tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool<'a> {
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: Cow<'a, str>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// JSON Schema of its input (`type` must be `object`).
    pub input_schema: Cow<'a, Value>,
    /// Kept out of the context until a `tool_reference` loads it (needs the
    /// `advanced-tool-use-2025-11-20` beta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
    /// A cache breakpoint after this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A system prompt block (only text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemBlock<'a> {
    /// Text.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// A cache breakpoint after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// `system` may also be one string.
fn system_blocks<'de, 'a, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<SystemBlock<'a>>, D::Error> {
    Ok(match d.deserialize_any(TextOrBlocks(std::marker::PhantomData))? {
        Either::Text(text) => vec![SystemBlock::Text { text: Cow::Owned(text), cache_control: None }],
        Either::Blocks(blocks) => blocks,
    })
}

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (and tool results).
    #[default]
    User,
    /// The model.
    Assistant,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Message<'a> {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: MessageContent<'a>,
}

/// A message's content: a string, or blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent<'a> {
    /// Text, short for one text block.
    Text(Cow<'a, str>),
    /// Blocks.
    Blocks(Vec<ContentBlock<'a>>),
}

impl Default for MessageContent<'_> {
    fn default() -> Self {
        Self::Blocks(Vec::new())
    }
}

impl<'a> MessageContent<'a> {
    /// The content as blocks (a string is one text block).
    pub fn blocks(&self) -> Cow<'_, [ContentBlock<'a>]> {
        match self {
            Self::Text(text) => {
                Cow::Owned(vec![ContentBlock::Text { text: text.clone(), cache_control: None }])
            }
            Self::Blocks(blocks) => Cow::Borrowed(blocks),
        }
    }
}

/// A content block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock<'a> {
    /// Text.
    Text {
        /// The text (never empty: the API refuses empty text blocks).
        #[serde(default)]
        text: Cow<'a, str>,
        /// A cache breakpoint after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool call the model made.
    ToolUse {
        /// The call's id (`toolu_…`).
        id: Cow<'a, str>,
        /// The tool.
        name: Cow<'a, str>,
        /// Its arguments, an object.
        #[serde(default)]
        input: Value,
        /// A cache breakpoint after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The result of a tool call, in the next user message.
    ToolResult {
        /// The call it answers.
        tool_use_id: Cow<'a, str>,
        /// Text, or blocks.
        #[serde(default)]
        content: ToolResultContent<'a>,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// A cache breakpoint after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The model's reasoning, signed; sent back unchanged.
    Thinking {
        /// The reasoning text.
        #[serde(default)]
        thinking: Cow<'a, str>,
        /// Anthropic's signature of it (absent when a streamed block starts).
        #[serde(default)]
        signature: Cow<'a, str>,
    },
    /// Reasoning Anthropic keeps encrypted; sent back unchanged.
    RedactedThinking {
        /// The encrypted data.
        data: Cow<'a, str>,
    },
    /// An image (read, never built by Tackle).
    Image {
        /// Where it comes from.
        source: Value,
    },
    /// A document (read, never built by Tackle).
    Document {
        /// Where it comes from.
        source: Value,
    },
    /// A block type this module does not know (server tools' blocks, citations, ...): read
    /// and skipped, never sent.
    #[serde(other)]
    Unknown,
}

impl ContentBlock<'_> {
    /// Whether a cache breakpoint may go on this block (not on reasoning).
    pub fn takes_cache_control(&self) -> bool {
        matches!(self, Self::Text { .. } | Self::ToolUse { .. } | Self::ToolResult { .. })
    }

    /// Sets the block's cache breakpoint, where it can carry one.
    pub fn set_cache_control(&mut self, control: CacheControl) {
        match self {
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => *cache_control = Some(control),
            _ => {}
        }
    }

    /// The block's cache breakpoint.
    pub fn cache_control(&self) -> Option<&CacheControl> {
        match self {
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => cache_control.as_ref(),
            _ => None,
        }
    }
}

/// A tool result's content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent<'a> {
    /// Text.
    Text(Cow<'a, str>),
    /// Blocks.
    Blocks(Vec<ToolResultBlock<'a>>),
}

impl Default for ToolResultContent<'_> {
    fn default() -> Self {
        Self::Text(Cow::Borrowed(""))
    }
}

/// Reads a string or a list of `B` (not `#[serde(untagged)]`, whose error would hide which
/// block and field are wrong).
struct TextOrBlocks<B>(std::marker::PhantomData<B>);

enum Either<B> {
    Text(String),
    Blocks(Vec<B>),
}

impl<'de, B: Deserialize<'de>> serde::de::Visitor<'de> for TextOrBlocks<B> {
    type Value = Either<B>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or a list of content blocks")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Either::Text(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Either::Text(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(block) = seq.next_element()? {
            blocks.push(block);
        }
        Ok(Either::Blocks(blocks))
    }
}

impl<'de, 'a> Deserialize<'de> for MessageContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match d.deserialize_any(TextOrBlocks(std::marker::PhantomData))? {
            Either::Text(text) => Self::Text(Cow::Owned(text)),
            Either::Blocks(blocks) => Self::Blocks(blocks),
        })
    }
}

impl<'de, 'a> Deserialize<'de> for ToolResultContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match d.deserialize_any(TextOrBlocks(std::marker::PhantomData))? {
            Either::Text(text) => Self::Text(Cow::Owned(text)),
            Either::Blocks(blocks) => Self::Blocks(blocks),
        })
    }
}

/// A block inside a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultBlock<'a> {
    /// Text.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// A cache breakpoint after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Loads the deferred tool `tool_name` (the API expands it into the tool's definition).
    ToolReference {
        /// A tool defined with `defer_loading`.
        tool_name: Cow<'a, str>,
    },
    /// An image.
    Image {
        /// Where it comes from.
        source: Value,
    },
    /// A document.
    Document {
        /// Where it comes from.
        source: Value,
    },
    /// A search result.
    SearchResult {
        /// Its fields, as sent.
        #[serde(flatten)]
        fields: serde_json::Map<String, Value>,
    },
}

/// How the model may use tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice<'a> {
    /// The model decides.
    Auto {
        /// Whether to call at most one tool.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// Some tool must be called.
    Any {
        /// Whether to call at most one tool.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// This tool must be called.
    Tool {
        /// The tool.
        name: Cow<'a, str>,
        /// Whether to call at most one tool.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// No tool may be called.
    None,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens neither read from nor written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Input tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// An event of a streamed answer (the SSE event name repeats its `type`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent<'a> {
    /// The answer starts.
    MessageStart {
        /// The message so far (no content yet).
        message: Response<'a>,
    },
    /// A content block starts at `index`.
    ContentBlockStart {
        /// The block's position.
        index: u32,
        /// The block as it starts (empty text, a tool call with `{}` input, ...).
        content_block: ContentBlock<'a>,
    },
    /// More of the block at `index`.
    ContentBlockDelta {
        /// The block's position.
        index: u32,
        /// What comes.
        delta: Delta<'a>,
    },
    /// The block at `index` is complete.
    ContentBlockStop {
        /// The block's position.
        index: u32,
    },
    /// The answer's stop reason and final usage.
    MessageDelta {
        /// The stop reason.
        #[serde(default)]
        delta: MessageDelta<'a>,
        /// Usage so far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The answer is complete.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// The answer failed mid-stream.
    Error {
        /// What failed.
        #[serde(default)]
        error: ErrorDetail<'a>,
    },
    /// An event type added later: skipped.
    #[serde(other)]
    Unknown,
}

/// A delta of a content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta<'a> {
    /// Text.
    TextDelta {
        /// More text.
        text: Cow<'a, str>,
    },
    /// Tool input JSON, in fragments.
    InputJsonDelta {
        /// A fragment.
        partial_json: Cow<'a, str>,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// More reasoning.
        thinking: Cow<'a, str>,
    },
    /// The reasoning's signature.
    SignatureDelta {
        /// More of the signature.
        signature: Cow<'a, str>,
    },
    /// A delta type this module does not know (citations, ...): skipped.
    #[serde(other)]
    Unknown,
}

/// The stop reason of `message_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MessageDelta<'a> {
    /// `end_turn`, `tool_use`, `max_tokens`, ...
    pub stop_reason: Option<Cow<'a, str>>,
    /// The stop sequence met, if any.
    #[serde(default)]
    pub stop_sequence: Option<Cow<'a, str>>,
}

/// A whole (non-streamed) answer, and the message of `message_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response<'a> {
    /// `msg_…`.
    #[serde(default)]
    pub id: Cow<'a, str>,
    /// Always `message`.
    #[serde(rename = "type", default = "message_kind")]
    pub kind: Cow<'a, str>,
    /// Always `assistant`.
    #[serde(default = "assistant")]
    pub role: Role,
    /// The model that answered.
    #[serde(default)]
    pub model: Cow<'a, str>,
    /// The content.
    #[serde(default)]
    pub content: Vec<ContentBlock<'a>>,
    /// Why it stopped (null in `message_start`).
    #[serde(default)]
    pub stop_reason: Option<Cow<'a, str>>,
    /// The stop sequence met, if any.
    #[serde(default)]
    pub stop_sequence: Option<Cow<'a, str>>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
}

fn message_kind() -> Cow<'static, str> {
    Cow::Borrowed("message")
}

fn assistant() -> Role {
    Role::Assistant
}

/// An error body: `{"type": "error", "error": {"type": ..., "message": ...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody<'a> {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: Cow<'a, str>,
    /// What failed.
    pub error: ErrorDetail<'a>,
}

impl<'a> ErrorBody<'a> {
    /// An error of `kind` (`overloaded_error`, `rate_limit_error`, ...) saying `message`.
    pub fn new(kind: impl Into<Cow<'a, str>>, message: impl Into<Cow<'a, str>>) -> Self {
        Self {
            kind: Cow::Borrowed("error"),
            error: ErrorDetail { kind: kind.into(), message: message.into() },
        }
    }
}

/// What failed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorDetail<'a> {
    /// `invalid_request_error`, `overloaded_error`, ...
    #[serde(rename = "type", default)]
    pub kind: Cow<'a, str>,
    /// For people.
    #[serde(default)]
    pub message: Cow<'a, str>,
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
