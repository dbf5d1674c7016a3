//! Bearer-token auth on every route but `/healthz`, when a token is set.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AppState;
use toolrag_serve::UserCode;

/// The one route open without a token, so that liveness probes need no secret.
const OPEN_ROUTE: &str = "/healthz";

/// Lets the request through when auth is off, the route is `/healthz`, or the
/// `Authorization: Bearer` token matches; answers 401 `unauthorized` otherwise.
pub async fn require_token(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let Some(expected) = app.options().token.as_deref() else {
        return next.run(req).await;
    };
    if req.uri().path() == OPEN_ROUTE {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    match given {
        Some(token) if tokens_match(token, expected) => next.run(req).await,
        Some(_) => unauthorized("the bearer token is wrong"),
        None => unauthorized("this server needs `Authorization: Bearer <token>`"),
    }
}

fn unauthorized(message: &str) -> Response {
    crate::error::HttpError::user(UserCode::Unauthorized, message).into_response()
}

/// Compares in constant time. Hashing first makes both sides the same length,
/// so the comparison does not leak the token's length either.
pub fn tokens_match(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.ct_eq(&b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(tokens_match("s3cret", "s3cret"));
        assert!(!tokens_match("s3cret", "s3cre"));
        assert!(!tokens_match("", "s3cret"));
    }
}
