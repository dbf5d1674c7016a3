//! The sessions of protocol 2025-11-25 on `toolrag mcp --upstream ... --http`
//! (the `Mcp-Session-Id` header): each answers only the principal that
//! opened it, they are capped per principal and in total, idle ones end, and
//! memory stays bounded. Spoken in raw HTTP/1.1, so that answers can be
//! compared byte for byte; the upstream is a small stdio MCP server on
//! Python's standard library, with one destructive tool. No model: the
//! gateway indexes and searches with BM25 only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const LEGACY: &str = "2025-11-25";
const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";

/// An MCP server over stdio with `delete_note` (destructive) and
/// `get_weather` (read-only); every call is appended to the file named by
/// its first argument.
const UPSTREAM: &str = r#"
import json, sys

calls = sys.argv[1]
tools = [
    {"name": "delete_note", "description": "Deletes the note with this title, for good.",
     "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "get_weather", "description": "Gives the weather forecast for a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
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
        with open(calls, "a") as f:
            f.write(json.dumps({"tool": params["name"], "arguments": params.get("arguments")}) + "\n")
        args = params.get("arguments") or {}
        text = f"deleted note {args.get('title')}" if params["name"] == "delete_note" else "sunny"
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// A `toolrag mcp --upstream ... --http` process with static tokens for
/// alice, bob and carol, killed on drop.
struct Gateway {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl Gateway {
    /// Starts a gateway whose `toolrag.toml` is `config`.
    fn start(config: &str) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("upstream.py"), UPSTREAM).unwrap();
        let upstream = json!({"mcpServers": {"notes": {
            "command": "python3", "args": [path("upstream.py"), path("calls.jsonl")]}}});
        std::fs::write(path("upstream.json"), upstream.to_string()).unwrap();
        std::fs::write(
            path("tokens"),
            format!("alice:{ALICE}\nbob:{BOB}\ncarol:{CAROL}\n"),
        )
        .unwrap();
        std::fs::write(path("toolrag.toml"), config).unwrap();
        // Run in the temporary folder, where no model is found: searches
        // are BM25 only, and the process holds no model in memory.
        let (child, addr, log) = crate::gw_harness::spawn_gateway(dir.path(), &[], &[]);
        Gateway {
            child,
            addr,
            dir,
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The calls the upstream ran.
    fn calls(&self) -> Vec<Value> {
        lines(&self.dir.path().join("calls.jsonl"))
    }

    /// The gateway's audit log.
    fn audit(&self) -> Vec<Value> {
        lines(&self.dir.path().join("gw.audit.jsonl"))
    }

    /// The resident memory of the process, bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status");
        kb * 1024
    }

    /// Sends one request on a connection of its own, and reads the whole
    /// answer (`whole`) or only its status line and headers.
    fn send(&self, req: &Req<'_>, whole: bool) -> Answer {
        let mut stream = self.open(req);
        let mut raw = Vec::new();
        if whole {
            stream.read_to_end(&mut raw).unwrap();
        } else {
            let mut buf = [0u8; 4096];
            while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "the connection closed before the headers");
                raw.extend_from_slice(&buf[..n]);
            }
        }
        Answer::parse(&raw)
    }

    /// Writes `req` on a new connection and gives it back, to be read.
    fn open(&self, req: &Req<'_>) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut head = format!(
            "{} /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {LEGACY}\r\n",
            req.method, self.addr, req.token
        );
        if let Some(s) = req.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        if let Some(b) = &req.body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("Connection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        if let Some(b) = &req.body {
            stream.write_all(b.as_bytes()).unwrap();
        }
        stream
    }

    /// `initialize` on 2025-11-25 (with elicitation) as `token`, then
    /// `notifications/initialized`: the new session's id.
    fn session(&self, token: &str) -> String {
        let a = self.send(&Req::post(token, None, initialize()), true);
        assert_eq!(a.status, 200, "{a:?}");
        let id = a.session.clone().expect("the answer names the session");
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let a = self.send(&Req::post(token, Some(&id), done), true);
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

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "sessions-test", "version": "1.0.0"}}})
}

/// One HTTP request to `/mcp`.
struct Req<'a> {
    method: &'a str,
    token: &'a str,
    session: Option<&'a str>,
    body: Option<String>,
}

impl<'a> Req<'a> {
    fn post(token: &'a str, session: Option<&'a str>, body: Value) -> Req<'a> {
        Req {
            method: "POST",
            token,
            session,
            body: Some(body.to_string()),
        }
    }

    fn get(token: &'a str, session: &'a str) -> Req<'a> {
        Req {
            method: "GET",
            token,
            session: Some(session),
            body: None,
        }
    }

    fn delete(token: &'a str, session: &'a str) -> Req<'a> {
        Req {
            method: "DELETE",
            token,
            session: Some(session),
            body: None,
        }
    }
}

/// An HTTP answer: the status, the head without its `date` line (which is
/// the only part allowed to differ between two answers), the raw body.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    head: Vec<String>,
    body: String,
    session: Option<String>,
}

impl Answer {
    fn parse(raw: &[u8]) -> Answer {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete head");
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        Answer {
            status,
            session: header("mcp-session-id"),
            head: head
                .lines()
                .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
                .map(str::to_string)
                .collect(),
            body: String::from_utf8_lossy(&raw[split + 4..]).to_string(),
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.iter().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// A session id no one opened, in rmcp's shape.
const UNKNOWN: &str = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab";

/// Reads SSE lines until one carries a JSON-RPC message that `want`
/// accepts, and returns it.
fn next_message(reader: &mut impl BufRead, want: impl Fn(&Value) -> bool) -> Value {
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "the stream ended");
        let Some(data) = line.trim().strip_prefix("data:") else {
            continue;
        };
        if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
            if want(&v) {
                return v;
            }
        }
    }
}

/// Waits up to 10 s for `cond`.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Bob, holding the id of the session alice opened, can neither answer the
/// approval it is waiting for, nor read its stream, nor end it: each time
/// he gets, byte for byte, the answer to an unknown session, and each
/// attempt is logged and audited. Alice still can.
#[test]
fn a_session_answers_only_the_principal_that_opened_it() {
    let gw = Gateway::start("");
    let sid = gw.session(ALICE);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "call_tool",
        "arguments": {"handle": "notes/delete_note", "arguments": {"title": "groceries"}}}});
    let mut stream = BufReader::new(gw.open(&Req::post(ALICE, Some(&sid), call)));
    let asked = next_message(&mut stream, |m| m["method"] == "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"decision": "approve"}}});

    let compare = |what: &str, theirs: Req<'_>, unknown: Req<'_>| {
        let (a, b) = (gw.send(&theirs, true), gw.send(&unknown, true));
        assert_eq!(
            a, b,
            "{what}: bob on alice's session, then on an unknown one"
        );
        a
    };
    let a = compare(
        "the approval",
        Req::post(BOB, Some(&sid), answer.clone()),
        Req::post(BOB, Some(UNKNOWN), answer.clone()),
    );
    assert_eq!(a.status, 404, "{a:?}");
    compare("the stream", Req::get(BOB, &sid), Req::get(BOB, UNKNOWN));
    compare("the end", Req::delete(BOB, &sid), Req::delete(BOB, UNKNOWN));
    assert!(gw.calls().is_empty(), "bob's answer ran nothing");

    // Alice's session is whole: her stream opens, her answer runs the call.
    let a = gw.send(&Req::get(ALICE, &sid), false);
    assert_eq!(a.status, 200, "{a:?}");
    let a = gw.send(&Req::post(ALICE, Some(&sid), answer), true);
    assert_eq!(a.status, 202, "{a:?}");
    let done = next_message(&mut stream, |m| m["id"] == 2);
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted note groceries",
        "{done}"
    );
    assert_eq!(gw.calls().len(), 1);

    // Every attempt of bob's is in the log and the audit log.
    eventually("three audited attempts", || {
        gw.audit()
            .iter()
            .filter(|r| r["event"] == "session" && r["principal"] == "bob")
            .count()
            == 3
    });
    let audit = gw.audit();
    let approved = audit
        .iter()
        .find(|r| r["decision"] == "approved")
        .expect("the approval is audited");
    assert_eq!(approved["principal"], "alice");
    for method in ["POST", "GET", "DELETE"] {
        assert!(
            audit.iter().any(|r| r["event"] == "session"
                && r["decidedBy"] == "gateway: session owner"
                && r["reason"] == format!("{method} on a session that alice opened")),
            "{method}: {audit:?}"
        );
    }
    assert_eq!(
        gw.log().matches("another principal opened").count(),
        3,
        "{}",
        gw.log()
    );

    // Her DELETE ends it, for her as for anyone.
    let a = gw.send(&Req::delete(ALICE, &sid), true);
    assert!((200..300).contains(&a.status), "{a:?}");
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    compare(
        "after the end",
        Req::post(ALICE, Some(&sid), ping.clone()),
        Req::post(ALICE, Some(UNKNOWN), ping),
    );
}

/// Past its cap a principal's new session gets 429, past the total 503,
/// both with Retry-After; a session idle for `session-idle-seconds` ends
/// and frees its place.
#[test]
fn sessions_are_capped_and_idle_ones_end() {
    let gw = Gateway::start(
        "[gateway]\nmax-sessions = 3\nmax-sessions-per-principal = 2\nsession-idle-seconds = 2\n",
    );
    let first = gw.session(ALICE);
    gw.session(ALICE);
    let a = gw.send(&Req::post(ALICE, None, initialize()), true);
    assert_eq!(a.status, 429, "{a:?}");
    // When alice's first session will have been idle for 2 s.
    assert!(matches!(a.header("retry-after"), Some("1" | "2")), "{a:?}");
    let body: Value = serde_json::from_str(&a.body).expect("a JSON body");
    assert_eq!(body["error"], "too_many_sessions", "{body}");
    assert!(a.session.is_none());

    gw.session(BOB);
    let a = gw.send(&Req::post(CAROL, None, initialize()), true);
    assert_eq!(a.status, 503, "{a:?}");
    assert!(a.header("retry-after").is_some(), "{a:?}");

    // After two seconds of quiet, every session has ended.
    std::thread::sleep(Duration::from_millis(2_600));
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let a = gw.send(&Req::post(ALICE, Some(&first), ping.clone()), true);
    let b = gw.send(&Req::post(ALICE, Some(UNKNOWN), ping), true);
    assert_eq!(a, b, "an expired session is an unknown one");
    gw.session(CAROL);
    gw.session(ALICE);
    gw.session(ALICE);
}

/// 3,000 `initialize` requests by one principal grow the gateway by at most
/// 100 MiB: past the cap they are refused, and nothing they opened is kept.
#[test]
fn three_thousand_initializes_keep_memory_bounded() {
    let gw = Gateway::start("");
    // Warm up: the first sessions allocate what every later one reuses.
    for _ in 0..3 {
        let s = gw.session(ALICE);
        gw.send(&Req::delete(ALICE, &s), true);
    }
    let before = gw.rss();
    let started = Instant::now();
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..3_000 {
        let a = gw.send(&Req::post(ALICE, None, initialize()), true);
        *statuses.entry(a.status).or_insert(0) += 1;
    }
    let after = gw.rss();
    let mib = |b: u64| b as f64 / 1_048_576.0;
    eprintln!(
        "3,000 initializes in {:.1} s: {statuses:?}; RSS {:.1} MiB -> {:.1} MiB (+{:.1} MiB)",
        started.elapsed().as_secs_f64(),
        mib(before),
        mib(after),
        mib(after.saturating_sub(before))
    );
    assert!(
        after.saturating_sub(before) <= 100 * 1_048_576,
        "RSS grew from {:.1} MiB to {:.1} MiB",
        mib(before),
        mib(after)
    );
    assert_eq!(statuses.get(&200), Some(&100), "{statuses:?}");
    assert_eq!(statuses.get(&429), Some(&2_900), "{statuses:?}");
}
