//! OpenAI Responses: `POST /v1/responses` request bodies, their input items, tools and tool
//! choice.
//!
//! Strings are `Cow`: the provider borrows from its request, a deserialized value owns them.
//! Tools are a type parameter of [`ResponsesRequest`]: the provider sends tool definitions
//! rendered once and reused byte for byte (`&RawValue`), a reader gets [`Tool`]s. Items the
//! module does not type (a reasoning item, a hosted tool's call) are kept as JSON,
//! [`InputItem::Other`], and sent back exactly as they came: a reasoning item's bytes are the
//! API's own.
//!
//! ```
//! use std::borrow::Cow;
//! use tackle_wire::responses::{InputItem, MessageRole, Part};
//! let item = InputItem::message(MessageRole::User, vec![Part::InputText { text: Cow::Borrowed("hi") }]);
//! assert_eq!(
//!     serde_json::to_string(&item).unwrap(),
//!     r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#
//! );
//! ```

use std::borrow::Cow;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The body of `POST /v1/responses`, fields in the order the API caches them (tools,
/// instructions, input), so consecutive requests share the longest byte prefix. `T` carries the
/// tool definitions: `Vec<Tool>` when read, the provider's rendered bytes when sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResponsesRequest<'a, T = Vec<Tool<'a>>> {
    /// The model.
    pub model: Cow<'a, str>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<T>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Cow<'a, str>>,
    /// The conversation: items, or one user message as a string.
    pub input: Input<'a>,
    /// How the model may use tools (`auto` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice<'a>>,
    /// Whether several tool calls may come in one answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Output token limit (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Reasoning options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig<'a>>,
    /// Routes requests sharing a prefix to the same cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<Cow<'a, str>>,
    /// Whether OpenAI keeps the response (the API's default is `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// What the response carries besides its output (`reasoning.encrypted_content`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<Cow<'a, str>>>,
    /// `disabled` (an overflow is an error) or `auto` (the API drops the conversation's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Cow<'a, str>>,
    /// Whether the answer streams as server-sent events.
    #[serde(default)]
    pub stream: bool,
}

/// `reasoning`: how hard a reasoning model thinks, and which summary of it it streams.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReasoningConfig<'a> {
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Cow<'a, str>>,
    /// `auto`, `concise`, `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Cow<'a, str>>,
}

/// A function tool definition, or another kind of tool kept as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool<'a> {
    /// A function the client runs.
    Function(FunctionTool<'a>),
    /// A hosted tool (`web_search`, `file_search`, ...) or a custom tool: kept as sent.
    #[serde(untagged)]
    Other(Value),
}

impl<'de, 'a> Deserialize<'de> for Tool<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        if value.get("type").and_then(Value::as_str) == Some("function") {
            FunctionTool::deserialize(value).map(Self::Function).map_err(D::Error::custom)
        } else {
            Ok(Self::Other(value))
        }
    }
}

impl<'a> Tool<'a> {
    /// A function tool, its strictness stated.
    pub fn function(
        name: impl Into<Cow<'a, str>>,
        description: impl Into<Cow<'a, str>>,
        parameters: Cow<'a, Value>,
        strict: bool,
    ) -> Self {
        Self::Function(FunctionTool {
            name: name.into(),
            description: Some(description.into()),
            parameters: Some(parameters),
            strict: Some(strict),
        })
    }
}

/// A function tool: its name, description, parameter schema and strictness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionTool<'a> {
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: Cow<'a, str>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// JSON Schema of its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Cow<'a, Value>>,
    /// Structured outputs; the API enforces strict schemas when this is left out, so Tackle
    /// always states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `input`: a string (one user message) or items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Input<'a> {
    /// One user message.
    Text(Cow<'a, str>),
    /// Items.
    Items(Vec<InputItem<'a>>),
}

impl<'de, 'a> Deserialize<'de> for Input<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InputVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de, 'a> Visitor<'de> for InputVisitor<'a> {
            type Value = Input<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of input items")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Input::Text(Cow::Owned(v.to_owned())))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Input::Items(items))
            }
        }
        d.deserialize_any(InputVisitor(std::marker::PhantomData))
    }
}

/// An item of `input`.
///
/// A reasoning item and any item type this module does not type read as [`InputItem::Other`]:
/// a reasoning item is sent back with the bytes the API gave it, which a typed copy would
/// reorder. A message without `type` (the short form `{"role": "user", "content": "hi"}`) reads
/// as a [`InputItem::Message`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem<'a> {
    /// A message of the user, the assistant, the developer or the system.
    Message(MessageItem<'a>),
    /// A call the model made.
    FunctionCall(FunctionCallItem<'a>),
    /// A call's result.
    FunctionCallOutput(FunctionCallOutputItem<'a>),
    /// Any other item, kept as sent.
    #[serde(untagged)]
    Other(Cow<'a, Value>),
}

impl<'a> InputItem<'a> {
    /// A message of `role` with `content`.
    pub fn message(role: MessageRole, content: Vec<Part<'a>>) -> Self {
        Self::Message(MessageItem { id: None, role, content: MessageContent::Parts(content), status: None })
    }

    /// The item's `type` (`message` for the short form).
    pub fn kind(&self) -> &str {
        match self {
            Self::Message(_) => "message",
            Self::FunctionCall(_) => "function_call",
            Self::FunctionCallOutput(_) => "function_call_output",
            Self::Other(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl<'de, 'a> Deserialize<'de> for InputItem<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let kind = match value.get("type") {
            None if value.get("role").is_some() => Some("message"),
            kind => kind.and_then(Value::as_str),
        };
        match kind {
            Some("message") => MessageItem::deserialize(value).map(Self::Message),
            Some("function_call") => FunctionCallItem::deserialize(value).map(Self::FunctionCall),
            Some("function_call_output") => {
                FunctionCallOutputItem::deserialize(value).map(Self::FunctionCallOutput)
            }
            _ => Ok(Self::Other(Cow::Owned(value))),
        }
        .map_err(D::Error::custom)
    }
}

/// A `message` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageItem<'a> {
    /// Its id, on an assistant message the API produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Cow<'a, str>>,
    /// Who speaks.
    pub role: MessageRole,
    /// What is said.
    pub content: MessageContent<'a>,
    /// `completed`, `incomplete`, ... on an output message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Cow<'a, str>>,
}

/// A `function_call` item (Tackle sends it without its item id: only `call_id` pairs it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallItem<'a> {
    /// The item's id (`fc_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Cow<'a, str>>,
    /// The call's id, which its output names.
    pub call_id: Cow<'a, str>,
    /// The function.
    pub name: Cow<'a, str>,
    /// Its arguments, JSON text as the model wrote it.
    pub arguments: Cow<'a, str>,
    /// `completed`, ... on an output item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Cow<'a, str>>,
}

/// A `function_call_output` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallOutputItem<'a> {
    /// The call it answers.
    pub call_id: Cow<'a, str>,
    /// Its text (or, from some clients, content parts).
    pub output: MessageContent<'a>,
}

/// Who speaks in a message item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The user.
    User,
    /// The model.
    Assistant,
    /// Instructions.
    System,
    /// Instructions, the newer name.
    Developer,
}

/// A message's content: a string, or parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent<'a> {
    /// Text.
    Text(Cow<'a, str>),
    /// Parts.
    Parts(Vec<Part<'a>>),
}

impl<'de, 'a> Deserialize<'de> for MessageContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = MessageContent<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content parts")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(Cow::Owned(v.to_owned())))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(MessageContent::Parts(parts))
            }
        }
        d.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

/// A content part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part<'a> {
    /// Text a person or a runtime wrote.
    InputText {
        /// The text.
        text: Cow<'a, str>,
    },
    /// Text the model wrote.
    OutputText {
        /// The text.
        text: Cow<'a, str>,
        /// Citations (an output part always carries the list).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Vec<Value>>,
        /// Log probabilities (an output part always carries the list).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logprobs: Option<Vec<Value>>,
    },
    /// The model's refusal.
    Refusal {
        /// Why.
        refusal: Cow<'a, str>,
    },
    /// A summary of reasoning.
    SummaryText {
        /// The summary.
        text: Cow<'a, str>,
    },
    /// Any other part (images, files, audio), kept as sent.
    #[serde(untagged)]
    Other(Value),
}

/// How the model may use tools: a mode, one function, or a subset of the tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ToolChoice<'a> {
    /// `none`, `auto` or `required`.
    Mode(ToolChoiceMode),
    /// `{"type": "function", ...}`, `{"type": "allowed_tools", ...}` or a hosted tool.
    Object(ToolChoiceObject<'a>),
}

impl<'de, 'a> Deserialize<'de> for ToolChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match crate::choice::ModeOrObject::<ToolChoiceMode, ToolChoiceObject<'a>>::deserialize(d)? {
            crate::choice::ModeOrObject::Mode(mode) => ToolChoice::Mode(mode),
            crate::choice::ModeOrObject::Object(object) => ToolChoice::Object(object),
        })
    }
}

impl<'a> ToolChoice<'a> {
    /// This function must be called.
    pub fn function(name: impl Into<Cow<'a, str>>) -> Self {
        Self::Object(ToolChoiceObject::Function { name: name.into() })
    }
}

/// The string forms of `tool_choice` (the same in both OpenAI formats).
pub use crate::choice::ToolChoiceMode;

/// The object forms of `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoiceObject<'a> {
    /// This function must be called.
    Function {
        /// The function.
        name: Cow<'a, str>,
    },
    /// Only these tools may be called.
    AllowedTools {
        /// `auto` or `required`.
        mode: ToolChoiceMode,
        /// The tools allowed, each `{"type": "function", "name": ...}`.
        tools: Vec<ToolRef<'a>>,
    },
}

/// A reference to a tool by kind and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef<'a> {
    /// `function` for the tools Tackle sends.
    #[serde(rename = "type")]
    pub kind: Cow<'a, str>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
}

impl<'a> ToolRef<'a> {
    /// The function `name`.
    pub fn function(name: impl Into<Cow<'a, str>>) -> Self {
        Self { kind: Cow::Borrowed("function"), name: Some(name.into()) }
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
