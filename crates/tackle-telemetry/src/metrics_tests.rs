use std::collections::HashMap;

use tracing_subscriber::layer::SubscriberExt;

use super::*;

/// Parses `text` with a Prometheus text-format parser; every sample by name and sorted labels.
fn parse(text: &str) -> HashMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
    let mut out = HashMap::new();
    for s in scrape.samples {
        let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let value = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => continue,
        };
        out.insert(format!("{}{{{}}}", s.metric, labels.join(",")), value);
    }
    out
}

/// Runs `f` with a subscriber that has only the metrics layer.
fn with_layer(metrics: &Metrics, f: impl FnOnce()) {
    let subscriber = tracing_subscriber::registry().with(metrics.layer());
    tracing::subscriber::with_default(subscriber, f);
}

fn chat(input: u64, cached: u64, output: u64) {
    let span = tracing::info_span!(target: "gen_ai", "chat",
        "gen_ai.provider.name" = "openai", "gen_ai.request.model" = "gpt-4.1",
        "gen_ai.usage.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.cache_read.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.cache_creation.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.output_tokens" = tracing::field::Empty,
        "gen_ai.response.time_to_first_chunk" = tracing::field::Empty,
        "error.type" = tracing::field::Empty);
    span.record("gen_ai.usage.input_tokens", input);
    span.record("gen_ai.usage.cache_read.input_tokens", cached);
    span.record("gen_ai.usage.cache_creation.input_tokens", 7u64);
    span.record("gen_ai.usage.output_tokens", output);
    span.record("gen_ai.response.time_to_first_chunk", 0.2);
}

#[test]
fn spans_become_counters_that_parse() {
    let metrics = Metrics::new();
    with_layer(&metrics, || {
        let turn = tracing::info_span!(target: "gen_ai", "invoke_agent",
            "tackle.turn.end" = tracing::field::Empty, "tackle.turn.steps" = tracing::field::Empty);
        turn.in_scope(|| {
            chat(1000, 0, 50);
            let tool = tracing::info_span!(target: "gen_ai", "execute_tool",
                "gen_ai.tool.name" = "read_file", "tackle.tool.outcome" = tracing::field::Empty);
            tool.record("tackle.tool.outcome", "ok");
            drop(tool);
            let failed = tracing::info_span!(target: "gen_ai", "execute_tool",
                "gen_ai.tool.name" = "shell", "tackle.tool.outcome" = "denied");
            drop(failed);
            chat(1100, 1000, 20);
        });
        turn.record("tackle.turn.end", "completed");
        turn.record("tackle.turn.steps", 2u64);
    });
    let m = parse(&metrics.render());
    assert_eq!(m["tackle_turns_total{end=completed}"], 1.0);
    assert_eq!(m["tackle_steps_total{}"], 2.0);
    assert_eq!(m["tackle_model_calls_total{model=gpt-4.1,outcome=ok,provider=openai}"], 2.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-4.1,provider=openai,type=input}"], 2100.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-4.1,provider=openai,type=cached}"], 1000.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-4.1,provider=openai,type=cache_creation}"], 14.0);
    assert_eq!(m["tackle_tokens_total{model=gpt-4.1,provider=openai,type=output}"], 70.0);
    assert!((m["tackle_prompt_cache_hit_ratio{}"] - 1000.0 / 2100.0).abs() < 1e-9);
    assert_eq!(m["tackle_tool_calls_total{outcome=ok,tool=read_file}"], 1.0);
    assert_eq!(m["tackle_tool_calls_total{outcome=denied,tool=shell}"], 1.0);
    let text = metrics.render();
    assert!(text.contains("tackle_turn_duration_seconds_count 1"), "{text}");
    assert!(
        text.contains(r#"tackle_model_call_duration_seconds_count{model="gpt-4.1",provider="openai"} 2"#)
    );
    assert!(text.contains(
        r#"tackle_model_time_to_first_chunk_seconds_bucket{model="gpt-4.1",provider="openai",le="0.25"} 2"#
    ));
    assert!(text.contains(r#"tackle_tool_call_duration_seconds_count{tool="shell"} 1"#));
}

#[test]
fn provider_errors_count_retries_and_the_final_failure_by_class() {
    let metrics = Metrics::new();
    with_layer(&metrics, || {
        let span = tracing::info_span!(target: "gen_ai", "chat",
            "gen_ai.provider.name" = "anthropic", "gen_ai.request.model" = "claude",
            "error.type" = tracing::field::Empty);
        span.in_scope(|| {
            tracing::warn!(target: "gen_ai", { "error.type" = "rate_limited" }, "retrying");
            tracing::warn!(target: "gen_ai", { "error.type" = "overloaded" }, "retrying");
        });
        span.record("error.type", "rate_limited");
        // Events of other targets and without a class are not provider errors.
        tracing::warn!(target: "tackle_agent", { "error.type" = "server" }, "not counted");
        tracing::info!(target: "gen_ai", "no class");
    });
    let m = parse(&metrics.render());
    assert_eq!(m["tackle_provider_errors_total{class=rate_limited,provider=anthropic}"], 2.0);
    assert_eq!(m["tackle_provider_errors_total{class=overloaded,provider=anthropic}"], 1.0);
    assert_eq!(m["tackle_model_calls_total{model=claude,outcome=error,provider=anthropic}"], 1.0);
    assert!(!m.keys().any(|k| k.contains("class=server")), "{m:?}");
}

#[test]
fn made_up_names_cannot_grow_the_series_without_bound() {
    let metrics = Metrics::new();
    with_layer(&metrics, || {
        for i in 0..2_000 {
            let name = format!("tool_{i}");
            drop(tracing::info_span!(target: "gen_ai", "execute_tool",
                "gen_ai.tool.name" = name.as_str(), "tackle.tool.outcome" = "unknown_tool"));
        }
        for hostile in ["a\"b", "line\nbreak", "", &"x".repeat(500), "}{le=\"1\""] {
            drop(tracing::info_span!(target: "gen_ai", "execute_tool",
                "gen_ai.tool.name" = hostile, "tackle.tool.outcome" = "unknown_tool"));
        }
    });
    let text = metrics.render();
    let m = parse(&text);
    let series = m.keys().filter(|k| k.starts_with("tackle_tool_calls_total")).count();
    assert_eq!(series, MAX_LABEL_VALUES + 2, "64 names, _other and _invalid");
    assert_eq!(
        m["tackle_tool_calls_total{outcome=unknown_tool,tool=_other}"],
        (2_000 - MAX_LABEL_VALUES) as f64
    );
    assert_eq!(m["tackle_tool_calls_total{outcome=unknown_tool,tool=_invalid}"], 5.0);
    assert!(!text.contains("line\nbreak") && !text.contains("a\\\"b"));
}

#[test]
fn a_turn_whose_future_was_dropped_counts_as_aborted_and_other_spans_are_ignored() {
    let metrics = Metrics::new();
    with_layer(&metrics, || {
        drop(
            tracing::info_span!(target: "gen_ai", "invoke_agent", "tackle.turn.end" = tracing::field::Empty),
        );
        drop(tracing::info_span!(target: "gen_ai", "something_else"));
        drop(tracing::info_span!(target: "tackle_agent", "execute_tool", "gen_ai.tool.name" = "shell"));
    });
    let m = parse(&metrics.render());
    assert_eq!(m["tackle_turns_total{end=aborted}"], 1.0);
    assert!(!m.keys().any(|k| k.starts_with("tackle_tool_calls_total")), "{m:?}");
}

#[test]
fn a_fresh_registry_renders_every_unlabelled_metric_at_zero() {
    let m = parse(&Metrics::new().render());
    assert_eq!(m["tackle_steps_total{}"], 0.0);
    assert_eq!(m["tackle_prompt_cache_hit_ratio{}"], 0.0);
}
