//! `GET /metrics` in the Prometheus text format (0.0.4): the build (version,
//! commit, model), requests by route, method and status, a latency histogram
//! per route, searches by mode and by decision, plans by outcome, the index
//! generation, the tool count, the reloads, and the standard `process_*` metrics
//! ([`process`](super::process)).

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
use toolrag_engine::live::generation_name;
use toolrag_engine::search::khipu::CandidateSet;
use toolrag_engine::search::{Decision, Mode};

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    decision: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    commit: &'static str,
    model: String,
}

/// The commit the binary was built from (`git rev-parse --short HEAD` at
/// build time, or `TOOLRAG_COMMIT`), `unknown` without git; see build.rs.
pub const COMMIT: &str = env!("TOOLRAG_COMMIT");

/// The `decision` label of a search's decision, as the API spells it.
fn decision_name(d: Decision) -> &'static str {
    match d {
        Decision::Navigate => "NAVIGATE",
        Decision::Abstain => "ABSTAIN",
    }
}

/// The outcomes of `toolrag_plans_total`.
const PLAN_OUTCOMES: [&str; 3] = ["passed", "aborted", "failed"];

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The server's metrics registry.
pub struct Metrics {
    registry: Registry,
    build: Family<BuildLabels, Gauge>,
    searches: Family<ModeLabels, Counter>,
    decisions: Family<DecisionLabels, Counter>,
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
    plans: Family<OutcomeLabels, Counter>,
    /// Serialises scrapes, which bring the reload counters up to date.
    scrape: Mutex<()>,
}

/// Registers `metric` under `name` with `help`, and gives it back.
fn register<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        // The process metrics keep their standard unprefixed names; the
        // rest is `toolrag_*`.
        let mut root = Registry::default();
        root.register_collector(Box::new(super::process::ProcessCollector));
        let registry = root.sub_registry_with_prefix("toolrag");
        let build = register(
            registry,
            "build_info",
            "Always 1: the toolrag version, the commit it was built from and the embedding model \
             serving dense search (none: lexical only, or the index is not loaded yet)",
            Family::<BuildLabels, Gauge>::default(),
        );
        let searches = register(
            registry,
            "searches",
            "Searches answered, by mode (a batch counts each request)",
            Family::<ModeLabels, Counter>::default(),
        );
        let decisions = register(
            registry,
            "search_decisions",
            "Searches answered, by the decision suggested to the plan model",
            Family::<DecisionLabels, Counter>::default(),
        );
        let requests = register(
            registry,
            "http_requests",
            "HTTP requests answered, by route, method and status",
            Family::<RequestLabels, Counter>::default(),
        );
        let latency: HistogramFamily = register(
            registry,
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route",
            Family::new_with_constructor(|| Histogram::new(BUCKETS.iter().copied())),
        );
        let generation = register(
            registry,
            "index_generation",
            "The number of the index generation being served (gen-N)",
            Gauge::default(),
        );
        let tools = register(
            registry,
            "index_tools",
            "Tools in the index being served",
            Gauge::default(),
        );
        let ready = register(
            registry,
            "ready",
            "1 once the index is loaded, 0 before",
            Gauge::default(),
        );
        let reloads = register(
            registry,
            "index_reloads",
            "Index reloads: swapped in (ok) or refused (error)",
            Family::<OutcomeLabels, Counter>::default(),
        );
        let connections = register(
            registry,
            "http_connections",
            "Open HTTP connections",
            Gauge::default(),
        );
        let connections_refused = register(
            registry,
            "http_connections_refused",
            "Connections closed at once because the most connections allowed were open",
            Counter::default(),
        );
        let header_timeouts = register(
            registry,
            "http_header_timeouts",
            "Connections closed because a request's headers did not arrive in time",
            Counter::default(),
        );
        let pool_tasks = register(
            registry,
            "search_pool_tasks",
            "Searches and gate checks started on the search pool (a batch counts each request)",
            Counter::default(),
        );
        let plans = register(
            registry,
            "plans",
            "Plans asked of the plan model (POST /v1/plan), by outcome: passed the gate, aborted \
             (the retry budget spent) or failed (the plan model could not be asked)",
            Family::<OutcomeLabels, Counter>::default(),
        );
        let metrics = Metrics {
            registry: root,
            build,
            searches,
            decisions,
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
            plans,
            scrape: Mutex::new(()),
        };
        metrics.start_series_at_zero();
        metrics
    }

    /// Every labelled series exists from the start, at 0, so that rates and
    /// ratios over them are defined before the first search or plan.
    fn start_series_at_zero(&self) {
        for mode in Mode::ALL {
            drop(
                self.searches
                    .get_or_create(&ModeLabels { mode: mode.name() }),
            );
        }
        for d in [Decision::Navigate, Decision::Abstain] {
            drop(self.decisions.get_or_create(&DecisionLabels {
                decision: decision_name(d),
            }));
        }
        for outcome in PLAN_OUTCOMES {
            drop(self.plans.get_or_create(&OutcomeLabels { outcome }));
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

    /// Counts a plan answered, by its outcome (one of [`PLAN_OUTCOMES`]).
    pub(super) fn planned(&self, outcome: &'static str) {
        self.plans.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// Counts a search answered: its mode and its decision.
    pub(super) fn searched(&self, set: &CandidateSet) {
        self.searches
            .get_or_create(&ModeLabels {
                mode: set.retrieval.mode.name(),
            })
            .inc();
        self.decisions
            .get_or_create(&DecisionLabels {
                decision: decision_name(set.retrieval.decision),
            })
            .inc();
    }

    fn encode(&self, app: &AppState) -> String {
        let _guard = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
        let mut model = "none".to_string();
        if let Some(live) = app.index() {
            let s = live.snapshot();
            if s.has_dense() {
                if let Some(m) = &s.manifest().model {
                    model.clone_from(&m.id);
                }
            }
            let number =
                toolrag_engine::index::generation_number(&generation_name(&s)).unwrap_or(0);
            self.generation.set(number as i64);
            self.tools.set(s.tools().len() as i64);
            self.ready.set(1);
            for (outcome, total) in [("ok", live.reloads()), ("error", live.failures())] {
                let c = self.reloads.get_or_create(&OutcomeLabels { outcome });
                c.inc_by(total.saturating_sub(c.get()));
            }
        }
        // One series: a reload may bring another model.
        self.build.clear();
        self.build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                commit: COMMIT,
                model,
            })
            .set(1);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family's name follows Prometheus' conventions (snake case, the
    /// `toolrag_` prefix or the standard `process_` one, counters in
    /// `_total`, units in base units as a suffix), and the new families are
    /// there before the first request. `promtool check metrics` runs over a
    /// real scrape in the integration tests.
    #[test]
    fn metrics_names_follow_the_conventions() {
        let app = AppState::new(super::super::ServeOptions::default());
        let text = app.0.metrics.encode(&app);
        let name = regex::Regex::new(r"^(toolrag|process)_[a-z0-9_]*[a-z0-9]$").unwrap();
        let mut families = Vec::new();
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let mut parts = line["# TYPE ".len()..].split(' ');
            let (family, kind) = (parts.next().unwrap(), parts.next().unwrap());
            assert!(name.is_match(family), "{family}");
            assert_eq!(kind == "counter", family.ends_with("_total"), "{line}");
            for bad in ["_ms", "_milliseconds", "_kb", "_count_total"] {
                assert!(!family.contains(bad), "{family}: not a base unit");
            }
            families.push(family.to_string());
        }
        for f in [
            "toolrag_build_info",
            "toolrag_searches_total",
            "toolrag_search_decisions_total",
            "toolrag_ready",
        ] {
            assert!(families.iter().any(|x| x == f), "{f} in {families:?}");
        }
        if cfg!(target_os = "linux") {
            for f in [
                "process_cpu_seconds_total",
                "process_resident_memory_bytes",
                "process_open_fds",
            ] {
                assert!(families.iter().any(|x| x == f), "{f} in {families:?}");
            }
        }
        let build = format!(
            r#"toolrag_build_info{{version="{}",commit="{COMMIT}",model="none"}} 1"#,
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&build), "{text}");
        assert!(!COMMIT.is_empty());
        for line in [
            r#"toolrag_searches_total{mode="hybrid"} 0"#,
            r#"toolrag_searches_total{mode="lexical"} 0"#,
            r#"toolrag_searches_total{mode="dense"} 0"#,
            r#"toolrag_search_decisions_total{decision="NAVIGATE"} 0"#,
            r#"toolrag_search_decisions_total{decision="ABSTAIN"} 0"#,
            r#"toolrag_plans_total{outcome="passed"} 0"#,
            r#"toolrag_plans_total{outcome="aborted"} 0"#,
            r#"toolrag_plans_total{outcome="failed"} 0"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
