//! How an [`ApiError`] of the serving core goes over HTTP: its code's status
//! and the `{"error": {"code", "message"}}` body, with `Retry-After` on a 503
//! and `WWW-Authenticate` on a 401. The codes and their statuses are the
//! core's ([`toolrag_serve::ApiCode`]).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use toolrag_serve::ApiError;

/// The HTTP status of `e`, decided by its code.
pub fn status_of(e: &ApiError) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// An [`ApiError`] on its way out as an HTTP response: what every handler
/// returns. `?` turns an `ApiError` into one.
#[derive(Debug)]
pub struct HttpError(pub ApiError);

impl HttpError {
    /// A user error with `code` and `message`.
    pub fn user(code: toolrag_serve::UserCode, message: impl Into<String>) -> Self {
        HttpError(ApiError::user(code, message))
    }
}

impl From<toolrag_core::Error> for HttpError {
    fn from(e: toolrag_core::Error) -> Self {
        HttpError(ApiError::from(e))
    }
}

impl From<ApiError> for HttpError {
    fn from(e: ApiError) -> Self {
        HttpError(e)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        let mut r = (status, axum::Json(self.0.body())).into_response();
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
