//! OpenAI Responses client (`POST /responses`), OpenAI's primary API: the one that keeps a
//! reasoning model's reasoning across tool calls.
//!
//! Requests are stateless: every request carries the whole history, nothing is stored on
//! OpenAI's side (`store: false` unless configured), and reasoning comes back encrypted
//! (`include: ["reasoning.encrypted_content"]`) as an opaque item Tackle keeps in its history
//! and sends back unchanged.

mod decode;
mod encode;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tackle_protocol::ModelRequest;

pub use decode::ResponsesDecoder;
pub use encode::strict_compatible;

use crate::http::{HttpClients, json_body, send_encoded, stream_headers};
use crate::tools_cache::ToolsCache;
use crate::{
    CallOptions, Capabilities, Delivery, EncodedRequest, EventStream, Provider, ProviderConfig, ProviderError,
};

/// What the prompt cache covers, in its order: the API renders the tools first, then the
/// instructions, then the input items; `tool_choice` (an `allowed_tools` mask included) is not
/// part of the cached prefix.
const CACHE_ORDER: &[&str] = &["tools", "instructions", "input"];

/// The [`tackle_protocol::Reasoning::format`] of reasoning items from this API; only these are
/// sent back to it.
pub const REASONING_FORMAT: &str = "openai-responses";

/// How hard a reasoning model thinks (`reasoning.effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No reasoning (models that allow it).
    None,
    /// The least reasoning.
    Minimal,
    /// Little reasoning.
    Low,
    /// The API's default.
    Medium,
    /// More reasoning.
    High,
    /// The most reasoning (models that allow it).
    Xhigh,
}

/// Which summary of its reasoning a model streams (`reasoning.summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    /// The most detailed summary the model offers.
    Auto,
    /// A short summary.
    Concise,
    /// A long summary.
    Detailed,
}

impl ReasoningEffort {
    /// The value on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

impl ReasoningSummary {
    /// The value on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
        }
    }
}

/// A reasoning effort or summary setting that names none of its values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnknownReasoning {
    /// Not a [`ReasoningEffort`].
    #[error("{0:?} is not a reasoning effort: use none, minimal, low, medium, high or xhigh")]
    Effort(String),
    /// Not a [`ReasoningSummary`].
    #[error("{0:?} is not a reasoning summary: use auto, concise or detailed")]
    Summary(String),
}

impl std::str::FromStr for ReasoningEffort {
    type Err = UnknownReasoning;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.trim().to_ascii_lowercase()))
            .map_err(|_| UnknownReasoning::Effort(s.to_owned()))
    }
}

impl std::str::FromStr for ReasoningSummary {
    type Err = UnknownReasoning;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.trim().to_ascii_lowercase()))
            .map_err(|_| UnknownReasoning::Summary(s.to_owned()))
    }
}

/// Options of the Responses provider (`[responses]` in `tackle.toml`).
///
/// ```
/// use tackle_provider::{ReasoningEffort, ResponsesConfig};
/// let c = ResponsesConfig { reasoning_effort: Some("high".parse().unwrap()), ..Default::default() };
/// assert_eq!(c.reasoning_effort, Some(ReasoningEffort::High));
/// assert!(!c.store, "nothing is stored at OpenAI unless asked");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResponsesConfig {
    /// Let OpenAI keep each response (`store: true`, e.g. to see them in its dashboard). Off by
    /// default: requests carry the whole history, so nothing needs to be kept there, and
    /// zero-data-retention organizations must keep it off.
    pub store: bool,
    /// `reasoning.effort` for reasoning models; unset sends none (the model's default). Do not
    /// set it for models without reasoning: the API rejects the parameter.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `reasoning.summary` for reasoning models: set it to see the reasoning's summary stream
    /// (`reasoning_delta` events); unset sends none.
    pub reasoning_summary: Option<ReasoningSummary>,
}

/// OpenAI Responses provider.
///
/// ```
/// use tackle_provider::{OpenAiResponses, Provider, ProviderConfig, ProviderKind};
/// let config = ProviderConfig::new(ProviderKind::OpenaiResponses).with_api_key("sk-test");
/// let client = OpenAiResponses::new(config).unwrap();
/// assert_eq!(client.name(), "openai-responses");
/// assert!(client.capabilities().allowed_tools && client.capabilities().prompt_cache_key);
/// ```
pub struct OpenAiResponses {
    config: ProviderConfig,
    options: ResponsesConfig,
    clients: HttpClients,
    tools: ToolsCache,
}

impl std::fmt::Debug for OpenAiResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponses")
            .field("config", &self.config)
            .field("options", &self.options)
            .finish()
    }
}

impl OpenAiResponses {
    /// A client with the default options.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        Self::with_options(config, ResponsesConfig::default())
    }

    /// A client with the given options.
    pub fn with_options(config: ProviderConfig, options: ResponsesConfig) -> Result<Self, ProviderError> {
        let clients = HttpClients::new(&config)?;
        Ok(Self { config, options, clients, tools: ToolsCache::default() })
    }

    /// The options in use.
    pub fn options(&self) -> &ResponsesConfig {
        &self.options
    }

    fn encode_body(&self, request: &ModelRequest, stream: bool) -> Result<Bytes, ProviderError> {
        let tools =
            self.tools.rendered(&request.tools, 0, |t| serde_json::to_string(&encode::render_tools(t)))?;
        json_body(&encode::body(request, tools.as_deref(), &self.options, stream))
    }
}

#[async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        "openai-responses"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            allowed_tools: true,
            allowed_tools_unverified: false,
            max_cache_breakpoints: 0,
            parallel_tool_calls: true,
            token_count_endpoint: false,
            prompt_cache_key: true,
            deferred_tools: false,
            tool_schema: crate::ToolSchemaRules::strictest(),
            native_output_schema: true,
            whole_answers: true,
        }
    }

    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        self.encode_as(request, Delivery::Stream)
    }

    fn encode_as(&self, request: &ModelRequest, delivery: Delivery) -> Result<EncodedRequest, ProviderError> {
        Ok(EncodedRequest {
            path: "/responses",
            body: self.encode_body(request, delivery.is_stream())?,
            betas: &[],
            cache_order: CACHE_ORDER,
            delivery,
        })
    }

    async fn list_models(&self) -> Result<Option<Vec<String>>, ProviderError> {
        let headers = stream_headers(&self.config, None)?;
        crate::http::list_model_ids(self.clients.stream(), &self.config, &headers, "/models").await.map(Some)
    }

    async fn send(
        &self,
        encoded: EncodedRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let headers = stream_headers(&self.config, None)?;
        send_encoded(
            &self.clients,
            &self.config,
            &headers,
            encoded,
            options,
            ResponsesDecoder::default(),
            decode::whole,
        )
        .await
    }
}
