//! Anthropic Messages client.

mod decode;
mod encode;

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use tackle_protocol::{CacheBreakpoint, ModelRequest};

pub use decode::AnthropicDecoder;
pub use encode::{DEFAULT_MAX_TOKENS, DEFERRED_TOOLS_BETA, MAX_BREAKPOINTS};

use crate::http::{HttpClients, json_body, send_encoded, stream_headers};
use crate::tools_cache::ToolsCache;
use crate::{
    CallOptions, Capabilities, Delivery, EncodedRequest, EventStream, Provider, ProviderConfig, ProviderError,
};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic renders tools, then system, then messages into the cached prefix; a `tool_choice`
/// change invalidates the message cache, so it counts right before the messages.
const CACHE_ORDER: &[&str] = &["tools", "system", "tool_choice", "messages"];

/// Anthropic Messages provider.
///
/// ```
/// use tackle_provider::{Anthropic, Provider, ProviderConfig, ProviderKind};
/// let client = Anthropic::new(ProviderConfig::new(ProviderKind::Anthropic).with_api_key("k")).unwrap();
/// assert_eq!(client.capabilities().max_cache_breakpoints, 4);
/// ```
pub struct Anthropic {
    config: ProviderConfig,
    clients: HttpClients,
    tools: ToolsCache,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic").field("config", &self.config).finish()
    }
}

impl Anthropic {
    /// A client for the configured base URL.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let clients = HttpClients::new(&config)?;
        Ok(Self { config, clients, tools: ToolsCache::default() })
    }

    fn encode_body(&self, request: &ModelRequest, stream: bool) -> Result<Bytes, ProviderError> {
        let breakpoints = encode::effective_breakpoints(request);
        let cache_last = breakpoints.contains(&CacheBreakpoint::Tools);
        let tools = self.tools.rendered(&request.tools, u8::from(cache_last), |t| {
            serde_json::to_string(&encode::render_tools(t, cache_last))
        })?;
        json_body(&encode::body(request, tools.as_deref(), &breakpoints, stream))
    }

    fn headers(&self, betas: &[&'static str]) -> Result<HeaderMap, ProviderError> {
        let mut headers = stream_headers(&self.config, Some("x-api-key"))?;
        headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
        if !betas.is_empty() {
            let value = HeaderValue::try_from(betas.join(","))
                .map_err(|_| ProviderError::protocol("invalid anthropic-beta value"))?;
            headers.insert("anthropic-beta", value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            allowed_tools_unverified: false,
            allowed_tools: false,
            max_cache_breakpoints: MAX_BREAKPOINTS as u8,
            parallel_tool_calls: true,
            token_count_endpoint: true,
            prompt_cache_key: false,
            deferred_tools: true,
            tool_schema: crate::ToolSchemaRules::anthropic(),
            native_output_schema: false,
            whole_answers: true,
        }
    }

    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError> {
        self.encode_as(request, Delivery::Stream)
    }

    fn encode_as(&self, request: &ModelRequest, delivery: Delivery) -> Result<EncodedRequest, ProviderError> {
        let betas: &'static [&'static str] =
            if request.tools.iter().any(|t| t.defer_loading) { &[encode::DEFERRED_TOOLS_BETA] } else { &[] };
        Ok(EncodedRequest {
            path: "/v1/messages",
            body: self.encode_body(request, delivery.is_stream())?,
            betas,
            cache_order: CACHE_ORDER,
            delivery,
        })
    }

    async fn list_models(&self) -> Result<Option<Vec<String>>, ProviderError> {
        let headers = self.headers(&[])?;
        crate::http::list_model_ids(self.clients.stream(), &self.config, &headers, "/v1/models")
            .await
            .map(Some)
    }

    async fn send(
        &self,
        encoded: EncodedRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let headers = self.headers(encoded.betas)?;
        send_encoded(
            &self.clients,
            &self.config,
            &headers,
            encoded,
            options,
            AnthropicDecoder::default(),
            decode::whole,
        )
        .await
    }
}
