//! API errors: one table from error codes to HTTP statuses, and one body
//! shape, `{"error": {"code", "message"}}`.
//!
//! | status | code | when |
//! |---|---|---|
//! | 400 | `malformed_json` | the body is not JSON |
//! | 400 | `invalid_request` | a wrong type, a missing or an unknown field |
//! | 400 | `invalid_k` | `k` outside 1..=100 |
//! | 400 | `empty_query` | the query is empty or only spaces |
//! | 400 | `query_too_long` | the query is over 4 KiB |
//! | 400 | `batch_too_large` | a batch of more than 256 requests |
//! | 400 | `invalid_input` | the search refused the request (an unknown pinned tool, dense mode without the model) |
//! | 401 | `unauthorized` | a missing or wrong bearer token |
//! | 404 | `tool_not_found` | no tool with this id or handle |
//! | 404 | `not_found` | no such route |
//! | 405 | `method_not_allowed` | the route exists, the method does not |
//! | 413 | `body_too_large` | the body is over 64 KiB |
//! | 415 | `unsupported_media_type` | the body is not `application/json` |
//! | 503 | `not_ready` | the index is still loading |
//! | 503 | `timeout` | the request took longer than the server's timeout |
//! | 500 | `internal` | a bug or a broken index; never caused by user input |

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Every error code, in the order of the table above.
pub const CODES: &[&str] = &[
    "malformed_json",
    "invalid_request",
    "invalid_k",
    "empty_query",
    "query_too_long",
    "batch_too_large",
    "invalid_input",
    "unauthorized",
    "tool_not_found",
    "not_found",
    "method_not_allowed",
    "body_too_large",
    "unsupported_media_type",
    "not_ready",
    "timeout",
    "internal",
];

/// An error answer: its status and its `{code, message}` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable code (see the module docs).
    pub code: &'static str,
    /// What went wrong, for a person.
    pub message: String,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    code: &'a str,
    message: &'a str,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 503 `not_ready`.
    pub fn not_ready() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the index is still loading; retry shortly",
        )
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The JSON body of this error.
    pub fn body(&self) -> serde_json::Value {
        serde_json::to_value(Body {
            error: Detail {
                code: self.code,
                message: &self.message,
            },
        })
        .expect("an error body serialises")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl From<crate::Error> for ApiError {
    /// User errors become 400 `invalid_input`; everything else is internal,
    /// logged here with the full message and answered without it.
    fn from(e: crate::Error) -> ApiError {
        match e {
            crate::Error::InvalidInput(m) => ApiError::bad_request("invalid_input", m),
            other => {
                tracing::error!(target: "server", "search failed: {other}");
                ApiError::internal("the search failed; the server log has the details")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}
