//! OpenAI Chat Completions: `POST /v1/chat/completions` request bodies, stream chunks, whole
//! completions and error bodies. OpenAI-compatible servers (Ollama, vLLM, llama.cpp, gateways)
//! speak the same format with fewer fields.
//!
//! Strings are `Cow`: the provider borrows from its request, a deserialized value owns them. Tools are a
//! type parameter of [`ChatRequest`]: the provider sends tool definitions rendered once and
//! reused byte for byte (`&RawValue`), a reader gets [`Tool`]s.
//!
//! A message is one struct, not an enum tagged by role, so that a wrong field fails with its
//! whole path (`messages[2].tool_calls[0].function: missing field ...`); which fields a role
//! needs is a rule the reader checks ([`Message::content`] is optional for an assistant only).
//!
//! ```
//! use std::borrow::Cow;
//! use tackle_wire::chat::{Content, Message, Role};
//! let message = Message::text(Role::User, "hello");
//! assert_eq!(serde_json::to_string(&message).unwrap(), r#"{"role":"user","content":"hello"}"#);
//! let read: Message = serde_json::from_str(r#"{"role":"tool","tool_call_id":"c1","content":"ok"}"#).unwrap();
//! assert_eq!(read.tool_call_id.as_deref(), Some("c1"));
//! assert_eq!(read.content, Some(Content::Text(Cow::Borrowed("ok"))));
//! ```

use std::borrow::Cow;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The body of `POST /v1/chat/completions`, fields in the order OpenAI caches them (tools, then
/// messages, the system prompt being a message), so consecutive requests share the longest
/// byte prefix. `T` carries the tool definitions: `Vec<Tool>` when read, the provider's rendered
/// bytes when sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatRequest<'a, T = Vec<Tool<'a>>> {
    /// The model.
    pub model: Cow<'a, str>,
    /// Function tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<T>,
    /// The conversation.
    pub messages: Vec<Message<'a>>,
    /// How the model may use tools (`auto` when absent and tools are present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice<'a>>,
    /// Whether several tool calls may come in one answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Output token limit (OpenAI's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// Output token limit (the older name compatible servers read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The shape of the answer: text, any JSON object, or JSON matching a schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat<'a>>,
    /// Routes requests sharing a prefix to the same cache (OpenAI only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<Cow<'a, str>>,
    /// Whether the answer streams as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

/// `response_format`: what the assistant's answer must be.
///
/// ```
/// use std::borrow::Cow;
/// use serde_json::json;
/// use tackle_wire::chat::{JsonSchemaFormat, ResponseFormat};
/// let schema = json!({"type": "object"});
/// let format = ResponseFormat::JsonSchema { json_schema: JsonSchemaFormat::new("answer", &schema, true) };
/// assert_eq!(
///     serde_json::to_value(&format).unwrap(),
///     json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat<'a> {
    /// Free text (the default).
    Text,
    /// Any valid JSON object (the older JSON mode).
    JsonObject,
    /// JSON matching a schema (Structured Outputs).
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchemaFormat<'a>,
    },
}

/// A named JSON Schema for the answer: Chat Completions' `response_format.json_schema`, and the
/// fields of a Responses `text.format` of type `json_schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat<'a> {
    /// The format's name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: Cow<'a, str>,
    /// What the format is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Cow<'a, Value>>,
    /// Whether the API constrains decoding to the schema (only a subset of JSON Schema is
    /// accepted then: closed objects, every property required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl<'a> JsonSchemaFormat<'a> {
    /// A format borrowing its schema.
    pub fn new(name: impl Into<Cow<'a, str>>, schema: &'a Value, strict: bool) -> Self {
        Self {
            name: name.into(),
            description: None,
            schema: Some(Cow::Borrowed(schema)),
            strict: Some(strict),
        }
    }
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Whether a last chunk carries the usage (with no choices).
    #[serde(default)]
    pub include_usage: bool,
}

/// A function tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool<'a> {
    /// Always `function` for the tools Tackle sends (custom tools exist too).
    #[serde(rename = "type")]
    pub kind: Cow<'a, str>,
    /// The function.
    pub function: FunctionDefinition<'a>,
}

impl<'a> Tool<'a> {
    /// A function tool.
    pub fn function(
        name: impl Into<Cow<'a, str>>,
        description: impl Into<Cow<'a, str>>,
        parameters: Cow<'a, Value>,
    ) -> Self {
        Self {
            kind: Cow::Borrowed("function"),
            function: FunctionDefinition {
                name: name.into(),
                description: Some(description.into()),
                parameters: Some(parameters),
                strict: None,
            },
        }
    }
}

/// A function's name, description and parameter schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition<'a> {
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: Cow<'a, str>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// JSON Schema of its arguments (an object schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Cow<'a, Value>>,
    /// Structured outputs: the arguments follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions (one message of the whole system prompt).
    System,
    /// Instructions, the newer name for `system`.
    Developer,
    /// The user.
    #[default]
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message. Field order is the order OpenAI's own clients write, which is the byte order
/// the provider sends: `role`, then `tool_call_id` (tool results), `content`, `tool_calls`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Message<'a> {
    /// Who speaks.
    pub role: Role,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<Cow<'a, str>>,
    /// The text: required for every role but `assistant`, whose `null` means it only calls
    /// tools.
    #[serde(default)]
    pub content: Option<Content<'a>>,
    /// The assistant's tool calls (`null` reads as none, as some clients send it).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub tool_calls: Vec<ToolCall<'a>>,
}

/// A list that may be `null`.
fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl<'a> Message<'a> {
    /// A message of `role` saying `text`.
    pub fn text(role: Role, text: impl Into<Cow<'a, str>>) -> Self {
        Self { role, content: Some(Content::Text(text.into())), ..Self::default() }
    }

    /// The result of the call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<Cow<'a, str>>, text: impl Into<Cow<'a, str>>) -> Self {
        Self {
            role: Role::Tool,
            tool_call_id: Some(tool_call_id.into()),
            content: Some(Content::Text(text.into())),
            tool_calls: Vec::new(),
        }
    }
}

/// A message's content: a string, or parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content<'a> {
    /// Text.
    Text(Cow<'a, str>),
    /// Parts (text, images, audio, files).
    Parts(Vec<ContentPart<'a>>),
}

impl<'de, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

/// Reads a string or a list of parts (not `#[serde(untagged)]`, whose error would hide which
/// part and field are wrong).
struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de, 'a> Visitor<'de> for ContentVisitor<'a> {
    type Value = Content<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or a list of content parts")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(part) = seq.next_element()? {
            parts.push(part);
        }
        Ok(Content::Parts(parts))
    }
}

impl Content<'_> {
    /// The text parts joined (the string itself for text); `None` when a part is not text.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Self::Text(text) => Some(Cow::Borrowed(text)),
            Self::Parts(parts) => {
                let mut out = String::new();
                for part in parts {
                    match part {
                        ContentPart::Text { text } => out.push_str(text),
                        _ => return None,
                    }
                }
                Some(Cow::Owned(out))
            }
        }
    }
}

/// A part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart<'a> {
    /// Text.
    Text {
        /// The text.
        text: Cow<'a, str>,
    },
    /// An assistant's refusal.
    Refusal {
        /// Why.
        refusal: Cow<'a, str>,
    },
    /// An image (read, never built by Tackle).
    ImageUrl {
        /// `{"url": ..., "detail": ...}`.
        image_url: Value,
    },
    /// Audio (read, never built by Tackle).
    InputAudio {
        /// `{"data": ..., "format": ...}`.
        input_audio: Value,
    },
    /// A file (read, never built by Tackle).
    File {
        /// `{"file_id": ...}` or `{"file_data": ..., "filename": ...}`.
        file: Value,
    },
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall<'a> {
    /// The call's id (`call_…`).
    pub id: Cow<'a, str>,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: Cow<'a, str>,
    /// What is called.
    pub function: FunctionCall<'a>,
}

impl<'a> ToolCall<'a> {
    /// A call of the function `name` with `arguments` (JSON text).
    pub fn function(
        id: impl Into<Cow<'a, str>>,
        name: impl Into<Cow<'a, str>>,
        arguments: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall { name: name.into(), arguments: arguments.into() },
        }
    }
}

fn function_kind() -> Cow<'static, str> {
    Cow::Borrowed("function")
}

/// A called function and its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall<'a> {
    /// The function.
    pub name: Cow<'a, str>,
    /// Its arguments, JSON text as the model wrote it (not always valid JSON).
    #[serde(default)]
    pub arguments: Cow<'a, str>,
}

/// How the model may use tools: a mode, one function, or a subset of the tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ToolChoice<'a> {
    /// `none`, `auto` or `required`.
    Mode(ToolChoiceMode),
    /// `{"type": "function", ...}` or `{"type": "allowed_tools", ...}`.
    Object(ToolChoiceObject<'a>),
}

impl<'a> ToolChoice<'a> {
    /// This function must be called.
    pub fn function(name: impl Into<Cow<'a, str>>) -> Self {
        Self::Object(ToolChoiceObject::Function { function: FunctionName { name: name.into() } })
    }
}

impl<'de, 'a> Deserialize<'de> for ToolChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match crate::choice::ModeOrObject::<ToolChoiceMode, ToolChoiceObject<'a>>::deserialize(d)? {
            crate::choice::ModeOrObject::Mode(mode) => ToolChoice::Mode(mode),
            crate::choice::ModeOrObject::Object(object) => ToolChoice::Object(object),
        })
    }
}

/// The string forms of `tool_choice` (the same in both OpenAI formats).
pub use crate::choice::ToolChoiceMode;

/// The object forms of `tool_choice`: this API's, the Responses API's spelling of a function or
/// an allowed subset (Tackle's server accepts either API's spelling on both endpoints), and any
/// other `type`, kept as sent for the reader to refuse by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoiceObject<'a> {
    /// This function must be called.
    Function {
        /// The function.
        function: FunctionName<'a>,
    },
    /// Only these tools may be called (OpenAI only).
    AllowedTools {
        /// The subset and the mode.
        allowed_tools: AllowedTools<'a>,
    },
    /// This custom (free-text) tool must be called.
    Custom {
        /// The tool.
        custom: FunctionName<'a>,
    },
    /// `{"type": "function", "name"}` or `{"type": "allowed_tools", "mode", "tools"}`: the
    /// Responses API's spelling (only its `Function` and `AllowedTools` are read here).
    #[serde(untagged)]
    Responses(Box<crate::responses::ToolChoiceObject<'a>>),
    /// An object of a `type` this module does not know (or none), as sent.
    #[serde(untagged)]
    Other(Value),
}

/// The variants of [`ToolChoiceObject`] in this API's spelling, read by serde's derive (the
/// whole enum's derived reader would try its untagged variants after a misfit, losing which
/// field failed).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", remote = "ToolChoiceObject")]
enum OwnChoice<'a> {
    Function { function: FunctionName<'a> },
    AllowedTools { allowed_tools: AllowedTools<'a> },
    Custom { custom: FunctionName<'a> },
}

impl<'de, 'a> Deserialize<'de> for ToolChoiceObject<'a> {
    /// By `type`, and for `function` and `allowed_tools` by which spelling the keys show; a
    /// misfit of a known type fails naming the field (`missing field `name``).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let read = match crate::choice::shape(&value, &["function", "allowed_tools", "custom"], true) {
            crate::choice::Shape::Own => OwnChoice::deserialize(value),
            crate::choice::Shape::Foreign => {
                crate::responses::ToolChoiceObject::deserialize(value).map(|o| Self::Responses(Box::new(o)))
            }
            crate::choice::Shape::Unknown => return Ok(Self::Other(value)),
        };
        read.map_err(D::Error::custom)
    }
}

/// `{"name": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionName<'a> {
    /// The function.
    pub name: Cow<'a, str>,
}

/// The subset of `allowed_tools`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedTools<'a> {
    /// `auto` or `required` (`none` is refused).
    pub mode: ToolChoiceMode,
    /// The tools allowed, each `{"type": "function", "function": {"name": ...}}`.
    pub tools: Vec<ToolRef<'a>>,
}

/// A reference to a function tool: `{"type": "function", "function": {"name"}}`, or the
/// Responses API's `{"type": "function", "name"}` (Tackle's server accepts either; `type` may
/// be left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef<'a> {
    /// `function`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Cow<'a, str>>,
    /// The function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionName<'a>>,
    /// The function's name, in the Responses API's spelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
    /// The fields of other kinds of tool (`server_label` of an `mcp` one, ...), as sent.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl<'a> ToolRef<'a> {
    /// The function `name`.
    pub fn function(name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            kind: Some(function_kind()),
            function: Some(FunctionName { name: name.into() }),
            name: None,
            other: serde_json::Map::new(),
        }
    }

    /// The function's name, in either spelling.
    pub fn name(&self) -> Option<&str> {
        self.function.as_ref().map(|f| f.name.as_ref()).or(self.name.as_deref())
    }
}

/// One `chat.completion.chunk` of a streamed answer (or, with `error`, a failure mid-stream).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Chunk<'a> {
    /// `chatcmpl-…`, repeated by every chunk.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<Cow<'a, str>>,
    /// `chat.completion.chunk`.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub object: Option<Cow<'a, str>>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<u64>,
    /// The model that answers.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<Cow<'a, str>>,
    /// The backend configuration.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_fingerprint: Option<Cow<'a, str>>,
    /// The deltas (none in the usage chunk).
    #[serde(default, borrow)]
    pub choices: Vec<ChunkChoice<'a>>,
    /// Token counts, in the last chunk when `stream_options.include_usage` asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// A failure mid-stream, as the server sent it (`message`, `type`, `code`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<Value>>,
}

/// A choice of a chunk.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkChoice<'a> {
    /// The choice (0: Tackle never asks for more than one).
    #[serde(default)]
    pub index: u32,
    /// What comes (some compatible servers send `null` in the last chunk).
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
    /// Log probabilities (not requested: `null`).
    #[serde(default)]
    pub logprobs: Option<Box<Value>>,
    /// Why the answer stopped, in its last chunk.
    #[serde(default, borrow, deserialize_with = "crate::borrow::option")]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// The delta of a chunk.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta<'a> {
    /// `assistant`, in the first chunk (a string: compatible servers are not all careful).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub role: Option<Cow<'a, str>>,
    /// More text.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub content: Option<Cow<'a, str>>,
    /// More of a refusal.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refusal: Option<Cow<'a, str>>,
    /// Reasoning text of OpenAI-compatible servers (DeepSeek, vLLM: `reasoning_content`;
    /// Ollama, OpenRouter: `reasoning`).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        alias = "reasoning",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// Fragments of tool calls.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

/// A fragment of a tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallDelta<'a> {
    /// Which call (some compatible servers leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The call's id, in its first fragment.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<Cow<'a, str>>,
    /// `function`, in its first fragment.
    #[serde(
        rename = "type",
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<Cow<'a, str>>,
    /// The name (first fragment) and more arguments.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta<'a>>,
}

/// A fragment of a called function.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionDelta<'a> {
    /// The function, in the call's first fragment.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<Cow<'a, str>>,
    /// More of the arguments' JSON text.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub arguments: Option<Cow<'a, str>>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
    /// Of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// Input token details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Audio input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_tokens: Option<u64>,
}

/// Output token details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompletionTokensDetails {
    /// Reasoning tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A whole (non-streamed) answer: `chat.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion<'a> {
    /// `chatcmpl-…` (empty when a compatible server leaves it out).
    #[serde(default)]
    pub id: Cow<'a, str>,
    /// `chat.completion`.
    #[serde(default)]
    pub object: Cow<'a, str>,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The model that answered.
    #[serde(default)]
    pub model: Cow<'a, str>,
    /// The backend configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<Cow<'a, str>>,
    /// The answers (one).
    pub choices: Vec<CompletionChoice<'a>>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
}

/// A choice of a whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice<'a> {
    /// The choice.
    #[serde(default)]
    pub index: u32,
    /// The answer.
    pub message: AnswerMessage<'a>,
    /// Log probabilities (not requested: `null`).
    #[serde(default)]
    pub logprobs: Option<Value>,
    /// Why it stopped.
    pub finish_reason: Option<Cow<'a, str>>,
}

/// The assistant message of a whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerMessage<'a> {
    /// `assistant`.
    pub role: Role,
    /// The text (`null` when it only calls tools).
    pub content: Option<Cow<'a, str>>,
    /// A refusal, instead of text.
    #[serde(default)]
    pub refusal: Option<Cow<'a, str>>,
    /// Reasoning text of OpenAI-compatible servers (DeepSeek, vLLM: `reasoning_content`;
    /// Ollama, OpenRouter: `reasoning`), as in a stream's [`Delta`].
    #[serde(default, alias = "reasoning", skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// Its tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall<'a>>,
}

/// An error body: `{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody<'a> {
    /// What failed.
    pub error: ErrorDetail<'a>,
}

impl<'a> ErrorBody<'a> {
    /// An error of `kind` (`invalid_request_error`, `server_error`, ...) saying `message`.
    pub fn new(kind: impl Into<Cow<'a, str>>, message: impl Into<Cow<'a, str>>) -> Self {
        Self { error: ErrorDetail { message: message.into(), kind: kind.into(), param: None, code: None } }
    }
}

/// What failed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorDetail<'a> {
    /// For people.
    #[serde(default)]
    pub message: Cow<'a, str>,
    /// `invalid_request_error`, `rate_limit_error`, `server_error`, ...
    #[serde(rename = "type", default)]
    pub kind: Cow<'a, str>,
    /// The parameter at fault.
    #[serde(default)]
    pub param: Option<Cow<'a, str>>,
    /// A code: a string (`context_length_exceeded`) or, from some servers, the HTTP status.
    #[serde(default)]
    pub code: Option<Value>,
}

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;
