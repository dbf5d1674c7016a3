//! Serving the API over TCP: the serving core's connection loop
//! ([`toolrag_serve::serve_router`]: a deadline for request headers, a cap on
//! open connections), with the server's limits and its connections counted
//! in `/metrics` (`toolrag_http_header_timeouts_total`,
//! `toolrag_http_connections_refused_total`, `toolrag_http_connections`).

use std::future::Future;

use tokio::net::TcpListener;
use toolrag_serve::{ConnEvents, ConnLimits};

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
    let options = state.options();
    let mut limits = ConnLimits::default();
    limits.header_timeout = options.header_timeout;
    limits.max_connections = options.max_connections;
    toolrag_serve::serve_router(listener, app, limits, Counted(state), shutdown).await
}

/// The connection loop's events, counted in the server's metrics.
struct Counted(AppState);

impl ConnEvents for Counted {
    fn refused(&self) {
        self.0 .0.metrics.connections_refused.inc();
    }

    fn opened(&self) {
        self.0 .0.metrics.connections.inc();
    }

    fn closed(&self, header_timeout: bool) {
        let metrics = &self.0 .0.metrics;
        if header_timeout {
            metrics.header_timeouts.inc();
        }
        metrics.connections.dec();
    }
}
