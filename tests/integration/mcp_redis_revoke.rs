//! A token taken out of one replica's tokens file is refused by every
//! replica that shares its state on Redis, even one whose own file still has
//! it: the reload's removed tokens are revoked in Redis.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_redis::{Replica, ALICE, BOB, MODERN};
use crate::redis_server::Redis;

#[test]
fn a_token_removed_from_one_replicas_file_is_refused_by_both() {
    let redis = Redis::start();
    let a = Replica::start_with(&redis.url(), "", &[], &[]);
    let b = Replica::start_with(&redis.url(), "", &[], &[]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    for r in [&a, &b] {
        assert_eq!(r.http("POST", "/mcp", BOB, Some(&list)).0, 200);
    }
    // Bob's line goes from A's file only, replaced atomically.
    let tokens = a.dir.path().join("tokens");
    let next = a.dir.path().join("tokens.next");
    std::fs::write(&next, format!("alice:{ALICE}\n")).unwrap();
    std::fs::rename(&next, &tokens).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (on_a, on_b) = (
            a.http("POST", "/mcp", BOB, Some(&list)).0,
            b.http("POST", "/mcp", BOB, Some(&list)).0,
        );
        if (on_a, on_b) == (401, 401) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "bob still answered {on_a} by A and {on_b} by B:\n{}\n{}",
            a.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // B's own file still has Bob: the refusal comes from the shared state.
    assert!(std::fs::read_to_string(b.dir.path().join("tokens"))
        .unwrap()
        .contains("bob:"));
    for r in [&a, &b] {
        assert_eq!(r.http("POST", "/mcp", ALICE, Some(&list)).0, 200);
    }
}
