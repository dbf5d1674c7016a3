//! What a slow or greedy client cannot do (issue 19): hold sockets by
//! sending headers one byte at a time, open more connections than allowed,
//! or keep the search pool busy with a batch that already timed out while
//! other clients' single searches wait. Each test bounds itself in sockets
//! (at most 20) and seconds (well under a minute).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::harness::{index_copy, Server};
use super::{error_is, no_server_errors};

/// The value of the metric line that starts with `name ` (0 when absent).
fn metric(s: &Server, name: &str) -> f64 {
    s.get("/metrics")
        .body
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Waits until `done` holds, up to `limit`.
fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the server has closed `sock` (a read returns EOF or an error,
/// not a timeout).
fn closed(sock: &mut TcpStream) -> bool {
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = [0u8; 512];
    match sock.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn slow_headers_are_timed_out_and_connections_are_capped() {
    const SLOW: usize = 12;
    let index = index_copy();
    let s = Server::start(
        index.path(),
        &["--header-timeout-ms", "3000", "--max-connections", "16"],
    );
    let addr = s.base.trim_start_matches("http://").to_string();

    // The cap: 15 idle connections and the scrapes' own fill it; one more is
    // closed at once, before it is read, and counted.
    let held: Vec<TcpStream> = (0..15)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    wait_until(Duration::from_secs(2), "16 connections open", || {
        metric(&s, "toolrag_http_connections") >= 16.0
    });
    let mut extra = TcpStream::connect(&addr).unwrap();
    let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let deadline = Instant::now() + Duration::from_secs(2);
    while !closed(&mut extra) {
        assert!(Instant::now() < deadline, "the 17th connection stays open");
    }
    drop(held);
    wait_until(Duration::from_secs(5), "the refusal counted", || {
        metric(&s, "toolrag_http_connections_refused_total") >= 1.0
    });

    // Slow clients: a request line, then one header byte every 200 ms. Each
    // is closed at the header deadline (3 s) however it dribbles.
    let started = Instant::now();
    let mut slow: Vec<TcpStream> = (0..SLOW)
        .map(|_| {
            let mut t = TcpStream::connect(&addr).unwrap();
            t.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .unwrap();
            t
        })
        .collect();
    let mut open = SLOW;
    while open > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{open} slow connections still open after {:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
        open = 0;
        for t in &mut slow {
            let _ = t.write_all(b"a");
            if !closed(t) {
                open += 1;
            }
        }
    }
    assert!(
        started.elapsed() >= Duration::from_millis(2500),
        "closed before the deadline: {:?}",
        started.elapsed()
    );
    drop(slow);
    wait_until(Duration::from_secs(5), "header timeouts counted", || {
        metric(&s, "toolrag_http_header_timeouts_total") >= SLOW as f64
    });
    assert_eq!(s.get("/healthz").status, 200);

    // A target or headers over the limits: the JSON error, with its status.
    let long_path = format!("/v1/tools/{}", "a".repeat(9 * 1024));
    let many: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
    let big = format!("X-Big: {}\r\n", "b".repeat(20 * 1024));
    for (target, headers, status, code) in [
        (long_path.as_str(), "", 414, "uri_too_long"),
        ("/healthz", many.as_str(), 431, "headers_too_large"),
        ("/healthz", big.as_str(), 431, "headers_too_large"),
    ] {
        let (got, body) = raw_get(&addr, target, headers);
        assert_eq!(got, status, "{target:.40} {headers:.40}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["error"]["code"], code, "{body}");
    }
    no_server_errors(&s);
}

/// Two `Authorization` headers or two `Host` headers get 400
/// `invalid_request`, whichever comes first: the first one no longer wins.
#[test]
fn repeated_authorization_or_host_headers_are_refused() {
    let index = index_copy();
    let token_file = index.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let s = Server::start(
        index.path(),
        &["--token-file", token_file.to_str().unwrap()],
    );
    let addr = s.base.trim_start_matches("http://").to_string();
    let good = "Authorization: Bearer s3cret-token\r\n";
    let (status, body) = raw_get(&addr, "/readyz", good);
    assert_eq!(status, 200, "{body}");
    for headers in [
        format!("{good}Authorization: Bearer wrong\r\n"),
        format!("Authorization: Bearer wrong\r\n{good}"),
        format!("{good}Host: y\r\n"),
    ] {
        let (status, body) = raw_get(&addr, "/readyz", &headers);
        assert_eq!(status, 400, "{headers}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["error"]["code"], "invalid_request", "{body}");
    }
    no_server_errors(&s);
}

/// A GET with extra raw header lines, on its own connection: the status and
/// the body.
fn raw_get(addr: &str, target: &str, headers: &str) -> (u16, String) {
    let mut t = TcpStream::connect(addr).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        t,
        "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut text = String::new();
    t.read_to_string(&mut text).unwrap();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text:.200}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn a_timed_out_batch_stops_computing_and_single_searches_keep_their_turn() {
    let index = index_copy();
    let s = Server::start(index.path(), &["--timeout-ms", "1000"]);
    // Long, distinct queries: each embeds in several milliseconds, so 1,024
    // of them take the two-core pool seconds even on a fast, quiet machine
    // (a batch that finished within the timeout would make this test fail).
    let batch = |n: usize| -> String {
        let b: Vec<Value> = (0..256)
            .map(|i| {
                json!({"query": format!(
                "batch {n}: find the file number {i} in the project folder, read all of it \
                 and summarise what it says about release {i} in a few sentences"), "k": 10})
            })
            .collect();
        Value::Array(b).to_string()
    };
    // Four clients each send a batch no pool finishes in 1 s.
    let url = s.url("/v1/search/batch");
    let batches: Vec<_> = (0..4)
        .map(|n| {
            let (url, body) = (url.clone(), batch(n));
            std::thread::spawn(move || {
                super::harness::request(&url, "POST", None, Some(("application/json", &body)))
            })
        })
        .collect();
    // Meanwhile another client's single searches are all answered.
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..8 {
        let r = s.post_json(
            "/v1/search",
            &json!({"query": format!("send an email to the team {i}")}).to_string(),
        );
        assert_eq!(
            r.status, 200,
            "single search {i} during the batches: {}",
            r.body
        );
    }
    for b in batches {
        error_is(&b.join().unwrap(), 503, "timeout");
    }
    // Once the batches have timed out, their remaining searches are not run.
    std::thread::sleep(Duration::from_millis(500));
    let after = metric(&s, "toolrag_search_pool_tasks_total");
    std::thread::sleep(Duration::from_millis(1500));
    let later = metric(&s, "toolrag_search_pool_tasks_total");
    assert!(
        later - after <= 1.0,
        "the search pool ran {} more tasks after every batch timed out",
        later - after
    );
    assert!(
        after < 4.0 * 256.0,
        "every search of every batch ran: {after}"
    );
    assert_eq!(s.get("/healthz").status, 200);
}
