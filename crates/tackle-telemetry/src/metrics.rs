//! [`Metrics`]: counters and latency histograms of turns, model calls and tool calls, rendered in
//! the Prometheus text format.
//!
//! They are fed by [`MetricsLayer`](crate::MetricsLayer) from the GenAI spans the loop emits, so
//! traces and metrics come from one instrumentation. Label values are bounded: tool names the
//! model makes up cannot create series without end (see [`MAX_LABEL_VALUES`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry,
    TextEncoder,
};

/// Distinct values one label may take (tools, models, providers, outcomes); later ones are
/// counted under [`OTHER`].
pub const MAX_LABEL_VALUES: usize = 64;

/// The label value that stands for every value past [`MAX_LABEL_VALUES`].
pub const OTHER: &str = "_other";

/// The label value of a name that is not a plausible identifier (too long, odd characters).
pub const INVALID: &str = "_invalid";

/// Content type of [`Metrics::render`]: the Prometheus text format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Seconds buckets of a model call (a first token takes up to seconds, a long answer minutes).
const MODEL_BUCKETS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0];
/// Seconds buckets of the time to the first streamed chunk.
const FIRST_CHUNK_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0];
/// Seconds buckets of a tool call (file reads take milliseconds, shell commands minutes).
const TOOL_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];
/// Seconds buckets of an HTTP request, up to its response head (a streamed body's duration is
/// the turn's, see [`TURN_BUCKETS`]): Prometheus' client defaults, extended to a minute for
/// non-streaming turns.
const HTTP_BUCKETS: &[f64] =
    &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
/// Seconds buckets of a whole turn.
const TURN_BUCKETS: &[f64] = &[0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];

/// The registry of Tackle's metrics. Cheap to clone; clones share the counts.
///
/// ```
/// let metrics = tackle_telemetry::Metrics::new();
/// let text = metrics.render();
/// assert!(text.contains("# TYPE tackle_steps_total counter"));
/// assert!(text.contains("tackle_prompt_cache_hit_ratio 0"));
/// ```
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

struct Inner {
    registry: Registry,
    turns: IntCounterVec,
    turn_duration: Histogram,
    steps: IntCounter,
    model_calls: IntCounterVec,
    model_call_duration: HistogramVec,
    first_chunk: HistogramVec,
    tokens: IntCounterVec,
    cache_hit_ratio: Gauge,
    provider_errors: IntCounterVec,
    tool_calls: IntCounterVec,
    tool_call_duration: HistogramVec,
    http_requests: IntCounterVec,
    http_request_duration: HistogramVec,
    input_total: AtomicU64,
    cached_total: AtomicU64,
    labels: Labels,
}

/// What one finished turn reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TurnReport {
    pub(crate) end: String,
    pub(crate) steps: u64,
    pub(crate) seconds: f64,
}

/// What one finished model call reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChatReport {
    pub(crate) provider: String,
    pub(crate) model: String,
    /// The provider error class when the call failed.
    pub(crate) error: Option<String>,
    pub(crate) seconds: f64,
    pub(crate) first_chunk_seconds: Option<f64>,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_tokens: u64,
    pub(crate) cache_creation_tokens: u64,
}

/// What one finished tool call reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolReport {
    pub(crate) tool: String,
    pub(crate) outcome: String,
    pub(crate) seconds: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// An empty registry with every metric at zero.
    pub fn new() -> Self {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c =
                IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| unreachable(name, e));
            register(&registry, Box::new(c.clone()), name);
            c
        };
        let histogram = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
            let h = HistogramVec::new(opts, labels).unwrap_or_else(|e| unreachable(name, e));
            register(&registry, Box::new(h.clone()), name);
            h
        };
        let turns = counter("tackle_turns_total", "Turns finished, by how they ended.", &["end"]);
        let turn_duration = Histogram::with_opts(
            HistogramOpts::new("tackle_turn_duration_seconds", "Duration of whole turns.")
                .buckets(TURN_BUCKETS.to_vec()),
        )
        .unwrap_or_else(|e| unreachable("tackle_turn_duration_seconds", e));
        register(&registry, Box::new(turn_duration.clone()), "tackle_turn_duration_seconds");
        let steps = IntCounter::new(
            "tackle_steps_total",
            "Steps of finished turns, as each turn reports them (a step whose model call failed counts).",
        )
        .unwrap_or_else(|e| unreachable("tackle_steps_total", e));
        register(&registry, Box::new(steps.clone()), "tackle_steps_total");
        let model_calls = counter(
            "tackle_model_calls_total",
            "Model calls, by provider, requested model and outcome (ok or error).",
            &["provider", "model", "outcome"],
        );
        let model_call_duration = histogram(
            "tackle_model_call_duration_seconds",
            "Duration of model calls, from sending the request to the end of the stream.",
            &["provider", "model"],
            MODEL_BUCKETS,
        );
        let first_chunk = histogram(
            "tackle_model_time_to_first_chunk_seconds",
            "Time from sending a model request to its first streamed chunk.",
            &["provider", "model"],
            FIRST_CHUNK_BUCKETS,
        );
        let tokens = counter(
            "tackle_tokens_total",
            "Tokens of model calls: input (every prompt token), cached (read from the prompt cache, \
             part of input), cache_creation (written to it, part of input), output.",
            &["provider", "model", "type"],
        );
        let cache_hit_ratio = Gauge::new(
            "tackle_prompt_cache_hit_ratio",
            "Share of all input tokens since start that were read from the provider's prompt cache.",
        )
        .unwrap_or_else(|e| unreachable("tackle_prompt_cache_hit_ratio", e));
        register(&registry, Box::new(cache_hit_ratio.clone()), "tackle_prompt_cache_hit_ratio");
        let provider_errors = counter(
            "tackle_provider_errors_total",
            "Failed model requests by provider and error class (rate_limited, overloaded, auth, \
             bad_request, context_exceeded, server, network, timeout, protocol), retried ones included.",
            &["provider", "class"],
        );
        let tool_calls = counter(
            "tackle_tool_calls_total",
            "Tool calls by tool and outcome (ok, or the error category the model saw).",
            &["tool", "outcome"],
        );
        let tool_call_duration = histogram(
            "tackle_tool_call_duration_seconds",
            "Duration of tool calls, approval waits included.",
            &["tool"],
            TOOL_BUCKETS,
        );
        let http_requests = counter(
            "tackle_http_requests_total",
            "HTTP requests answered, by method, route template (e.g. /v1/sessions/{id}/messages; \
             _unmatched for paths no route serves) and status code.",
            &["method", "route", "status"],
        );
        let http_request_duration = histogram(
            "tackle_http_request_duration_seconds",
            "Time from receiving an HTTP request to sending its response head (a streamed body \
             continues after it), by method, route template and status code.",
            &["method", "route", "status"],
            HTTP_BUCKETS,
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                turns,
                turn_duration,
                steps,
                model_calls,
                model_call_duration,
                first_chunk,
                tokens,
                cache_hit_ratio,
                provider_errors,
                tool_calls,
                tool_call_duration,
                http_requests,
                http_request_duration,
                input_total: AtomicU64::new(0),
                cached_total: AtomicU64::new(0),
                labels: Labels::default(),
            }),
        }
    }

    /// Every metric in the Prometheus text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding metrics the registry built itself only fails on invalid names, which `new`
        // would have refused already.
        if let Err(e) = TextEncoder::new().encode(&self.inner.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "cannot encode the metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }

    pub(crate) fn record_turn(&self, turn: &TurnReport) {
        let i = &self.inner;
        i.turns.with_label_values(&[i.labels.bounded("end", &turn.end)]).inc();
        i.steps.inc_by(turn.steps);
        i.turn_duration.observe(turn.seconds);
    }

    pub(crate) fn record_chat(&self, call: &ChatReport) {
        let i = &self.inner;
        let provider = i.labels.bounded("provider", &call.provider);
        let model = i.labels.bounded("model", &call.model);
        let outcome = if call.error.is_some() { "error" } else { "ok" };
        i.model_calls.with_label_values(&[provider, model, outcome]).inc();
        i.model_call_duration.with_label_values(&[provider, model]).observe(call.seconds);
        if let Some(s) = call.first_chunk_seconds {
            i.first_chunk.with_label_values(&[provider, model]).observe(s);
        }
        if let Some(class) = &call.error {
            self.record_provider_error(&call.provider, class);
        }
        for (kind, n) in [
            ("input", call.input_tokens),
            ("cached", call.cache_read_tokens),
            ("cache_creation", call.cache_creation_tokens),
            ("output", call.output_tokens),
        ] {
            i.tokens.with_label_values(&[provider, model, kind]).inc_by(n);
        }
        let input = i.input_total.fetch_add(call.input_tokens, Ordering::Relaxed) + call.input_tokens;
        let cached =
            i.cached_total.fetch_add(call.cache_read_tokens, Ordering::Relaxed) + call.cache_read_tokens;
        if input > 0 {
            i.cache_hit_ratio.set(cached as f64 / input as f64);
        }
    }

    pub(crate) fn record_provider_error(&self, provider: &str, class: &str) {
        let i = &self.inner;
        i.provider_errors
            .with_label_values(&[i.labels.bounded("provider", provider), i.labels.bounded("class", class)])
            .inc();
    }

    pub(crate) fn record_tool(&self, call: &ToolReport) {
        let i = &self.inner;
        let tool = i.labels.bounded("tool", &call.tool);
        i.tool_calls.with_label_values(&[tool, i.labels.bounded("outcome", &call.outcome)]).inc();
        i.tool_call_duration.with_label_values(&[tool]).observe(call.seconds);
    }
}

impl Metrics {
    /// Counts one answered HTTP request: `method`, the route template that served it (`None`
    /// for a path no route matched, counted as [`UNMATCHED_ROUTE`]), the status code, and the
    /// seconds until the response head. Methods outside the standard ones count as [`OTHER`];
    /// routes and statuses are bounded like every label.
    ///
    /// ```
    /// let metrics = tackle_telemetry::Metrics::new();
    /// metrics.record_http_request("GET", Some("/v1/sessions/{id}"), 200, 0.003);
    /// assert!(metrics.render().contains(
    ///     r#"tackle_http_requests_total{method="GET",route="/v1/sessions/{id}",status="200"} 1"#));
    /// ```
    pub fn record_http_request(&self, method: &str, route: Option<&str>, status: u16, seconds: f64) {
        let i = &self.inner;
        let method = match method {
            "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" | "CONNECT" | "TRACE" => method,
            _ => OTHER,
        };
        let route = match route {
            Some(r) => i.labels.bounded_route(r),
            None => UNMATCHED_ROUTE,
        };
        let status = status.to_string();
        let status = i.labels.bounded("status", &status);
        let labels = [method, route, status];
        i.http_requests.with_label_values(&labels).inc();
        i.http_request_duration.with_label_values(&labels).observe(seconds);
    }
}

/// The `route` label of a request that no route served (so unknown paths make no series).
pub const UNMATCHED_ROUTE: &str = "_unmatched";

fn register(registry: &Registry, metric: Box<dyn prometheus::core::Collector>, name: &str) {
    if let Err(e) = registry.register(metric) {
        unreachable(name, e)
    }
}

/// Metric definitions are constants: a failure here is a bug caught by every test.
#[allow(clippy::panic)]
fn unreachable(name: &str, e: prometheus::Error) -> ! {
    panic!("metric {name} is misdefined: {e}")
}

/// The label values seen so far, per label, capped at [`MAX_LABEL_VALUES`].
#[derive(Default)]
struct Labels {
    seen: Mutex<std::collections::HashMap<&'static str, HashSet<Box<str>>>>,
}

impl Labels {
    /// `value` if it is a plausible name and the label has room for it; otherwise [`INVALID`]
    /// or [`OTHER`]. The returned `&str` lives as long as the registry.
    fn bounded<'a>(&'a self, label: &'static str, value: &'a str) -> &'a str {
        if !plausible(value) {
            return INVALID;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let values = seen.entry(label).or_default();
        if values.contains(value) {
            return value;
        }
        if values.len() < MAX_LABEL_VALUES {
            values.insert(value.into());
            return value;
        }
        OTHER
    }

    /// A route template as a label value: templates are the router's own (`{id}` in braces),
    /// so only their count is bounded.
    fn bounded_route<'a>(&'a self, route: &'a str) -> &'a str {
        let plain = route.replace(['{', '}'], "");
        if !plausible(&plain) {
            return INVALID;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let values = seen.entry("route").or_default();
        if values.contains(route) {
            return route;
        }
        if values.len() < MAX_LABEL_VALUES {
            values.insert(route.into());
            return route;
        }
        OTHER
    }
}

/// Up to 128 characters of letters, digits and `_-.:/@`: tool, model and provider names.
fn plausible(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/' | '@'))
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
