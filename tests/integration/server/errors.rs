//! Every way a request can be wrong gets its exact status and error code, a precise message, and never a 5xx; slow requests time out.

use serde_json::{json, Value};

use super::harness::{index_copy, request, Server};
use super::{conforms, error_is, no_server_errors};

/// A request: method, path, and an optional (content type, body).
type Call = (
    &'static str,
    &'static str,
    Option<(&'static str, &'static str)>,
);
#[test]
fn every_bad_request_gets_its_status_and_code() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let json = "application/json";
    let leak = |v: Value| -> &'static str { Box::leak(v.to_string().into_boxed_str()) };
    let long_query = leak(json!({"query": "word ".repeat(900)}));
    let big_body = leak(json!({"query": "x", "pin": vec!["tool://a/b"; 8000]}));
    let big_batch = leak(json!(vec![json!({"query": "x"}); 257]));
    let (post, get, delete) = ("POST", "GET", "DELETE");
    let search = |body: &'static str| (post, "/v1/search", Some((json, body)));
    let batch = |body: &'static str| (post, "/v1/search/batch", Some((json, body)));
    #[rustfmt::skip]
    let cases: Vec<(Call, u16, &str)> = vec![
        (search(r#"{"query": "x""#), 400, "malformed_json"),
        (search(""), 400, "malformed_json"),
        (search(r#"{"query": 3}"#), 400, "invalid_request"),
        (search(r#"{"k": 3}"#), 400, "invalid_request"),
        (search(r#"{"query": "x", "readonly": true}"#), 400, "invalid_request"),
        (search(r#"{"query": "x", "mode": "fuzzy"}"#), 400, "invalid_request"),
        (search(r#"["x"]"#), 400, "invalid_request"),
        (search(r#"{"query": "x", "k": 0}"#), 400, "invalid_k"),
        (search(r#"{"query": "x", "k": 101}"#), 400, "invalid_k"),
        (search(r#"{"query": "x", "k": -1}"#), 400, "invalid_k"),
        (search(r#"{"query": " \n "}"#), 400, "empty_query"),
        (search(long_query), 400, "query_too_long"),
        (search(r#"{"query": "x", "pin": ["no/such"]}"#), 404, "tool_not_found"),
        (search(r#"{"query": "x", "pin": [""]}"#), 404, "tool_not_found"),
        (batch(r#"[{"query": "x"}, {"query": "y", "pin": ["no/such"]}]"#), 404, "tool_not_found"),
        (search(r#"{"query": ""}"#), 400, "empty_query"),
        ((post, "/v1/search", Some(("application/json; charset=latin1", r#"{"query": "x"}"#))), 415, "unsupported_media_type"),
        (search(big_body), 413, "body_too_large"),
        ((post, "/v1/search", Some(("text/plain", r#"{"query": "x"}"#))), 415, "unsupported_media_type"),
        ((post, "/v1/search", Some(("", r#"{"query": "x"}"#))), 415, "unsupported_media_type"),
        (batch(big_batch), 400, "batch_too_large"),
        (batch(r#"{"query": "x"}"#), 400, "invalid_request"),
        (batch(r#"[{"query": "x"}, "y"]"#), 400, "invalid_request"),
        (batch(r#"[{"query": "x"}, {"query": "y", "k": 500}]"#), 400, "invalid_k"),
        ((get, "/v1/tools/no/such_tool", None), 404, "tool_not_found"),
        ((get, "/v2/search", None), 404, "not_found"),
        ((get, "/v1/search", None), 405, "method_not_allowed"),
        ((delete, "/v1/tools/filesystem/read_text_file", None), 405, "method_not_allowed"),
    ];
    for ((method, path, body), status, code) in cases {
        let r = request(&s.url(path), method, None, body);
        assert_eq!(
            (r.status, r.code().as_str()),
            (status, code),
            "{method} {path} {body:?}: {}",
            r.body
        );
        conforms(&r.json(), "Error");
    }
    // The message says precisely what is wrong, and where.
    let r = s.post_json("/v1/search", r#"{"query": "x", "k": "ten"}"#);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("k: invalid type: string \"ten\""));
    let r = s.post_json("/v1/search/batch", r#"[{"query": "x"}, {"query": 1}]"#);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[1].query: invalid type"),
        "{}",
        r.body
    );
    let r = s.post_json(
        "/v1/search/batch",
        r#"[{"query": "x"}, {"query": "y", "k": 0}]"#,
    );
    assert_eq!(
        r.json()["error"]["message"],
        "[1]: k must be between 1 and 100, got 0"
    );
    // No 5xx on user input; /readyz answered 503 only while the index loaded.
    no_server_errors(&s);
}
#[test]
fn slow_requests_time_out_with_503() {
    let index = index_copy();
    let s = Server::start(index.path(), &["--timeout-ms", "50"]);
    let batch: Vec<Value> = (0..256)
        .map(|i| json!({"query": format!("find the file number {i} and read it"), "k": 100}))
        .collect();
    let r = s.post_json("/v1/search/batch", &Value::Array(batch).to_string());
    error_is(&r, 503, "timeout");
    assert_eq!(s.get("/healthz").status, 200, "the server goes on");
}
