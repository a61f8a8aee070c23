//! One model call of a step: stream, forward deltas, honour cancellation, retry a broken stream.
//!
//! Whether the answer streams is [`Streaming`], decided per step when the request is encoded:
//! a turn nobody watches ([`EventSink::discards`]) asks for a whole JSON answer, which costs
//! less to read than a stream; the provider yields its events all at once, so the call below
//! reads both the same way.
//!
//! Each call is a `chat {model}` span (target `gen_ai`, OpenTelemetry GenAI conventions): the
//! provider and model, token usage with cache reads and writes, the finish reason, the time to
//! the first chunk and `error.type` on failure; each retried provider error is a `gen_ai` event
//! with its `error.type`. With no subscriber collecting `gen_ai` the span is disabled and its
//! fields are never computed.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tackle_protocol::{AgentEvent, ModelResponse, ResponseAccumulator, StreamEvent};
use tackle_provider::{
    CallOptions, Capabilities, Delivery, EncodedRequest, Provider, ProviderError, RetryNotice,
};
use tackle_tools::EventSink;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use tracing::field::Empty;

/// Retries of a stream that broke after it started (the provider already retried failures
/// before the first byte). Nothing has run yet, so a retry is always safe.
const STREAM_RETRIES: u32 = 1;

/// Whether model answers stream (`streaming` in `tackle.toml`, [`crate::AgentBuilder::streaming`]).
///
/// A streamed answer shows its text as it is written and keeps the connection reading while the
/// model works; a whole answer (one JSON body) is less to frame, decode and wake up for (in the
/// peer benchmark's loop, 5 context switches per call instead of 12-14, and each step faster:
/// BENCHMARKS.md), but arrives only when the model is done, so it is limited as a whole
/// (`Timeouts::whole`, 600 s) rather than per read. `Auto`, the default, asks for whole answers
/// only for turns nobody watches. Providers without [`Capabilities::whole_answers`] always
/// stream.
///
/// ```
/// use tackle_agent::Streaming;
/// use tackle_provider::{Capabilities, Delivery};
/// let mut caps = Capabilities::default();
/// caps.whole_answers = true;
/// assert_eq!(Streaming::Auto.delivery(true, &caps), Delivery::Whole, "nobody watches");
/// assert_eq!(Streaming::Auto.delivery(false, &caps), Delivery::Stream);
/// assert_eq!(Streaming::Always.delivery(true, &caps), Delivery::Stream);
/// assert_eq!(Streaming::Never.delivery(false, &caps), Delivery::Whole);
/// assert_eq!(Streaming::Never.delivery(false, &Capabilities::default()), Delivery::Stream);
/// assert_eq!("never".parse::<Streaming>(), Ok(Streaming::Never));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Streaming {
    /// Stream when the turn's events are watched; ask for whole answers when its sink discards
    /// them ([`tackle_tools::EventSink::discard`]). The default.
    #[default]
    Auto,
    /// Always stream.
    Always,
    /// Never stream: whole answers, text shown when the answer is complete.
    Never,
}

impl Streaming {
    /// How a step's answer is asked for: `discards` is whether the turn's sink drops every
    /// event; `caps` are the provider's.
    pub fn delivery(self, discards: bool, caps: &Capabilities) -> Delivery {
        let whole = match self {
            Self::Auto => discards,
            Self::Always => false,
            Self::Never => true,
        };
        if whole && caps.whole_answers { Delivery::Whole } else { Delivery::Stream }
    }

    /// The setting's name in `tackle.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        }
    }
}

/// A [`Streaming`] value that names none of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a streaming setting: use auto, always or never")]
pub struct UnknownStreaming(pub String);

impl std::str::FromStr for Streaming {
    type Err = UnknownStreaming;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            _ => Err(UnknownStreaming(s.to_owned())),
        }
    }
}

/// How a model call ended without a response.
#[derive(Debug)]
pub(crate) enum ModelCallError {
    /// The turn was cancelled; `partial` holds what arrived before.
    Cancelled { partial: ModelResponse },
    /// The provider failed.
    Provider(ProviderError),
}

/// What the `chat {model}` span of a call says besides what the provider reports.
pub(crate) struct ChatLabels<'a> {
    /// The model the request names.
    pub(crate) model: &'a str,
    /// The request's output token limit.
    pub(crate) max_output_tokens: Option<u32>,
    /// The session id.
    pub(crate) conversation: &'a str,
    /// Record the answer's text and tool calls on the span (opt-in content).
    pub(crate) record_content: bool,
}

/// Sends `request` (already encoded, streamed or whole as its `delivery` says) and reads the
/// answer, forwarding text and reasoning deltas to `sink`, inside a `chat {model}` span.
pub(crate) async fn call_model(
    provider: &Arc<dyn Provider>,
    request: EncodedRequest,
    sink: &EventSink,
    cancel: &CancellationToken,
    labels: &ChatLabels<'_>,
) -> Result<ModelResponse, ModelCallError> {
    let span = tracing::info_span!(target: "gen_ai", "chat",
        "otel.name" = %format_args!("chat {}", labels.model),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = provider.name(),
        "gen_ai.request.model" = labels.model,
        "gen_ai.request.max_tokens" = labels.max_output_tokens,
        "gen_ai.request.stream" = request.delivery.is_stream(),
        "gen_ai.conversation.id" = labels.conversation,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.response.id" = Empty,
        "gen_ai.response.model" = Empty,
        "gen_ai.response.time_to_first_chunk" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.usage.cache_creation.input_tokens" = Empty,
        "gen_ai.usage.reasoning.output_tokens" = Empty,
        "gen_ai.output.messages" = Empty,
        "error.type" = Empty,
    );
    let answer = stream_answer(provider.clone(), request, sink.clone(), cancel.clone(), span.clone());
    let result = on_runtime(answer.instrument(span.clone())).await;
    if !span.is_disabled() {
        record_outcome(&span, &result, labels.record_content);
    }
    result
}

/// What the provider reported, on the call's span.
fn record_outcome(span: &tracing::Span, result: &Result<ModelResponse, ModelCallError>, content: bool) {
    match result {
        Ok(response) => {
            let u = &response.usage;
            span.record("gen_ai.response.finish_reasons", response.stop_reason.as_str());
            if let Some(id) = &response.id {
                span.record("gen_ai.response.id", id.as_str());
            }
            if let Some(model) = &response.model {
                span.record("gen_ai.response.model", model.as_str());
            }
            span.record("gen_ai.usage.input_tokens", u.input_tokens);
            span.record("gen_ai.usage.output_tokens", u.output_tokens);
            span.record("gen_ai.usage.cache_read.input_tokens", u.cache_read_tokens);
            span.record("gen_ai.usage.cache_creation.input_tokens", u.cache_write_tokens);
            span.record("gen_ai.usage.reasoning.output_tokens", u.reasoning_tokens);
            if content {
                let message = serde_json::json!([{
                    "role": "assistant",
                    "content": response.content,
                    "finish_reason": response.stop_reason.as_str(),
                }]);
                span.record("gen_ai.output.messages", message.to_string().as_str());
            }
        }
        Err(ModelCallError::Cancelled { .. }) => {
            span.record("error.type", "cancelled");
        }
        Err(ModelCallError::Provider(e)) => {
            span.record("error.type", e.kind());
            span.record("otel.status_code", "error");
        }
    }
}

/// Runs `call` as a task of a multi-threaded runtime, and returns its result.
///
/// An embedder often drives a turn from outside the runtime's workers (`block_on` in `main`,
/// as `#[tokio::main]` does); the connection's tasks run on the workers, so every chunk of a
/// streamed answer would wake the caller's thread from another one. As a task, the stream is
/// read on the worker that receives it, and the caller is woken once, with the whole answer.
/// On a current-thread runtime everything runs on one thread anyway, so `call` runs in place.
/// Dropping the returned future stops the task.
async fn on_runtime(
    call: impl Future<Output = Result<ModelResponse, ModelCallError>> + Send + 'static,
) -> Result<ModelResponse, ModelCallError> {
    let multi_threaded = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if !multi_threaded {
        return call.await;
    }
    /// Aborts the task when the caller stops waiting (a cancelled turn, a dropped future).
    struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for AbortOnDrop<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut task = AbortOnDrop(tokio::spawn(call));
    match (&mut task.0).await {
        Ok(value) => value,
        // A panic in the provider's stream is the caller's panic, as if it ran in place.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down: nothing more will arrive.
        Err(_) => Err(ModelCallError::Cancelled { partial: ModelResponse::default() }),
    }
}

async fn stream_answer(
    provider: Arc<dyn Provider>,
    request: EncodedRequest,
    sink: EventSink,
    cancel: CancellationToken,
    span: tracing::Span,
) -> Result<ModelResponse, ModelCallError> {
    let (provider, sink, cancel, span) = (&provider, &sink, &cancel, &span);
    let retry_sink = sink.clone();
    let options = CallOptions {
        on_retry: Some(Arc::new(move |n: &RetryNotice| {
            // For traces and metrics; the provider logs the retry as a warning already.
            tracing::info!(target: "gen_ai", { "error.type" = n.error.kind() }, "provider error; retrying");
            retry_sink.emit(AgentEvent::Retry {
                attempt: n.attempt,
                wait_ms: u64::try_from(n.wait.as_millis()).unwrap_or(u64::MAX),
                reason: n.error.to_string(),
            });
        })),
    };
    let mut stream_retries = 0;
    loop {
        // Only read when the span is collected: the time to the first chunk.
        let sent = (!span.is_disabled()).then(Instant::now);
        let mut first_chunk = sent;
        let started = tokio::select! {
            r = provider.send(request.clone(), &options) => r,
            _ = cancel.cancelled() => return Err(ModelCallError::Cancelled { partial: ModelResponse::default() }),
        };
        let mut stream = started.map_err(ModelCallError::Provider)?;
        let mut acc = ResponseAccumulator::default();
        let failure = loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = cancel.cancelled() => return Err(ModelCallError::Cancelled { partial: acc.finish() }),
            };
            match next {
                Some(Ok(event)) => {
                    if let Some(sent) = first_chunk.take() {
                        span.record("gen_ai.response.time_to_first_chunk", sent.elapsed().as_secs_f64());
                    }
                    match &event {
                        StreamEvent::TextDelta { text } => {
                            sink.emit(AgentEvent::TextDelta { text: text.clone() })
                        }
                        StreamEvent::ReasoningDelta { text } => {
                            sink.emit(AgentEvent::ReasoningDelta { text: text.clone() })
                        }
                        _ => {}
                    }
                    acc.push(&event);
                }
                Some(Err(e)) => break e,
                None if acc.is_complete() => return Ok(acc.finish()),
                None => {
                    break ProviderError::Protocol {
                        message: "the stream ended without a stop event".into(),
                    };
                }
            }
        };
        if failure.is_retryable() && stream_retries < STREAM_RETRIES {
            stream_retries += 1;
            tracing::warn!(error = %failure, "model stream failed mid-way; retrying the step");
            tracing::info!(target: "gen_ai", { "error.type" = failure.kind() }, "model stream failed mid-way; retrying");
            sink.emit(AgentEvent::Retry {
                attempt: stream_retries + 1,
                wait_ms: 0,
                reason: format!("stream failed mid-way ({failure}); text so far is discarded"),
            });
            continue;
        }
        return Err(ModelCallError::Provider(failure));
    }
}
