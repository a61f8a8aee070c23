//! OpenAI Responses: `POST /v1/responses` request bodies, their input items, tools and tool
//! choice; the `response` object, its output items, and the events of a streamed response.
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
    /// The shape of the text answer (`text.format`: text, any JSON object, JSON matching a
    /// schema) and its verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig<'a>>,
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

/// `text`: the answer's format and verbosity; a response echoes it.
///
/// ```
/// use serde_json::json;
/// use tackle_wire::chat::JsonSchemaFormat;
/// use tackle_wire::responses::{TextConfig, TextFormat};
/// let schema = json!({"type": "object"});
/// let text = TextConfig { format: Some(TextFormat::JsonSchema(JsonSchemaFormat::new("answer", &schema, false))), verbosity: None };
/// assert_eq!(
///     serde_json::to_value(&text).unwrap(),
///     json!({"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": false}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextConfig<'a> {
    /// What the text must be (`{"type": "text"}` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat<'a>>,
    /// `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Cow<'a, str>>,
}

/// `text.format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat<'a> {
    /// Free text (the default).
    Text,
    /// Any valid JSON object (the older JSON mode).
    JsonObject,
    /// JSON matching a schema: the same fields as Chat Completions' `json_schema`, flat.
    JsonSchema(crate::chat::JsonSchemaFormat<'a>),
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

impl InputItem<'_> {
    /// The `type` of an input item as JSON: `message` for the short form (a `role`, no `type`),
    /// `None` when it has neither. A reader that wants errors naming the field inside the item
    /// dispatches on this and reads [`MessageItem`], [`FunctionCallItem`] or
    /// [`FunctionCallOutputItem`] itself, as this type's `Deserialize` does.
    pub fn kind_of(value: &Value) -> Option<&str> {
        match value.get("type") {
            None if value.get("role").is_some() => Some("message"),
            kind => kind.and_then(Value::as_str),
        }
    }
}

impl<'de, 'a> Deserialize<'de> for InputItem<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        match Self::kind_of(&value) {
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
    /// The namespace of a namespaced tool (Codex's `mcp__server`, ...): the tool is
    /// `<namespace>__<name>`. Absent for a plain function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Cow<'a, str>>,
    /// Its arguments, JSON text as the model wrote it (read as empty when left out).
    #[serde(default)]
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

impl<'a> Part<'a> {
    /// Text the model wrote, as an output part carries it: with its (empty) `annotations` and
    /// `logprobs` lists.
    pub fn output_text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::OutputText { text: text.into(), annotations: Some(Vec::new()), logprobs: Some(Vec::new()) }
    }
}

impl<'a> MessageItem<'a> {
    /// An assistant message `id` with `parts`, its status `status` (`in_progress`, `completed`,
    /// `incomplete`): the item a response's `output` carries.
    pub fn assistant(
        id: impl Into<Cow<'a, str>>,
        parts: Vec<Part<'a>>,
        status: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            id: Some(id.into()),
            role: MessageRole::Assistant,
            content: MessageContent::Parts(parts),
            status: Some(status.into()),
        }
    }
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

/// The object forms of `tool_choice`: each the API documents, Chat Completions' spelling of a
/// function or an allowed subset (Tackle's server accepts either API's spelling on both
/// endpoints), and any other `type`, kept as sent (a response that echoes a kind added later
/// still reads; a server refuses it by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// This custom (free-text) tool must be called.
    Custom {
        /// The tool.
        name: Cow<'a, str>,
    },
    /// A tool of this remote MCP server must be called.
    Mcp {
        /// The server's label in `tools`.
        server_label: Cow<'a, str>,
        /// The tool, or any of the server's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<Cow<'a, str>>,
    },
    /// The hosted file search.
    FileSearch,
    /// The hosted web search (preview).
    WebSearchPreview,
    /// The hosted web search, dated preview.
    #[serde(rename = "web_search_preview_2025_03_11")]
    WebSearchPreview20250311,
    /// The hosted computer use (preview).
    ComputerUsePreview,
    /// The hosted image generation.
    ImageGeneration,
    /// The hosted code interpreter.
    CodeInterpreter,
    /// The hosted patch tool.
    ApplyPatch,
    /// The hosted shell tool.
    Shell,
    /// `{"type": "function", "function": {"name"}}` or `{"type": "allowed_tools",
    /// "allowed_tools": {...}}`: Chat Completions' spelling (only its `Function` and
    /// `AllowedTools` are read here).
    #[serde(untagged)]
    Chat(crate::chat::ToolChoiceObject<'a>),
    /// An object of a `type` this module does not know (or none), as sent.
    #[serde(untagged)]
    Other(Value),
}

/// The `type`s [`ToolChoiceObject`] reads in this API's spelling.
const CHOICE_KINDS: &[&str] = &[
    "function",
    "allowed_tools",
    "custom",
    "mcp",
    "file_search",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "computer_use_preview",
    "image_generation",
    "code_interpreter",
    "apply_patch",
    "shell",
];

/// The variants of [`ToolChoiceObject`] in this API's spelling, read by serde's derive (the
/// whole enum's derived reader would try its untagged variants after a misfit, losing which
/// field failed).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", remote = "ToolChoiceObject")]
enum OwnChoice<'a> {
    Function {
        name: Cow<'a, str>,
    },
    AllowedTools {
        mode: ToolChoiceMode,
        tools: Vec<ToolRef<'a>>,
    },
    Custom {
        name: Cow<'a, str>,
    },
    Mcp {
        server_label: Cow<'a, str>,
        #[serde(default)]
        name: Option<Cow<'a, str>>,
    },
    FileSearch,
    WebSearchPreview,
    #[serde(rename = "web_search_preview_2025_03_11")]
    WebSearchPreview20250311,
    ComputerUsePreview,
    ImageGeneration,
    CodeInterpreter,
    ApplyPatch,
    Shell,
}

impl<'de, 'a> Deserialize<'de> for ToolChoiceObject<'a> {
    /// By `type`, and for `function` and `allowed_tools` by which spelling the keys show; a
    /// misfit of a known type fails naming the field (`missing field `name``).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let read = match crate::choice::shape(&value, CHOICE_KINDS, false) {
            crate::choice::Shape::Own => OwnChoice::deserialize(value),
            crate::choice::Shape::Foreign => {
                crate::chat::ToolChoiceObject::deserialize(value).map(Self::Chat)
            }
            crate::choice::Shape::Unknown => return Ok(Self::Other(value)),
        };
        read.map_err(D::Error::custom)
    }
}

/// A reference to a tool by kind and name: `{"type": "function", "name"}`, or Chat
/// Completions' `{"type": "function", "function": {"name"}}` (Tackle's server accepts either;
/// `type` may be left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef<'a> {
    /// `function` for the tools Tackle sends.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Cow<'a, str>>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
    /// The function, in Chat Completions' spelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<crate::chat::FunctionName<'a>>,
    /// The fields of other kinds of tool (`server_label` of an `mcp` one, ...), as sent.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl<'a> ToolRef<'a> {
    /// The function `name`.
    pub fn function(name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            kind: Some(Cow::Borrowed("function")),
            name: Some(name.into()),
            function: None,
            other: serde_json::Map::new(),
        }
    }

    /// The tool's name, in either spelling.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref().or(self.function.as_ref().map(|f| f.name.as_ref()))
    }
}

/// A `response` object: what `POST /v1/responses` answers without streaming, and what the
/// lifecycle events of a stream carry (`response.created`, `response.completed`, ...).
///
/// The request parameters the API echoes (`instructions`, `tools`, `tool_choice`, ...) are
/// [`Response::echo`], between `output` and `usage`, where the API puts them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Response<'a> {
    /// `resp_…`.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<Cow<'a, str>>,
    /// `response`.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub object: Option<Cow<'a, str>>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// `in_progress`, `completed`, `incomplete`, `failed`, ...
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub status: Option<Cow<'a, str>>,
    /// Whether it runs in the background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Why it failed (`null` unless `failed`).
    #[serde(default, borrow)]
    pub error: Option<ResponseError<'a>>,
    /// Why it is `incomplete` (`null` otherwise).
    #[serde(default, borrow)]
    pub incomplete_details: Option<IncompleteDetails<'a>>,
    /// The model that answers (a dated snapshot where the request named an alias).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<Cow<'a, str>>,
    /// The items produced, in order.
    #[serde(default, borrow)]
    pub output: Vec<OutputItem<'a>>,
    /// The request parameters echoed, and fields this module does not type.
    #[serde(flatten)]
    pub echo: Echo<'a>,
    /// Token counts (`null` until the response finishes).
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
}

/// The request parameters a `response` object echoes, in the API's order, then the fields of a
/// response this module does not name (`service_tier`, ...), as read.
///
/// A field that is absent stays absent when written, so a response read is written back as it
/// came; `Some(None)` of a nullable one is written as `null`, as the API writes an unset
/// parameter.
///
/// ```
/// use tackle_wire::responses::{Echo, ToolChoice, ToolChoiceMode};
/// let echo = Echo {
///     instructions: Some(None),
///     tool_choice: Some(ToolChoice::Mode(ToolChoiceMode::Auto)),
///     ..Echo::default()
/// };
/// assert_eq!(serde_json::to_string(&echo).unwrap(), r#"{"instructions":null,"tool_choice":"auto"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Echo<'a> {
    /// The system prompt: a string, or input items where a prompt template made it.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Option<Input<'a>>>,
    /// Output token limit.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<Option<u64>>,
    /// Whether several tool calls may come in one answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The response this one continues.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<Option<Cow<'a, str>>>,
    /// The prompt cache routing key.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<Option<Cow<'a, str>>>,
    /// Reasoning options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<EchoReasoning<'a>>,
    /// Whether the response is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Sampling temperature (`f64`: what a client sent is echoed with the digits it sent).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Option<f64>>,
    /// The text format and verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig<'a>>,
    /// How the model could use tools, as the request spelled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice<'a>>,
    /// The request's tools, each as the client sent it (kinds and fields this module does not
    /// type included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// Nucleus sampling.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Option<f64>>,
    /// `disabled` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Cow<'a, str>>,
    /// The end user's id.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub user: Option<Option<Cow<'a, str>>>,
    /// The request's metadata, as sent (the API's is a map of strings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Fields of a response read that this module does not name.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `reasoning` as a response echoes it (the API writes both fields, `null` when unset).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EchoReasoning<'a> {
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub effort: Option<Option<Cow<'a, str>>>,
    /// `auto`, `concise`, `detailed`.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub summary: Option<Option<Cow<'a, str>>>,
}

/// A field that is present, `null` included (`Some(None)`); `#[serde(default)]` makes an
/// absent one `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `error` of a failed response, or of an `error` event that nests it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResponseError<'a> {
    /// `server_error`, `rate_limit_exceeded`, `invalid_prompt`, ...
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<Cow<'a, str>>,
    /// What happened, for people.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub message: Option<Cow<'a, str>>,
    /// The error's class, where a server states it.
    #[serde(
        rename = "type",
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<Cow<'a, str>>,
}

/// `incomplete_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IncompleteDetails<'a> {
    /// `max_output_tokens` or `content_filter`.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<Cow<'a, str>>,
}

/// Token counts of a response: `input_tokens` counts all prompt tokens, cached or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResponseUsage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Of the prompt.
    #[serde(default)]
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// Of the output.
    #[serde(default)]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
}

/// `input_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputTokensDetails {
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to the cache (compatible servers that report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// `output_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputTokensDetails {
    /// Output tokens spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// An item of a response's `output` (the same shapes go back as [`InputItem`]s).
///
/// A reasoning item is [`ReasoningItem`], JSON kept in the API's key order: it goes back to the
/// API with the bytes it came with. Item types this module does not type (a hosted tool's
/// call, ...) read as [`OutputItem::Other`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem<'a> {
    /// The model's text (or refusal).
    Message(MessageItem<'a>),
    /// A call the model made.
    FunctionCall(FunctionCallItem<'a>),
    /// Reasoning, kept as sent.
    #[serde(untagged)]
    Reasoning(ReasoningItem),
    /// Any other item, kept as sent.
    #[serde(untagged)]
    Other(Value),
}

impl OutputItem<'_> {
    /// The item's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Self::Message(_) => "message",
            Self::FunctionCall(_) => "function_call",
            Self::Reasoning(_) => "reasoning",
            Self::Other(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The item's `id`, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::Message(m) => m.id.as_deref(),
            Self::FunctionCall(c) => c.id.as_deref(),
            Self::Reasoning(r) => r.id(),
            Self::Other(v) => v.get("id").and_then(Value::as_str),
        }
    }
}

impl<'de, 'a> Deserialize<'de> for OutputItem<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        match value.get("type").and_then(Value::as_str) {
            Some("message") => MessageItem::deserialize(value).map(Self::Message),
            Some("function_call") => FunctionCallItem::deserialize(value).map(Self::FunctionCall),
            Some("reasoning") => Ok(Self::Reasoning(ReasoningItem(value))),
            _ => Ok(Self::Other(value)),
        }
        .map_err(D::Error::custom)
    }
}

/// A `reasoning` item: its summary, its text where the model shows it, and its
/// `encrypted_content` where the request asked for it. JSON, so that it goes back to the API
/// byte for byte (a struct would reorder its keys); read it with the accessors.
///
/// ```
/// use tackle_wire::responses::ReasoningItem;
/// let item = ReasoningItem::new("rs_1", &["Planning"], Some("gAAAA"));
/// assert_eq!(
///     serde_json::to_string(&item).unwrap(),
///     r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Planning"}],"encrypted_content":"gAAAA"}"#
/// );
/// assert_eq!(item.summary_texts().collect::<Vec<_>>(), ["Planning"]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReasoningItem(pub Value);

impl ReasoningItem {
    /// A reasoning item, keys in the API's order.
    pub fn new(id: &str, summary: &[&str], encrypted_content: Option<&str>) -> Self {
        let mut item = serde_json::Map::new();
        item.insert("id".into(), id.into());
        item.insert("type".into(), "reasoning".into());
        let summary =
            summary.iter().map(|text| serde_json::json!({"type": "summary_text", "text": text})).collect();
        item.insert("summary".into(), Value::Array(summary));
        if let Some(blob) = encrypted_content {
            item.insert("encrypted_content".into(), blob.into());
        }
        Self(Value::Object(item))
    }

    /// Its `id`.
    pub fn id(&self) -> Option<&str> {
        self.0.get("id").and_then(Value::as_str)
    }

    /// Its `encrypted_content`.
    pub fn encrypted_content(&self) -> Option<&str> {
        self.0.get("encrypted_content").and_then(Value::as_str)
    }

    /// The texts of its `summary` parts.
    pub fn summary_texts(&self) -> impl Iterator<Item = &str> {
        self.texts("summary")
    }

    /// The texts of its `content` parts (`reasoning_text`, from models that show it).
    pub fn content_texts(&self) -> impl Iterator<Item = &str> {
        self.texts("content")
    }

    fn texts(&self, key: &str) -> impl Iterator<Item = &str> {
        self.0
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
    }
}

/// One server-sent event of a streamed response, tagged by `type`.
///
/// Events this module does not name (and any the API adds later) read as
/// [`StreamEvent::Unknown`]; fields it does not name are ignored. Serialized, an event carries
/// its fields in the API's order, `sequence_number` last.
///
/// ```
/// use tackle_wire::responses::StreamEvent;
/// let event: StreamEvent = serde_json::from_str(
///     r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#,
/// ).unwrap();
/// assert!(matches!(&event, StreamEvent::OutputTextDelta(d) if d.delta == "Hi"));
/// let later: StreamEvent = serde_json::from_str(r#"{"type":"response.audio.delta","delta":"AAA"}"#).unwrap();
/// assert_eq!(later, StreamEvent::Unknown);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum StreamEvent<'a> {
    /// The response was created (`in_progress`, no output yet).
    #[serde(rename = "response.created")]
    Created(#[serde(borrow)] ResponseEvent<'a>),
    /// The response is being generated.
    #[serde(rename = "response.in_progress")]
    InProgress(#[serde(borrow)] ResponseEvent<'a>),
    /// The response finished; it repeats every output item.
    #[serde(rename = "response.completed")]
    Completed(#[serde(borrow)] ResponseEvent<'a>),
    /// The response stopped early (`incomplete_details` says why).
    #[serde(rename = "response.incomplete")]
    Incomplete(#[serde(borrow)] ResponseEvent<'a>),
    /// The response failed (`error` says why).
    #[serde(rename = "response.failed")]
    Failed(#[serde(borrow)] ResponseEvent<'a>),
    /// An output item starts.
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded(#[serde(borrow)] ItemEvent<'a>),
    /// An output item is finished: what it carries is authoritative.
    #[serde(rename = "response.output_item.done")]
    OutputItemDone(#[serde(borrow)] ItemEvent<'a>),
    /// A content part of a message starts.
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded(#[serde(borrow)] PartEvent<'a>),
    /// A content part of a message is finished.
    #[serde(rename = "response.content_part.done")]
    ContentPartDone(#[serde(borrow)] PartEvent<'a>),
    /// More of a message's text.
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta(#[serde(borrow)] DeltaEvent<'a>),
    /// A message's text, whole.
    #[serde(rename = "response.output_text.done")]
    OutputTextDone(#[serde(borrow)] DoneEvent<'a>),
    /// More of a refusal.
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta(#[serde(borrow)] DeltaEvent<'a>),
    /// A refusal, whole (in `refusal`).
    #[serde(rename = "response.refusal.done")]
    RefusalDone(#[serde(borrow)] DoneEvent<'a>),
    /// More of a call's arguments.
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta(#[serde(borrow)] DeltaEvent<'a>),
    /// A call's arguments, whole (in `arguments`).
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone(#[serde(borrow)] DoneEvent<'a>),
    /// A part of a reasoning summary starts.
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded(#[serde(borrow)] PartEvent<'a>),
    /// A part of a reasoning summary is finished.
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone(#[serde(borrow)] PartEvent<'a>),
    /// More of a reasoning summary.
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta(#[serde(borrow)] DeltaEvent<'a>),
    /// A reasoning summary's text, whole.
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone(#[serde(borrow)] DoneEvent<'a>),
    /// More of a reasoning text (models that show it).
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta(#[serde(borrow)] DeltaEvent<'a>),
    /// A reasoning text, whole.
    #[serde(rename = "response.reasoning_text.done")]
    ReasoningTextDone(#[serde(borrow)] DoneEvent<'a>),
    /// A failure mid-stream.
    #[serde(rename = "error")]
    Error(#[serde(borrow)] ErrorEvent<'a>),
    /// An event this module does not name.
    #[serde(other)]
    Unknown,
}

impl StreamEvent<'_> {
    /// The event's `type` (`response.output_text.delta`, ...): the SSE event name a server
    /// gives it. `None` for [`StreamEvent::Unknown`], which has no type to send.
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            Self::Created(_) => "response.created",
            Self::InProgress(_) => "response.in_progress",
            Self::Completed(_) => "response.completed",
            Self::Incomplete(_) => "response.incomplete",
            Self::Failed(_) => "response.failed",
            Self::OutputItemAdded(_) => "response.output_item.added",
            Self::OutputItemDone(_) => "response.output_item.done",
            Self::ContentPartAdded(_) => "response.content_part.added",
            Self::ContentPartDone(_) => "response.content_part.done",
            Self::OutputTextDelta(_) => "response.output_text.delta",
            Self::OutputTextDone(_) => "response.output_text.done",
            Self::RefusalDelta(_) => "response.refusal.delta",
            Self::RefusalDone(_) => "response.refusal.done",
            Self::FunctionCallArgumentsDelta(_) => "response.function_call_arguments.delta",
            Self::FunctionCallArgumentsDone(_) => "response.function_call_arguments.done",
            Self::ReasoningSummaryPartAdded(_) => "response.reasoning_summary_part.added",
            Self::ReasoningSummaryPartDone(_) => "response.reasoning_summary_part.done",
            Self::ReasoningSummaryTextDelta(_) => "response.reasoning_summary_text.delta",
            Self::ReasoningSummaryTextDone(_) => "response.reasoning_summary_text.done",
            Self::ReasoningTextDelta(_) => "response.reasoning_text.delta",
            Self::ReasoningTextDone(_) => "response.reasoning_text.done",
            Self::Error(_) => "error",
            Self::Unknown => return None,
        })
    }

    /// Sets the event's position in the stream (a writer numbers events as it sends them).
    pub fn set_sequence_number(&mut self, n: u64) {
        match self {
            Self::Created(e)
            | Self::InProgress(e)
            | Self::Completed(e)
            | Self::Incomplete(e)
            | Self::Failed(e) => e.sequence_number = n,
            Self::OutputItemAdded(e) | Self::OutputItemDone(e) => e.sequence_number = n,
            Self::ContentPartAdded(e)
            | Self::ContentPartDone(e)
            | Self::ReasoningSummaryPartAdded(e)
            | Self::ReasoningSummaryPartDone(e) => e.sequence_number = n,
            Self::OutputTextDelta(e)
            | Self::RefusalDelta(e)
            | Self::FunctionCallArgumentsDelta(e)
            | Self::ReasoningSummaryTextDelta(e)
            | Self::ReasoningTextDelta(e) => e.sequence_number = n,
            Self::OutputTextDone(e)
            | Self::RefusalDone(e)
            | Self::FunctionCallArgumentsDone(e)
            | Self::ReasoningSummaryTextDone(e)
            | Self::ReasoningTextDone(e) => e.sequence_number = n,
            Self::Error(e) => e.sequence_number = n,
            Self::Unknown => {}
        }
    }
}

/// What a lifecycle event carries: the `response` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResponseEvent<'a> {
    /// The response as it stands.
    #[serde(default, borrow)]
    pub response: Response<'a>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

/// What `response.output_item.added` and `.done` carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemEvent<'a> {
    /// The item's position in `output` (some servers leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_index: Option<u32>,
    /// The item.
    #[serde(borrow)]
    pub item: OutputItem<'a>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

/// What the `.part.added` and `.part.done` events carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartEvent<'a> {
    /// The item the part belongs to.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub item_id: Option<Cow<'a, str>>,
    /// The item's position in `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_index: Option<u32>,
    /// The part's position in a message's `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u32>,
    /// The part's position in a reasoning item's `summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<u32>,
    /// The part (empty when added, whole when done).
    #[serde(borrow)]
    pub part: Part<'a>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

/// What a `.delta` event carries: where, and the next fragment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeltaEvent<'a> {
    /// The item the fragment belongs to.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub item_id: Option<Cow<'a, str>>,
    /// The item's position in `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_index: Option<u32>,
    /// The part's position in a message's `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u32>,
    /// The part's position in a reasoning item's `summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<u32>,
    /// The fragment.
    #[serde(default, borrow)]
    pub delta: Cow<'a, str>,
    /// Log probabilities of text deltas (not requested: empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

/// What a `.done` event of text or arguments carries: where, and the whole text (in `text`,
/// `refusal` or `arguments`, by event).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DoneEvent<'a> {
    /// The item the text belongs to.
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub item_id: Option<Cow<'a, str>>,
    /// The item's position in `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_index: Option<u32>,
    /// The part's position in a message's `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u32>,
    /// The part's position in a reasoning item's `summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<u32>,
    /// The called function (`function_call_arguments.done`).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<Cow<'a, str>>,
    /// The whole text (text and reasoning events).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<Cow<'a, str>>,
    /// The whole refusal (`refusal.done`).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refusal: Option<Cow<'a, str>>,
    /// The whole arguments (`function_call_arguments.done`).
    #[serde(
        default,
        borrow,
        deserialize_with = "crate::borrow::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub arguments: Option<Cow<'a, str>>,
    /// Log probabilities of text (not requested: empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

/// What an `error` event carries: documented with the fields at the top level; some servers
/// nest an `error` object instead.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorEvent<'a> {
    /// `rate_limit_exceeded`, `server_error`, ...
    #[serde(default, borrow, deserialize_with = "crate::borrow::option")]
    pub code: Option<Cow<'a, str>>,
    /// What happened, for people.
    #[serde(default, borrow, deserialize_with = "crate::borrow::option")]
    pub message: Option<Cow<'a, str>>,
    /// The request parameter it is about.
    #[serde(default, borrow, deserialize_with = "crate::borrow::option")]
    pub param: Option<Cow<'a, str>>,
    /// The error, nested (servers that send it so).
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub error: Option<ResponseError<'a>>,
    /// The event's position in the stream.
    #[serde(default)]
    pub sequence_number: u64,
}

impl<'a> ErrorEvent<'a> {
    /// The error it reports: the nested object when there is one, else the top-level fields.
    pub fn error(&self) -> ResponseError<'a> {
        match &self.error {
            Some(nested) => nested.clone(),
            None => ResponseError { code: self.code.clone(), message: self.message.clone(), kind: None },
        }
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
