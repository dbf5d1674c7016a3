//! Typed error codes and the error both front ends answer with.
//!
//! A code decides its HTTP status; a call site only picks the code. Codes are
//! split in two, as meilisearch's milli splits `UserError` from
//! `InternalError`: a [`UserCode`] is caused by the request and is always a
//! 4xx; an [`InternalCode`] is the server's own state (not loaded yet, too
//! slow, a bug or a broken index) and is always a 5xx. So a 5xx can only come
//! from an [`ApiError::Internal`], never from user input.
//!
//! | status | code | when |
//! |---|---|---|
//! | 400 | `malformed_json` | the body is not JSON |
//! | 400 | `invalid_request` | a wrong type, a missing or an unknown field |
//! | 400 | `invalid_k` | `k` outside 1..=100 |
//! | 400 | `empty_query` | the query is empty or only spaces |
//! | 400 | `query_too_long` | the query is over 4096 characters |
//! | 400 | `batch_too_large` | a batch of more than 256 requests |
//! | 400 | `invalid_input` | the search refused the request (an unknown tool in the server's `pinned` config, dense mode without the model) |
//! | 401 | `unauthorized` | a missing or wrong bearer token |
//! | 404 | `tool_not_found` | no tool with this id or handle (a card, or a request's `pin`) |
//! | 404 | `not_found` | no such route |
//! | 404 | `no_candidates` | a plan request whose retrieval offers no tool (its filters leave none, or nothing matches) |
//! | 405 | `method_not_allowed` | the route exists, the method does not |
//! | 413 | `body_too_large` | the body is over 64 KiB |
//! | 415 | `unsupported_media_type` | the body is not `application/json` in UTF-8 |
//! | 414 | `uri_too_long` | the request target is over 8 KiB |
//! | 431 | `headers_too_large` | over 100 headers, or over 16 KiB of them |
//! | 422 | `plan_aborted` | no plan the model proposed passed the gate within the retry budget |
//! | 503 | `not_ready` | the index is still loading |
//! | 503 | `timeout` | the request took longer than the server's timeout |
//! | 501 | `planner_not_configured` | the server was started without a plan model (`--planner`) |
//! | 502 | `planner_unavailable` | the plan model cannot be reached, or answered an HTTP error or no chat completion |
//! | 504 | `planner_timeout` | the plan model did not answer within the server's planner timeout |
//! | 500 | `internal` | a bug or a broken index; never caused by user input |

use serde::Serialize;

/// A code caused by the request: always a 4xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UserCode {
    /// 400 `malformed_json`: the body is not JSON.
    MalformedJson,
    /// 400 `invalid_request`: a wrong type, a missing or an unknown field.
    InvalidRequest,
    /// 400 `invalid_k`: `k` outside 1..=[`MAX_K`](crate::MAX_K).
    InvalidK,
    /// 400 `empty_query`: the query is empty or only spaces.
    EmptyQuery,
    /// 400 `query_too_long`: over [`MAX_QUERY_CHARS`](crate::MAX_QUERY_CHARS).
    QueryTooLong,
    /// 400 `batch_too_large`: more than [`MAX_BATCH`](crate::MAX_BATCH) requests.
    BatchTooLarge,
    /// 400 `invalid_input`: the search refused the request.
    InvalidInput,
    /// 401 `unauthorized`: a missing or wrong bearer token.
    Unauthorized,
    /// 404 `tool_not_found`: no tool with this id or handle.
    ToolNotFound,
    /// 404 `not_found`: no such route.
    NotFound,
    /// 404 `no_candidates`: the retrieval of a plan request offers no tool,
    /// so there is nothing to plan over.
    NoCandidates,
    /// 405 `method_not_allowed`: the route exists, the method does not.
    MethodNotAllowed,
    /// 413 `body_too_large`: the body is over [`MAX_BODY_BYTES`](crate::MAX_BODY_BYTES).
    BodyTooLarge,
    /// 415 `unsupported_media_type`: the body is not `application/json`.
    UnsupportedMediaType,
    /// 414 `uri_too_long`: the request target is over
    /// [`MAX_URI_BYTES`](crate::MAX_URI_BYTES).
    UriTooLong,
    /// 431 `headers_too_large`: over [`MAX_HEADERS`](crate::MAX_HEADERS)
    /// headers, or over [`MAX_HEADER_BYTES`](crate::MAX_HEADER_BYTES) of them.
    HeadersTooLarge,
    /// 422 `plan_aborted`: every plan the model proposed was rejected by the
    /// gate, and the retry budget is spent.
    PlanAborted,
}

/// A code caused by the server, not the request: always a 5xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InternalCode {
    /// 503 `not_ready`: the index is still loading.
    NotReady,
    /// 503 `timeout`: the request took longer than the server's timeout.
    Timeout,
    /// 501 `planner_not_configured`: the server has no plan model.
    PlannerNotConfigured,
    /// 502 `planner_unavailable`: the plan model cannot be reached, or
    /// answered an HTTP error or something that is no chat completion.
    PlannerUnavailable,
    /// 504 `planner_timeout`: the plan model did not answer in time.
    PlannerTimeout,
    /// 500 `internal`: a bug or a broken index.
    Internal,
}

/// Every stable error code, user or internal: its string and its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiCode {
    /// Caused by the request (4xx).
    User(UserCode),
    /// Caused by the server (5xx).
    Internal(InternalCode),
}

impl UserCode {
    /// The HTTP status of this code, always a 4xx.
    pub const fn status(self) -> u16 {
        use UserCode::*;
        match self {
            MalformedJson | InvalidRequest | InvalidK | EmptyQuery | QueryTooLong
            | BatchTooLarge | InvalidInput => 400,
            Unauthorized => 401,
            ToolNotFound | NotFound | NoCandidates => 404,
            MethodNotAllowed => 405,
            BodyTooLarge => 413,
            UriTooLong => 414,
            UnsupportedMediaType => 415,
            PlanAborted => 422,
            HeadersTooLarge => 431,
        }
    }

    /// The stable string of this code, as sent in `error.code`.
    pub const fn as_str(self) -> &'static str {
        use UserCode::*;
        match self {
            MalformedJson => "malformed_json",
            InvalidRequest => "invalid_request",
            InvalidK => "invalid_k",
            EmptyQuery => "empty_query",
            QueryTooLong => "query_too_long",
            BatchTooLarge => "batch_too_large",
            InvalidInput => "invalid_input",
            Unauthorized => "unauthorized",
            ToolNotFound => "tool_not_found",
            NotFound => "not_found",
            NoCandidates => "no_candidates",
            MethodNotAllowed => "method_not_allowed",
            BodyTooLarge => "body_too_large",
            UnsupportedMediaType => "unsupported_media_type",
            UriTooLong => "uri_too_long",
            HeadersTooLarge => "headers_too_large",
            PlanAborted => "plan_aborted",
        }
    }
}

impl InternalCode {
    /// The HTTP status of this code, always a 5xx.
    pub const fn status(self) -> u16 {
        match self {
            InternalCode::NotReady | InternalCode::Timeout => 503,
            InternalCode::PlannerNotConfigured => 501,
            InternalCode::PlannerUnavailable => 502,
            InternalCode::PlannerTimeout => 504,
            InternalCode::Internal => 500,
        }
    }

    /// The stable string of this code, as sent in `error.code`.
    pub const fn as_str(self) -> &'static str {
        match self {
            InternalCode::NotReady => "not_ready",
            InternalCode::Timeout => "timeout",
            InternalCode::PlannerNotConfigured => "planner_not_configured",
            InternalCode::PlannerUnavailable => "planner_unavailable",
            InternalCode::PlannerTimeout => "planner_timeout",
            InternalCode::Internal => "internal",
        }
    }
}

impl ApiCode {
    /// Every code, in the order of the table in the module docs (and of
    /// `openapi.json`'s `Error.code` enum).
    pub const ALL: [ApiCode; 23] = {
        use ApiCode::{Internal as I, User as U};
        use InternalCode::*;
        use UserCode::*;
        [
            U(MalformedJson),
            U(InvalidRequest),
            U(InvalidK),
            U(EmptyQuery),
            U(QueryTooLong),
            U(BatchTooLarge),
            U(InvalidInput),
            U(Unauthorized),
            U(ToolNotFound),
            U(NotFound),
            U(NoCandidates),
            U(MethodNotAllowed),
            U(BodyTooLarge),
            U(UnsupportedMediaType),
            U(UriTooLong),
            U(HeadersTooLarge),
            U(PlanAborted),
            I(NotReady),
            I(Timeout),
            I(PlannerNotConfigured),
            I(PlannerUnavailable),
            I(PlannerTimeout),
            I(Internal),
        ]
    };

    /// The HTTP status of this code: 4xx for a user code, 5xx for an internal one.
    pub const fn status(self) -> u16 {
        match self {
            ApiCode::User(c) => c.status(),
            ApiCode::Internal(c) => c.status(),
        }
    }

    /// The stable string of this code, as sent in `error.code`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiCode::User(c) => c.as_str(),
            ApiCode::Internal(c) => c.as_str(),
        }
    }

    /// Whether the request caused it (a 4xx).
    pub const fn is_user(self) -> bool {
        matches!(self, ApiCode::User(_))
    }
}

impl std::fmt::Display for ApiCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ApiCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl From<UserCode> for ApiCode {
    fn from(c: UserCode) -> ApiCode {
        ApiCode::User(c)
    }
}

impl From<InternalCode> for ApiCode {
    fn from(c: InternalCode) -> ApiCode {
        ApiCode::Internal(c)
    }
}

/// An error answer: a code (which decides the status) and a message.
///
/// The HTTP server sends it as `{"error": {"code", "message"}}` with the
/// code's status; the MCP server sends a user error as a tool result with
/// `isError` and an internal one as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiError {
    /// The request is wrong; the message says how.
    User {
        /// What kind of mistake.
        code: UserCode,
        /// What went wrong, for a person.
        message: String,
    },
    /// The server could not answer; never caused by user input.
    Internal {
        /// What kind of failure.
        code: InternalCode,
        /// What went wrong, for a person (without internal details).
        message: String,
    },
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
    /// A user error (4xx) with this code and message.
    pub fn user(code: UserCode, message: impl Into<String>) -> ApiError {
        ApiError::User {
            code,
            message: message.into(),
        }
    }

    /// 503 `not_ready`.
    pub fn not_ready() -> ApiError {
        ApiError::Internal {
            code: InternalCode::NotReady,
            message: "the index is still loading; retry shortly".into(),
        }
    }

    /// 503 `timeout`.
    pub fn timeout(message: impl Into<String>) -> ApiError {
        ApiError::Internal {
            code: InternalCode::Timeout,
            message: message.into(),
        }
    }

    /// A server error (5xx) with this code and message, for the codes that
    /// have no constructor of their own (the planner's).
    pub fn server(code: InternalCode, message: impl Into<String>) -> ApiError {
        ApiError::Internal {
            code,
            message: message.into(),
        }
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::Internal {
            code: InternalCode::Internal,
            message: message.into(),
        }
    }

    /// Its code.
    pub fn code(&self) -> ApiCode {
        match self {
            ApiError::User { code, .. } => ApiCode::User(*code),
            ApiError::Internal { code, .. } => ApiCode::Internal(*code),
        }
    }

    /// Its HTTP status, decided by its code.
    pub fn status(&self) -> u16 {
        self.code().status()
    }

    /// What went wrong, for a person.
    pub fn message(&self) -> &str {
        match self {
            ApiError::User { message, .. } | ApiError::Internal { message, .. } => message,
        }
    }

    /// The same error with `prefix` before its message (`[3]: k must be …`).
    pub fn prefixed(mut self, prefix: &str) -> ApiError {
        let (ApiError::User { message, .. } | ApiError::Internal { message, .. }) = &mut self;
        *message = format!("{prefix}{message}");
        self
    }

    /// The JSON body of this error: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::to_value(Body {
            error: Detail {
                code: self.code().as_str(),
                message: self.message(),
            },
        })
        .expect("an error body serialises")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status(), self.code(), self.message())
    }
}

impl std::error::Error for ApiError {}

impl From<toolrag_core::Error> for ApiError {
    /// User errors become 400 `invalid_input`; everything else is internal,
    /// logged here with the full message and answered without it.
    fn from(e: toolrag_core::Error) -> ApiError {
        match e {
            toolrag_core::Error::InvalidInput(m) => ApiError::user(UserCode::InvalidInput, m),
            other => {
                tracing::error!(target: "server", "search failed: {other}");
                ApiError::internal("the search failed; the server log has the details")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_are_4xx_and_internal_codes_5xx() {
        for code in ApiCode::ALL {
            let s = code.status();
            assert!((400..600).contains(&s), "{code}: {s}");
            assert_eq!(code.is_user(), s < 500, "{code}: {s}");
        }
        let strings: std::collections::BTreeSet<&str> =
            ApiCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(strings.len(), ApiCode::ALL.len(), "codes are distinct");
    }

    #[test]
    fn the_body_and_display() {
        let e = ApiError::user(UserCode::InvalidK, "k must be between 1 and 100, got 0");
        assert_eq!(
            e.body().to_string(),
            r#"{"error":{"code":"invalid_k","message":"k must be between 1 and 100, got 0"}}"#
        );
        assert_eq!(
            e.to_string(),
            "400 invalid_k: k must be between 1 and 100, got 0"
        );
        assert_eq!(
            e.prefixed("[2]: ").message(),
            "[2]: k must be between 1 and 100, got 0"
        );
        assert_eq!(ApiError::not_ready().status(), 503);
        assert_eq!(
            ApiError::from(toolrag_core::Error::Index("broken".into())).code(),
            ApiCode::Internal(InternalCode::Internal)
        );
        assert_eq!(
            ApiError::from(toolrag_core::Error::InvalidInput("no".into())).code(),
            ApiCode::User(UserCode::InvalidInput)
        );
    }
}
