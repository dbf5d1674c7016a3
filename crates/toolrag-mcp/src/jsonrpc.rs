//! A JSON-RPC 2.0 stdio transport for the MCP server that answers every
//! protocol error as JSON-RPC asks, where rmcp's own stdio transport does not:
//!
//! - a line that is not JSON (or not UTF-8) gets `-32700` *Parse error*
//!   (rmcp ignores it, so the client waits for a reply that never comes);
//! - a request for a method the server implements (`initialize`, `ping`,
//!   `tools/list`, `tools/call`) whose params do not fit gets `-32602`
//!   *Invalid params* with serde's reason and the request's `id` (rmcp reads
//!   it as an unknown custom method and answers `-32601` *Method not found*);
//! - JSON that is not a JSON-RPC message gets `-32600` *Invalid Request*
//!   with the request's `id` when it has a usable one (rmcp drops the id).
//!
//! The `id` of an error whose request id cannot be read is `null`, as JSON-RPC
//! 2.0 says. Every other line is handed to rmcp unchanged. Use it in place of
//! `rmcp::transport::stdio()`:
//!
//! ```no_run
//! # async fn demo(server: toolrag_mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
//! use rmcp::ServiceExt;
//! let service = server.serve(toolrag_mcp::jsonrpc::stdio()).await?;
//! service.waiting().await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ErrorCode, InitializeRequest,
    InitializeRequestParams, JsonRpcRequest, ListToolsRequest, PingRequest, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read; a longer one is skipped and answered with
/// `-32600` (16 MiB, as rmcp's own limit).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark, accepted (and ignored) at the start of a line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The transport over the process's stdin and stdout.
pub fn stdio() -> JsonRpcTransport<tokio::io::Stdin, tokio::io::Stdout> {
    JsonRpcTransport::new(tokio::io::stdin(), tokio::io::stdout())
}

/// Newline-delimited JSON-RPC over any reader and writer, screening each
/// incoming line (see the module documentation).
pub struct JsonRpcTransport<R, W> {
    read: BufReader<R>,
    /// The line being read. It lives here, not in `receive`, because rmcp
    /// polls `receive` inside a `select!`: a cancelled read keeps its bytes.
    line: Vec<u8>,
    /// Skipping the rest of a line already refused for its length.
    discarding: bool,
    write: Arc<Mutex<W>>,
}

impl<R, W> std::fmt::Debug for JsonRpcTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonRpcTransport")
            .field("buffered", &self.line.len())
            .finish()
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> JsonRpcTransport<R, W> {
    /// A transport reading requests from `read` and writing replies to `write`.
    pub fn new(read: R, write: W) -> Self {
        JsonRpcTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(write)),
        }
    }
}

/// What a line read came to.
enum Read {
    /// A whole line is in `line`.
    Line,
    /// A line longer than [`MAX_LINE_BYTES`] was skipped.
    TooLong,
    /// End of input (or a read error, logged).
    End,
}

impl<R: AsyncRead + Unpin, W> JsonRpcTransport<R, W> {
    /// Reads one line into `self.line`, never holding more than
    /// [`MAX_LINE_BYTES`]. Cancel-safe: the copy and the `consume` happen
    /// with no await between them.
    async fn read_line(&mut self) -> Read {
        loop {
            let (used, newline) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::error!(target: "mcp", "cannot read stdin: {e}");
                        return Read::End;
                    }
                };
                if available.is_empty() {
                    return Read::End;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let used = newline.map_or(available.len(), |i| i + 1);
                if !self.discarding {
                    if self.line.len() + used > MAX_LINE_BYTES {
                        self.line.clear();
                        self.discarding = true;
                    } else {
                        self.line.extend_from_slice(&available[..used]);
                    }
                }
                (used, newline.is_some())
            };
            self.read.consume(used);
            if newline {
                if self.discarding {
                    self.discarding = false;
                    return Read::TooLong;
                }
                return Read::Line;
            }
        }
    }
}

/// What to do with one incoming line.
#[derive(Debug)]
pub enum Screened {
    /// A JSON-RPC message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// An error reply to send back (a whole JSON-RPC error response).
    Reply(Value),
    /// Nothing to do (a blank line, or a notification that does not parse,
    /// which JSON-RPC never answers).
    Ignore,
}

/// A JSON-RPC error response.
fn error_reply(id: Option<&Value>, code: ErrorCode, message: String) -> Screened {
    Screened::Reply(error_message(id, code.0, &message, None))
}

/// A JSON-RPC error message for the request `id` (`null` when it could not
/// be read), with `data` when there is more to say: what both transports
/// answer.
pub(crate) fn error_message(
    id: Option<&Value>,
    code: i32,
    message: &str,
    data: Option<Value>,
) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": error,
    })
}

/// Checks the params of a request for a method the server implements,
/// returning the reason when they do not fit; `None` for other methods.
/// The whole request is read as rmcp reads it (so what passes here is what
/// rmcp accepts); the reason names the failing field when the params alone
/// can say which.
fn params_problem(method: &str, message: &Value) -> Option<String> {
    fn check<T: DeserializeOwned, P: DeserializeOwned>(message: &Value) -> Option<String> {
        let whole = serde_json::from_value::<JsonRpcRequest<T>>(message.clone()).err()?;
        let precise = message.get("params").and_then(|params| {
            serde_path_to_error::deserialize::<_, P>(params.clone())
                .err()
                .map(|e| format!("`{}`: {}", e.path(), e.inner()))
        });
        Some(precise.unwrap_or_else(|| whole.to_string()))
    }
    match method {
        "initialize" => check::<InitializeRequest, InitializeRequestParams>(message),
        "ping" => check::<PingRequest, Value>(message),
        "tools/list" => check::<ListToolsRequest, Value>(message),
        "tools/call" => check::<CallToolRequest, CallToolRequestParams>(message),
        _ => None,
    }
}

/// Screens one incoming line (without its newline): the message for rmcp, or
/// the JSON-RPC error to answer it with.
pub fn screen(line: &[u8]) -> Screened {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screened::Ignore;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return error_reply(None, ErrorCode::PARSE_ERROR, format!("Parse error: {e}"));
        }
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            "a batch (an array); send one message per line"
        } else {
            "not a JSON object"
        };
        return error_reply(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: the message is {what}"),
        );
    };
    // The id, if it is one JSON-RPC allows (a string or an integer).
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.as_i64().is_some());
    if object.contains_key("id") && id.is_none() && !object["id"].is_null() {
        return error_reply(
            None,
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer".into(),
        );
    }
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return error_reply(
            id,
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"".into(),
        );
    }
    let method = object.get("method");
    if let (Some(method), Some(_)) = (method, id) {
        let Some(method) = method.as_str() else {
            return error_reply(
                id,
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: `method` must be a string".into(),
            );
        };
        if let Some(why) = params_problem(method, &value) {
            return error_reply(
                id,
                ErrorCode::INVALID_PARAMS,
                format!("Invalid params for {method}: {why}"),
            );
        }
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(m) => Screened::Message(Box::new(m)),
        // A notification is never answered, not even with an error.
        Err(e) if method.is_some() && id.is_none() => {
            tracing::debug!(target: "mcp", "ignoring a notification that does not parse: {e}");
            Screened::Ignore
        }
        Err(e) => error_reply(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {e}"),
        ),
    }
}

/// Writes one JSON value as a line and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    value: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&bytes).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for JsonRpcTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_line(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let screened = match self.read_line().await {
                Read::End => return None,
                Read::TooLong => error_reply(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!("Invalid Request: the message is longer than {MAX_LINE_BYTES} bytes"),
                ),
                Read::Line => {
                    let line = std::mem::take(&mut self.line);
                    let s = screen(line.strip_suffix(b"\n").unwrap_or(&line));
                    // Keep the buffer's capacity for the next line.
                    self.line = line;
                    self.line.clear();
                    s
                }
            };
            match screened {
                Screened::Message(m) => return Some(*m),
                Screened::Ignore => {}
                Screened::Reply(reply) => {
                    tracing::debug!(target: "mcp", "answering a protocol error: {reply}");
                    // Written by a task of its own: `receive` can be
                    // cancelled, and a reply must not be cut in half.
                    let write = self.write.clone();
                    tokio::spawn(async move {
                        if let Err(e) = write_line(&write, &reply).await {
                            tracing::error!(target: "mcp", "cannot write an error reply: {e}");
                        }
                    });
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match screen(line.as_bytes()) {
            Screened::Reply(v) => v,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn code(v: &Value) -> i64 {
        v["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn an_unparseable_line_is_a_parse_error_with_a_null_id() {
        for line in ["{not json", "\u{1}", "{\"jsonrpc\":\"2.0\",\"id\":1"] {
            let r = reply(line);
            assert_eq!(code(&r), -32700, "{line}: {r}");
            assert!(r["id"].is_null(), "{r}");
            assert_eq!(r["jsonrpc"], "2.0");
        }
        // Not UTF-8.
        match screen(b"\xff\xfe{}") {
            Screened::Reply(r) => assert_eq!(code(&r), -32700),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_params_are_32602_with_the_reason_and_the_id() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_tools","arguments":"q"}}"#,
                "arguments",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#,
                "integer",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
                "params",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":3}}"#,
                "protocolVersion",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#,
                "params",
            ),
        ];
        for (line, names) in cases {
            let r = reply(line);
            assert_eq!(code(&r), -32602, "{line}: {r}");
            assert_eq!(r["id"], 7, "{r}");
            let message = r["error"]["message"].as_str().unwrap();
            assert!(message.contains(names), "{line}: {message}");
        }
    }

    #[test]
    fn an_invalid_request_keeps_its_id() {
        let r = reply(r#"{"jsonrpc":"2.0","id":"a-1","method":17}"#);
        assert_eq!((code(&r), &r["id"]), (-32600, &json!("a-1")));
        let r = reply(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#);
        assert_eq!((code(&r), &r["id"]), (-32600, &json!(3)));
        let r = reply(r#"{"jsonrpc":"2.0","id":4}"#);
        assert_eq!((code(&r), &r["id"]), (-32600, &json!(4)));
        let r = reply(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!(code(&r), -32600);
        assert!(r["id"].is_null());
        let r = reply(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
        assert_eq!(code(&r), -32600);
        assert!(r["id"].is_null());
    }

    #[test]
    fn good_messages_pass_and_blank_lines_and_notifications_are_not_answered() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\r",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            // Methods the server does not implement reach rmcp, which
            // answers -32601.
            r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#,
        ] {
            assert!(
                matches!(screen(line.as_bytes()), Screened::Message(_)),
                "{line}"
            );
        }
        for line in ["", "  ", r#"{"jsonrpc":"2.0","method":17}"#] {
            assert!(
                matches!(screen(line.as_bytes()), Screened::Ignore),
                "{line:?}"
            );
        }
    }

    #[tokio::test]
    async fn the_transport_answers_errors_and_passes_messages_on() {
        let input = b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n".to_vec();
        let (out_w, mut out_r) = tokio::io::duplex(1 << 16);
        let mut t = JsonRpcTransport::new(std::io::Cursor::new(input), out_w);
        let m = Transport::<RoleServer>::receive(&mut t)
            .await
            .expect("the ping");
        assert!(matches!(m, ClientJsonRpcMessage::Request(_)), "{m:?}");
        assert!(Transport::<RoleServer>::receive(&mut t).await.is_none());
        drop(t);
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_r, &mut written)
            .await
            .unwrap();
        let reply: Value = serde_json::from_str(written.trim()).unwrap();
        assert_eq!(code(&reply), -32700, "{written}");
    }
}
