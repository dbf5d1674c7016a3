//! The upstream servers behind the gateway: one session to each, started
//! on first use and again after it died (with a growing wait between
//! failed attempts), and what each last listed.

use std::time::{Duration, Instant};

use rmcp::model::Implementation;
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::upstream::{ServerConfig, ServerFailure, StderrTail, UpstreamError, UpstreamSession};
use super::Gateway;

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

impl Gateway {
    /// The servers that could not be listed (by name), each reported in
    /// the log when it failed.
    pub fn failed_servers(&self) -> Vec<String> {
        self.upstreams
            .values()
            .filter(|u| u.listing().is_none())
            .map(|u| u.config.name.clone())
            .collect()
    }

    /// Lists `name` again over its session (starting it if needed) and keeps
    /// the listing; `false`, logged with the server's stderr, when it fails.
    pub(super) async fn list_server(&self, name: &str) -> bool {
        let Some(up) = self.upstreams.get(name) else {
            return false;
        };
        let timeout = self.opts.connect_timeout;
        let work = async {
            let peer = self.peer_of(up).await?;
            match super::upstream::list_tools_of(&peer).await {
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
            self.opts.connect_timeout,
            UpstreamSession::connect_watched(&up.config, &stderr, Some(self.changes.clone())),
        )
        .await
        .unwrap_or(Err(UpstreamError::Timeout(self.opts.connect_timeout)));
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
        for up in self.upstreams.values() {
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

    /// Closes every upstream session (stdio servers see their stdin close),
    /// and waits until every audit line queued so far is on disk.
    pub async fn shutdown(&self) {
        for up in self.upstreams.values() {
            if let Some(s) = up.session.lock().await.take() {
                s.close().await;
            }
        }
        if let Err(e) = self.audit.flush().await {
            tracing::error!("cannot write the last lines of the audit log: {e}");
        }
    }
}
