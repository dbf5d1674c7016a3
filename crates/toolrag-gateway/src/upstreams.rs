//! The upstream servers behind the gateway: one session to each, started
//! on first use and again after it died (with a growing wait between
//! failed attempts), and what each last listed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::Implementation;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;

use super::upstream::{
    McpConfig, ServerConfig, ServerFailure, StderrTail, UpstreamError, UpstreamSession,
};

/// The longest wait between two attempts to restart a server that keeps
/// failing.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What a server last listed.
#[derive(Debug, Clone)]
pub(super) struct Listing {
    pub(super) tools: Vec<Value>,
    pub(super) server_info: Option<Implementation>,
}

/// One configured upstream server.
pub(super) struct Upstream {
    pub(super) config: ServerConfig,
    pub(super) session: tokio::sync::Mutex<Option<UpstreamSession>>,
    pub(super) listing: std::sync::Mutex<Option<Listing>>,
    /// When to try starting it again after a failure, and the wait after that.
    pub(super) retry: std::sync::Mutex<(Instant, Duration)>,
}

impl Upstream {
    /// `config`, not started yet.
    pub(super) fn new(config: ServerConfig) -> Upstream {
        Upstream {
            config,
            session: tokio::sync::Mutex::new(None),
            listing: std::sync::Mutex::new(None),
            retry: std::sync::Mutex::new((Instant::now(), Duration::from_secs(1))),
        }
    }

    /// What it listed last, if it was ever listed.
    pub(super) fn listing(&self) -> Option<Listing> {
        self.listing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The upstream servers by name, and what they need to be started: the
/// sessions to them, and the calls forwarded over those ([`super::forward`]).
pub(super) struct Upstreams {
    servers: BTreeMap<String, Arc<Upstream>>,
    /// Where a server's `list_changed` (and a restart) is told.
    changes: mpsc::UnboundedSender<String>,
    /// How long a server may take to start, initialise and list its tools.
    connect_timeout: Duration,
    /// How long a forwarded call may take.
    pub(super) call_timeout: Duration,
}

impl Upstreams {
    /// The servers of `config`, none started yet; `changes` hears of their
    /// changes.
    pub(super) fn new(
        config: &McpConfig,
        changes: mpsc::UnboundedSender<String>,
        connect_timeout: Duration,
        call_timeout: Duration,
    ) -> Upstreams {
        let servers = config
            .servers
            .iter()
            .map(|s| (s.name.clone(), Arc::new(Upstream::new(s.clone()))))
            .collect();
        Upstreams {
            servers,
            changes,
            connect_timeout,
            call_timeout,
        }
    }

    /// The names of the servers, in order.
    pub(super) fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// Every server, in the order of their names.
    pub(super) fn all(&self) -> impl Iterator<Item = &Arc<Upstream>> {
        self.servers.values()
    }

    /// The server `name`.
    ///
    /// # Panics
    /// When there is none of that name (a catalog entry's server always is).
    pub(super) fn get(&self, name: &str) -> &Upstream {
        &self.servers[name]
    }

    /// The servers that could not be listed (by name), each reported in
    /// the log when it failed.
    pub(super) fn failed(&self) -> Vec<String> {
        self.servers
            .values()
            .filter(|u| u.listing().is_none())
            .map(|u| u.config.name.clone())
            .collect()
    }

    /// Lists `name` again over its session (starting it if needed) and keeps
    /// the listing; `false`, logged with the server's stderr, when it fails.
    pub(super) async fn list_server(&self, name: &str) -> bool {
        let Some(up) = self.servers.get(name) else {
            return false;
        };
        let timeout = self.connect_timeout;
        let work = async {
            let peer = self.peer_of(up).await?;
            match toolrag_mcp::upstream::list_tools_of(&peer).await {
                Ok(tools) => Ok((tools, peer.peer_info().and_then(|i| i.server_info.clone()))),
                Err(e) => Err(Box::new(self.failure(up, e).await)),
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok((tools, server_info))) => {
                *up.listing.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Listing { tools, server_info });
                true
            }
            Ok(Err(failure)) => {
                tracing::error!("{failure}");
                false
            }
            Err(_) => {
                let failure = self.failure(up, UpstreamError::Timeout(timeout)).await;
                tracing::error!("{failure}");
                // A server that hangs is dropped, so the next use restarts it.
                if let Some(s) = up.session.lock().await.take() {
                    s.close().await;
                }
                false
            }
        }
    }

    /// `error` of `up`, with the end of its current session's stderr.
    async fn failure(&self, up: &Upstream, error: UpstreamError) -> ServerFailure {
        let stderr = match up.session.lock().await.as_ref() {
            Some(s) => s.stderr_tail(),
            None => String::new(),
        };
        ServerFailure {
            server: up.config.clone(),
            error,
            stderr,
        }
    }

    /// The session's peer of `up`, starting the server (again) when it has
    /// no session or its session ended.
    /// A server that cannot be started is a [`ServerFailure`] with the end of
    /// the new process's stderr.
    pub(super) async fn peer_of(
        &self,
        up: &Upstream,
    ) -> Result<Peer<RoleClient>, Box<ServerFailure>> {
        let mut session = up.session.lock().await;
        if let Some(s) = session.as_ref() {
            if !s.is_closed() {
                return Ok(s.peer().clone());
            }
            let tail = s.stderr_tail();
            tracing::warn!(
                server = %up.config.name,
                "the server stopped; restarting it{}",
                if tail.is_empty() { String::new() } else { format!(" (its stderr ended with: {})", tail.lines().last().unwrap_or("")) }
            );
        }
        let was_running = session.is_some();
        if let Some(old) = session.take() {
            old.close().await;
        }
        let stderr = StderrTail::new();
        let started = tokio::time::timeout(
            self.connect_timeout,
            UpstreamSession::connect_watched(&up.config, &stderr, Some(self.changes.clone())),
        )
        .await
        .unwrap_or(Err(UpstreamError::Timeout(self.connect_timeout)));
        match started {
            Ok(s) => {
                *up.retry.lock().unwrap_or_else(|p| p.into_inner()) =
                    (Instant::now(), Duration::from_secs(1));
                let peer = s.peer().clone();
                *session = Some(s);
                if was_running {
                    // A restarted server may list other tools.
                    let _ = self.changes.send(up.config.name.clone());
                }
                Ok(peer)
            }
            Err(e) => {
                {
                    let mut retry = up.retry.lock().unwrap_or_else(|p| p.into_inner());
                    let wait = retry.1;
                    *retry = (Instant::now() + wait, (wait * 2).min(MAX_BACKOFF));
                }
                Err(Box::new(ServerFailure {
                    server: up.config.clone(),
                    error: e,
                    stderr: stderr.settle(Duration::from_millis(300)).await,
                }))
            }
        }
    }

    /// Restarts every server whose session ended, when its retry time has come.
    pub(super) async fn restart_dead(&self) {
        for up in self.servers.values() {
            let due = up.retry.lock().unwrap_or_else(|p| p.into_inner()).0 <= Instant::now();
            let dead = match up.session.try_lock() {
                Ok(s) => s.as_ref().is_none_or(|s| s.is_closed()),
                Err(_) => false, // in use: whoever holds it restarts it if needed
            };
            if due && dead {
                if let Err(failure) = self.peer_of(up).await {
                    tracing::error!("{failure}");
                }
            }
        }
    }

    /// Closes every upstream session (stdio servers see their stdin close).
    pub(super) async fn close(&self) {
        for up in self.servers.values() {
            if let Some(s) = up.session.lock().await.take() {
                s.close().await;
            }
        }
    }
}
