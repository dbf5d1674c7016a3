//! The gateway as a team service: `toolrag mcp --upstream ... --http`, driven
//! by the official Python MCP client (tests/mcp_http_client.py) on protocols
//! 2026-07-28 and 2025-11-25, with static tokens, OAuth access tokens from a
//! real authorization server (oidc-provider), per-principal policy, and
//! approvals as sealed multi-round-trip states shared by two replicas.
//! Needs `make mcp-client oauth-server`; uses the real model.

use serde_json::Value;

use crate::common::installed;

fn scenario(name: &str) -> Value {
    crate::common::python_scenario("mcp_http_client.py", name)
}

/// Static tokens: 401 without one; on 2026-07-28 a destructive call is
/// approved through MRTR and runs once, and its state replayed, re-targeted
/// or altered is refused; another principal never sees the first one's
/// tools; 2025-11-25 approves by elicitation; the audit names principals.
#[test]
fn a_team_on_static_tokens() {
    let s = scenario("team");
    assert_eq!(
        s["bob"]["handles"],
        serde_json::json!(["tool://fixture/get_weather"])
    );
}

/// Two replicas sharing the key file and the store of used states.
#[test]
fn replicas_share_approvals_and_refuse_replays() {
    let s = scenario("replicas");
    assert_eq!(s["keyMode"], "0o600");
}

/// An OAuth 2.1 resource server in front of a real authorization server.
#[test]
fn an_oauth_resource_server() {
    installed("target/oauth-npm/.installed", "make oauth-server");
    let s = scenario("oauth");
    assert_eq!(
        s["metadata"]["bearer_methods_supported"],
        serde_json::json!(["header"])
    );
}

/// The official TypeScript client, on the version it speaks (2025-11-25).
#[test]
fn the_typescript_sdk_client() {
    installed(
        "target/mcp-npm/node_modules/@modelcontextprotocol/sdk/package.json",
        "make mcp-servers",
    );
    let s = scenario("typescript");
    assert_eq!(s["version"], "2025-11-25");
    assert_eq!(s["asked"], 1);
}

/// `toolrag mcp --index DIR --http`: the index's own server over HTTP, on
/// both protocol versions.
#[test]
fn the_index_server_over_http() {
    let s = scenario("index");
    assert_eq!(s["2026-07-28"], s["2025-11-25"]);
}

/// Traces over OTLP to a real receiver: spans per request, search and
/// upstream call, under the client's trace context, passed on upstream.
#[test]
fn traces_reach_an_otlp_receiver_and_the_upstream() {
    let s = scenario("otel");
    assert!(s["exports"].as_u64().unwrap() >= 1);
}
