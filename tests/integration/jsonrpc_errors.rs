//! `toolrag mcp` answers every JSON-RPC protocol error as JSON-RPC asks:
//! -32700 for a line that is not JSON, -32602 with the reason for params that
//! do not fit a method it implements, -32600 keeping the request's `id`; and it
//! keeps serving after each of them. Raw lines on stdin, bounded in seconds.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::root;
use crate::server::harness::index_copy;

/// A `toolrag mcp` child, its stdin, and its stdout lines on a channel.
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Mcp {
    fn start(index: &std::path::Path) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolrag"))
            .current_dir(root())
            .arg("mcp")
            .arg("--index")
            .arg(index)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("toolrag mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next reply, within 60 s (the first one waits for the model).
    fn reply(&self, after: &str) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no reply to {after}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn call(&mut self, line: &str) -> Value {
        self.send(line);
        self.reply(line)
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn error_of(r: &Value) -> (i64, &str) {
    (
        r["error"]["code"].as_i64().unwrap_or_else(|| panic!("{r}")),
        r["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[test]
fn protocol_errors_get_their_json_rpc_codes_and_the_server_keeps_serving() {
    let index = index_copy();
    let mut mcp = Mcp::start(index.path());

    // Before the handshake: not JSON, then a bad initialize.
    let r = mcp.call("{this is not json");
    assert_eq!(error_of(&r).0, -32700, "{r}");
    assert!(r["id"].is_null(), "{r}");
    let r = mcp
        .call(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}"#);
    assert_eq!(error_of(&r).0, -32602, "{r}");
    assert_eq!(r["id"], 1, "{r}");
    assert!(error_of(&r).1.contains("initialize"), "{r}");

    let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let r = mcp.call(&init.to_string());
    assert_eq!(r["id"], 2, "{r}");
    assert!(r["result"]["serverInfo"]["name"] == "toolrag", "{r}");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let bad_params = [
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"search_tools","arguments":"read a file"}}"#,
            "string arguments",
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":42}}"#,
            "integer name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call"}"#,
            "missing params",
        ),
    ];
    for (n, (line, what)) in bad_params.iter().enumerate() {
        let r = mcp.call(line);
        let (code, message) = error_of(&r);
        assert_eq!(code, -32602, "{what}: {r}");
        assert_eq!(r["id"], 10 + n, "{what}: {r}");
        assert!(
            message.starts_with("Invalid params for tools/call: "),
            "{what}: {r}"
        );
    }
    let r = mcp.call(r#"{"jsonrpc":"2.0","id":"q-7","method":9}"#);
    assert_eq!((error_of(&r).0, &r["id"]), (-32600, &json!("q-7")), "{r}");
    let r = mcp.call(r#"{"jsonrpc":"2.0","id":13}"#);
    assert_eq!((error_of(&r).0, &r["id"]), (-32600, &json!(13)), "{r}");
    let r = mcp.call("[1, 2]");
    assert_eq!(error_of(&r).0, -32600, "{r}");
    // A method the server does not have is still -32601.
    let r = mcp.call(r#"{"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":"x"}}"#);
    assert_eq!((error_of(&r).0, &r["id"]), (-32601, &json!(14)), "{r}");

    // Still serving: a good call after all of that.
    let r = mcp.call(
        r#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"read a file","k":3}}}"#,
    );
    assert_eq!(r["id"], 20, "{r}");
    let candidates = &r["result"]["structuredContent"]["candidates"];
    assert_eq!(candidates.as_array().map(Vec::len), Some(3), "{r}");
}
