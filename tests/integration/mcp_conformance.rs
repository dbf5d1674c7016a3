//! Protocol conformance of `toolrag mcp --upstream ... --http`, where rmcp's
//! own answers fall short: JSON-RPC errors (not plain text) for bodies that
//! are not JSON-RPC and for a call the shutdown grace ends, `204` to a
//! DELETE, a `-32601` that names the method and the version, caching hints
//! that agree between `server/discover` and `tools/list`, and
//! `notifications/tools/list_changed` after an upstream change, heard by
//! the official Python SDK's `listen()` (2026-07-28) and the TypeScript
//! SDK's standalone stream (2025-11-25). Raw HTTP/1.1 where the bytes
//! matter; the upstream is tests/mcp_conformance_upstream.py (Python's
//! standard library). No model: the gateway searches with BM25 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{installed, root};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const TOKEN: &str = "alice-token-0123456789abcdef";

/// A `toolrag mcp --upstream ... --http` process with a static token for
/// alice, killed on drop.
struct Gateway {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl Gateway {
    fn start() -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let upstream = json!({"mcpServers": {"conformance": {
            "command": "python3",
            "args": [root().join("tests/mcp_conformance_upstream.py")]}}});
        std::fs::write(path("upstream.json"), upstream.to_string()).unwrap();
        std::fs::write(path("tokens"), format!("alice:{TOKEN}\n")).unwrap();
        std::fs::write(path("toolrag.toml"), "").unwrap();
        // In the temporary folder no model is found: BM25 only.
        let (child, addr, log) = crate::gw_harness::spawn_gateway(dir.path(), &[], &[]);
        Gateway {
            child,
            addr,
            _dir: dir,
            log,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Writes a raw request on a new connection, and reads the whole answer.
    fn send(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        request(&self.addr, method, headers, body)
    }

    /// A POST of `body` on `version` (with the session, if any), as a
    /// client that accepts both JSON and SSE.
    fn post(&self, version: &str, session: Option<&str>, body: &[u8]) -> Answer {
        let mut headers = post_headers(version).to_vec();
        if let Some(s) = session {
            headers.push(("Mcp-Session-Id", s));
        }
        self.send("POST", &headers, body)
    }

    /// A 2026-07-28 request (with its per-request `_meta`).
    fn modern(&self, id: u64, method: &str, params: Value) -> Answer {
        modern(&self.addr, id, method, params)
    }

    /// `initialize` and `notifications/initialized` on 2025-11-25: the
    /// session's id.
    fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "conformance-test", "version": "1"}}});
        let a = self.post(LEGACY, None, init.to_string().as_bytes());
        assert_eq!(a.status, 200, "{a:?}");
        let id = a.header("mcp-session-id").expect("a session").to_string();
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let a = self.post(LEGACY, Some(&id), done.to_string().as_bytes());
        assert_eq!(a.status, 202, "{a:?}");
        id
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a raw request to `addr` on a new connection, and reads the whole
/// answer.
fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    Answer::parse(&raw)
}

/// The body of a 2026-07-28 request, with its per-request `_meta`.
fn modern_body(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A 2026-07-28 request to `addr`, with its per-request `_meta` and its
/// `Mcp-Method` (and `Mcp-Name`) headers.
fn modern(addr: &str, id: u64, method: &str, params: Value) -> Answer {
    let name = params["name"].as_str().map(str::to_string);
    let body = modern_body(id, method, params);
    let mut headers = post_headers(MODERN).to_vec();
    headers.push(("Mcp-Method", method));
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    request(addr, "POST", &headers, body.as_bytes())
}

/// The headers of a POST on `version` by a client that accepts JSON and SSE.
const fn post_headers(version: &str) -> [(&str, &str); 3] {
    [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", version),
    ]
}

/// An HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn parse(raw: &[u8]) -> Answer {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let mut body = String::from_utf8_lossy(&raw[split + 4..]).to_string();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = unchunk(&body);
        }
        Answer { status, head, body }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as one JSON-RPC message (the last `data:` of an SSE body).
    fn json(&self) -> Value {
        let text = if self.body.trim_start().starts_with('{') {
            self.body.clone()
        } else {
            let last = self
                .body
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("data:"));
            last.unwrap_or_default().trim().to_string()
        };
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// A chunked body, decoded.
fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {v}"))
}

/// A body that is not JSON is `400` with `-32700`; JSON that is not
/// JSON-RPC is `400` with `-32600`; both with `id: null` unless the
/// request's id can be read; a wrong media type stays `415`, with a JSON-RPC
/// body; and the gateway serves on. (rmcp: a plain-text `415` for all.)
#[test]
fn bodies_that_are_not_json_rpc_get_json_rpc_errors() {
    let gw = Gateway::start();
    for (body, want, id) in [
        ("{this is not json", -32700, Value::Null),
        ("", -32700, Value::Null),
        ("[]", -32600, Value::Null),
        (r#"{"x":1}"#, -32600, Value::Null),
        (r#"{"id":5,"method":"ping"}"#, -32600, json!(5)),
        (
            r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#,
            -32600,
            json!("a"),
        ),
    ] {
        let a = gw.post(MODERN, None, body.as_bytes());
        assert_eq!(a.status, 400, "{body:?}: {a:?}");
        assert!(
            a.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{a:?}"
        );
        let v = a.json();
        assert_eq!((code(&v), &v["id"]), (want, &id), "{body:?}: {v}");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
    }
    let a = gw.send(
        "POST",
        &[
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "text/plain"),
            ("MCP-Protocol-Version", MODERN),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(a.status, 415, "{a:?}");
    assert_eq!(code(&a.json()), -32600, "{a:?}");
    // Still serving.
    let a = gw.modern(7, "tools/list", json!({}));
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json()["id"], 7, "{a:?}");
}

/// DELETE of a 2025-11-25 session answers `204` (the Python SDK 2.3.0
/// expects 200 or 204 and logs rmcp's `202` as a failed termination), and
/// the session is gone after it.
#[test]
fn delete_ends_a_session_with_204() {
    let gw = Gateway::start();
    let id = gw.session();
    let headers = [
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", LEGACY),
    ];
    let a = gw.send("DELETE", &headers, b"");
    assert_eq!(a.status, 204, "{a:?}");
    assert!(a.body.is_empty(), "{a:?}");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let a = gw.post(LEGACY, Some(&id), ping.to_string().as_bytes());
    assert_eq!(a.status, 404, "the session still answers: {a:?}");
}

/// `-32601` says which method is unknown, on which protocol version, with
/// both in `data`: on 2026-07-28, and on a 2025-11-25 session (where
/// `subscriptions/listen` is not part of the protocol).
#[test]
fn method_not_found_names_the_method_and_the_version() {
    let gw = Gateway::start();
    let a = gw.modern(3, "foo/bar", json!({}));
    let v = a.json();
    assert_eq!((code(&v), &v["id"]), (-32601, &json!(3)), "{v}");
    assert_eq!(
        v["error"]["message"],
        "method 'foo/bar' is not part of MCP 2026-07-28 as served by this server",
        "{v}"
    );
    assert_eq!(
        v["error"]["data"],
        json!({"method": "foo/bar", "protocolVersion": MODERN})
    );

    let session = gw.session();
    let listen = json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}}});
    let a = gw.post(LEGACY, Some(&session), listen.to_string().as_bytes());
    let v = a.json();
    assert_eq!((code(&v), &v["id"]), (-32601, &json!(4)), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'subscriptions/listen'") && message.contains(LEGACY),
        "{v}"
    );
}

/// A call still running when the shutdown grace (10 s) ends gets a
/// JSON-RPC error for its id saying the gateway is stopping, with `503`
/// and `Retry-After`; rmcp answered a plain-text `500`.
#[test]
fn the_shutdown_grace_ends_a_call_with_a_json_rpc_error() {
    let gw = Gateway::start();
    let addr = gw.addr.clone();
    let pid = gw.child.id();
    let call = std::thread::spawn(move || {
        let params = json!({"name": "call_tool", "arguments": {
            "handle": "conformance/slow", "arguments": {"seconds": 60}}});
        modern(&addr, 11, "tools/call", params)
    });
    // Let the call reach the upstream, then stop the gateway.
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let a = call.join().unwrap();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(40), "{waited:?}");
    assert_eq!(a.status, 503, "{a:?}\n{}", gw.log());
    assert!(a.header("retry-after").is_some(), "{a:?}");
    let v = a.json();
    assert_eq!(v["id"], 11, "{v}");
    assert_eq!(code(&v), -32603, "{v}");
    assert_eq!(
        v["error"]["message"],
        "the gateway is stopping; retry on another replica"
    );
}

/// On 2026-07-28, `server/discover` and `tools/list` give the same caching
/// hints: `public` (the list is fixed and the same for every principal)
/// with a real TTL, 5 minutes. rmcp said `private`/0 and `public`/0.
#[test]
fn discover_and_tools_list_agree_on_cache_hints() {
    let gw = Gateway::start();
    let discover = gw.modern(1, "server/discover", json!({})).json();
    let list = gw.modern(2, "tools/list", json!({})).json();
    let hints = |v: &Value| {
        (
            v["result"]["cacheScope"].clone(),
            v["result"]["ttlMs"].clone(),
        )
    };
    assert_eq!(
        hints(&discover),
        (json!("public"), json!(300_000)),
        "{discover}"
    );
    assert_eq!(hints(&list), hints(&discover), "{list}");
    assert_eq!(
        discover["result"]["capabilities"]["tools"]["listChanged"], true,
        "{discover}"
    );
}

/// The official Python SDK's `listen()` on 2026-07-28 hears
/// `tools/list_changed` after the upstream adds a tool, and then finds the
/// new tool; the TypeScript SDK (2025-11-25, no `listen`) hears it on its
/// session's standalone stream.
#[test]
fn sdk_clients_hear_list_changed_after_an_upstream_change() {
    let python = installed("target/mcp-venv/bin/python", "make mcp-client");
    let gw = Gateway::start();
    // A client script against the gateway: what it printed, as JSON.
    let client = |program: &std::path::Path, script: &str| -> Value {
        let out = Command::new(program)
            .current_dir(root())
            .arg(script)
            .args([gw.url().as_str(), TOKEN])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            gw.log()
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let s = client(&python, "tests/mcp_listen_client.py");
    assert_eq!(s["honored"], json!({"toolsListChanged": true}), "{s}");
    assert_eq!(s["events"], json!(["ToolsListChanged"]), "{s}");
    assert_eq!(s["found"], true, "{s}");

    installed(
        "target/mcp-npm/node_modules/@modelcontextprotocol/sdk/package.json",
        "make mcp-servers",
    );
    let s = client(std::path::Path::new("node"), "tests/mcp_listen_client.mjs");
    assert_eq!(s["version"], LEGACY, "{s}");
    assert_eq!(s["listChanged"], true, "{s}");
    assert!(s["heard"].as_u64().unwrap() >= 1, "{s}");
}
