//! MCP client configuration files: Claude Desktop's and Cursor's
//! `mcpServers`, VS Code's `servers`, read into [`McpConfig`].

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::UpstreamError;
use toolrag_core::error::Location;

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
