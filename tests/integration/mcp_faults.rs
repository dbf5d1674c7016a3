//! Faults of the gateway as a team service (`toolrag mcp --upstream ...
//! --http`), driven by tests/mcp_faults.py: an upstream killed while a call
//! is out, the gateway killed with SIGKILL under load (the audit log against
//! what the clients received), and SIGTERM with calls in flight. The figures
//! under load are a benchmark (`scripts/bench-gateway --http`), not a test.
//! Needs `make mcp-client`; uses the real model.

use serde_json::Value;

fn scenario(name: &str) -> Value {
    crate::common::python_scenario("mcp_faults.py", name)
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
