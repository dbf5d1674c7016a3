//! OpenTelemetry traces over OTLP, configured the standard way: set
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! and the MCP servers' spans (one per tool call received, per search, per
//! call sent upstream: see `toolrag_mcp`'s telemetry) go to that collector
//! over http/protobuf, in batches. `OTEL_SERVICE_NAME` (default `toolrag`),
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, the timeouts and
//! the batch settings (`OTEL_BSP_*`) are read as the SDK documents them;
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turns it off.
//!
//! Setting it up also sets the W3C trace-context propagator, so a request's
//! `traceparent` is read and passed on to upstream servers.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

/// The `tracing` layer that turns spans into OpenTelemetry spans.
pub(crate) type TraceLayer<S> =
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>;

/// The exporter of a process; [`Telemetry::shutdown`] sends what is left.
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
}

/// Why the OTLP exporter is not set up, though the environment asks for it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// A protocol other than http/protobuf.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL={0}: toolrag exports traces over http/protobuf only (a \
         collector's port 4318); unset it or set it to http/protobuf. Traces are off."
    )]
    Protocol(String),
    /// The exporter could not be built (a bad endpoint, say).
    #[error("cannot export traces over OTLP: {0}. Traces are off.")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for traces over OTLP.
fn wanted() -> bool {
    let endpoint =
        env("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    endpoint.is_some() && !disabled
}

impl Telemetry {
    /// The exporter the environment asks for, if it does, with the
    /// `tracing` layer that feeds it.
    pub(crate) fn from_env<S>() -> Result<Option<(Telemetry, TraceLayer<S>)>, TelemetryError>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        if !wanted() {
            return Ok(None);
        }
        let protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(p) = protocol.filter(|p| p != "http/protobuf") {
            return Err(TelemetryError::Protocol(p));
        }
        // The exporter's reqwest (shared with rmcp's) brings no TLS crypto
        // of its own: the same provider as the MCP client's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?;
        let mut resource = Resource::builder();
        let named = env("OTEL_SERVICE_NAME").is_some()
            || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="));
        if !named {
            resource = resource.with_service_name("toolrag");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("toolrag");
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let layer = tracing_opentelemetry::layer().with_tracer(tracer);
        Ok(Some((Telemetry { provider }, layer)))
    }

    /// Sends the spans still in the batch and stops the exporter.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("cannot send the last traces: {e}");
        }
    }
}
