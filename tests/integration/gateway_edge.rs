//! The gateway's HTTP edge: a request whose head could be read two ways is
//! refused before it is authenticated (two `Authorization` headers, two
//! `Host` headers), and an absolute-form target names an allowed host, as
//! `Host` must.

use crate::gw_harness::Gw;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";

/// Two `Authorization` headers (valid or not, in either order), two `Host`
/// headers, two `Mcp-Session-Id` or two `MCP-Protocol-Version` headers get
/// 400 and reach nothing; an absolute-form target with a
/// host outside the allowed ones gets 403, as the same host in `Host` does;
/// one naming the gateway's own address is served.
#[test]
fn repeated_headers_and_foreign_absolute_targets_are_refused() {
    let gw = Gw::start("", &format!("alice:{ALICE}\nbob:{BOB}\n"), |_| {});
    assert_eq!(gw.list(ALICE).status, 200, "the baseline is served");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": crate::gw_harness::envelope()}})
    .to_string();
    let base = gw.head(ALICE, "tools/list");
    for (what, extra) in [
        (
            "a second valid Authorization",
            format!("Authorization: Bearer {BOB}\r\n"),
        ),
        (
            "a second invalid Authorization",
            "Authorization: Bearer nope\r\n".to_string(),
        ),
        ("a second Host", "Host: evil.example\r\n".to_string()),
        ("the same Host twice", format!("Host: {}\r\n", gw.addr)),
        (
            "two Mcp-Session-Id",
            "Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n".to_string(),
        ),
        (
            "two MCP-Protocol-Version",
            "MCP-Protocol-Version: 2025-11-25\r\nMCP-Protocol-Version: 2026-07-28\r\n".to_string(),
        ),
    ] {
        let a = gw.raw(&format!("{base}{extra}"), &body);
        assert_eq!(a.status, 400, "{what}: {a:?}");
        assert_eq!(a.json()["error"], "invalid_request", "{what}: {a:?}");
    }
    // The second Authorization first: still 400, not a 401 for the first.
    let head = base.replacen(
        "Authorization:",
        "Authorization: Bearer nope\r\nAuthorization:",
        1,
    );
    assert_eq!(gw.raw(&head, &body).status, 400);

    // Absolute-form targets: the URL's host is checked as Host is.
    let foreign = base.replacen("POST /mcp", "POST http://evil.example/mcp", 1);
    let a = gw.raw(&foreign, &body);
    assert_eq!(a.status, 403, "{a:?}");
    let own = base.replacen("POST /mcp", &format!("POST http://{}/mcp", gw.addr), 1);
    let a = gw.raw(&own, &body);
    assert_eq!(a.status, 200, "{a:?}");
    let health = format!("GET http://{0}/healthz HTTP/1.1\r\nHost: {0}\r\n", gw.addr);
    let a = gw.raw(&health, "");
    assert_eq!(a.status, 200, "{a:?}");
    let health = "GET http://evil.example/healthz HTTP/1.1\r\nHost: evil.example\r\n";
    assert_eq!(gw.raw(health, "").status, 403);
}
