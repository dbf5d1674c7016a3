//! Serving a router over TCP, with two limits `axum::serve` does not have:
//! a deadline for a request's headers to arrive (a client that sends a
//! request line and then one header byte every few seconds holds a socket
//! and its buffers for ever otherwise) and a cap on open connections (beyond
//! it a new connection is closed at once, before any byte is read). The
//! caller counts both through [`ConnEvents`] (the HTTP API's `/metrics`).
//!
//! HTTP/1.1 by hyper, as `axum::serve` does with axum's default features.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

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

/// What the connection loop tells its caller, for its metrics. Every method
/// does nothing unless implemented; `()` is the caller that counts nothing.
pub trait ConnEvents: Send + Sync + 'static {
    /// A new connection was closed at once: [`ConnLimits::max_connections`]
    /// were open.
    fn refused(&self) {}
    /// A connection was taken.
    fn opened(&self) {}
    /// A connection taken earlier closed; `header_timeout` when it was closed
    /// because a request's headers did not arrive within
    /// [`ConnLimits::header_timeout`].
    fn closed(&self, header_timeout: bool) {
        let _ = header_timeout;
    }
}

impl ConnEvents for () {}

/// Serves the axum `app` on `listener` (HTTP/1.1, with a deadline for
/// request headers and a cap on open connections, as `limits` says), telling
/// `events` of every connection, until `shutdown` resolves; then stops
/// accepting and waits for the open connections to finish (the caller bounds
/// that wait). The HTTP API (`toolrag serve`) and MCP over streamable HTTP
/// (`toolrag mcp --http`) are both served so.
pub async fn serve_router(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    events: impl ConnEvents,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let events = Arc::new(events);
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
            events.refused();
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
        let events = events.clone();
        events.opened();
        tokio::spawn(async move {
            let mut timeout = false;
            if let Err(e) = conn.await {
                timeout = e.is_timeout();
                tracing::debug!(target: "server", "connection closed: {e}");
            }
            events.closed(timeout);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The default [`ConnLimits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`ConnLimits::max_connections`]: well under the usual limit
/// of 1,024 open files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
