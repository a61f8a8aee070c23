//! Exporting the GenAI spans over OTLP/HTTP (protobuf), configured by the standard `OTEL_*`
//! variables.
//!
//! Export is on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
//! set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Otherwise nothing is built:
//! no exporter, no batch thread, no layer, and the spans cost what a disabled `tracing` span costs.
//! The exporter posts with the process's tokio runtime through reqwest (no second HTTP stack);
//! headers (`OTEL_EXPORTER_OTLP_HEADERS`), timeout, service name, resource attributes, sampler
//! and batch settings (`OTEL_BSP_*`) are read by the OpenTelemetry SDK as usual.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tokio::runtime::Handle;
use tracing::{Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::genai;

/// Reads an environment variable; a function so tests need not touch the process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Largest response body read from a collector (its answers are a few bytes).
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// How long shutdown waits for the last spans to be exported.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// An OTLP configuration Tackle cannot use; the message names the variable and what to set.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A variable has a value Tackle does not support.
    #[error("invalid value of {var}: {message}")]
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// What is wrong and what to set instead.
        message: String,
    },
    /// The exporter could not be built.
    #[error("cannot set up the OTLP trace exporter: {0}")]
    Exporter(String),
}

/// Where spans go, as the environment says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportTarget {
    /// The variable that named the endpoint.
    pub var: &'static str,
    /// Its value (an endpoint URL holds no secret; headers, which may, are never kept here).
    pub endpoint: String,
}

impl ExportTarget {
    /// The export target, or `None` when traces are not exported: no endpoint variable,
    /// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    ///
    /// ```
    /// use tackle_telemetry::otlp::ExportTarget;
    /// let env = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://collector:4318".to_owned());
    /// assert_eq!(ExportTarget::from_env(&env).unwrap().unwrap().endpoint, "http://collector:4318");
    /// assert_eq!(ExportTarget::from_env(&|_| None).unwrap(), None);
    /// ```
    pub fn from_env(env: EnvLookup<'_>) -> Result<Option<Self>, TelemetryError> {
        let get = |k: &str| env(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        match get("OTEL_TRACES_EXPORTER").as_deref() {
            None | Some("otlp") => {}
            Some(v) if v.eq_ignore_ascii_case("none") => return Ok(None),
            Some(other) => {
                return Err(TelemetryError::InvalidEnv {
                    var: "OTEL_TRACES_EXPORTER",
                    message: format!(
                        "{other:?} is not supported; Tackle exports traces over OTLP: set otlp or none"
                    ),
                });
            }
        }
        let target = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), ("OTEL_EXPORTER_OTLP_ENDPOINT")]
            .into_iter()
            .find_map(|var| get(var).map(|endpoint| Self { var, endpoint }));
        let Some(target) = target else { return Ok(None) };
        if !(target.endpoint.starts_with("http://") || target.endpoint.starts_with("https://")) {
            return Err(TelemetryError::InvalidEnv {
                var: target.var,
                message: format!(
                    "{:?} is not an http(s) URL; set the collector's OTLP/HTTP address, e.g. http://localhost:4318",
                    target.endpoint
                ),
            });
        }
        for var in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(p) = get(var) {
                if p != "http/protobuf" {
                    return Err(TelemetryError::InvalidEnv {
                        var: if var.contains("TRACES") {
                            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
                        } else {
                            "OTEL_EXPORTER_OTLP_PROTOCOL"
                        },
                        message: format!(
                            "{p:?} is not supported; Tackle exports OTLP over HTTP with protobuf: set http/protobuf \
                             (collectors accept it on port 4318)"
                        ),
                    });
                }
                break;
            }
        }
        Ok(Some(target))
    }
}

/// The OTLP trace pipeline: an SDK tracer provider with a batch exporter. Shut it down before
/// the tokio runtime so the last spans are sent.
#[derive(Debug)]
pub struct TraceExporter {
    provider: SdkTracerProvider,
    target: ExportTarget,
}

impl TraceExporter {
    /// Builds the pipeline when the environment asks for export (see [`ExportTarget::from_env`]),
    /// posting with `runtime`. Also installs the W3C trace-context propagator, so incoming
    /// `traceparent` headers parent the spans (see [`crate::propagation`]).
    pub fn from_env(env: EnvLookup<'_>, runtime: Handle) -> Result<Option<Self>, TelemetryError> {
        let Some(target) = ExportTarget::from_env(env)? else { return Ok(None) };
        let timeout = ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
            .into_iter()
            .find_map(|v| env(v).and_then(|ms| ms.trim().parse::<u64>().ok()))
            .map_or(Duration::from_secs(10), Duration::from_millis);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| TelemetryError::Exporter(format!("cannot build the HTTP client: {e}")))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(timeout)
            .with_http_client(RuntimeClient { client, runtime })
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let mut resource =
            Resource::builder().with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        let named = env("OTEL_SERVICE_NAME").is_some_and(|v| !v.trim().is_empty())
            || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|v| v.contains("service.name="));
        if !named {
            resource = resource.with_service_name("tackle");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self { provider, target }))
    }

    /// Where spans go.
    pub fn target(&self) -> &ExportTarget {
        &self.target
    }

    /// The layer that hands spans to the exporter: the GenAI spans and events, the server's
    /// request spans, and warnings of Tackle's crates (as span events).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let filter = Targets::new()
            .with_target(genai::TARGET, Level::INFO)
            .with_target("tackle_server", Level::INFO)
            .with_target("tackle_agent", Level::WARN)
            .with_target("tackle_provider", Level::WARN)
            .with_target("tackle_tools", Level::WARN)
            .with_target("tackle_mcp", Level::WARN);
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("tackle"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_level(false)
            // The `tracing` target is no OpenTelemetry attribute; the GenAI conventions say what a span carries.
            .with_target(false)
            .with_filter(filter)
    }

    /// Exports what is still buffered and stops the batch thread (waits at most 5 s).
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(error = %e, "the last spans could not be exported");
        }
    }
}

/// Posts OTLP requests with reqwest on the process's runtime. The SDK's batch processor runs
/// exports on its own thread, which has no tokio reactor: the request is spawned onto the
/// runtime and its result awaited from there.
#[derive(Debug)]
struct RuntimeClient {
    client: reqwest::Client,
    runtime: Handle,
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = client.execute(request).await?;
            let mut builder = Response::builder().status(response.status());
            if let Some(headers) = builder.headers_mut() {
                headers.extend(response.headers().iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            let mut body = Vec::new();
            let mut response = response;
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err::<_, HttpError>("the collector's response is larger than 4 MiB".into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(builder.body(Bytes::from(body))?)
        });
        task.await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn export_is_off_without_an_endpoint_or_when_disabled() {
        assert_eq!(ExportTarget::from_env(&env(&[])).unwrap(), None);
        assert_eq!(ExportTarget::from_env(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")])).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        assert!(ExportTarget::from_env(&env(&on)).unwrap().is_some());
        let disabled = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "TRUE")];
        assert_eq!(ExportTarget::from_env(&env(&disabled)).unwrap(), None);
        let none = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_TRACES_EXPORTER", "none")];
        assert_eq!(ExportTarget::from_env(&env(&none)).unwrap(), None);
    }

    #[test]
    fn the_traces_endpoint_wins_over_the_general_one() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/v1/traces"),
        ];
        let t = ExportTarget::from_env(&env(&vars)).unwrap().unwrap();
        assert_eq!(
            (t.var, t.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/v1/traces")
        );
    }

    #[test]
    fn unsupported_settings_name_the_variable_and_the_fix() {
        let grpc =
            [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
        let e = ExportTarget::from_env(&env(&grpc)).unwrap_err().to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && e.contains("http/protobuf"), "{e}");
        let json = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ];
        let e = ExportTarget::from_env(&env(&json)).unwrap_err().to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "{e}");
        let bare = [("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")];
        let e = ExportTarget::from_env(&env(&bare)).unwrap_err().to_string();
        assert!(e.contains("http://localhost:4318"), "{e}");
        let zipkin = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_TRACES_EXPORTER", "zipkin")];
        assert!(
            ExportTarget::from_env(&env(&zipkin)).unwrap_err().to_string().contains("OTEL_TRACES_EXPORTER")
        );
        // A signal-specific protocol that is fine wins over a general one that is not.
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        assert!(ExportTarget::from_env(&env(&both)).unwrap().is_some());
    }
}
