//! The gateway's first look at a request, before authentication: its head
//! must say one thing to every layer that reads it.
//!
//! - A request with two `Authorization`, `Host`, `Mcp-Session-Id` or
//!   `MCP-Protocol-Version` headers gets `400` ([`toolrag_serve::repeated_header`]):
//!   otherwise one layer could read the first and another the last (the
//!   session check one session, the transport another).
//! - A request whose target is in absolute form (`POST http://host/mcp
//!   HTTP/1.1`) names its host in the URL, and HTTP/1.1 says that host, not
//!   the `Host` header, is the one meant (RFC 9112 section 3.2.2). It must be
//!   one of the hosts the `Host` header may name (the same list, against DNS
//!   rebinding); any other gets `403`, as a `Host` outside the list does.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};

/// A host (with an optional port) a request may name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: String,
    port: Option<u16>,
}

/// The hosts a request may name, as `Host` is checked: a name without a
/// port allows any port.
#[derive(Debug, Clone)]
struct Hosts(Arc<Vec<Allowed>>);

impl Hosts {
    fn new(hosts: &[String]) -> Hosts {
        Hosts(Arc::new(hosts.iter().filter_map(|h| parse(h)).collect()))
    }

    /// Whether `host` (and `port`) is one of them; an empty list allows all,
    /// as it does for `Host`.
    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host = normalize(host);
        self.0.is_empty()
            || self
                .0
                .iter()
                .any(|a| a.host == host && a.port.is_none_or(|p| port == Some(p)))
    }
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

fn parse(allowed: &str) -> Option<Allowed> {
    let allowed = allowed.trim();
    if allowed.is_empty() {
        return None;
    }
    Some(match http::uri::Authority::try_from(allowed) {
        Ok(a) => Allowed {
            host: normalize(a.host()),
            port: a.port_u16(),
        },
        Err(_) => Allowed {
            host: normalize(allowed),
            port: None,
        },
    })
}

/// `app` behind the checks, with `hosts` the hosts `Host` may name.
pub fn guard(app: Router, hosts: &[String]) -> Router {
    app.layer(axum::middleware::from_fn_with_state(
        Hosts::new(hosts),
        check,
    ))
}

/// The two headers that name an MCP session and its protocol version: a
/// request must not carry either twice, nor any of the serving core's
/// [`toolrag_serve::SINGLE_HEADERS`].
const MCP_SINGLE: [HeaderName; 2] = [
    HeaderName::from_static("mcp-session-id"),
    HeaderName::from_static("mcp-protocol-version"),
];

async fn check(State(hosts): State<Hosts>, req: Request, next: Next) -> Response {
    let (core, mcp) = (toolrag_serve::SINGLE_HEADERS, MCP_SINGLE);
    let repeated = toolrag_serve::repeated_header(req.headers(), &core)
        .or_else(|| toolrag_serve::repeated_header(req.headers(), &mcp));
    if let Some(name) = repeated {
        tracing::info!("refused a request with more than one {name} header");
        let message = toolrag_serve::repeated_message(name);
        return refuse(StatusCode::BAD_REQUEST, "invalid_request", message);
    }
    if let Some(authority) = req.uri().authority() {
        if !hosts.allows(authority.host(), authority.port_u16()) {
            tracing::warn!(
                host = authority.as_str(),
                "refused a request whose target names a host that is not allowed (possible DNS \
                 rebinding)"
            );
            let message = format!(
                "the request target names the host `{}`, which this server does not answer to",
                authority.host()
            );
            return refuse(StatusCode::FORBIDDEN, "forbidden_host", message);
        }
    }
    next.run(req).await
}

/// A refusal with the front end's JSON error body, and `Connection: close`
/// (the body was not read).
fn refuse(status: StatusCode, error: &str, message: String) -> Response {
    let body = serde_json::json!({ "error": error, "error_description": message });
    let mut res = (status, Json(body)).into_response();
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_as_host_headers_do() {
        let hosts = Hosts::new(&["localhost".into(), "127.0.0.1:8080".into(), "[::1]".into()]);
        assert!(hosts.allows("localhost", Some(1234)));
        assert!(hosts.allows("LOCALHOST", None));
        assert!(hosts.allows("127.0.0.1", Some(8080)));
        assert!(!hosts.allows("127.0.0.1", Some(8081)));
        assert!(!hosts.allows("127.0.0.1", None));
        assert!(hosts.allows("[::1]", Some(1)));
        assert!(!hosts.allows("evil.example", None));
        assert!(Hosts::new(&[]).allows("evil.example", None));
    }
}
