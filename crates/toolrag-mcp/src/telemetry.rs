//! OpenTelemetry spans of the MCP servers: one per tool call received, one
//! per search, one per call sent upstream, named and attributed after the
//! OpenTelemetry semantic conventions for MCP (`tools/call get_weather`,
//! `mcp.method.name`, `gen_ai.tool.name`, `mcp.session.id`, ...).
//!
//! The spans are `tracing` spans; the binary exports them over OTLP when it
//! is configured to (the `OTEL_EXPORTER_OTLP_*` variables), through
//! `tracing-opentelemetry`. The W3C trace context comes in with a request in
//! `params._meta` (`traceparent`, `tracestate`: the MCP convention, SEP-414)
//! or, over HTTP, in the request's headers; it goes on to the upstream
//! server in the `params._meta` of the call, which every transport carries.
//! Both go through the global propagator, which the binary sets with the
//! exporter: with no exporter, nothing is read or written.

use opentelemetry::propagation::{Extractor, Injector};
use rmcp::model::{RequestMetaObject, RequestParamsMeta};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one `tools/call` received for `tool`, a child of the trace
/// context the client sent, if any.
pub fn request_span(tool: &str, ctx: &RequestContext<RoleServer>) -> tracing::Span {
    let parts = ctx.extensions.get::<http::request::Parts>();
    let span = tracing::info_span!(
        "mcp.request",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        jsonrpc.request.id = %ctx.id,
        mcp.protocol.version = Empty,
        mcp.session.id = Empty,
        network.transport = if parts.is_some() { "tcp" } else { "pipe" },
    );
    // Without an exporter the span is off: nothing more to read per call.
    if span.is_disabled() {
        return span;
    }
    if let Some(version) = ctx.protocol_version() {
        span.record("mcp.protocol.version", version.to_string());
    }
    if let Some(session) = parts
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
    {
        span.record("mcp.session.id", session);
    }
    let carrier = Incoming {
        meta: &ctx.meta,
        headers: parts.map(|p| &p.headers),
    };
    let parent =
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    let _ = span.set_parent(parent);
    span
}

/// The span of one call sent to the upstream `server`'s `tool`.
pub fn upstream_span(server: &str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        "mcp.upstream",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        toolrag.upstream = %server,
    )
}

/// The span of one search over the index.
pub fn search_span(k: usize) -> tracing::Span {
    tracing::info_span!(
        "toolrag.search",
        otel.name = "search",
        toolrag.k = i64::try_from(k).unwrap_or(i64::MAX),
        toolrag.decision = Empty,
        toolrag.candidates = Empty,
    )
}

/// Marks `span` as failed (`otel.status_code = ERROR`).
pub fn mark_error(span: &tracing::Span) {
    span.record("otel.status_code", "error");
}

/// Puts `span`'s trace context into `params._meta` of an outgoing request.
pub fn inject(span: &tracing::Span, params: &mut impl RequestParamsMeta) {
    let context = span.context();
    let mut fields = Vec::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Outgoing(&mut fields))
    });
    for (key, value) in fields {
        params.meta_or_default().0 .0.insert(key, value.into());
    }
}

/// Where an incoming trace context is read: `params._meta` first, then the
/// HTTP request's headers.
struct Incoming<'a> {
    meta: &'a RequestMetaObject,
    headers: Option<&'a http::HeaderMap>,
}

impl Extractor for Incoming<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.meta
            .0
             .0
            .get(key)
            .and_then(|v| v.as_str())
            .or_else(|| {
                self.headers
                    .and_then(|h| h.get(key))
                    .and_then(|v| v.to_str().ok())
            })
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.meta.0 .0.keys().map(String::as_str).collect();
        if let Some(h) = self.headers {
            keys.extend(h.keys().map(http::HeaderName::as_str));
        }
        keys
    }
}

/// The fields a propagator writes, to be put into `_meta`.
struct Outgoing<'a>(&'a mut Vec<(String, String)>);

impl Injector for Outgoing<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_string(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_wins_over_headers_and_headers_fill_in() {
        let mut meta = RequestMetaObject::default();
        meta.0 .0.insert("traceparent".into(), "from-meta".into());
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", "from-header".parse().unwrap());
        headers.insert("tracestate", "k=v".parse().unwrap());
        let carrier = Incoming {
            meta: &meta,
            headers: Some(&headers),
        };
        assert_eq!(carrier.get("traceparent"), Some("from-meta"));
        assert_eq!(carrier.get("tracestate"), Some("k=v"));
        assert_eq!(carrier.get("baggage"), None);
    }
}
