//! The serving core: what the HTTP server (`toolrag-http`) and the MCP
//! server (`toolrag-mcp`) share, so that neither depends on the other.
//!
//! - the limits ([`MAX_K`], [`DEFAULT_K`], [`MAX_BATCH`], [`MAX_BODY_BYTES`],
//!   [`MAX_QUERY_CHARS`]) and the request checks ([`check_k`],
//!   [`check_query`]);
//! - the typed errors: [`ApiCode`] (every stable code, its string and its
//!   status), split into [`UserCode`] (4xx) and [`InternalCode`] (5xx), and
//!   [`ApiError`];
//! - the live index ([`LiveIndex`]): the searcher of the current generation,
//!   reloaded when a build publishes a new one ([`Reload`], [`Watcher`]), and
//!   its answers tagged with the generation ([`Answer`]).
//!
//! The core knows nothing of HTTP frameworks or MCP: statuses are plain
//! `u16`s, and it builds without the `server` and `mcp` features.
//!
//! ```
//! use toolrag_engine::serve::{check_k, check_query, ApiCode, UserCode};
//!
//! assert_eq!(check_k(None).unwrap(), toolrag_engine::serve::DEFAULT_K);
//! let e = check_k(Some(0)).unwrap_err();
//! assert_eq!(e.code(), ApiCode::User(UserCode::InvalidK));
//! assert_eq!((e.status(), e.code().as_str()), (400, "invalid_k"));
//! assert!(check_query("read the file /etc/hosts").is_ok());
//! ```

mod error;
mod live;
mod validate;

use std::time::Duration;

pub use crate::search::MAX_QUERY_CHARS;

/// The OpenAPI 3.1 description of the serving core's wire values, as the
/// HTTP API serves it (`GET /openapi.json`); the MCP server takes its tools'
/// output schemas from the same document, so both are described once.
pub const OPENAPI: &str = include_str!("openapi.json");
pub use error::{ApiCode, ApiError, InternalCode, UserCode};
pub use live::{generation_name, Answer, LiveIndex, Reload, Watcher};
pub use validate::{check_k, check_query};

/// The largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest request target (path and query), in bytes; longer is 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most request headers; more is 431.
pub const MAX_HEADERS: usize = 100;
/// The most bytes of request headers (names and values); more is 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The largest `k`.
pub const MAX_K: usize = 100;
/// The default `k`: the search's own ([`crate::search::DEFAULT_K`]).
pub use crate::search::DEFAULT_K;
/// The most requests in one batch.
pub const MAX_BATCH: usize = 256;
/// How often the reload watcher looks at `CURRENT`.
pub const RELOAD_POLL: Duration = Duration::from_millis(500);
