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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, ServerPeerInfo,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::error::{LoadError, Location};
use crate::registry::ToolDef;

/// How long one server may take to start, initialise and list its tools,
/// unless the caller says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this many `tools/list` pages are read from one server, so a
/// server whose cursors never end cannot hold a build forever.
pub const MAX_PAGES: usize = 10_000;

/// How much of a server's stderr is kept (the end of it), in bytes.
const STDERR_KEEP: usize = 16 * 1024;

/// How many lines of a server's stderr a failure report shows.
const STDERR_TAIL_LINES: usize = 20;

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
    /// [`MAX_PAGES`] pages.
    #[error("tools/list does not end: {0}")]
    Paging(String),
    /// The server did not finish within the timeout.
    #[error("no answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
}

/// A configured server: its name (the namespace of its tools), how to reach
/// it and where it is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key of the server's entry; its tools are indexed as `<name>/<tool>`.
    pub name: String,
    /// How to start or reach it.
    pub transport: ServerTransport,
    /// Where its entry starts in the configuration file.
    pub location: Location,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program, looked up in `PATH` when it has no slash.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment it inherits.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the caller's).
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP server.
    Http {
        /// The MCP endpoint, such as `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request (an `Authorization` token, say).
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (`"type": "sse"`), which `rmcp`'s client
    /// does not speak: connecting fails with [`UpstreamError::Unsupported`].
    Sse {
        /// The SSE endpoint.
        url: String,
    },
}

/// The servers of one MCP configuration file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// The file.
    pub path: PathBuf,
    /// The enabled servers.
    pub servers: Vec<ServerConfig>,
    /// The names of entries with `"disabled": true`, which are left out.
    pub disabled: Vec<String>,
}

impl McpConfig {
    /// Reads an MCP client configuration: a top-level `mcpServers` object
    /// (Claude Desktop, Cursor) or `servers` (VS Code). Errors name the file
    /// and line: invalid JSON, an entry without `command` or `url`, a value
    /// of the wrong type.
    pub fn load(path: &Path) -> Result<McpConfig, UpstreamError> {
        let text = std::fs::read_to_string(path).map_err(|source| UpstreamError::ConfigRead {
            path: path.to_path_buf(),
            source,
        })?;
        McpConfig::parse(path, &text)
    }

    /// Parses the text of a configuration file read from `path` (which only
    /// locates errors and servers).
    pub fn parse(path: &Path, text: &str) -> Result<McpConfig, UpstreamError> {
        let error = |offset: usize, message: String| UpstreamError::Config {
            location: Location::from_offset(path, text, offset),
            message,
        };
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            let message = match message.rfind(" at line ") {
                Some(i) => &message[..i],
                None => &message,
            };
            UpstreamError::Config {
                location: if e.line() == 0 {
                    Location::file_start(path)
                } else {
                    Location {
                        file: path.to_path_buf(),
                        line: e.line() as u32,
                        column: e.column().max(1) as u32,
                    }
                },
                message: format!("invalid JSON: {message}"),
            }
        })?;
        let Value::Object(top) = value else {
            return Err(error(
                0,
                "an MCP configuration is a JSON object with `mcpServers` (Claude Desktop, \
                 Cursor) or `servers` (VS Code)"
                    .into(),
            ));
        };
        let mut config = McpConfig {
            path: path.to_path_buf(),
            servers: Vec::new(),
            disabled: Vec::new(),
        };
        let mut found = false;
        let mut names = HashSet::new();
        for key in ["mcpServers", "servers"] {
            let Some(servers) = top.get(key) else {
                continue;
            };
            found = true;
            let key_at = key_offset(text, 0, key).unwrap_or(0);
            let Value::Object(servers) = servers else {
                return Err(error(
                    key_at,
                    format!("`{key}` must be an object of servers"),
                ));
            };
            for (name, entry) in servers {
                let at = key_offset(text, key_at, name).unwrap_or(key_at);
                if name.trim().is_empty() {
                    return Err(error(at, "a server's name is empty".into()));
                }
                if !names.insert(name.clone()) {
                    return Err(error(at, format!("server `{name}` is configured twice")));
                }
                let Value::Object(entry) = entry else {
                    return Err(error(at, format!("server `{name}` must be an object")));
                };
                if entry.get("disabled") == Some(&Value::Bool(true)) {
                    config.disabled.push(name.clone());
                    continue;
                }
                let transport = parse_entry(name, entry).map_err(|m| error(at, m))?;
                config.servers.push(ServerConfig {
                    name: name.clone(),
                    transport,
                    location: Location::from_offset(path, text, at),
                });
            }
        }
        if !found {
            return Err(error(
                0,
                "no `mcpServers` object (Claude Desktop, Cursor) nor `servers` (VS Code) in \
                 this file"
                    .into(),
            ));
        }
        Ok(config)
    }
}

/// One entry of `mcpServers` / `servers`.
fn parse_entry(
    name: &str,
    entry: &serde_json::Map<String, Value>,
) -> Result<ServerTransport, String> {
    let string = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("server `{name}`: `{key}` must be a string")),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        format!("server `{name}`: `{key}` must be an array of strings")
                    })
                })
                .collect(),
            Some(_) => Err(format!(
                "server `{name}`: `{key}` must be an array of strings"
            )),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Number(n) => Ok((k.clone(), n.to_string())),
                    Value::Bool(b) => Ok((k.clone(), b.to_string())),
                    _ => Err(format!("server `{name}`: `{key}.{k}` must be a string")),
                })
                .collect(),
            Some(_) => Err(format!(
                "server `{name}`: `{key}` must be an object of strings"
            )),
        }
    };
    let command = string("command")?;
    let url = string("url")?;
    let kind = string("type")?;
    let stdio = |command: Option<String>| -> Result<ServerTransport, String> {
        let command = command.filter(|c| !c.trim().is_empty()).ok_or_else(|| {
            format!("server `{name}`: a stdio server needs a `command` (the program to start)")
        })?;
        Ok(ServerTransport::Stdio {
            command,
            args: strings("args")?,
            env: map("env")?,
            cwd: string("cwd")?.map(PathBuf::from),
        })
    };
    let http = |url: Option<String>| -> Result<ServerTransport, String> {
        let url = url.filter(|u| !u.trim().is_empty()).ok_or_else(|| {
            format!("server `{name}`: an HTTP server needs a `url` (its MCP endpoint)")
        })?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "server `{name}`: `url` must start with http:// or https://, found `{url}`"
            ));
        }
        let headers = map("headers")?;
        for (k, v) in &headers {
            if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                return Err(format!(
                    "server `{name}`: `headers` has an invalid header name `{k}`"
                ));
            }
            if http::HeaderValue::from_str(v).is_err() {
                return Err(format!(
                    "server `{name}`: the value of header `{k}` is not a valid header value"
                ));
            }
        }
        Ok(ServerTransport::Http { url, headers })
    };
    match kind.as_deref() {
        Some("stdio") => stdio(command),
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => http(url),
        Some("sse") => {
            let url = url.ok_or_else(|| format!("server `{name}`: an SSE server needs a `url`"))?;
            Ok(ServerTransport::Sse { url })
        }
        Some(other) => Err(format!(
            "server `{name}`: unknown `type` `{other}` (expected \"stdio\" or \"http\")"
        )),
        None => match (command, url) {
            (Some(_), Some(_)) => Err(format!(
                "server `{name}` has both `command` and `url`: say which with \"type\": \
                 \"stdio\" or \"http\""
            )),
            (Some(c), None) => stdio(Some(c)),
            (None, Some(u)) => http(Some(u)),
            (None, None) => Err(format!(
                "server `{name}` has neither `command` (a stdio server) nor `url` (an HTTP \
                 server)"
            )),
        },
    }
}

/// The byte offset of `key` written as an object key (`"key"` then `:`) at or
/// after `from`; it only places errors and servers on a line.
fn key_offset(text: &str, from: usize, key: &str) -> Option<usize> {
    let quoted = serde_json::to_string(key).ok()?;
    let mut at = from.min(text.len());
    while let Some(i) = text.get(at..)?.find(&quoted) {
        let start = at + i;
        let after = text[start + quoted.len()..].trim_start();
        if after.starts_with(':') {
            return Some(start);
        }
        at = start + quoted.len();
    }
    None
}

/// The end of a server's stderr, captured while it runs. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    inner: Arc<Mutex<TailState>>,
    closed: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct TailState {
    bytes: Vec<u8>,
    closed: bool,
}

impl StderrTail {
    /// An empty tail (an HTTP server's stays empty).
    pub fn new() -> StderrTail {
        StderrTail::default()
    }

    /// Reads `stderr` to its end on a task of its own, keeping the last
    /// 16 KiB; each line is also logged at debug level under `server`.
    fn capture(&self, mut stderr: tokio::process::ChildStderr, server: String) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let mut pending = Vec::new();
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        pending.extend_from_slice(chunk);
                        while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                            let line: Vec<u8> = pending.drain(..=i).collect();
                            tracing::debug!(
                                server = %server,
                                "stderr: {}",
                                String::from_utf8_lossy(&line).trim_end()
                            );
                        }
                        if pending.len() > STDERR_KEEP {
                            pending.clear();
                        }
                        let mut state = tail.inner.lock().expect("not poisoned");
                        state.bytes.extend_from_slice(chunk);
                        if state.bytes.len() > STDERR_KEEP {
                            let cut = state.bytes.len() - STDERR_KEEP;
                            state.bytes.drain(..cut);
                        }
                    }
                }
            }
            tail.inner.lock().expect("not poisoned").closed = true;
            tail.closed.notify_waiters();
        });
    }

    /// The last lines written so far (at most 20), without trailing blanks.
    pub fn text(&self) -> String {
        let state = self.inner.lock().expect("not poisoned");
        let text = String::from_utf8_lossy(&state.bytes);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
        lines[from..].join("\n")
    }

    /// Waits up to `wait` for the server to close its stderr (it has exited
    /// or been killed), then returns [`StderrTail::text`].
    pub async fn settle(&self, wait: Duration) -> String {
        let closed = self.closed.notified();
        let done = self.inner.lock().expect("not poisoned").closed;
        if !done {
            let _ = tokio::time::timeout(wait, closed).await;
        }
        self.text()
    }
}

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

/// `error` and each of its sources, joined by `: ` (an HTTP client's error
/// says "error sending request" and its source why).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
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
    /// `{"tools": [...]}` would load ([`crate::registry::load_mcp_server`]),
    /// each located at the server's entry in the configuration; and a
    /// [`LoadError`] for each tool that is not a valid definition.
    pub fn normalise(&self) -> (Vec<ToolDef>, Vec<LoadError>) {
        crate::registry::load_mcp_server(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, UpstreamError> {
        McpConfig::parse(Path::new("mcp.json"), text)
    }

    #[test]
    fn reads_claude_desktop_and_vscode_entries() {
        let c = parse(
            r#"{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    "remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer x"}},
    "off": {"command": "x", "disabled": true}
  }
}"#,
        )
        .unwrap();
        assert_eq!(c.disabled, ["off"]);
        assert_eq!(c.servers.len(), 2);
        assert_eq!(c.servers[0].name, "time");
        assert_eq!(c.servers[0].location.line, 3);
        assert!(matches!(
            &c.servers[0].transport,
            ServerTransport::Stdio { command, args, env, cwd: None }
                if command == "uvx" && args == &["mcp-server-time"] && env["TZ"] == "UTC"
        ));
        assert!(matches!(
            &c.servers[1].transport,
            ServerTransport::Http { url, headers }
                if url == "https://example.test/mcp" && headers["Authorization"] == "Bearer x"
        ));

        let v = parse(
            r#"{"inputs": [], "servers": {"a": {"type": "stdio", "command": "a"},
                "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#,
        )
        .unwrap();
        assert_eq!(v.servers.len(), 2);
        assert!(matches!(
            v.servers[1].transport,
            ServerTransport::Http { .. }
        ));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("mcp.json:3:"), "{e}");
        assert!(e.contains("invalid JSON"), "{e}");

        let e = parse("{\n  \"mcpServers\": {\n    \"a\": {\"args\": []}\n  }\n}")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("mcp.json:3:5: server `a` has neither `command`"),
            "{e}"
        );

        let e = parse("{\"servers\": {\"a\": {\"type\": \"http\"}}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("an HTTP server needs a `url`"), "{e}");

        let e = parse("{\"tools\": []}").unwrap_err().to_string();
        assert!(e.contains("no `mcpServers`"), "{e}");
    }
}
