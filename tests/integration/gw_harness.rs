//! A `toolrag mcp --upstream ... --http` process with static tokens, spoken
//! to in raw HTTP/1.1 (so that a test can send what no client library
//! would: two `Authorization` headers, an absolute-form target). The
//! upstream is a small stdio MCP server on Python's standard library with
//! one read-only tool, `notes/get_weather`. No model: the gateway searches
//! with BM25 only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The stateless protocol: every request stands alone.
pub const MODERN: &str = "2026-07-28";

const UPSTREAM: &str = r#"
import json, sys

tools = [
    {"name": "get_weather", "description": "Gives the weather forecast for a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "get_time", "description": "Gives the time of day in a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "notes", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "sunny"}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// Starts the gateway of the folder `dir` (its `upstream.json`,
/// `toolrag.toml` and `tokens`; the index `gw` goes there too) over HTTP on
/// a free port, with `args` and `env` besides, and waits until it says
/// where it serves: the child, `127.0.0.1:PORT`, and its stderr, which keeps
/// growing. It runs in `dir`, where no model is found: BM25 only.
pub fn spawn_gateway(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, String, Arc<Mutex<String>>) {
    let path = |name: &str| dir.join(name);
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolrag"))
        .current_dir(dir)
        .env_remove("TOOLRAG_MODEL_DIR")
        .args(["mcp", "--upstream"])
        .arg(path("upstream.json"))
        .arg("--index")
        .arg(path("gw"))
        .arg("--config")
        .arg(path("toolrag.toml"))
        .args(["--http", "127.0.0.1:0", "--auth-tokens"])
        .arg(path("tokens"))
        .args(args)
        .envs(env.iter().copied())
        .env("TOOLRAG_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolrag starts");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("MCP over streamable HTTP on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_string());
            }
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(300))
        .unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the gateway did not start:\n{}", log.lock().unwrap());
        });
    (child, addr, log)
}

/// A gateway process, killed on drop.
pub struct Gw {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its folder: `tokens`, `toolrag.toml`, the index `gw` and its audit log.
    pub dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl Gw {
    /// Starts a gateway whose `toolrag.toml` is `config` and whose
    /// `--auth-tokens` file holds `tokens`; `before` runs on the folder
    /// first (to put a FIFO where the audit log goes, say).
    pub fn start(config: &str, tokens: &str, before: impl FnOnce(&std::path::Path)) -> Gw {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("upstream.py"), UPSTREAM).unwrap();
        let upstream = json!({"mcpServers": {"notes": {
            "command": "python3", "args": [path("upstream.py")]}}});
        std::fs::write(path("upstream.json"), upstream.to_string()).unwrap();
        std::fs::write(path("tokens"), tokens).unwrap();
        std::fs::write(path("toolrag.toml"), config).unwrap();
        before(dir.path());
        let (child, addr, log) = spawn_gateway(dir.path(), &[], &[]);
        Gw {
            child,
            addr,
            dir,
            log,
        }
    }

    /// What the process wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A file in the gateway's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Sends `head` (request line and headers, each ending in CRLF, without
    /// the blank line) and `body` on a new connection; the whole answer.
    pub fn raw(&self, head: &str, body: &str) -> Answer {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut req = head.to_string();
        if !body.is_empty() {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        req.push_str("Connection: close\r\n\r\n");
        req.push_str(body);
        stream.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        Answer::parse(&raw)
    }

    /// The head of a stateless (2026-07-28) POST of `method` to `/mcp` as
    /// `token`, with `Host` the gateway's address.
    pub fn head(&self, token: &str, method: &str) -> String {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
             Mcp-Method: {method}\r\n",
            self.addr
        )
    }

    /// `tools/list` as `token`.
    pub fn list(&self, token: &str) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": envelope()}});
        self.raw(&self.head(token, "tools/list"), &body.to_string())
    }

    /// `call_tool` of `handle` as `token`.
    pub fn call(&self, token: &str, handle: &str) -> Answer {
        let head = format!("{}Mcp-Name: call_tool\r\n", self.head(token, "tools/call"));
        self.raw(&head, &call_body(handle).to_string())
    }
}

impl Drop for Gw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `_meta` every stateless request carries.
pub fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "gw-harness", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A stateless `tools/call` of `call_tool` for `handle`.
pub fn call_body(handle: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"handle": handle, "arguments": {"city": "Lima"}},
        "_meta": envelope()}})
}

/// An HTTP answer: status, head lines without `date`, body.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The head's lines, without the `date` line.
    pub head: Vec<String>,
    /// The body.
    pub body: String,
}

impl Answer {
    /// Parses a raw answer.
    pub fn parse(raw: &[u8]) -> Answer {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no complete head in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        Answer {
            status: head.split(' ').nth(1).unwrap().parse().unwrap(),
            head: head
                .lines()
                .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
                .map(str::to_string)
                .collect(),
            body: String::from_utf8_lossy(&raw[split + 4..]).to_string(),
        }
    }

    /// The body as JSON (the last `data:` of an event stream).
    pub fn json(&self) -> Value {
        let text = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .rfind(|d| !d.trim().is_empty())
            .unwrap_or(&self.body);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Waits up to `limit` for `cond`.
pub fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
