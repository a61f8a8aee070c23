//! `GET /metrics`: served only when the process feeds a registry, in the Prometheus text format
//! (parsed by `prometheus-parse`), counting what the turns did, provider errors by class
//! included; listed in the OpenAPI document.

use crate::common;

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use common::{ALICE, Harness, tokens};
use serde_json::json;
use tackle_telemetry::Metrics;
use tackle_testkit::{Fault, Script, Turn};
use tracing_subscriber::layer::SubscriberExt as _;

fn parse(text: &str) -> HashMap<String, f64> {
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text");
    let mut out = HashMap::new();
    for s in scrape.samples {
        let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        if let prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) = s.value
        {
            out.insert(format!("{}{{{}}}", s.metric, labels.join(",")), v);
        }
    }
    out
}

/// The harness with `metrics` served (the state is not shared yet, so it takes them).
fn with_metrics(h: Harness, metrics: &Metrics) -> Harness {
    let Harness { fake, state, store, workspace, db } = h;
    Harness { fake, state: state.with_metrics(metrics.clone()), store, workspace, db }
}

#[tokio::test]
async fn metrics_are_404_without_a_registry_and_need_a_token_when_the_server_has_tokens() {
    let h = Harness::new(Script::new(vec![])).await;
    let (status, body) = h.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let metrics = Metrics::new();
    let h = with_metrics(Harness::with(Script::new(vec![]), tokens()).await, &metrics);
    assert_eq!(h.call(Method::GET, "/metrics", None, None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        h.call(Method::GET, "/metrics", Some("wrong-token-0123456789"), None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, text) = h.call_raw(Method::GET, "/metrics", Some(ALICE), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(parse(&String::from_utf8(text).unwrap())["tackle_steps_total{}"], 0.0);
}

#[tokio::test]
async fn a_failed_and_a_completed_turn_are_counted_with_the_provider_error_class() {
    let metrics = Metrics::new();
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(metrics.layer()));
    let h = with_metrics(Harness::new(Script::new(vec![Turn::text("hello")])).await, &metrics);
    let id = h.session(None).await;
    h.fake.push_fault(Fault::Status {
        status: 429,
        body: None,
        retry_after: None,
        retry_after_ms: None,
        should_retry: None,
    });
    let send = json!({"message": "hi", "stream": false});
    let (_, failed) =
        h.call(Method::POST, &format!("/v1/sessions/{id}/messages"), None, Some(send.clone())).await;
    assert_eq!(failed["end"], "failed", "{failed}");
    let (_, done) = h.call(Method::POST, &format!("/v1/sessions/{id}/messages"), None, Some(send)).await;
    assert_eq!(done["end"], "completed", "{done}");

    let (status, text) = h.call_raw(Method::GET, "/metrics", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(text).unwrap();
    let m = parse(&text);
    assert_eq!(m["tackle_turns_total{end=failed}"], 1.0, "{text}");
    assert_eq!(m["tackle_turns_total{end=completed}"], 1.0);
    // A step counts once it started, also the one whose model call failed (as the turn reports).
    assert_eq!(m["tackle_steps_total{}"], 2.0);
    assert_eq!(m["tackle_provider_errors_total{class=rate_limited,provider=openai}"], 1.0, "{text}");
    assert_eq!(m["tackle_model_calls_total{model=model-x,outcome=error,provider=openai}"], 1.0);
    assert_eq!(m["tackle_model_calls_total{model=model-x,outcome=ok,provider=openai}"], 1.0);
}

#[tokio::test]
async fn the_openapi_document_lists_metrics() {
    let h = Harness::new(Script::new(vec![])).await;
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let op = &doc["paths"]["/metrics"]["get"];
    assert_eq!(op["tags"][0], "operations", "{op}");
    assert!(op["responses"]["200"]["content"]["text/plain"].is_object(), "{op}");
}

#[tokio::test]
async fn http_requests_are_counted_by_method_route_template_and_status() {
    let metrics = Metrics::new();
    let h = with_metrics(Harness::with(Script::new(vec![]), tokens()).await, &metrics);
    for _ in 0..2 {
        assert_eq!(h.call(Method::GET, "/healthz", None, None).await.0, StatusCode::OK);
    }
    let id = h.session(Some(ALICE)).await;
    assert_eq!(h.call(Method::GET, &format!("/v1/sessions/{id}"), Some(ALICE), None).await.0, StatusCode::OK);
    // Without a token: counted under the route with its 401.
    assert_eq!(
        h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await.0,
        StatusCode::UNAUTHORIZED
    );
    // A path no route serves makes no series of its own.
    assert_eq!(h.call(Method::GET, "/no/such/path-1", None, None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(h.call(Method::GET, "/no/such/path-2", None, None).await.0, StatusCode::NOT_FOUND);

    let (status, text) = h.call_raw(Method::GET, "/metrics", Some(ALICE), None).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(text).unwrap();
    // Exact lines: `prometheus-parse` misreads label values with braces, such as route templates.
    for line in [
        r#"tackle_http_requests_total{method="GET",route="/healthz",status="200"} 2"#,
        r#"tackle_http_requests_total{method="POST",route="/v1/sessions",status="201"} 1"#,
        r#"tackle_http_requests_total{method="GET",route="/v1/sessions/{id}",status="200"} 1"#,
        r#"tackle_http_requests_total{method="GET",route="/v1/sessions/{id}",status="401"} 1"#,
        r#"tackle_http_requests_total{method="GET",route="_unmatched",status="404"} 2"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
    }
    assert!(!text.contains("path-1"), "{text}");
    // The latency histogram has one observation per request, under the same labels.
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let healthz = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "tackle_http_request_duration_seconds"
                && s.labels.get("route") == Some("/healthz")
                && s.labels.get("status") == Some("200")
        })
        .expect("a latency histogram of /healthz");
    let prometheus_parse::Value::Histogram(buckets) = &healthz.value else { panic!("{:?}", healthz.value) };
    assert_eq!(buckets.last().unwrap().count, 2.0, "{text}");
}
