//! Serving the router over TCP, with two limits `axum::serve` does not have:
//! a deadline for a request's headers to arrive (a client that sends a
//! request line and then one header byte every few seconds holds a socket
//! and its buffers for ever otherwise) and a cap on open connections (beyond
//! it a new connection is closed at once, before any byte is read). Both are
//! counted in `/metrics` (`toolrag_http_header_timeouts_total`,
//! `toolrag_http_connections_refused_total`, `toolrag_http_connections`).
//!
//! HTTP/1.1 by hyper, as `axum::serve` does with axum's default features.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use super::{router, AppState};

/// Serves the whole API over `state` on `listener` until `shutdown`
/// resolves, then stops accepting and waits for the open connections to
/// finish their requests (the caller bounds that wait).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let app = router(state.clone());
    let options = state.options().clone();
    let limits = ConnLimits {
        header_timeout: options.header_timeout,
        max_connections: options.max_connections,
    };
    let hooks = Hooks {
        refused: Box::new({
            let s = state.clone();
            move || {
                s.0.metrics.connections_refused.inc();
            }
        }),
        opened: Box::new({
            let s = state.clone();
            move || {
                s.0.metrics.connections.inc();
            }
        }),
        closed: Box::new(move |timeout| {
            if timeout {
                state.0.metrics.header_timeouts.inc();
            }
            state.0.metrics.connections.dec();
        }),
    };
    accept_loop(listener, app, limits, Arc::new(hooks), shutdown).await
}

/// The limits of [`serve_router`] on its connections.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ConnLimits {
    /// How long a client has to send a request's headers.
    pub header_timeout: Duration,
    /// How many connections may be open at once; beyond, a new one is
    /// closed before any byte is read.
    pub max_connections: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serves any axum `app` on `listener` with the same connection handling
/// as [`serve`] (a header deadline and a connection cap, HTTP/1.1) until
/// `shutdown` resolves; then stops accepting and waits for the open
/// connections to finish (the caller bounds that wait). For front ends
/// other than the search API, such as the MCP server over streamable HTTP.
pub async fn serve_router(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let hooks = Hooks {
        refused: Box::new(|| {}),
        opened: Box::new(|| {}),
        closed: Box::new(|_| {}),
    };
    accept_loop(listener, app, limits, Arc::new(hooks), shutdown).await
}

/// What the accept loop reports, for the metrics.
struct Hooks {
    refused: Box<dyn Fn() + Send + Sync>,
    opened: Box<dyn Fn() + Send + Sync>,
    /// A connection closed; `true` when its headers did not come in time.
    closed: Box<dyn Fn(bool) + Send + Sync>,
}

async fn accept_loop(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    hooks: Arc<Hooks>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    // The parser's own limits sit above the router's (`MAX_URI_BYTES`,
    // `MAX_HEADERS`, `MAX_HEADER_BYTES`), so that a request over those gets
    // the JSON error body; hyper answers what is over these with none.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_headers(1000)
        .max_buf_size(256 * 1024);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, mostly: wait for some to close.
                    tracing::warn!(target: "server", "cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            (hooks.refused)();
            tracing::debug!(
                target: "server",
                max = limits.max_connections,
                "closing a connection: too many open"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        let hooks = hooks.clone();
        (hooks.opened)();
        tokio::spawn(async move {
            let mut timeout = false;
            if let Err(e) = conn.await {
                timeout = e.is_timeout();
                tracing::debug!(target: "server", "connection closed: {e}");
            }
            (hooks.closed)(timeout);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The default [`ServeOptions::header_timeout`](super::ServeOptions::header_timeout).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`ServeOptions::max_connections`](super::ServeOptions::max_connections):
/// well under the usual limit of 1,024 open files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
