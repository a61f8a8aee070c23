//! Model providers for Tackle.
//!
//! A [`Provider`] turns a wire-neutral [`tackle_protocol::ModelRequest`] into a stream of
//! [`tackle_protocol::StreamEvent`]s. Three wire formats are implemented:
//!
//! - [`OpenAiChat`]: OpenAI Chat Completions, also for OpenAI-compatible servers
//!   ([`OpenAiDialect`]).
//! - [`OpenAiResponses`]: OpenAI Responses, stateless (`store: false`) with encrypted reasoning
//!   kept in the history ([`ResponsesConfig`]).
//! - [`Anthropic`]: Anthropic Messages.
//!
//! All retry like the official SDKs ([`RetryPolicy`]), read the SDKs' environment variables
//! ([`ProviderConfig::from_env`]), never leak the API key, and end every failure in a typed
//! [`ProviderError`].
//!
//! ```
//! use tackle_protocol::{Message, ModelRequest};
//! use tackle_provider::{OpenAiChat, Provider, ProviderConfig, ProviderKind};
//! // Encoding is pure: the exact bytes that would be sent, without sending them.
//! let provider = OpenAiChat::new(ProviderConfig::new(ProviderKind::Openai)).unwrap();
//! let encoded = provider.encode(&ModelRequest::new("gpt-4.1", vec![Message::user("hi")])).unwrap();
//! let body: serde_json::Value = serde_json::from_slice(&encoded.body).unwrap();
//! assert_eq!(encoded.path, "/chat/completions");
//! assert_eq!(body["messages"][0]["content"], "hi");
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod anthropic;
mod config;
mod error;
mod http;
mod openai;
mod provider;
mod responses;
mod retry;
pub mod sse;
mod tool_schema;
mod tools_cache;

use std::sync::Arc;

pub use anthropic::{
    ANTHROPIC_VERSION, Anthropic, AnthropicDecoder, DEFAULT_MAX_TOKENS, DEFERRED_TOOLS_BETA, MAX_BREAKPOINTS,
};
pub use config::{ApiKey, BaseUrlError, ProviderConfig, ProviderKind, Timeouts, UnknownProvider};
pub use error::ProviderError;
pub use http::{WireDecoder, decode_sse};
pub use openai::{OpenAiChat, OpenAiChatDecoder, OpenAiDialect};
pub use provider::{
    CallOptions, Capabilities, Delivery, EncodedRequest, EventStream, IntoProvider, Provider, RetryHook,
    RetryNotice,
};
pub use responses::{
    OpenAiResponses, REASONING_FORMAT, ReasoningEffort, ReasoningSummary, ResponsesConfig, ResponsesDecoder,
    UnknownReasoning, strict_compatible,
};
pub use retry::{RetryPolicy, server_requested_wait};
pub use tool_schema::{ToolSchemaRules, adapt_schema, schema_problems};

/// Builds the HTTP provider a configuration names (Codex runs as a child process and is built
/// by `tackle_codex::CodexProvider`).
///
/// ```
/// use tackle_provider::{ProviderConfig, ProviderKind, build_provider};
/// let p = build_provider(ProviderConfig::new(ProviderKind::Anthropic)).unwrap();
/// assert_eq!(p.name(), "anthropic");
/// ```
pub fn build_provider(config: ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match config.kind {
        ProviderKind::Openai => Arc::new(OpenAiChat::new(config)?),
        ProviderKind::OpenaiResponses => Arc::new(OpenAiResponses::new(config)?),
        ProviderKind::Anthropic => Arc::new(Anthropic::new(config)?),
        ProviderKind::Codex => {
            return Err(ProviderError::BadRequest {
                message: "the codex provider is a child process: build it with tackle_codex::CodexProvider"
                    .into(),
            });
        }
    })
}
