//! OpenAI Chat Completions client, also for OpenAI-compatible servers (Ollama, vLLM, llama.cpp,
//! gateways).

mod decode;
mod encode;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tackle_protocol::ModelRequest;

pub use decode::OpenAiChatDecoder;
pub(crate) use encode::json_schema_format;

use crate::http::{HttpClients, json_body, send_encoded, stream_headers};
use crate::tools_cache::ToolsCache;
use crate::{
    CallOptions, Capabilities, Delivery, EncodedRequest, EventStream, Provider, ProviderConfig, ProviderError,
};

/// OpenAI hashes the tools and the messages (the system prompt is a message); `tool_choice` is
/// not part of the cached prefix.
const CACHE_ORDER: &[&str] = &["tools", "messages"];

/// Which flavour of the Chat Completions API a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenAiDialect {
    /// OpenAI itself: `allowed_tools`, `prompt_cache_key`, `max_completion_tokens`.
    #[serde(rename = "openai")]
    OpenAi,
    /// A compatible server: plain `tool_choice` strings and `max_tokens`; unknown fields left out.
    Compatible,
}

impl OpenAiDialect {
    /// The dialect a base URL most likely speaks: OpenAI's own host, or a compatible server.
    pub fn detect(base_url: &str) -> Self {
        let host = base_url.split("://").nth(1).unwrap_or(base_url).split(['/', ':']).next().unwrap_or("");
        if host.eq_ignore_ascii_case("api.openai.com") { Self::OpenAi } else { Self::Compatible }
    }
}

/// OpenAI Chat Completions provider.
///
/// ```
/// use tackle_provider::{OpenAiChat, OpenAiDialect, Provider, ProviderConfig, ProviderKind};
/// let config = ProviderConfig::new(ProviderKind::Openai).with_api_key("sk-test");
/// let client = OpenAiChat::new(config).unwrap();
/// assert_eq!(client.dialect(), OpenAiDialect::OpenAi);
/// assert!(client.capabilities().allowed_tools);
/// ```
pub struct OpenAiChat {
    config: ProviderConfig,
    dialect: OpenAiDialect,
    clients: HttpClients,
    tools: ToolsCache,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat").field("config", &self.config).field("dialect", &self.dialect).finish()
    }
}

impl OpenAiChat {
    /// A client whose dialect is detected from the base URL.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let dialect = OpenAiDialect::detect(&config.base_url);
        Self::with_dialect(config, dialect)
    }

    /// A client speaking the given dialect.
    pub fn with_dialect(config: ProviderConfig, dialect: OpenAiDialect) -> Result<Self, ProviderError> {
        let clients = HttpClients::new(&config)?;
        Ok(Self { config, dialect, clients, tools: ToolsCache::default() })
    }

    /// The dialect in use.
    pub fn dialect(&self) -> OpenAiDialect {
        self.dialect
    }

    fn encode_body(&self, request: &ModelRequest, stream: bool) -> Result<Bytes, ProviderError> {
        let tools =
            self.tools.rendered(&request.tools, 0, |t| serde_json::to_string(&encode::render_tools(t)))?;
        json_body(&encode::body(request, tools.as_deref(), self.dialect, stream))
    }
}

#[async_trait]
impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        "openai"
    }

    fn capabilities(&self) -> Capabilities {
        let official = self.dialect == OpenAiDialect::OpenAi;
        Capabilities {
            allowed_tools: official,
            allowed_tools_unverified: !official,
            max_cache_breakpoints: 0,
            parallel_tool_calls: true,
            token_count_endpoint: false,
            prompt_cache_key: official,
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
            path: "/chat/completions",
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
            OpenAiChatDecoder::default(),
            decode::whole,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_detection() {
        assert_eq!(OpenAiDialect::detect("https://api.openai.com/v1"), OpenAiDialect::OpenAi);
        assert_eq!(OpenAiDialect::detect("http://localhost:11434/v1"), OpenAiDialect::Compatible);
        assert_eq!(OpenAiDialect::detect("garbage"), OpenAiDialect::Compatible);
    }
}
