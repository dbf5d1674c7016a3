//! How an [`ApiError`] of the serving core goes over HTTP: its code's status
//! and the `{"error": {"code", "message"}}` body, with `Retry-After` on a 503
//! and `WWW-Authenticate` on a 401. The codes and their statuses are the
//! core's ([`crate::serve::ApiCode`]).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::serve::ApiError;

/// The HTTP status of `e`, decided by its code.
pub fn status_of(e: &ApiError) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(&self);
        let mut r = (status, axum::Json(self.body())).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}
