//! Live MCP servers as a source of tools: the configuration files people
//! already have, and client sessions to the servers they name.
//!
//! [`McpConfig::load`] reads Claude Desktop's `claude_desktop_config.json`
//! and Cursor's `.cursor/mcp.json` (a top-level `mcpServers` object) and VS
//! Code's `.vscode/mcp.json` (`servers`): stdio entries (`command`, `args`,
//! `env`, `cwd`) and streamable-HTTP entries (`url`, `headers`), with VS
//! Code's `"type": "stdio" | "http"`. [`UpstreamSession`] starts or connects
//! to one server with `rmcp`'s client, initialises it and pages through
//! `tools/list`; [`fetch_all`] does that for every configured server at once,
//! each within a timeout, and reports a server that fails by name with the
//! tail of its stderr ([`ServerFailure`]) while the others succeed.
//!
//! The tools come back as JSON exactly as the server listed them (as `rmcp`
//! reads MCP's `Tool`: name, title, description, input and output schemas,
//! annotations, icons, `_meta`); [`ServerTools::normalise`] turns them into
//! [`ToolDef`]s as if they had been saved to a file `<server>.json`.

mod config;
mod error;
mod session;
mod stderr;

pub use config::{McpConfig, ServerConfig, ServerTransport};
pub use error::UpstreamError;
pub use session::{list_tools_of, ToolragClient, UpstreamSession};
pub use stderr::StderrTail;

use std::time::Duration;

use rmcp::model::Implementation;
use serde_json::Value;

use toolrag_core::error::LoadError;
use toolrag_core::registry::ToolDef;

/// How long one server may take to start, initialise and list its tools,
/// unless the caller says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this many `tools/list` pages are read from one server, so a
/// server whose cursors never end cannot hold a build forever.
pub const MAX_PAGES: usize = 10_000;

/// The tools one server listed.
#[derive(Debug, Clone)]
pub struct ServerTools {
    /// The configured server.
    pub server: ServerConfig,
    /// What the server called itself in `initialize` (`serverInfo`).
    pub server_info: Option<Implementation>,
    /// Its tools, as listed (MCP `Tool` JSON).
    pub tools: Vec<Value>,
}

impl ServerTools {
    /// The tools as [`ToolDef`]s, exactly as a file `<server>.json` holding
    /// `{"tools": [...]}` would load ([`toolrag_core::registry::load_mcp_server`]),
    /// each located at the server's entry in the configuration; and a
    /// [`LoadError`] for each tool that is not a valid definition.
    pub fn normalise(&self) -> (Vec<ToolDef>, Vec<LoadError>) {
        toolrag_core::registry::load_mcp_server(
            &self.server.name,
            self.tools.clone(),
            &self.server.location,
        )
    }
}

/// A server that could not be listed: which, why, and the end of its stderr.
#[derive(Debug)]
pub struct ServerFailure {
    /// The configured server.
    pub server: ServerConfig,
    /// What went wrong.
    pub error: UpstreamError,
    /// The last lines of its stderr (empty for an HTTP server, or when it
    /// wrote nothing).
    pub stderr: String,
}

impl std::fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "server `{}` ({}): {}",
            self.server.name, self.server.location, self.error
        )?;
        if !self.stderr.is_empty() {
            write!(f, "\n  its stderr ended with:")?;
            for line in self.stderr.lines() {
                write!(f, "\n    {line}")?;
            }
        }
        Ok(())
    }
}

/// Starts or connects to `server`, lists its tools and closes the session,
/// all within `timeout`.
pub async fn fetch_tools(
    server: &ServerConfig,
    timeout: Duration,
) -> Result<ServerTools, Box<ServerFailure>> {
    let stderr = StderrTail::new();
    let work = async {
        let session = UpstreamSession::connect(server, &stderr).await?;
        let tools = session.list_tools().await?;
        let server_info = session.server_info().and_then(|i| i.server_info.clone());
        session.close().await;
        Ok::<_, UpstreamError>((tools, server_info))
    };
    let error = match tokio::time::timeout(timeout, work).await {
        Ok(Ok((tools, server_info))) => {
            return Ok(ServerTools {
                server: server.clone(),
                server_info,
                tools,
            })
        }
        Ok(Err(e)) => e,
        Err(_) => UpstreamError::Timeout(timeout),
    };
    // The session, and with it a child process, is gone: its stderr ends.
    let stderr = stderr.settle(Duration::from_secs(1)).await;
    Err(Box::new(ServerFailure {
        server: server.clone(),
        error,
        stderr,
    }))
}

/// [`fetch_tools`] for every server at once; the results are in the order
/// of `servers`. Needs a Tokio runtime.
pub async fn fetch_all(
    servers: &[ServerConfig],
    timeout: Duration,
) -> Vec<Result<ServerTools, Box<ServerFailure>>> {
    let mut tasks = tokio::task::JoinSet::new();
    for (i, server) in servers.iter().enumerate() {
        let server = server.clone();
        tasks.spawn(async move { (i, fetch_tools(&server, timeout).await) });
    }
    let mut results: Vec<Option<Result<ServerTools, Box<ServerFailure>>>> =
        servers.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        let (i, result) = joined.expect("a fetch task does not panic");
        results[i] = Some(result);
    }
    results
        .into_iter()
        .map(|r| r.expect("every task answered"))
        .collect()
}
