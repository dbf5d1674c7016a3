//! # toolrag-serve
//!
//! The serving core: what toolrag's two HTTP front ends share, the HTTP API
//! (`toolrag-http`, `toolrag serve`) and MCP over streamable HTTP
//! (`toolrag-mcp`, `toolrag mcp --http`), so that neither depends on the
//! other.
//!
//! - the limits ([`MAX_K`], [`DEFAULT_K`], [`MAX_BATCH`], [`MAX_BODY_BYTES`],
//!   [`MAX_QUERY_CHARS`], and the request head's [`MAX_URI_BYTES`],
//!   [`MAX_HEADERS`], [`MAX_HEADER_BYTES`]) and the request checks
//!   ([`check_k`], [`check_query`]);
//! - the typed errors: [`ApiCode`] (every stable code, its string and its
//!   HTTP status), split into [`UserCode`] (4xx) and [`InternalCode`] (5xx),
//!   and [`ApiError`];
//! - [`OPENAPI`], the HTTP API's OpenAPI document, whose schemas are also the
//!   MCP tools' output schemas;
//! - the connection loop ([`serve_router`] with [`ConnLimits`]): a deadline
//!   for a request's headers and a cap on open connections, which
//!   `axum::serve` does not have;
//! - the check that comes before authentication on both front ends: a
//!   header that must appear once ([`SINGLE_HEADERS`], [`repeated_header`]).
//!
//! What is served, the live index that reloads when a build publishes a new
//! generation, is the engine's (`toolrag_engine::live`): it knows nothing of
//! HTTP, and the MCP server over stdio reads it too. This crate opens no
//! connection of its own: it serves on the listener its caller binds.
//!
//! ```
//! use toolrag_serve::{check_k, check_query, ApiCode, UserCode};
//!
//! assert_eq!(check_k(None).unwrap(), toolrag_serve::DEFAULT_K);
//! let e = check_k(Some(0)).unwrap_err();
//! assert_eq!(e.code(), ApiCode::User(UserCode::InvalidK));
//! assert_eq!((e.status(), e.code().as_str()), (400, "invalid_k"));
//! assert!(check_query("read the file /etc/hosts").is_ok());
//! ```
#![warn(missing_docs)]

mod conn;
mod edge;
mod error;
mod validate;

pub use conn::{
    serve_router, ConnEvents, ConnLimits, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
};
pub use edge::{repeated_header, repeated_message, SINGLE_HEADERS};
pub use error::{ApiCode, ApiError, InternalCode, UserCode};
pub use validate::{check_k, check_query};

/// The longest query, in characters: the search's own cap.
pub use toolrag_engine::search::MAX_QUERY_CHARS;

/// The default `k`: the search's own.
pub use toolrag_engine::search::DEFAULT_K;

/// The OpenAPI 3.1 document of the HTTP API, which `toolrag-http` serves at
/// `GET /openapi.json` and checks against its routes.
///
/// It lives here, below both front ends, because it is also the one
/// description of the values both answer with: the MCP server takes its
/// tools' output schemas (`CandidateSet`, `ToolCard`) from its components,
/// and its error codes and limits are this crate's ([`ApiCode::ALL`],
/// [`MAX_K`], ...).
pub const OPENAPI: &str = include_str!("openapi.json");

/// The largest request body of the HTTP API, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest request target (path and query), in bytes; longer is 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most request headers; more is 431.
pub const MAX_HEADERS: usize = 100;
/// The most bytes of request headers (names and values); more is 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The largest `k`.
pub const MAX_K: usize = 100;
/// The most requests in one batch.
pub const MAX_BATCH: usize = 256;
