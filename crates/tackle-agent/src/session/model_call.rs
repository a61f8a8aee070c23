//! One model call of a step: stream, forward deltas, honour cancellation, retry a broken stream.

use std::sync::Arc;

use futures::StreamExt;
use tackle_protocol::{AgentEvent, ModelResponse, ResponseAccumulator, StreamEvent};
use tackle_provider::{CallOptions, EncodedRequest, Provider, ProviderError, RetryNotice};
use tackle_tools::EventSink;
use tokio_util::sync::CancellationToken;

/// Retries of a stream that broke after it started (the provider already retried failures
/// before the first byte). Nothing has run yet, so a retry is always safe.
const STREAM_RETRIES: u32 = 1;

/// How a model call ended without a response.
#[derive(Debug)]
pub(crate) enum ModelCallError {
    /// The turn was cancelled; `partial` holds what arrived before.
    Cancelled { partial: ModelResponse },
    /// The provider failed.
    Provider(ProviderError),
}

/// Sends `request` (already encoded) and streams the answer, forwarding text and reasoning
/// deltas to `sink`.
pub(crate) async fn call_model(
    provider: &Arc<dyn Provider>,
    request: EncodedRequest,
    sink: &EventSink,
    cancel: &CancellationToken,
) -> Result<ModelResponse, ModelCallError> {
    let retry_sink = sink.clone();
    let options = CallOptions {
        on_retry: Some(Arc::new(move |n: &RetryNotice| {
            retry_sink.emit(AgentEvent::Retry {
                attempt: n.attempt,
                wait_ms: u64::try_from(n.wait.as_millis()).unwrap_or(u64::MAX),
                reason: n.error.to_string(),
            });
        })),
    };
    let mut stream_retries = 0;
    loop {
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
