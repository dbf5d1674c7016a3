//! Two gateway replicas (`toolrag mcp --upstream ... --http`), each in a
//! folder of its own with its own upstream process, that share nothing but
//! a real `redis-server` (`[gateway] state`, started here on a free port;
//! `make redis`) and the contents of the approval key. Spoken in raw
//! HTTP/1.1 on protocol 2026-07-28 (stateless: an approval is an
//! `input_required` round and a sealed `requestState`). No model: the
//! replicas index and search with BM25 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::redis_server::Redis;

pub(crate) const MODERN: &str = "2026-07-28";
pub(crate) const ALICE: &str = "alice-token-0123456789abcdef";
pub(crate) const BOB: &str = "bob-token-0123456789abcdef";
/// The approval key both replicas are given (a copy each, as a Secret
/// would be mounted).
const KEY: &str = "5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5";

/// An MCP server over stdio with `delete_note` (destructive: needs
/// approval), `get_weather` and `get_time` (read-only); every call is
/// appended to the file named by its first argument.
const UPSTREAM: &str = r#"
import json, sys

calls = sys.argv[1]
def tool(name, description, destructive):
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}},
            "annotations": {"readOnlyHint": not destructive, "destructiveHint": destructive}}
tools = [tool("delete_note", "Deletes the note with this title, for good.", True),
         tool("get_weather", "Gives the weather forecast for a city.", False),
         tool("get_time", "Tells the current time of day in a city.", False)]
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
        result = {"content": [{"type": "text", "text": f"{params['name']} {args.get('title')}"}]}
    elif method == "ping":
        result = {}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// A gateway replica in a folder of its own, killed on drop.
pub(crate) struct Replica {
    child: Child,
    addr: String,
    pub(crate) dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl Replica {
    /// Starts a replica whose `[gateway]` table is `state` plus `extra`
    /// (TOML after the table's keys), with its own copy of [`KEY`].
    fn start(redis: &Redis, extra: &str) -> Replica {
        Replica::start_with(&redis.url(), extra, &[], &[])
    }

    /// A replica whose `[gateway] state` is `url`, with more command-line
    /// arguments and environment variables.
    pub(crate) fn start_with(
        url: &str,
        extra: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("upstream.py"), UPSTREAM).unwrap();
        let upstream = json!({"mcpServers": {"notes": {
            "command": "python3", "args": [path("upstream.py"), path("calls.jsonl")]}}});
        std::fs::write(path("upstream.json"), upstream.to_string()).unwrap();
        std::fs::write(path("tokens"), format!("alice:{ALICE}\nbob:{BOB}\n")).unwrap();
        std::fs::write(path("gw.key"), format!("{KEY}\n")).unwrap();
        let config = format!(
            "[gateway]\nkey-file = \"gw.key\"\nstate = \"{url}\"\nstate-timeout-seconds = 0.5\n{extra}"
        );
        std::fs::write(path("toolrag.toml"), config).unwrap();
        let (child, addr, log) = crate::gw_harness::spawn_gateway(dir.path(), args, env);
        Replica {
            child,
            addr,
            dir,
            log,
        }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends one HTTP request (a connection of its own): status and body.
    pub(crate) fn http(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        // The headers of SEP-2243 that 2026-07-28 requires: the method, and
        // the name of what a tools/call calls.
        let mut mcp = String::new();
        if let Some(m) = body.and_then(|b| b["method"].as_str()) {
            mcp.push_str(&format!("Mcp-Method: {m}\r\n"));
        }
        if let Some(n) = body.and_then(|b| b["params"]["name"].as_str()) {
            mcp.push_str(&format!("Mcp-Name: {n}\r\n"));
        }
        let body = body.map(Value::to_string).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
             {mcp}Content-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, body.to_string())
    }

    /// `tools/call` of the gateway tool `name` as `token` on 2026-07-28:
    /// the JSON-RPC result.
    fn tool(&self, token: &str, name: &str, arguments: Value, extra: Value) -> Value {
        let mut params = json!({"name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "replicas-test", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
        for (k, v) in extra.as_object().into_iter().flatten() {
            params[k] = v.clone();
        }
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let (status, body) = self.http("POST", "/mcp", token, Some(&req));
        assert_eq!(status, 200, "{body}\n{}", self.log());
        let json = body
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&body);
        let msg: Value =
            serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
        msg.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{msg}"))
    }

    /// `call_tool` of `notes/<tool>` as alice.
    fn call(&self, tool: &str, title: &str, extra: Value) -> Value {
        let args = json!({"handle": format!("notes/{tool}"), "arguments": {"title": title}});
        self.tool(ALICE, "call_tool", args, extra)
    }

    /// Asks for the approval of deleting `title`: the sealed state.
    pub(crate) fn ask(&self, title: &str) -> String {
        let r = self.call("delete_note", title, json!({}));
        assert_eq!(r["resultType"], "input_required", "{r}");
        r["requestState"]
            .as_str()
            .expect("a requestState")
            .to_string()
    }

    /// Answers an approval with `state`: the call's result.
    pub(crate) fn answer(&self, title: &str, state: &str) -> Value {
        let answer = json!({"action": "accept", "content": {"decision": "approve"}});
        self.call(
            "delete_note",
            title,
            json!({"requestState": state, "inputResponses": {"approval": answer}}),
        )
    }

    fn search(&self, query: &str) -> Value {
        self.tool(ALICE, "search_tools", json!({"query": query}), json!({}))
    }

    pub(crate) fn readyz(&self) -> (u16, Value) {
        let (status, body) = self.http("GET", "/readyz", ALICE, None);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// The upstream calls this replica made.
    pub(crate) fn calls(&self) -> Vec<Value> {
        lines(&self.dir.path().join("calls.jsonl"))
    }

    fn audit(&self) -> Vec<Value> {
        lines(&self.dir.path().join("gw.audit.jsonl"))
    }
}

impl Drop for Replica {
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

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// The calls of `tool` both replicas made.
pub(crate) fn runs(replicas: &[&Replica], tool: &str) -> usize {
    replicas
        .iter()
        .flat_map(|r| r.calls())
        .filter(|c| c["tool"] == tool)
        .count()
}

/// Waits up to `secs` for `cond`.
pub(crate) fn eventually(secs: u64, what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An approval asked on one replica and answered on the other runs once;
/// replayed to either, in sequence or 8 at once across both, it runs
/// nothing more. The used state is a Redis key that expires.
#[test]
fn an_approval_asked_on_one_replica_runs_once_across_both() {
    let redis = Redis::start();
    let a = Replica::start(&redis, "");
    let b = Replica::start(&redis, "");
    let state = a.ask("groceries");
    assert_eq!(runs(&[&a, &b], "delete_note"), 0, "asking runs nothing");
    let done = b.answer("groceries", &state);
    assert!(!is_error(&done), "{done}");
    assert_eq!(text(&done), "delete_note groceries");
    assert_eq!(b.calls().len(), 1);
    for replica in [&a, &b, &a] {
        let replay = replica.answer("groceries", &state);
        assert!(is_error(&replay), "{replay}");
        assert!(text(&replay).contains("already used"), "{replay}");
    }
    assert_eq!(runs(&[&a, &b], "delete_note"), 1, "a replay runs nothing");
    for r in [&a, &b] {
        let sqlite = r.dir.path().join("gw.approvals.sqlite");
        assert!(!sqlite.exists(), "Redis, not a file, holds used states");
    }

    // A new approval, answered 8 times at once, 4 on each replica.
    let state = b.ask("receipts");
    let outcomes: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let r = if i % 2 == 0 { &a } else { &b };
                let state = &state;
                s.spawn(move || r.answer("receipts", state))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ran: Vec<&Value> = outcomes.iter().filter(|o| !is_error(o)).collect();
    assert_eq!(ran.len(), 1, "{outcomes:?}");
    assert!(outcomes
        .iter()
        .filter(|o| is_error(o))
        .all(|o| text(o).contains("already used")));
    assert_eq!(runs(&[&a, &b], "delete_note"), 2);
    let refused: usize = [&a, &b]
        .iter()
        .flat_map(|r| r.audit())
        .filter(|r| r["decidedBy"] == "gateway: approval state")
        .count();
    assert_eq!(refused, 10, "every replay is audited");

    // Two used states, each a key that expires with its approval (600 s);
    // the one key without a TTL is when Redis began remembering them.
    let used = redis.ttls("toolrag:used:*");
    assert_eq!(used.len(), 2, "{used:?}");
    assert!(
        used.iter()
            .all(|(_, ttl)| (590_000..=602_000).contains(ttl)),
        "{used:?}"
    );
}

/// `[gateway.tool-calls-per-minute]` of 4 is one budget across the
/// replicas: the 5th and 6th calls are refused, whichever replica gets
/// them; the bucket is a key that expires.
#[test]
fn a_budget_of_four_a_minute_holds_across_replicas() {
    let redis = Redis::start();
    let extra = "[gateway.tool-calls-per-minute]\n\"notes/get_weather\" = 4\n";
    let a = Replica::start(&redis, extra);
    let b = Replica::start(&redis, extra);
    for (i, r) in [&a, &b, &a, &b].into_iter().enumerate() {
        let ok = r.call("get_weather", "Lima", json!({}));
        assert!(!is_error(&ok), "call {}: {ok}", i + 1);
    }
    for (i, r) in [&a, &b].into_iter().enumerate() {
        let refused = r.call("get_weather", "Lima", json!({}));
        assert!(is_error(&refused), "call {}: {refused}", i + 5);
        assert!(
            text(&refused).contains("at most 4 calls a minute"),
            "{refused}"
        );
    }
    assert_eq!(runs(&[&a, &b], "get_weather"), 4);
    // Another principal has a budget of its own; an unlimited tool none.
    let bob = b.tool(
        BOB,
        "call_tool",
        json!({"handle": "notes/get_weather", "arguments": {"title": "Oslo"}}),
        json!({}),
    );
    assert!(!is_error(&bob), "{bob}");
    assert!(!is_error(&a.call("get_time", "Lima", json!({}))));
    let buckets = redis.ttls("toolrag:rl:*");
    assert_eq!(buckets.len(), 2, "alice's and bob's: {buckets:?}");
    assert!(
        buckets.iter().all(|(_, ttl)| (1..=61_000).contains(ttl)),
        "{buckets:?}"
    );
}

/// With Redis killed, an approval fails closed (the call does not run), a
/// call under a budget is refused, search and an unlimited read-only call
/// answer, and /readyz says degraded; with Redis back on its port (empty),
/// the replicas recover by themselves: the approval asked before is
/// refused (Redis cannot tell whether it was used), a new one runs once.
#[test]
fn with_redis_down_approvals_fail_closed_and_the_replicas_recover() {
    let mut redis = Redis::start();
    let extra = "[gateway.tool-calls-per-minute]\n\"notes/get_weather\" = 100\n";
    let a = Replica::start(&redis, extra);
    let b = Replica::start(&redis, extra);
    for r in [&a, &b] {
        assert_eq!(r.readyz(), (200, json!({"status": "ready"})));
    }
    let state = a.ask("groceries");

    redis.kill();
    let refused = b.answer("groceries", &state);
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("cannot record that this approval was used"),
        "{refused}"
    );
    assert_eq!(runs(&[&a, &b], "delete_note"), 0, "the call did not run");
    let limited = a.call("get_weather", "Lima", json!({}));
    assert!(is_error(&limited), "{limited}");
    assert!(text(&limited).contains("cannot count now"), "{limited}");
    assert_eq!(runs(&[&a, &b], "get_weather"), 0);
    let found = a.search("weather forecast for a city");
    assert!(!is_error(&found), "{found}");
    assert!(found.to_string().contains("notes/get_weather"), "{found}");
    assert!(!is_error(&b.call("get_time", "Lima", json!({}))));
    for r in [&a, &b] {
        let (status, body) = r.readyz();
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["status"], "degraded", "{body}");
        assert!(
            body["state"]
                .as_str()
                .unwrap()
                .starts_with("redis unreachable"),
            "{body}"
        );
    }

    redis.restart();
    for r in [&a, &b] {
        eventually(15, "/readyz is 200 again", || r.readyz().0 == 200);
    }
    // Redis came back empty: it cannot tell whether the state asked before
    // was used, so that one is refused; a new approval runs, once.
    let forgotten = b.answer("groceries", &state);
    assert!(is_error(&forgotten), "{forgotten}");
    assert!(text(&forgotten).contains("was reset"), "{forgotten}");
    assert_eq!(runs(&[&a, &b], "delete_note"), 0);
    let state = a.ask("groceries");
    let done = b.answer("groceries", &state);
    assert!(!is_error(&done), "{done}");
    assert_eq!(runs(&[&a, &b], "delete_note"), 1);
    let replay = a.answer("groceries", &state);
    assert!(text(&replay).contains("already used"), "{replay}");
    assert!(!is_error(&a.call("get_weather", "Lima", json!({}))));
}

/// A token revoked in the shared state ([`SharedState::revoke`]) gets 401
/// from every replica, though both token files still have it; others
/// still pass, and the revocation is a key that expires.
#[test]
fn a_revoked_token_is_refused_by_every_replica() {
    let redis = Redis::start();
    let a = Replica::start(&redis, "");
    let b = Replica::start(&redis, "");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut settings = toolrag_gateway::GatewayConfig::default();
    settings.state = Some(toolrag_gateway::settings::StateUrl::new(redis.url()));
    rt.block_on(async {
        let shared = settings.shared_state().unwrap();
        shared.ready().await.unwrap();
        let hash = toolrag_mcp::shared::token_sha256(BOB);
        shared
            .revoke(&hash, Duration::from_secs(120))
            .await
            .unwrap();
        assert!(shared.is_revoked(&hash).await);
    });
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    for r in [&a, &b] {
        let (status, body) = r.http("POST", "/mcp", BOB, Some(&list));
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("revoked"), "{body}");
        let (status, body) = r.http("POST", "/mcp", ALICE, Some(&list));
        assert_eq!(status, 200, "{body}");
    }
    let revoked = redis.ttls("toolrag:revoked:*");
    assert_eq!(revoked.len(), 1, "{revoked:?}");
    assert!((100_000..=120_000).contains(&revoked[0].1), "{revoked:?}");
}

/// `--requests-per-minute` is one budget across the replicas too (`429`
/// past it, whichever replica is asked); with Redis down, each replica
/// counts on its own bucket, so requests are still served.
#[test]
fn the_request_limit_is_shared_and_falls_back_to_each_replica() {
    let mut redis = Redis::start();
    let args = ["--requests-per-minute", "5"];
    let a = Replica::start_with(&redis.url(), "", &args, &[]);
    let b = Replica::start_with(&redis.url(), "", &args, &[]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let statuses: Vec<u16> = [&a, &b, &a, &b, &a, &b, &a]
        .iter()
        .map(|r| r.http("POST", "/mcp", ALICE, Some(&list)).0)
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429]);
    assert_eq!(b.http("POST", "/mcp", BOB, Some(&list)).0, 200, "bob's own");
    redis.kill();
    for r in [&a, &b] {
        let (status, body) = r.http("POST", "/mcp", ALICE, Some(&list));
        assert_eq!(status, 200, "the replica's own bucket: {body}");
    }
}

/// A Redis with a password: given in the environment variable that
/// `state-password-env` names, or in the URL, it is used, and it never
/// shows in the log (the URL is logged with `***`); a wrong one leaves the
/// replica degraded, approvals refused.
#[test]
fn a_password_from_the_environment_or_the_url_is_used_and_never_logged() {
    const PASSWORD: &str = "pw-0123456789-never-logged";
    let redis = Redis::start_with(&["--requirepass", PASSWORD]);
    let from_env = Replica::start_with(
        &redis.url(),
        "state-password-env = \"TOOLRAG_TEST_REDIS_PASSWORD\"\n",
        &[],
        &[("TOOLRAG_TEST_REDIS_PASSWORD", PASSWORD)],
    );
    let in_url = format!("redis://:{PASSWORD}@127.0.0.1:{}/0", redis.port());
    let from_url = Replica::start_with(&in_url, "", &[], &[]);
    let wrong = format!("redis://:wrong-{PASSWORD}@127.0.0.1:{}/0", redis.port());
    let wrong = Replica::start_with(&wrong, "", &[], &[]);
    for r in [&from_env, &from_url] {
        assert_eq!(r.readyz(), (200, json!({"status": "ready"})), "{}", r.log());
        let state = r.ask("groceries");
        assert!(!is_error(&r.answer("groceries", &state)));
    }
    let (status, body) = wrong.readyz();
    assert_eq!(status, 503, "{body}");
    let state = wrong.ask("groceries");
    assert!(is_error(&wrong.answer("groceries", &state)));
    assert_eq!(runs(&[&from_env, &from_url, &wrong], "delete_note"), 2);
    assert!(
        from_url.log().contains("redis://:***@127.0.0.1"),
        "{}",
        from_url.log()
    );
    for r in [&from_env, &from_url, &wrong] {
        assert!(!r.log().contains(PASSWORD), "{}", r.log());
        assert!(!body.to_string().contains(PASSWORD), "{body}");
    }
}

/// A Redis that accepts connections and never answers (dropped packets, a
/// hung server) costs one call its deadline; for the next half second
/// calls fail at once instead, so it does not add the deadline to every
/// request. Readiness still asks, and says why.
#[test]
fn a_silent_redis_costs_one_deadline_then_fails_at_once() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut settings = toolrag_gateway::GatewayConfig::default();
    settings.state = Some(toolrag_gateway::settings::StateUrl::new(format!(
        "redis://127.0.0.1:{port}/0"
    )));
    settings.state_timeout_seconds = 0.3;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let shared = settings.shared_state().unwrap();
        let hash = toolrag_mcp::shared::token_sha256(ALICE);
        let t = Instant::now();
        assert!(!shared.is_revoked(&hash).await, "unknown, so not revoked");
        let first = t.elapsed();
        assert!(
            first >= Duration::from_millis(250) && first < Duration::from_secs(2),
            "{first:?}"
        );
        let t = Instant::now();
        assert!(!shared.is_revoked(&hash).await);
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        let t = Instant::now();
        let e = shared.ready().await.unwrap_err().to_string();
        assert!(e.starts_with("redis unreachable"), "{e}");
        assert!(t.elapsed() >= Duration::from_millis(250), "readiness asks");
    });
    drop(silent);
}
