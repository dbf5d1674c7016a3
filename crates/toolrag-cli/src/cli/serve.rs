//! `toolrag serve`: the HTTP API, with hot reload and graceful shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use toolrag::planner::{Planner, PlannerOptions};
use toolrag::serve::{LiveIndex, RELOAD_POLL};
use toolrag_http::{AppState, ServeOptions};

use super::model::Need;
use super::{Config, ModelArgs};

/// How long in-flight requests get to finish after SIGTERM or Ctrl-C.
const GRACE: Duration = Duration::from_secs(10);

/// Serve the index over HTTP: search, batch search, the plan gate, plans, tool cards, health and metrics.
///
/// The server loads the index in the background (GET /readyz answers 503 until
/// it is loaded) and follows rebuilds: when `toolrag index` publishes a new
/// generation into the folder, it is loaded and swapped in atomically; a broken
/// one is refused and the old one keeps serving. It binds to loopback unless
/// told otherwise. The API is described at GET /openapi.json.
///
/// With --planner URL (an OpenAI-compatible chat server), POST /v1/plan runs
/// the loop of `toolrag plan`: retrieve, ask the plan model, gate, repair. The
/// plan model is the server's choice, never a client's. Its API key is read
/// from TOOLRAG_PLANNER_API_KEY and never printed or logged. Without
/// --planner, POST /v1/plan answers 501 planner_not_configured.
///
/// Examples:
///   toolrag serve
///   toolrag serve --index /tmp/my-index --addr 127.0.0.1:8080
///   toolrag serve --token-file ~/.config/toolrag/token --cors-origin https://app.example.com
///   toolrag serve --planner http://127.0.0.1:8080/v1 --max-retry 2 --planner-timeout 60
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ServeArgs {
    /// The index folder.
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// The address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "HOST:PORT")]
    addr: SocketAddr,
    /// Require `Authorization: Bearer <token>` on every route but /healthz;
    /// the token is the file's content, trimmed.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Allow cross-origin requests from this origin (repeatable; `*` for any).
    /// Without it CORS is off.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,
    /// Answer 503 `timeout` to a request that takes longer than this many milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    timeout_ms: u64,
    /// Close a connection whose request headers take longer than this many
    /// milliseconds to arrive (slow clients hold sockets otherwise).
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    header_timeout_ms: u64,
    /// The most connections open at once; more are closed at once.
    #[arg(long, default_value_t = toolrag_http::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    max_connections: usize,
    /// The config file (default: ./toolrag.toml when present).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// Serve BM25 only, even when the index was built with the model: without
    /// this flag, an index with vectors whose model cannot be found is an
    /// error, not a silent fall back to BM25.
    #[arg(long)]
    lexical_only: bool,
    // Last: its help heading would hold every option after it.
    #[command(flatten)]
    planner: PlannerArgs,
}

/// The plan model of POST /v1/plan.
#[derive(Debug, Args)]
#[command(next_help_heading = "Plan model (POST /v1/plan)")]
struct PlannerArgs {
    /// The plan model's OpenAI-compatible base URL; the server posts to
    /// URL/chat/completions. Without it, POST /v1/plan answers 501.
    #[arg(long, value_name = "URL")]
    planner: Option<String>,
    /// The `model` field of each request to the plan model.
    #[arg(long, value_name = "NAME", requires = "planner")]
    planner_model: Option<String>,
    /// How long one call to the plan model may take, seconds. A plan may take
    /// (1 + --max-retry) times this, plus --timeout-ms.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    planner_timeout: f64,
    /// Repairs after the first proposal; a request's `maxRetry` may ask for
    /// fewer, never more.
    #[arg(long, default_value_t = toolrag::planner::DEFAULT_MAX_RETRY, value_name = "N")]
    max_retry: usize,
    /// How many plans run at once (on threads of their own: plans never hold
    /// up searches); others wait their turn.
    #[arg(long, default_value_t = toolrag_http::DEFAULT_PLAN_CONCURRENCY, value_name = "N")]
    max_plans: usize,
}

impl PlannerArgs {
    /// The planner, when --planner is given; its key from the environment.
    fn planner(&self) -> anyhow::Result<Option<Arc<Planner>>> {
        if !(self.planner_timeout.is_finite() && self.planner_timeout > 0.0) {
            bail!(
                "--planner-timeout must be a positive number of seconds, not {}",
                self.planner_timeout
            );
        }
        if self.max_plans == 0 {
            bail!("--max-plans must be at least 1");
        }
        let Some(url) = &self.planner else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!(
                "--planner must be an http:// or https:// URL, such as http://127.0.0.1:8080/v1, not {url:?}"
            );
        }
        let mut opts = PlannerOptions::new(url.clone());
        opts.model = self.planner_model.clone();
        opts.max_retry = self.max_retry;
        opts.timeout = Duration::from_secs_f64(self.planner_timeout);
        opts.api_key = std::env::var(toolrag::planner::API_KEY_VAR)
            .ok()
            .filter(|k| !k.is_empty());
        Ok(Some(Arc::new(Planner::new(opts))))
    }
}

pub fn run(mut args: ServeArgs) -> anyhow::Result<ExitCode> {
    if args.timeout_ms == 0 || args.header_timeout_ms == 0 || args.max_connections == 0 {
        bail!("--timeout-ms, --header-timeout-ms and --max-connections must be at least 1");
    }
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    if token.is_none() && !args.addr.ip().is_loopback() {
        eprintln!(
            "toolrag: warning: listening on {} without --token-file: anyone who can reach it can query it",
            args.addr
        );
    }
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let mut options = ServeOptions::default();
    options.token = token;
    options.cors_origins = args.cors_origins.clone();
    options.timeout = Duration::from_millis(args.timeout_ms);
    options.header_timeout = Duration::from_millis(args.header_timeout_ms);
    options.max_connections = args.max_connections;
    options.pinned = config.pinned.clone();
    options.planner = args.planner.planner()?;
    options.planner_timeout = Duration::from_secs_f64(args.planner.planner_timeout);
    options.plan_concurrency = args.planner.max_plans;
    // Plans wait on the plan model on blocking threads of their own, beside
    // the search pool's.
    let plan_threads = if options.planner.is_some() {
        options.plan_concurrency
    } else {
        0
    };
    // Searches run on the blocking pool, at most `search_threads` at once. A
    // small pool whose threads stay alive means the same few threads run the
    // model every time: under the hybrid load test, fresh pool threads each
    // brought their own malloc arena, and RSS grew 10-14% in a minute.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(options.search_threads.max(1) + plan_threads + 2)
        .thread_keep_alive(Duration::from_secs(3600))
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(serve(args, options, config.search))
}

async fn serve(
    args: ServeArgs,
    options: ServeOptions,
    search: toolrag::search::SearchConfig,
) -> anyhow::Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let local = listener.local_addr()?;
    eprintln!("toolrag: listening on http://{local}");
    if let Some(p) = &options.planner {
        eprintln!(
            "toolrag: POST /v1/plan asks the plan model at {} (up to {} repairs, {} plans at once)",
            p.endpoint(),
            p.max_retry(),
            options.plan_concurrency
        );
    }

    let state = AppState::new(options);
    // `true` once the server should stop: on a signal, or when loading fails.
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let stop = Arc::new(stop);
    let server = {
        let stopped = wait_for(stopping.clone());
        tokio::spawn(toolrag_http::serve(listener, state.clone(), stopped))
    };
    tokio::spawn({
        let stop = stop.clone();
        async move {
            shutdown_signal().await;
            eprintln!("toolrag: shutting down");
            stop.send_replace(true);
        }
    });

    let (index, model, lexical_only) = (args.index.clone(), args.model.clone(), args.lexical_only);
    let loaded =
        tokio::task::spawn_blocking(move || open_live(&index, &model, search, lexical_only))
            .await
            .context("loading the index failed")?;
    let live = match loaded {
        Ok(live) => Arc::new(live),
        Err(e) => {
            stop.send_replace(true);
            let _ = server.await;
            return Err(e);
        }
    };
    let s = live.snapshot();
    eprintln!(
        "toolrag: ready: {} ({} tools, {})",
        s.generation().display(),
        s.tools().len(),
        if s.has_dense() {
            "hybrid"
        } else {
            "lexical only"
        }
    );
    drop(s);
    state.set_ready(live.clone());
    let watcher = live.watch(RELOAD_POLL);

    let mut server = server;
    let result = tokio::select! {
        r = &mut server => r,
        _ = async { wait_for(stopping).await; tokio::time::sleep(GRACE).await } => {
            eprintln!("toolrag: requests still running after {} s; exiting", GRACE.as_secs());
            drop(watcher);
            return Ok(ExitCode::SUCCESS);
        }
    };
    drop(watcher);
    result
        .context("the server task failed")?
        .context("the server failed")?;
    Ok(ExitCode::SUCCESS)
}

/// Opens the index with its embedding model. An index built with the model
/// gets that model, found from any working folder, or the error says where
/// it was looked for; `lexical_only` serves BM25 instead. An index without
/// vectors (or none yet) gets the model when there is one, so that a rebuild
/// with vectors is served in hybrid mode after a reload.
pub fn open_live(
    index: &Path,
    model: &ModelArgs,
    search: toolrag::search::SearchConfig,
    lexical_only: bool,
) -> anyhow::Result<LiveIndex> {
    let embedder = serving_embedder(index, model, lexical_only, "serving BM25 only")?;
    LiveIndex::open(index, embedder, search)
        .with_context(|| format!("cannot open the index in {}", index.display()))
}

/// The warmed-up query embedder of a long-running server of the index in
/// `index`: none with `lexical_only`; the index's own model when it was built
/// with one (an error when that model cannot be found); otherwise the model
/// when there is one, and without it a note that the server is `fallback`.
pub fn serving_embedder(
    index: &Path,
    model: &ModelArgs,
    lexical_only: bool,
    fallback: &'static str,
) -> anyhow::Result<Option<Arc<dyn toolrag::embed::Embedder>>> {
    let dir = if lexical_only {
        None
    } else if toolrag::index::current_generation(index).is_ok() {
        match model.for_index(index)? {
            Some(dir) => Some(dir),
            None => model.locate(Need::Optional(fallback))?,
        }
    } else {
        model.locate(Need::Optional(fallback))?
    };
    let Some(dir) = dir else { return Ok(None) };
    let e = toolrag::app::load_embedder(&dir, toolrag::app::one_session_per_core())?;
    e.warm_up()?;
    Ok(Some(Arc::new(e)))
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    Ok(token.to_string())
}

async fn wait_for(mut stopping: tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await;
}

/// Resolves on Ctrl-C or SIGTERM.
pub(super) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
