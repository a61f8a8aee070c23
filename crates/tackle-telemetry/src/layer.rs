//! [`MetricsLayer`]: a `tracing` layer that turns the loop's GenAI spans into [`Metrics`].
//!
//! It keeps the attributes of each `invoke_agent`, `chat` and `execute_tool` span as they are
//! recorded and updates the metrics when the span closes; provider errors that were retried are
//! `gen_ai` events inside the `chat` span carrying `error.type`.

use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{Filtered, Targets};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::genai;
use crate::metrics::{ChatReport, Metrics, ToolReport, TurnReport};

/// Feeds [`Metrics`] from the GenAI spans. Make one with [`Metrics::layer`].
#[derive(Debug, Clone)]
pub struct MetricsLayer {
    metrics: Metrics,
}

impl Metrics {
    /// The layer that feeds these metrics, filtered to the GenAI spans and events (target
    /// [`genai::TARGET`]), so it enables nothing else.
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    /// let metrics = tackle_telemetry::Metrics::new();
    /// let subscriber = tracing_subscriber::registry().with(metrics.layer());
    /// tracing::subscriber::with_default(subscriber, || {
    ///     let span = tracing::info_span!(target: "gen_ai", "execute_tool",
    ///         "gen_ai.tool.name" = "read_file", "tackle.tool.outcome" = "ok");
    ///     drop(span);
    /// });
    /// assert!(metrics.render().contains(r#"tackle_tool_calls_total{outcome="ok",tool="read_file"} 1"#));
    /// ```
    pub fn layer<S>(&self) -> Filtered<MetricsLayer, Targets, S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        MetricsLayer { metrics: self.clone() }
            .with_filter(Targets::new().with_target(genai::TARGET, Level::INFO))
    }
}

/// The attributes of one GenAI span that metrics use.
#[derive(Debug)]
struct SpanFields {
    started: Instant,
    name: &'static str,
    provider: String,
    model: String,
    error_type: Option<String>,
    first_chunk_seconds: Option<f64>,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_creation_tokens: u64,
    tool: String,
    tool_outcome: Option<String>,
    turn_end: Option<String>,
    turn_steps: u64,
}

impl SpanFields {
    fn new(name: &'static str) -> Self {
        Self {
            started: Instant::now(),
            name,
            provider: String::new(),
            model: String::new(),
            error_type: None,
            first_chunk_seconds: None,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            tool: String::new(),
            tool_outcome: None,
            turn_end: None,
            turn_steps: 0,
        }
    }
}

impl Visit for SpanFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            genai::PROVIDER_NAME => value.clone_into(&mut self.provider),
            genai::REQUEST_MODEL => value.clone_into(&mut self.model),
            genai::ERROR_TYPE => self.error_type = Some(value.to_owned()),
            genai::TOOL_NAME => value.clone_into(&mut self.tool),
            genai::TOOL_OUTCOME => self.tool_outcome = Some(value.to_owned()),
            genai::TURN_END => self.turn_end = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            genai::USAGE_INPUT_TOKENS => self.input_tokens = value,
            genai::USAGE_OUTPUT_TOKENS => self.output_tokens = value,
            genai::USAGE_CACHE_READ_INPUT_TOKENS => self.cache_read_tokens = value,
            genai::USAGE_CACHE_CREATION_INPUT_TOKENS => self.cache_creation_tokens = value,
            genai::TURN_STEPS => self.turn_steps = value,
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, u64::try_from(value).unwrap_or(0));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == genai::RESPONSE_TIME_TO_FIRST_CHUNK && value.is_finite() && value >= 0.0 {
            self.first_chunk_seconds = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here; only strings matter.
        if matches!(
            field.name(),
            genai::PROVIDER_NAME
                | genai::REQUEST_MODEL
                | genai::ERROR_TYPE
                | genai::TOOL_NAME
                | genai::TOOL_OUTCOME
                | genai::TURN_END
        ) {
            self.record_str(field, format!("{value:?}").trim_matches('"'));
        }
    }
}

/// An `error.type` carried by a `gen_ai` event (a provider error that was retried).
#[derive(Default)]
struct EventError(Option<String>);

impl Visit for EventError {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == genai::ERROR_TYPE {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == genai::ERROR_TYPE {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let name = attrs.metadata().name();
        if ![genai::INVOKE_AGENT, genai::CHAT, genai::EXECUTE_TOOL].contains(&name) {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::new(name);
        attrs.record(&mut fields);
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if let Some(fields) = span.extensions_mut().get_mut::<SpanFields>() {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut error = EventError::default();
        event.record(&mut error);
        let Some(class) = error.0 else { return };
        // The provider is the one of the model call the event happened in.
        let provider = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<SpanFields>().map(|f| f.provider.clone()))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        self.metrics.record_provider_error(&provider, &class);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(f) = span.extensions_mut().remove::<SpanFields>() else { return };
        let seconds = f.started.elapsed().as_secs_f64();
        match f.name {
            genai::INVOKE_AGENT => self.metrics.record_turn(&TurnReport {
                // A turn whose future was dropped never recorded how it ended.
                end: f.turn_end.unwrap_or_else(|| "aborted".to_owned()),
                steps: f.turn_steps,
                seconds,
            }),
            genai::CHAT => self.metrics.record_chat(&ChatReport {
                provider: f.provider,
                model: f.model,
                error: f.error_type,
                seconds,
                first_chunk_seconds: f.first_chunk_seconds,
                input_tokens: f.input_tokens,
                output_tokens: f.output_tokens,
                cache_read_tokens: f.cache_read_tokens,
                cache_creation_tokens: f.cache_creation_tokens,
            }),
            _ => self.metrics.record_tool(&ToolReport {
                tool: f.tool,
                outcome: f.tool_outcome.or(f.error_type).unwrap_or_else(|| "aborted".to_owned()),
                seconds,
            }),
        }
    }
}
