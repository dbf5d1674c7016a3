//! Faults of the gateway as a team service (`toolrag mcp --upstream ...
//! --http`), driven by tests/mcp_faults.py: an upstream killed while a call
//! is out, the gateway killed with SIGKILL under load (the audit log against
//! what the clients received), and SIGTERM with calls in flight. The figures
//! under load are a benchmark (`scripts/bench-gateway --http`), not a test.
//! Needs `make mcp-client`; uses the real model.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{installed, root};

fn python() -> PathBuf {
    installed("target/mcp-venv/bin/python", "make mcp-client")
}

fn scenario(name: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(python())
        .current_dir(root())
        .arg(root().join("tests/mcp_faults.py"))
        .arg(name)
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_toolrag"))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs: String = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| {
            format!(
                "--- {}\n{}",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            )
        })
        .collect();
    assert!(
        out.status.success(),
        "scenario {name} failed:\n{stdout}\n{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("one JSON line")
}

/// A stdio upstream killed while a call is out: an error result within
/// seconds, and the next call succeeds on a restarted server.
#[test]
fn an_upstream_killed_mid_call_is_an_error_then_restarted() {
    let s = scenario("upstream-killed");
    assert!(s["errorAfterS"].as_f64().unwrap() < 5.0, "{s}");
}

/// The same for an upstream over streamable HTTP, started again on its port.
#[test]
fn an_http_upstream_killed_mid_call_is_an_error_then_reconnected() {
    let s = scenario("upstream-killed-http");
    assert_eq!(s["tries"].as_array().unwrap().len(), 1, "{s}");
}

/// kill -9 under dozens of calls in flight: every result a client received
/// has its audit lines.
#[test]
fn kill_9_loses_no_audit_line_of_a_received_result() {
    let s = scenario("kill9");
    assert!(s["received"].as_u64().unwrap() >= 300, "{s}");
}

/// SIGTERM: a call within the grace period finishes, a longer one is ended,
/// and the process exits 0 with its upstream.
#[test]
fn sigterm_lets_calls_finish_and_exits_0() {
    let s = scenario("sigterm");
    assert_eq!(s["exitCode"], 0, "{s}");
}
