//! W3C trace context from incoming requests: a `traceparent` header makes the request's span,
//! and the turn it runs, part of the caller's trace.

use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::HeaderExtractor;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Makes `span` a child of the trace context in `headers` (`traceparent`, `tracestate`), with
/// the propagator installed when traces are exported ([`crate::otlp::TraceExporter`]). Does
/// nothing when the span is disabled (traces off), when no propagator is installed, or when the
/// headers carry no valid context: a malformed `traceparent` starts a new trace.
pub fn adopt_remote_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    if span.is_disabled() || !headers.contains_key("traceparent") {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    if parent.span().span_context().is_valid() {
        // Only fails when the span started already or no OpenTelemetry layer is installed.
        let _ = span.set_parent(parent);
    }
}
