//! The sessions of the handshake-era protocols (2025-11-25 and before) on
//! the streamable-HTTP endpoint: whose each one is, how many there may be,
//! and when an idle one ends.
//!
//! rmcp keeps the sessions (`Mcp-Session-Id`, a random v4 UUID) but knows
//! nothing of principals: whoever holds a session's id could answer its
//! elicitations, read its stream or end it. The front end therefore binds
//! each session to the principal whose `initialize` opened it
//! ([`SessionTable`]), and a request that names a session it does not own is
//! passed on to rmcp with the session id replaced by one that never exists,
//! so that the caller gets, byte for byte, rmcp's answer to an unknown
//! session (and learns nothing about whether the id was real). Such a
//! request is logged, and reported to [`ForeignSessionHook`] (the gateway's
//! audit log).
//!
//! Sessions are capped per principal and in total; past a cap the new
//! session is closed at once and the caller gets `429` (its own cap) or
//! `503` (the total) with `Retry-After`. A session that has had no request
//! in flight for [`SessionLimits::idle`] ends, in rmcp too, so that its
//! memory is given back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::SessionManager;
use tokio_util::sync::CancellationToken;
use toolrag_auth::Principal;
use tracing::Instrument;

mod table;

pub use table::{Access, Refusal, SessionLimits, SessionTable};

/// A request on a session that another principal opened, as the front end
/// reports it to a [`ForeignSessionHook`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ForeignSession {
    /// Who sent the request.
    pub principal: Principal,
    /// The name of the principal that opened the session.
    pub owner: String,
    /// The HTTP method (`POST`, `GET`, `DELETE`).
    pub method: String,
}

/// Called for every request refused because its session belongs to another
/// principal (after it is logged), on a blocking thread, off the response's
/// path: the gateway writes it to its audit log.
#[derive(Clone)]
pub struct ForeignSessionHook(Arc<dyn Fn(&ForeignSession) + Send + Sync>);

impl ForeignSessionHook {
    /// A hook that calls `f`.
    pub fn new(f: impl Fn(&ForeignSession) + Send + Sync + 'static) -> ForeignSessionHook {
        ForeignSessionHook(Arc::new(f))
    }

    /// Calls the hook.
    pub fn call(&self, event: &ForeignSession) {
        (self.0)(event)
    }
}

impl std::fmt::Debug for ForeignSessionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForeignSessionHook")
    }
}

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The id put in place of one the caller may not use: the nil UUID, which
/// rmcp never makes (its ids are random v4 UUIDs), so that rmcp gives its
/// own answer to an unknown session.
const NO_SESSION: &str = "00000000-0000-0000-0000-000000000000";

/// The front end's part in sessions: the table, rmcp's session manager (to
/// close the sessions the table ends) and the audit hook.
#[derive(Clone)]
pub(crate) struct Sessions {
    pub(crate) table: Arc<SessionTable>,
    pub(crate) manager: Arc<LocalSessionManager>,
    pub(crate) hook: Option<ForeignSessionHook>,
}

impl Sessions {
    /// The front end's sessions under `limits`, over a new rmcp session
    /// manager whose own idle timer (which does not see open streams) is
    /// no shorter than the table's.
    pub(crate) fn new(limits: SessionLimits, hook: Option<ForeignSessionHook>) -> Sessions {
        let mut manager = LocalSessionManager::default();
        let floor = manager.session_config.keep_alive.unwrap_or(limits.idle);
        manager.session_config.keep_alive = Some(limits.idle.max(floor));
        Sessions {
            table: Arc::new(SessionTable::new(limits)),
            manager: Arc::new(manager),
            hook,
        }
    }

    /// Expires idle sessions every quarter of the idle time (but no less
    /// often than once a minute, nor more than ten times a second), until
    /// `cancel`.
    pub(crate) fn spawn_sweeper(&self, cancel: CancellationToken) {
        let every = (self.table.limits().idle / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(60));
        let this = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tick.tick() => this.sweep().await,
                }
            }
        });
    }

    /// Closes the sessions idle for too long, and forgets those rmcp ended
    /// on its own.
    async fn sweep(&self) {
        let expired = self.table.expire(Instant::now());
        if !expired.is_empty() {
            tracing::info!("closed {} idle session(s)", expired.len());
        }
        self.close(&expired).await;
        let live = self.manager.sessions.read().await;
        // Under rmcp's lock no session is created meanwhile: one bound to
        // the table is in rmcp's map first.
        let gone = self.table.retain_live(|id| live.contains_key(id));
        drop(live);
        if gone > 0 {
            tracing::debug!("{gone} session(s) ended by the transport");
        }
    }

    async fn close(&self, ids: &[Arc<str>]) {
        for id in ids {
            if let Err(e) = self.manager.close_session(id).await {
                tracing::warn!("could not close a session: {e}");
            }
        }
    }

    /// Binds the session that `res` opened, if it opened one, to its
    /// principal; past a cap, closes it and answers 429 or 503 instead.
    async fn bind_new(&self, res: Response, principal: &Principal) -> Response {
        let Some(id) = session_of(res.headers()) else {
            return res;
        };
        let (bound, expired) = self.table.bind(
            id.clone(),
            &principal.key(),
            &principal.name,
            Instant::now(),
        );
        self.close(&expired).await;
        match bound {
            Ok(()) => {
                tracing::debug!(principal = %principal.name, "opened a session");
                res
            }
            Err(refusal) => {
                self.close(std::slice::from_ref(&id)).await;
                refused(principal, refusal)
            }
        }
    }

    /// Keeps the owner's request in flight until its response is sent: at
    /// once for a plain answer, when the stream ends for SSE.
    fn track(res: Response, in_flight: InFlight) -> Response {
        let streaming = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !streaming {
            return res;
        }
        res.map(|body| {
            Body::from_stream(body.into_data_stream().map(move |chunk| {
                let _held = &in_flight;
                chunk
            }))
        })
    }

    fn report(&self, principal: &Principal, owner: String, method: &Method) {
        tracing::warn!(
            principal = %principal.name,
            owner = %owner,
            method = %method,
            "refused a request on a session another principal opened; answered as an unknown session"
        );
        if let Some(hook) = self.hook.clone() {
            let event = ForeignSession {
                principal: principal.clone(),
                owner,
                method: method.to_string(),
            };
            tokio::task::spawn_blocking(move || hook.call(&event));
        }
    }
}

/// A request of a session's owner, in flight while this lives.
struct InFlight {
    table: Arc<SessionTable>,
    id: Arc<str>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.table.leave(&self.id, Instant::now());
    }
}

/// The session a request or a response names, as rmcp reads it (the first
/// header, if it is text).
fn session_of(headers: &axum::http::HeaderMap) -> Option<Arc<str>> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(Arc::from)
}

/// The middleware, after authentication: a request on a session must come
/// from the session's principal, or it is answered as one on an unknown
/// session; a new session is bound to its principal, within the caps.
pub(crate) async fn guard(State(s): State<Sessions>, mut req: Request, next: Next) -> Response {
    let principal = req
        .extensions()
        .get::<Principal>()
        .cloned()
        .unwrap_or_else(|| Principal::token("\u{0}nobody"));
    let Some(id) = session_of(req.headers()) else {
        if req.method() != Method::POST {
            return next.run(req).await;
        }
        // Binding runs to its end even if the client goes away meanwhile,
        // so that no session is left open without an owner.
        let task = async move {
            let res = next.run(req).await;
            s.bind_new(res, &principal).await
        };
        return match tokio::spawn(task.in_current_span()).await {
            Ok(res) => res,
            Err(e) => {
                tracing::error!("a request failed: {e}");
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        };
    };
    match s.table.enter(&id, &principal.key(), Instant::now()) {
        Access::Owner => {
            // Left when dropped, even if the client goes away meanwhile.
            let in_flight = InFlight {
                table: s.table.clone(),
                id: id.clone(),
            };
            let delete = req.method() == Method::DELETE;
            let res = next.run(req).await;
            if delete && res.status().is_success() {
                s.table.remove(&id);
                return res;
            }
            Sessions::track(res, in_flight)
        }
        access => {
            if let Access::Foreign(owner) = access {
                s.report(&principal, owner, req.method());
            } else {
                tracing::debug!(principal = %principal.name, "a request on an unknown session");
            }
            req.headers_mut()
                .insert(SESSION_HEADER, HeaderValue::from_static(NO_SESSION));
            next.run(req).await
        }
    }
}

/// `429` (the caller's cap) or `503` (the total) with `Retry-After`, in the
/// shape of the front end's other refusals.
fn refused(p: &Principal, r: Refusal) -> Response {
    let (status, limit, retry, whose) = match r {
        Refusal::PerPrincipal { limit, retry } => {
            (StatusCode::TOO_MANY_REQUESTS, limit, retry, "per caller")
        }
        Refusal::Total { limit, retry } => (
            StatusCode::SERVICE_UNAVAILABLE,
            limit,
            retry,
            "on this server",
        ),
    };
    let secs = retry.as_secs_f64().ceil().max(1.0) as u64;
    tracing::info!(principal = %p.name, "refused a new session: {limit} open {whose}");
    let body = serde_json::json!({
        "error": "too_many_sessions",
        "error_description": format!(
            "at most {limit} open sessions {whose}; end one (DELETE) or try again in {secs} s"
        ),
    });
    let mut res = (status, Json(body)).into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    #[tokio::test]
    async fn a_sweep_closes_idle_sessions_in_rmcp_too() {
        let s = Sessions::new(SessionLimits::new(10, 10, Duration::from_secs(1)), None);
        let (idle, _t1) = s.manager.create_session().await.unwrap();
        let (busy, _t2) = s.manager.create_session().await.unwrap();
        let long_ago = Instant::now() - Duration::from_secs(5);
        for id in [&idle, &busy] {
            s.table
                .bind(id.clone(), "token:alice", "alice", long_ago)
                .0
                .unwrap();
        }
        // Bound, but already gone from rmcp: forgotten too.
        s.table
            .bind(id("ended"), "token:alice", "alice", Instant::now())
            .0
            .unwrap();
        assert_eq!(s.table.enter(&busy, "token:alice", long_ago), Access::Owner);
        s.sweep().await;
        assert_eq!(s.table.len(), 1);
        assert!(!s.manager.has_session(&idle).await.unwrap());
        assert!(s.manager.has_session(&busy).await.unwrap());
        assert_eq!(s.manager.sessions.read().await.len(), 1);
    }
}
