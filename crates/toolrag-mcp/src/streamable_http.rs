//! MCP over streamable HTTP: the index's MCP server and the gateway on one
//! endpoint (`/mcp`), with authentication, for a team.
//!
//! The transport is rmcp's streamable-HTTP server ([`StreamableHttpService`]):
//! POST and GET on one endpoint, `Mcp-Session-Id` sessions for the
//! handshake-era protocols (2025-11-25 and before; 2026-07-28 is
//! stateless), the `MCP-Protocol-Version` header, the `Host` and `Origin`
//! checks against DNS rebinding, and a cap on body size. This module puts
//! in front of it what a shared service needs:
//! - **authentication** ([`toolrag_auth::Authenticator`]): static tokens
//!   and OAuth 2.1 access tokens. A request without a valid token gets
//!   `401` with `WWW-Authenticate: Bearer resource_metadata="…"`, and the
//!   Protected Resource Metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource`. The principal goes into the
//!   request's extensions, where the MCP handlers read it
//!   ([`principal_of`]);
//! - **sessions bound to their principal** ([`crate::sessions`]): a request
//!   on a session another principal opened gets rmcp's answer to an unknown
//!   session, and is logged; sessions are capped per principal (`429`) and
//!   in total (`503`), and idle ones end ([`HttpOptions::sessions`]);
//! - **one reading of the head** (`edge.rs`): two `Authorization`, `Host`,
//!   `Mcp-Session-Id` or `MCP-Protocol-Version` headers get `400`, and an
//!   absolute-form target's host must be an allowed host, as `Host` must;
//! - **connections** served as `toolrag serve` serves them, by the serving
//!   core's loop (a deadline for headers, a cap on open connections:
//!   [`toolrag_serve::serve_router`]);
//! - **JSON-RPC answers** where rmcp answers in plain text, `204` to a
//!   DELETE, and a `-32601` that names the method and the protocol version
//!   ([`crate::conformance`]);
//! - **shared state** ([`crate::shared`], `[gateway] state`): the request
//!   limit counted across replicas, revoked tokens refused (`401`) even
//!   when a replica's token file still has them, and `/readyz` (200, or
//!   503 when Redis cannot be reached) beside `/healthz`;
//! - **shutdown**: when `shutdown` resolves, no new connection is taken;
//!   calls in flight have [`HttpOptions::grace`] to finish, then they and
//!   the open streams are cancelled (a call cut so gets a JSON-RPC error
//!   saying the gateway is stopping).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::limits::{Buckets, OnOutage, Refusal};
use crate::sessions::{ForeignSessionHook, SessionLimits, Sessions};
use crate::shared::SharedState;
use toolrag_auth::{AuthError, Authenticator, Principal};

/// The MCP endpoint's path.
pub const ENDPOINT: &str = "/mcp";

/// Where the Protected Resource Metadata is served (RFC 9728 section 3.1:
/// the well-known prefix, then the resource's path).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The same document at the bare well-known path, for clients that look
/// there first.
const METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";

/// How the HTTP front end behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Who may call: static tokens and/or OAuth. Unconfigured: everyone is
    /// the principal `local` (allowed on loopback only; the binary checks).
    pub auth: Arc<Authenticator>,
    /// The endpoint's public URL (`https://gw.example.com/mcp`): the
    /// resource of the metadata and the audience of OAuth tokens. Default:
    /// `http://<bound address>/mcp`.
    pub public_url: Option<String>,
    /// Browser origins allowed to call (`https://app.example.com`); a request
    /// with any other `Origin` is refused. Clients that are not browsers send
    /// none.
    pub allowed_origins: Vec<String>,
    /// Host names accepted in `Host` besides loopback names and the public
    /// URL's host.
    pub allowed_hosts: Vec<String>,
    /// How long calls in flight may take to finish at shutdown before they
    /// are cancelled.
    pub grace: Duration,
    /// The largest request body, bytes.
    pub max_body_bytes: usize,
    /// Connection limits.
    pub limits: toolrag_serve::ConnLimits,
    /// How many requests a minute each principal may send (a token bucket
    /// that holds a minute's worth); over it, `429` with `Retry-After`.
    /// `None`: no limit.
    pub requests_per_minute: Option<std::num::NonZeroU32>,
    /// Caps on the sessions of protocols 2025-11-25 and before, and their
    /// idle time.
    pub sessions: SessionLimits,
    /// Told of every request refused because its session belongs to
    /// another principal (the gateway audits them).
    pub on_foreign_session: Option<ForeignSessionHook>,
    /// The state shared with other replicas (`[gateway] state`): the
    /// request limit is counted there (falling back to this replica's own
    /// bucket when it cannot be reached, so that search keeps working),
    /// revoked tokens are checked there, and `/readyz` reports on it.
    pub shared: SharedState,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            auth: Arc::new(Authenticator::default()),
            public_url: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            grace: Duration::from_secs(10),
            max_body_bytes: 4 * 1024 * 1024,
            limits: toolrag_serve::ConnLimits::default(),
            requests_per_minute: None,
            sessions: SessionLimits::default(),
            on_foreign_session: None,
            shared: SharedState::local(),
        }
    }
}

#[derive(Clone)]
struct Front {
    auth: Arc<Authenticator>,
    metadata_url: String,
    metadata: Option<Arc<serde_json::Value>>,
    buckets: Option<Arc<Buckets>>,
    shared: SharedState,
}

/// Serves MCP on `listener` at [`ENDPOINT`], one handler from `factory` per
/// session (or per request, on 2026-07-28), until `shutdown` resolves.
pub async fn serve<S, F>(
    listener: TcpListener,
    factory: F,
    opts: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let addr = listener.local_addr()?;
    let public_url = opts
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}{ENDPOINT}"));
    let base = origin_of(&public_url);
    let mut hosts: Vec<String> = vec![
        "localhost".into(),
        "127.0.0.1".into(),
        "::1".into(),
        "[::1]".into(),
        addr.ip().to_string(),
        addr.to_string(),
    ];
    if let Some(h) = host_of(&public_url) {
        hosts.push(h);
    }
    hosts.extend(opts.allowed_hosts.iter().cloned());
    let cancel = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(opts.allowed_origins.clone())
        .enforce_origin_validation()
        // A plain JSON answer when the handler sends nothing before it (the
        // common case); rmcp falls back to SSE when it does (an elicitation).
        .with_json_response(true)
        .with_cancellation_token(cancel.child_token())
        .with_max_request_body_bytes(opts.max_body_bytes);
    let sessions = Sessions::new(opts.sessions, opts.on_foreign_session.clone());
    sessions.spawn_sweeper(cancel.clone());
    let mcp = StreamableHttpService::new(move || Ok(factory()), sessions.manager.clone(), config);
    let front = Front {
        auth: opts.auth.clone(),
        metadata_url: format!("{base}{METADATA_PATH}"),
        metadata: opts
            .auth
            .oauth
            .as_ref()
            .map(|o| Arc::new(o.protected_resource_metadata())),
        buckets: opts.requests_per_minute.map(|n| {
            Arc::new(Buckets::per_minute(n).shared(&opts.shared, "http", OnOutage::Local))
        }),
        shared: opts.shared.clone(),
    };
    let app = Router::new()
        .route_service(ENDPOINT, mcp)
        .layer(axum::middleware::from_fn_with_state(
            sessions,
            crate::sessions::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            crate::conformance::Conformance {
                stopped: cancel.clone(),
                max_body_bytes: opts.max_body_bytes,
            },
            crate::conformance::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            front.clone(),
            authenticate,
        ))
        .route(METADATA_PATH, get(metadata))
        .route(METADATA_ROOT, get(metadata))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(front);
    let app = crate::edge::guard(app, &hosts);
    let grace = opts.grace;
    let cancel_all = cancel.clone();
    let stop = async move {
        shutdown.await;
        tracing::info!(
            "shutting down: no new connections; calls in flight have {} s to finish",
            grace.as_secs_f64()
        );
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            cancel_all.cancel();
        });
    };
    let served = toolrag_serve::serve_router(listener, app, opts.limits, (), stop).await;
    cancel.cancel();
    served
}

/// The principal of an MCP request: what the HTTP front end authenticated,
/// or `local` over stdio. A request that came over HTTP without one (which
/// the front end never lets through) is nobody: a principal no policy names.
pub fn principal_of(ctx: &RequestContext<RoleServer>) -> Principal {
    match ctx.extensions.get::<http::request::Parts>() {
        None => Principal::local(),
        Some(parts) => parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_else(|| Principal::token("\u{0}nobody")),
    }
}

async fn metadata(State(front): State<Front>) -> Response {
    match &front.metadata {
        Some(m) => Json(m.as_ref().clone()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "this server does not use OAuth: it has no protected resource metadata\n",
        )
            .into_response(),
    }
}

/// `/readyz`: 200 `{"status":"ready"}` when the shared state answers (or
/// is local), else 503 `{"status":"degraded","state":"…"}`.
async fn ready(State(front): State<Front>) -> Response {
    match front.shared.ready().await {
        Ok(()) => Json(serde_json::json!({"status": "ready"})).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "degraded", "state": e.to_string()})),
        )
            .into_response(),
    }
}

async fn authenticate(State(front): State<Front>, mut req: Request, next: Next) -> Response {
    let principal = if front.auth.is_configured() {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match front.auth.authenticate(given).await {
            Ok(p) => {
                if let Err(e) = not_revoked(&front.shared, given).await {
                    tracing::info!(principal = %p.name, "refused a request: {e}");
                    return challenge(&front, &e);
                }
                p
            }
            Err(e) => {
                tracing::info!("refused a request: {e}");
                return challenge(&front, &e);
            }
        }
    } else {
        Principal::local()
    };
    if let Some(buckets) = &front.buckets {
        match buckets.take(&principal.key()).await {
            Ok(()) => {}
            Err(Refusal::Wait(wait)) => return too_many(&principal, buckets.limit(), wait),
            // The front end's buckets fall back to local ones; were that
            // ever changed, a second is the wait.
            Err(Refusal::Unavailable(_)) => {
                return too_many(&principal, buckets.limit(), Duration::from_secs(1))
            }
        }
    }
    tracing::debug!(principal = %principal.name, "authenticated");
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// Refuses a bearer token that was revoked in the shared state
/// ([`SharedState::revoke`]), by the SHA-256 that token files write.
async fn not_revoked(shared: &SharedState, authorization: Option<&str>) -> Result<(), AuthError> {
    if !shared.checks_revocation() {
        return Ok(());
    }
    let Ok(token) = toolrag_auth::bearer_token(authorization) else {
        return Ok(());
    };
    if shared.is_revoked(&crate::shared::token_sha256(token)).await {
        return Err(AuthError::Invalid("the token was revoked".into()));
    }
    Ok(())
}

/// `429 Too Many Requests` with `Retry-After` (whole seconds, rounded up).
fn too_many(p: &Principal, limit: u32, wait: Duration) -> Response {
    let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
    tracing::info!(principal = %p.name, "rate limited for {secs} s");
    let body = serde_json::json!({
        "error": "rate_limited",
        "error_description": format!(
            "at most {limit} requests a minute per caller; try again in {secs} s"
        ),
    });
    let mut res = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    close_after(res)
}

/// The answer to a request that is not authenticated: `401` (or `403` for
/// a missing scope, `503` when the issuer cannot be reached) with a
/// `WWW-Authenticate: Bearer` challenge that points at the metadata.
fn challenge(front: &Front, e: &AuthError) -> Response {
    let status = match e {
        AuthError::InsufficientScope(_) => StatusCode::FORBIDDEN,
        AuthError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::UNAUTHORIZED,
    };
    let mut params = Vec::new();
    if front.metadata.is_some() {
        params.push(format!("resource_metadata=\"{}\"", front.metadata_url));
    } else {
        params.push("realm=\"toolrag\"".to_string());
    }
    if let Some(code) = e.bearer_error() {
        params.push(format!("error=\"{code}\""));
    }
    if let AuthError::InsufficientScope(scope) = e {
        params.push(format!("scope=\"{scope}\""));
    }
    let value = format!("Bearer {}", params.join(", "));
    let body = serde_json::json!({
        "error": e.bearer_error().unwrap_or("unauthorized"),
        "error_description": e.to_string(),
    });
    let mut res = (status, Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    close_after(res)
}

/// The response with `Connection: close`: it is sent before the request's
/// body is read, so the connection cannot carry another request, and a
/// client that pools connections must be told rather than find out on its
/// next request.
fn close_after(mut res: Response) -> Response {
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// `scheme://authority` of a URL.
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split('/').next().unwrap_or(rest);
            format!("{scheme}://{authority}")
        }
        None => url.trim_end_matches('/').to_string(),
    }
}

/// The host (with its port) of a URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    Some(authority.rsplit('@').next()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            origin_of("https://gw.example.com:8443/mcp"),
            "https://gw.example.com:8443"
        );
        assert_eq!(
            host_of("https://gw.example.com:8443/mcp").as_deref(),
            Some("gw.example.com:8443")
        );
    }
}
