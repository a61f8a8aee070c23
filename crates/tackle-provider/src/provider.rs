//! The [`Provider`] trait every model client implements.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tackle_protocol::{ModelRequest, ModelResponse, ResponseAccumulator, StreamEvent};

use crate::ProviderError;

/// A stream of normalized events from one model call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// What a provider supports; the agent picks its strategies from this, never from the name.
///
/// New capabilities are added over time, so a provider outside this crate starts from the
/// default (nothing supported) and sets what it has:
///
/// ```
/// let mut caps = tackle_provider::Capabilities::default();
/// caps.parallel_tool_calls = true;
/// assert!(!caps.allowed_tools);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// Restricting callable tools without changing definitions (OpenAI `allowed_tools`).
    pub allowed_tools: bool,
    /// The wire has `allowed_tools`, but this endpoint is not known to accept it (an
    /// OpenAI-compatible server): masks fall back to tail notes, and since configuring the
    /// endpoint as OpenAI's own would restore native masks, the agent says so
    /// (`strategy_fallback`).
    pub allowed_tools_unverified: bool,
    /// Explicit prompt-cache breakpoints per request (Anthropic: 4; 0 means automatic caching).
    pub max_cache_breakpoints: u8,
    /// Several tool calls in one response.
    pub parallel_tool_calls: bool,
    /// An endpoint that counts prompt tokens exactly.
    pub token_count_endpoint: bool,
    /// A request key that routes to the same prompt cache (OpenAI `prompt_cache_key`).
    pub prompt_cache_key: bool,
    /// Native deferred tool loading (Anthropic `defer_loading`).
    pub deferred_tools: bool,
    /// What the API rejects in tool input schemas; the encoder adapts schemas to it
    /// ([`crate::adapt_schema`]), the executor still validates against the originals.
    pub tool_schema: crate::ToolSchemaRules,
    /// The API constrains the final answer to a JSON Schema itself (Chat Completions
    /// `response_format`, Responses `text.format`): the agent sets `ModelRequest::output`. Without
    /// it the agent offers a final-answer tool whose input schema is the schema (Anthropic).
    pub native_output_schema: bool,
    /// The client can ask for a whole JSON answer instead of a stream
    /// ([`Provider::encode_as`] with [`Delivery::Whole`]); the agent asks for one when its
    /// `Streaming` setting says so (by default, `Auto`, when nobody watches the turn's events).
    /// Without it every request streams.
    pub whole_answers: bool,
}

/// How the answer to a request comes back, chosen when the request is encoded.
///
/// A streamed answer arrives as server-sent events, text as it is written; a whole answer is
/// one JSON body, cheaper to frame and decode when nobody watches the text arrive. Either way
/// [`Provider::send`] yields the same normalized [`StreamEvent`]s (a whole answer all at once).
///
/// ```
/// use tackle_provider::Delivery;
/// assert_eq!(Delivery::default(), Delivery::Stream);
/// assert!(Delivery::Stream.is_stream() && !Delivery::Whole.is_stream());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Server-sent events (`"stream": true`).
    #[default]
    Stream,
    /// One JSON body (`"stream": false`).
    Whole,
}

impl Delivery {
    /// Whether the answer streams.
    pub fn is_stream(self) -> bool {
        self == Self::Stream
    }
}

/// A retry about to happen, reported through [`CallOptions::on_retry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// Wait before it.
    pub wait: Duration,
    /// The failure that caused it.
    pub error: ProviderError,
}

/// Callback told about each retry.
pub type RetryHook = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Called before each retry, e.g. to emit a `retry` event.
    pub on_retry: Option<RetryHook>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions").field("on_retry", &self.on_retry.is_some()).finish()
    }
}

/// A request encoded for the wire: the exact bytes a provider would send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRequest {
    /// Path relative to the base URL (e.g. `/chat/completions`).
    pub path: &'static str,
    /// The JSON body.
    pub body: Bytes,
    /// Beta features the body uses (Anthropic `anthropic-beta`); empty for most requests.
    pub betas: &'static [&'static str],
    /// The body's top-level fields in the order the provider's prompt cache covers them, for
    /// measuring prefix stability on the exact bytes; fields the cache ignores are left out. The
    /// last one is the conversation, the one field that grows (at its end) from step to step.
    pub cache_order: &'static [&'static str],
    /// How the answer comes back: what the body asks for, and how [`Provider::send`] reads it.
    pub delivery: Delivery,
}

/// A model provider: turns a [`ModelRequest`] into a stream of [`StreamEvent`]s.
///
/// Implementations retry failures that happen before the response starts (see
/// [`crate::RetryPolicy`]); a stream that fails later ends with an error and never yields a
/// half-parsed tool call.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short name (`openai`, `anthropic`, ...).
    fn name(&self) -> &str;

    /// What this provider supports.
    fn capabilities(&self) -> Capabilities;

    /// Encodes a request exactly as it would be sent, its answer streamed.
    fn encode(&self, request: &ModelRequest) -> Result<EncodedRequest, ProviderError>;

    /// Encodes a request asking for its answer delivered as `delivery`. A provider without
    /// [`Capabilities::whole_answers`] streams whatever is asked: the default is
    /// [`Provider::encode`], and [`EncodedRequest::delivery`] says what was encoded.
    fn encode_as(&self, request: &ModelRequest, delivery: Delivery) -> Result<EncodedRequest, ProviderError> {
        let _ = delivery;
        self.encode(request)
    }

    /// Sends a request already encoded by [`Provider::encode`] (or [`Provider::encode_as`]) and
    /// streams the response: a whole answer ([`Delivery::Whole`]) is read and decoded into the
    /// same events, yielded at once. The loop encodes once per step, measures the bytes (prefix
    /// stability), then sends them.
    async fn send(
        &self,
        encoded: EncodedRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError>;

    /// Encodes and sends a request.
    async fn stream(
        &self,
        request: &ModelRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let encoded = self.encode(request)?;
        self.send(encoded, options).await
    }

    /// The ids of the models the provider's endpoint lists (`GET …/models`), or `None` where the
    /// provider has no listing. Used to check a model name before it is used (`/model`).
    async fn list_models(&self) -> Result<Option<Vec<String>>, ProviderError> {
        Ok(None)
    }

    /// Sends a request and waits for the whole response.
    async fn complete(
        &self,
        request: &ModelRequest,
        options: &CallOptions,
    ) -> Result<ModelResponse, ProviderError> {
        let mut stream = self.stream(request, options).await?;
        let mut acc = ResponseAccumulator::default();
        while let Some(event) = stream.next().await {
            acc.push(&event?);
        }
        Ok(acc.finish())
    }
}

/// A provider, shared or not: what agent builders accept.
///
/// ```
/// use std::sync::Arc;
/// use tackle_provider::{Anthropic, IntoProvider, Provider, ProviderConfig, ProviderKind};
/// let owned = Anthropic::new(ProviderConfig::new(ProviderKind::Anthropic)).unwrap();
/// let shared: Arc<dyn Provider> = owned.into_provider();
/// assert_eq!(shared.clone().into_provider().name(), "anthropic");
/// ```
pub trait IntoProvider {
    /// The provider behind an `Arc`.
    fn into_provider(self) -> Arc<dyn Provider>;
}

impl IntoProvider for Arc<dyn Provider> {
    fn into_provider(self) -> Arc<dyn Provider> {
        self
    }
}

impl<P: Provider + 'static> IntoProvider for P {
    fn into_provider(self) -> Arc<dyn Provider> {
        Arc::new(self)
    }
}
