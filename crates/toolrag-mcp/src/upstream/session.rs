//! One client session to an upstream MCP server over stdio or streamable
//! HTTP, and paging through its `tools/list`.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, ServerPeerInfo,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;

use super::error::with_causes;
use super::{ServerConfig, ServerTransport, StderrTail, UpstreamError, MAX_PAGES};

/// One open client session to an MCP server, initialised. Dropping it stops
/// a stdio server (the child is killed); [`UpstreamSession::close`] asks it
/// to exit first.
pub struct UpstreamSession {
    name: String,
    service: RunningService<RoleClient, ToolragClient>,
    child: Option<tokio::process::Child>,
    stderr: StderrTail,
}

impl std::fmt::Debug for UpstreamSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSession")
            .field("name", &self.name)
            .field("pid", &self.child.as_ref().and_then(|c| c.id()))
            .finish_non_exhaustive()
    }
}

/// toolrag's side of a session: what it says of itself in `initialize`,
/// and where a `notifications/tools/list_changed` from the server goes.
#[derive(Debug, Clone)]
pub struct ToolragClient {
    server: String,
    on_list_changed: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl ClientHandler for ToolragClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolrag", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(tx) = &self.on_list_changed {
            tracing::debug!(server = %self.server, "notifications/tools/list_changed");
            // The receiver is gone only when the gateway is stopping.
            let _ = tx.send(self.server.clone());
        }
        std::future::ready(())
    }
}

impl UpstreamSession {
    /// Starts (stdio) or connects to (HTTP) `server` and initialises the
    /// session. A stdio server's stderr goes to `stderr`, so that a caller
    /// who gives up on a slow server (a timeout around this future) still
    /// has it. Needs a Tokio runtime.
    pub async fn connect(
        server: &ServerConfig,
        stderr: &StderrTail,
    ) -> Result<UpstreamSession, UpstreamError> {
        UpstreamSession::connect_watched(server, stderr, None).await
    }

    /// [`UpstreamSession::connect`], and the server's name is sent on
    /// `on_list_changed` each time it sends `notifications/tools/list_changed`.
    pub async fn connect_watched(
        server: &ServerConfig,
        stderr: &StderrTail,
        on_list_changed: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    ) -> Result<UpstreamSession, UpstreamError> {
        let client = ToolragClient {
            server: server.name.clone(),
            on_list_changed,
        };
        let init = |e: rmcp::service::ClientInitializeError| {
            UpstreamError::Initialize(match e {
                // Its Display names rmcp's transport types; the cause is what helps.
                rmcp::service::ClientInitializeError::TransportError { error, context } => {
                    format!("{} ({context})", with_causes(&*error.error))
                }
                other => other.to_string(),
            })
        };
        match &server.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut child = cmd.spawn().map_err(|source| UpstreamError::Spawn {
                    command: command.clone(),
                    source,
                })?;
                if let Some(err) = child.stderr.take() {
                    stderr.capture(err, server.name.clone());
                }
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    unreachable!("stdin and stdout are piped");
                };
                let service = client.serve((stdout, stdin)).await.map_err(init)?;
                Ok(UpstreamSession {
                    name: server.name.clone(),
                    service,
                    child: Some(child),
                    stderr: stderr.clone(),
                })
            }
            ServerTransport::Http { url, headers } => {
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                use rmcp::transport::StreamableHttpClientTransport;
                // rmcp's reqwest is built without a TLS crypto provider of
                // its own; ring is the process default unless one is set.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    // Checked when the configuration was read.
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| UpstreamError::Unsupported(format!("header `{k}`: {e}")))?;
                    let value = http::HeaderValue::from_str(v)
                        .map_err(|e| UpstreamError::Unsupported(format!("header `{k}`: {e}")))?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = client.serve(transport).await.map_err(init)?;
                Ok(UpstreamSession {
                    name: server.name.clone(),
                    service,
                    child: None,
                    stderr: stderr.clone(),
                })
            }
            ServerTransport::Sse { url } => Err(UpstreamError::Unsupported(format!(
                "`{url}` uses the legacy HTTP+SSE transport, which is not supported: configure \
                 the server's streamable-HTTP endpoint (often `/mcp`) with \"type\": \"http\""
            ))),
        }
    }

    /// The server's name in the configuration.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the server said of itself in `initialize` (name, version,
    /// protocol version, capabilities).
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.service.peer_info()
    }

    /// The session's peer, to send any request (`tools/call`, say).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The end of the server's stderr so far (empty for an HTTP server).
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Whether the session has ended: the server exited or closed the
    /// connection.
    pub fn is_closed(&self) -> bool {
        self.service.peer().is_transport_closed()
    }

    /// Every tool the server lists, following `nextCursor` page by page, each
    /// as MCP's `Tool` JSON (`name`, `description`, `inputSchema`,
    /// `outputSchema`, `annotations`, `_meta`, ...).
    pub async fn list_tools(&self) -> Result<Vec<Value>, UpstreamError> {
        list_tools_of(self.peer()).await
    }

    /// Ends the session: closes the connection (a stdio server sees its
    /// stdin close and should exit), waits a moment for a child to exit, then
    /// kills it.
    pub async fn close(mut self) {
        let _ = self.service.cancel().await;
        if let Some(mut child) = self.child.take() {
            if tokio::time::timeout(Duration::from_secs(2), child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }
}

/// Every tool the server behind `peer` lists, following `nextCursor` page
/// by page (at most [`MAX_PAGES`]; a cursor seen twice is an error), each as
/// MCP's `Tool` JSON.
pub async fn list_tools_of(peer: &Peer<RoleClient>) -> Result<Vec<Value>, UpstreamError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| UpstreamError::Request {
                method: "tools/list",
                message: with_causes(&e),
            })?;
        for tool in &page.tools {
            tools.push(serde_json::to_value(tool).expect("an MCP tool always serialises to JSON"));
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.clone()) {
                    return Err(UpstreamError::Paging(format!(
                        "the cursor `{next}` came back twice"
                    )));
                }
                cursor = Some(next);
            }
            _ => return Ok(tools),
        }
    }
    Err(UpstreamError::Paging(format!(
        "more than {MAX_PAGES} pages"
    )))
}
