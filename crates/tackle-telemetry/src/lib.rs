//! Telemetry of Tackle's agent loop: OpenTelemetry traces and Prometheus metrics, both from
//! the GenAI spans the loop emits.
//!
//! `tackle-agent` emits `tracing` spans named after the OpenTelemetry GenAI semantic
//! conventions ([`genai`]): `invoke_agent` per turn, `chat {model}` per model call and
//! `execute_tool {name}` per tool call. This crate turns them into:
//!
//! - traces exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//!   ([`otlp::TraceExporter`]); nothing is built otherwise;
//! - [`Metrics`] (turns, steps, tool calls by outcome, tokens, prompt-cache hit ratio, provider
//!   errors by class, latency histograms) in the Prometheus text format, fed by a
//!   [`MetricsLayer`], served by `tackle serve` at `/metrics`;
//! - a parent from an incoming `traceparent` ([`propagation::adopt_remote_parent`]).
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//! let metrics = tackle_telemetry::Metrics::new();
//! let subscriber = tracing_subscriber::registry().with(metrics.layer());
//! tracing::subscriber::with_default(subscriber, || {
//!     let turn = tracing::info_span!(target: "gen_ai", "invoke_agent",
//!         "tackle.turn.end" = "completed", "tackle.turn.steps" = 2u64);
//!     drop(turn);
//! });
//! let text = metrics.render();
//! assert!(text.contains(r#"tackle_turns_total{end="completed"} 1"#));
//! assert!(text.contains("tackle_steps_total 2"));
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

pub mod genai;
mod layer;
mod metrics;
pub mod otlp;
pub mod propagation;

pub use layer::MetricsLayer;
pub use metrics::{CONTENT_TYPE, INVALID, MAX_LABEL_VALUES, Metrics, OTHER, UNMATCHED_ROUTE};
