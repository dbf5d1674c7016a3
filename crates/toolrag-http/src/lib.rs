//! The HTTP API: search, batch search, the plan gate, the plan model in the
//! loop (with a planner configured), tool cards, health, metrics and the
//! OpenAPI description, over a [`LiveIndex`] that reloads
//! itself when a new index generation is published.
//!
//! The limits, the request checks, the error codes and their statuses, the
//! OpenAPI document and the connection loop are the serving core's
//! ([`toolrag_serve`]), shared with MCP over streamable HTTP; the live index
//! is the engine's ([`toolrag_engine::live`]). This crate adds what is the
//! API's: routes, extractors, auth, CORS, timeouts and metrics. It does not
//! depend on the MCP crate, nor the MCP crate on it.
//!
//! It opens no connection but to the plan model the server is configured
//! with (`toolrag-planner`); it serves on the listener the binary binds.
//!
//! The server uses only the public library API: it opens a
//! [`Searcher`](toolrag_engine::search::Searcher), turns results into Khipu candidate
//! sets with [`khipu::candidate_set`](toolrag_engine::search::khipu::candidate_set) and
//! serialises plain types. Binding, signals and the model are the binary's job
//! (`toolrag serve`); this module builds the [`axum::Router`].
//!
//! ```no_run
//! # async fn demo() -> toolrag_core::Result<()> {
//! use std::sync::Arc;
//! use toolrag_engine::live::LiveIndex;
//! use toolrag_http::{AppState, ServeOptions};
//!
//! let live = LiveIndex::open("index".as_ref(), None, Default::default())?;
//! let state = AppState::new(ServeOptions::default());
//! state.set_ready(Arc::new(live));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7878").await.unwrap();
//! // `router(state)` is the plain axum `Router`; `serve` adds a deadline for
//! // request headers and a cap on open connections.
//! toolrag_http::serve(listener, state, std::future::pending()).await.unwrap();
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod auth;
mod body;
mod conn;
mod error;
mod handlers;
mod metrics;
pub mod openapi;
mod plan;
mod process;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use body::{GateBody, SearchBody};
pub use conn::serve;
pub use error::{status_of, HttpError};
pub use metrics::COMMIT;
pub use plan::{PlanBody, MAX_RETRY_ASKED};
/// The defaults of [`ServeOptions::header_timeout`] and
/// [`ServeOptions::max_connections`]: the serving core's.
pub use toolrag_serve::{DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS};

use toolrag_engine::live::LiveIndex;
use toolrag_planner::Planner;
use toolrag_serve::{ApiError, MAX_BODY_BYTES};

/// Every route, as (method, path template). The OpenAPI document lists
/// exactly these; a test keeps the two in sync.
pub const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/search"),
    ("post", "/v1/search/batch"),
    ("post", "/v1/gate"),
    ("post", "/v1/plan"),
    ("get", "/v1/tools/{id}"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
];

/// How many plans `POST /v1/plan` runs at once by default. A plan mostly
/// waits on the plan model, so more run at once than there are cores.
pub const DEFAULT_PLAN_CONCURRENCY: usize = 8;

/// How the server behaves, beyond the index it serves.
///
/// Built from [`ServeOptions::default`] and changed field by field: the
/// struct may gain fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The bearer token every route but `/healthz` requires; `None`: no auth.
    pub token: Option<String>,
    /// Origins allowed by CORS; empty: CORS is off (no CORS headers at all).
    pub cors_origins: Vec<String>,
    /// The longest a request may take before it is answered with 503 `timeout`.
    pub timeout: Duration,
    /// How many searches run at once (they are CPU-bound; default: one more
    /// than the cores); others queue.
    pub search_threads: usize,
    /// Tools pinned into every search (the `pinned` list of `toolrag.toml`).
    pub pinned: Vec<String>,
    /// The longest a client may take to send a request's headers before
    /// the connection is closed ([`serve`] only).
    pub header_timeout: Duration,
    /// The most connections open at once; a connection beyond it is closed
    /// at once ([`serve`] only).
    pub max_connections: usize,
    /// The plan model `POST /v1/plan` asks; `None`: the route answers 501
    /// `planner_not_configured`. The server's configuration, never a
    /// client's: a URL from the request would make the server a proxy to
    /// anywhere it can reach.
    pub planner: Option<Arc<Planner>>,
    /// How long one call to the plan model may take (the planner's own
    /// timeout), for the budget of `POST /v1/plan`: (1 + its `max_retry`)
    /// calls, plus [`timeout`](Self::timeout) for the retrieval and the
    /// queue.
    pub planner_timeout: Duration,
    /// How many plans run at once, on threads of their own (never the search
    /// pool's, so that slow plans do not hold searches up); others queue.
    pub plan_concurrency: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            token: None,
            cors_origins: Vec::new(),
            timeout: Duration::from_secs(10),
            // One more search than there are cores: while one search tokenises,
            // fuses or waits on its queue slot, another keeps the model busy.
            // Measured on 2 cores (wrk, bfcl, hybrid): 3 searches at once
            // served 5-25% more than 2 in every one of five paired runs.
            search_threads: std::thread::available_parallelism().map_or(2, |n| n.get()) + 1,
            pinned: Vec::new(),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            planner: None,
            planner_timeout: toolrag_planner::DEFAULT_TIMEOUT,
            plan_concurrency: DEFAULT_PLAN_CONCURRENCY,
        }
    }
}

/// The state every handler shares: the live index (once loaded), the
/// metrics and the options. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

struct Inner {
    index: OnceLock<Arc<LiveIndex>>,
    metrics: metrics::Metrics,
    options: ServeOptions,
    permits: tokio::sync::Semaphore,
    /// The plans' own permits: a plan holds one until its thread ends.
    plan_permits: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("ready", &self.0.index.get().is_some())
            .field("options", &self.0.options)
            .finish()
    }
}

impl AppState {
    /// A state with no index yet: `/readyz` and the search routes answer 503
    /// until [`AppState::set_ready`].
    pub fn new(options: ServeOptions) -> AppState {
        let permits = tokio::sync::Semaphore::new(options.search_threads.max(1));
        let plan_permits = Arc::new(tokio::sync::Semaphore::new(options.plan_concurrency.max(1)));
        AppState(Arc::new(Inner {
            index: OnceLock::new(),
            metrics: metrics::Metrics::new(),
            options,
            permits,
            plan_permits,
        }))
    }

    /// Installs the loaded index; from now on the server is ready. Later
    /// calls are ignored: reloads go through the [`LiveIndex`] itself.
    pub fn set_ready(&self, index: Arc<LiveIndex>) {
        let _ = self.0.index.set(index);
    }

    /// The live index, once loaded.
    pub fn index(&self) -> Option<&Arc<LiveIndex>> {
        self.0.index.get()
    }

    fn live(&self) -> Result<Arc<LiveIndex>, ApiError> {
        self.index().cloned().ok_or_else(ApiError::not_ready)
    }

    fn options(&self) -> &ServeOptions {
        &self.0.options
    }

    /// The longest `POST /v1/plan` may take on this server: (1 + the
    /// planner's `max_retry`) calls of `planner_timeout` each, plus the
    /// request timeout (the retrieval, and a wait for a plan's turn).
    /// Without a planner, the request timeout.
    fn plan_budget(&self) -> Duration {
        let o = self.options();
        match &o.planner {
            Some(p) => {
                let calls = u32::try_from(p.max_retry().saturating_add(1)).unwrap_or(u32::MAX);
                o.planner_timeout
                    .saturating_mul(calls)
                    .saturating_add(o.timeout)
            }
            None => o.timeout,
        }
    }

    /// Runs CPU-bound work off the async threads, at most `search_threads` at
    /// once, in the order asked (the semaphore is fair). The work is counted
    /// in `toolrag_search_pool_tasks_total` when it starts.
    async fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = self
            .0
            .permits
            .acquire()
            .await
            .map_err(|_| ApiError::internal("the search pool is closed"))?;
        self.0.metrics.pool_tasks.inc();
        tokio::task::spawn_blocking(work).await.map_err(|e| {
            tracing::error!(target: "server", "a search task failed: {e}");
            ApiError::internal("the search failed unexpectedly")
        })
    }
}

/// The whole HTTP API over `state`, with its limits, auth, CORS, timeout and
/// metrics layers.
pub fn router(state: AppState) -> Router {
    let mut app = Router::new()
        .route("/v1/search", post(handlers::search))
        .route("/v1/search/batch", post(handlers::search_batch))
        .route("/v1/gate", post(handlers::gate))
        .route("/v1/plan", post(plan::plan))
        .route("/v1/tools/{*id}", get(handlers::tool))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .route("/metrics", get(metrics::render))
        .route("/openapi.json", get(openapi::serve))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            handlers::timeout,
        ))
        .layer(axum::middleware::from_fn(handlers::request_limits));
    if let Some(cors) = cors_layer(&state.options().cors_origins) {
        app = app.layer(cors);
    }
    app.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        metrics::track,
    ))
    .with_state(state)
}

fn cors_layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{header, HeaderValue, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION]),
    )
}
