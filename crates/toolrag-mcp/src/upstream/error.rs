//! What can go wrong with an MCP configuration file or an upstream server.

use std::path::PathBuf;
use std::time::Duration;

use toolrag_core::error::Location;

/// An error of this module: a configuration file that cannot be used, or a
/// server that cannot be reached or does not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The configuration file cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    ConfigRead {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file is not valid JSON, or an entry is not usable.
    #[error("{location}: {message}")]
    Config {
        /// Where in the file.
        location: Location,
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// The server's command cannot be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command as configured.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server's transport is one `rmcp`'s client does not speak.
    #[error("{0}")]
    Unsupported(String),
    /// The MCP handshake (`initialize`) failed.
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// A request to the server failed after the handshake.
    #[error("{method} failed: {message}")]
    Request {
        /// The MCP method, such as `tools/list`.
        method: &'static str,
        /// The error.
        message: String,
    },
    /// The server gave a cursor it had already given, or more than
    /// [`MAX_PAGES`](super::MAX_PAGES) pages.
    #[error("tools/list does not end: {0}")]
    Paging(String),
    /// The server did not finish within the timeout.
    #[error("no answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
}

/// `error` and each of its sources, joined by `: ` (an HTTP client's error
/// says "error sending request" and its source why).
pub(super) fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = e.source();
    }
    text
}
