//! The request sent to a model provider.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Message, ToolChoice, ToolSpec};

/// One request to a model, independent of the provider's wire format.
///
/// `tools` is shared behind an [`Arc`]: a session's frozen tool catalog is one allocation, and
/// providers may cache its serialization by pointer so every step sends the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// System instructions, cacheable sections first.
    pub system: Vec<SystemSection>,
    /// The conversation, shared with the session that lends it (a request never copies a
    /// long history).
    pub messages: Arc<Vec<Message>>,
    /// Tool definitions, identical for every step of a session.
    pub tools: Arc<[ToolSpec]>,
    /// Which tools may be called in this request.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one step (`None`: provider default).
    pub parallel_tool_calls: Option<bool>,
    /// Upper bound of output tokens.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Key that routes requests of one session to the same prompt cache (OpenAI
    /// `prompt_cache_key`).
    pub prompt_cache_key: Option<String>,
    /// Where the provider should place cache breakpoints, in priority order (Anthropic
    /// `cache_control`). Providers without explicit breakpoints ignore it.
    pub cache_breakpoints: Vec<CacheBreakpoint>,
    /// The final answer must be JSON matching this schema (structured output), asked natively by
    /// providers whose `Capabilities::native_output_schema` says they can; others ignore it (the
    /// agent offers them a final-answer tool instead). `None` leaves the request's bytes as they
    /// were without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputFormat>,
}

impl ModelRequest {
    /// A request with no system prompt, no tools and provider defaults.
    ///
    /// ```
    /// use tackle_protocol::{Message, ModelRequest};
    /// let req = ModelRequest::new("gpt-4.1", vec![Message::user("hi")]);
    /// assert!(req.tools.is_empty());
    /// ```
    pub fn new(model: impl Into<String>, messages: impl Into<Arc<Vec<Message>>>) -> Self {
        Self {
            model: model.into(),
            system: Vec::new(),
            messages: messages.into(),
            tools: Arc::from(Vec::new()),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            max_output_tokens: None,
            temperature: None,
            prompt_cache_key: None,
            cache_breakpoints: Vec::new(),
            output: None,
        }
    }
}

/// A JSON Schema the model's final answer must match, as a provider sends it.
///
/// The agent builds it from a validated `tackle_agent::OutputSchema` (with the `strict` it
/// derives from the schema); the OpenAI-compatible gateway builds it from a client's
/// `response_format` / `text.format`, field for field, so the provider receives what the client
/// sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputFormat {
    /// The format's name (`^[a-zA-Z0-9_-]{1,64}$`), where the API names it.
    pub name: String,
    /// The JSON Schema (an object), shared: the same allocation every step of a turn.
    pub schema: Arc<serde_json::Value>,
    /// What the format is for, where the API carries it (`None`: not sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the provider constrains decoding to the schema: a client's own value, else the
    /// one derived from the schema's fit with the API's strict subset (`None`: not sent, the
    /// API's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Any JSON object (the older JSON mode, `json_object`): `name`, `schema`, `description` and
    /// `strict` are not sent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json_object: bool,
}

impl OutputFormat {
    /// A named schema, with neither description nor `strict`.
    pub fn new(name: impl Into<String>, schema: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            schema: Arc::new(schema),
            description: None,
            strict: None,
            json_object: false,
        }
    }
}

/// A section of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemSection {
    /// Short name for diagnostics (e.g. `base`, `soul`, `agents`, `skills`).
    pub name: String,
    /// The text.
    pub text: String,
    /// Whether the section is stable across the session.
    pub cache: CachePolicy,
}

impl SystemSection {
    /// A section that stays identical for the whole session.
    pub fn cacheable(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), text: text.into(), cache: CachePolicy::Cacheable }
    }

    /// A section that may change between requests; it must come after every cacheable one.
    pub fn dynamic(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), text: text.into(), cache: CachePolicy::Dynamic }
    }
}

/// Whether content is stable enough to sit in the cached prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CachePolicy {
    /// Identical on every request of the session.
    Cacheable,
    /// May change between requests.
    Dynamic,
}

/// A place where a provider with explicit prompt caching should end a cached prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum CacheBreakpoint {
    /// After the tool definitions.
    Tools,
    /// After the last cacheable system section (covers the tools too).
    System,
    /// After the last block of the message at this index.
    Message {
        /// Index into [`ModelRequest::messages`].
        index: usize,
    },
}
