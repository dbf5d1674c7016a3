//! `GET /metrics` in the Prometheus text format (0.0.4): requests by route,
//! method and status, a latency histogram per route, the index generation,
//! the tool count and the reloads.

use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::AppState;
use crate::serve::generation_name;

/// Latency buckets, in seconds: from a cached lexical query to a slow batch.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The server's metrics registry.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
    generation: Gauge,
    tools: Gauge,
    ready: Gauge,
    reloads: Family<OutcomeLabels, Counter>,
    /// Open HTTP connections.
    pub(super) connections: Gauge,
    /// Connections closed at once because `max_connections` were open.
    pub(super) connections_refused: Counter,
    /// Connections closed because a request's headers took longer than
    /// `header_timeout` to arrive.
    pub(super) header_timeouts: Counter,
    /// Searches (and gate checks) started on the search pool.
    pub(super) pool_tasks: Counter,
    /// Serialises scrapes, which bring the reload counters up to date.
    scrape: Mutex<()>,
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolrag");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            requests.clone(),
        );
        let latency: HistogramFamily =
            Family::new_with_constructor(|| Histogram::new(BUCKETS.iter().copied()));
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route",
            latency.clone(),
        );
        let generation = Gauge::default();
        registry.register(
            "index_generation",
            "The number of the index generation being served (gen-N)",
            generation.clone(),
        );
        let tools = Gauge::default();
        registry.register(
            "index_tools",
            "Tools in the index being served",
            tools.clone(),
        );
        let ready = Gauge::default();
        registry.register(
            "ready",
            "1 once the index is loaded, 0 before",
            ready.clone(),
        );
        let reloads = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "index_reloads",
            "Index reloads: swapped in (ok) or refused (error)",
            reloads.clone(),
        );
        let connections = Gauge::default();
        registry.register(
            "http_connections",
            "Open HTTP connections",
            connections.clone(),
        );
        let connections_refused = Counter::default();
        registry.register(
            "http_connections_refused",
            "Connections closed at once because the most connections allowed were open",
            connections_refused.clone(),
        );
        let header_timeouts = Counter::default();
        registry.register(
            "http_header_timeouts",
            "Connections closed because a request's headers did not arrive in time",
            header_timeouts.clone(),
        );
        let pool_tasks = Counter::default();
        registry.register(
            "search_pool_tasks",
            "Searches and gate checks started on the search pool (a batch counts each request)",
            pool_tasks.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            generation,
            tools,
            ready,
            reloads,
            connections,
            connections_refused,
            header_timeouts,
            pool_tasks,
            scrape: Mutex::new(()),
        }
    }

    fn observe(&self, route: String, method: String, status: u16, seconds: f64) {
        self.latency
            .get_or_create(&RouteLabels {
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
    }

    fn encode(&self, app: &AppState) -> String {
        let _guard = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(live) = app.index() {
            let s = live.snapshot();
            let number = crate::index::generation_number(&generation_name(&s)).unwrap_or(0);
            self.generation.set(number as i64);
            self.tools.set(s.tools().len() as i64);
            self.ready.set(1);
            for (outcome, total) in [("ok", live.reloads()), ("error", live.failures())] {
                let c = self.reloads.get_or_create(&OutcomeLabels { outcome });
                c.inc_by(total.saturating_sub(c.get()));
            }
        }
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// Records the route, method, status and latency of every request.
pub async fn track(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or_else(
        || "unmatched".to_string(),
        |p| p.as_str().replace("{*", "{"),
    );
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS") => m.to_string(),
        _ => "other".to_string(),
    };
    let start = Instant::now();
    let response = next.run(req).await;
    app.0.metrics.observe(
        route,
        method,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn render(State(app): State<AppState>) -> Response {
    let body = app.0.metrics.encode(&app);
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        body,
    )
        .into_response()
}
