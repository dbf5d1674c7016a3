//! The HTTP server (`toolrag serve`) over a real index and the real model: every endpoint in its documented shape, auth and CORS, graceful shutdown; errors and reloads in the submodules.

mod errors;
mod gate;
pub mod harness;
mod limits;
mod metrics;
mod reload;

use std::time::Duration;

use harness::{index_copy, request, Resp, Server};
use serde_json::{json, Value};
use toolrag_http::{openapi, ROUTES};

/// Checks `value` against a component schema of the served OpenAPI document.
pub fn conforms(value: &Value, component: &str) {
    let schema = openapi::component_schema(component);
    let v = jsonschema::draft202012::new(&schema).expect("the OpenAPI schemas compile");
    let errors: Vec<String> = v.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{component}: {errors:?}\n{value:#}");
}

pub fn error_is(r: &Resp, status: u16, code: &str) {
    assert_eq!((r.status, r.code().as_str()), (status, code), "{}", r.body);
    conforms(&r.json(), "Error");
}

/// Asserts that `/metrics` counts no 5xx answer (but `/readyz`'s 503 while the
/// index loaded), and returns the metrics text for further checks.
pub fn no_server_errors(s: &Server) -> String {
    let m = s.get("/metrics").body;
    let server_errors: Vec<&str> = m
        .lines()
        .filter(|l| l.contains(r#"status="5"#) && !l.contains(r#"route="/readyz""#))
        .collect();
    assert!(server_errors.is_empty(), "{server_errors:?}");
    m
}
#[test]
fn every_endpoint_answers_in_its_documented_shape() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);

    let r = s.get("/healthz");
    assert_eq!(r.status, 200);
    conforms(&r.json(), "Health");
    let r = s.get("/readyz");
    conforms(&r.json(), "Ready");
    assert_eq!(r.json()["dense"], true, "the model is loaded");

    let r = s.post_json(
        "/v1/search",
        r#"{"query": "read the file /etc/hosts", "k": 3}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let set = r.json();
    conforms(&set, "CandidateSet");
    assert_eq!(set["retrieval"]["mode"], "hybrid");
    assert_eq!(
        set["candidates"][0]["nodeId"],
        "tool://filesystem/read_text_file"
    );
    assert_eq!(set["candidates"].as_array().unwrap().len(), 3);
    assert!(r
        .header("x-toolrag-generation")
        .unwrap()
        .starts_with("gen-"));

    let r = s.post_json(
        "/v1/search",
        r#"{"query": "commit changes", "mode": "lexical", "namespaces": ["git"], "readOnly": false}"#,
    );
    let set = r.json();
    assert_eq!(set["retrieval"]["mode"], "lexical");
    assert!(set["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["nodeId"].as_str().unwrap().starts_with("tool://git/")));

    let batch = json!([{"query": "send an email"}, {"query": "what time is it in Tokyo", "k": 1}]);
    let r = s.post_json("/v1/search/batch", &batch.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let sets = r.json();
    assert_eq!(sets.as_array().unwrap().len(), 2);
    for set in sets.as_array().unwrap() {
        conforms(set, "CandidateSet");
    }
    assert_eq!(sets[1]["candidates"].as_array().unwrap().len(), 1);
    assert_eq!(sets[1]["query"], "what time is it in Tokyo");
    assert_eq!(s.post_json("/v1/search/batch", "[]").json(), json!([]));

    for path in [
        "/v1/tools/filesystem/read_text_file",
        "/v1/tools/tool://filesystem/read_text_file",
        "/v1/tools/tool%3A%2F%2Ffilesystem%2Fread_text_file",
    ] {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        conforms(&r.json(), "ToolCard");
        assert_eq!(r.json()["id"], "filesystem/read_text_file");
    }

    let r = s.get("/openapi.json");
    assert_eq!(r.json(), openapi::document());
    // Every documented route is routed: nothing answers not_found or method_not_allowed.
    for (method, path) in ROUTES {
        let path = path.replace("{id}", "filesystem/read_text_file");
        let body = (method == &"post").then_some(("application/json", "[]"));
        let r = request(&s.url(&path), &method.to_uppercase(), None, body);
        assert!(
            !["not_found", "method_not_allowed"].contains(&r.code().as_str()),
            "{method} {path}: {} {}",
            r.status,
            r.body
        );
    }

    let m = s.get("/metrics").body;
    let generation = s
        .generation()
        .trim_start_matches("gen-")
        .parse::<u64>()
        .unwrap();
    let generation = format!("toolrag_index_generation {generation}\n");
    for line in [
        "# TYPE toolrag_http_requests_total counter",
        r#"toolrag_http_requests_total{route="/v1/search",method="POST",status="200"} 2"#,
        "# TYPE toolrag_http_request_duration_seconds histogram",
        r#"toolrag_http_request_duration_seconds_count{route="/v1/tools/{id}"}"#,
        &generation,
        "toolrag_index_tools ",
        "toolrag_ready 1",
    ] {
        assert!(m.contains(line), "no {line:?} in\n{m}");
    }
}
#[test]
fn a_token_guards_everything_but_healthz_and_cors_is_opt_in() {
    let index = index_copy();
    let token_file = index.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let s = Server::start(
        index.path(),
        &[
            "--token-file",
            token_file.to_str().unwrap(),
            "--cors-origin",
            "https://app.example",
        ],
    );
    assert_eq!(request(&s.url("/healthz"), "GET", None, None).status, 200);
    for path in [
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/v1/tools/filesystem/read_text_file",
    ] {
        let r = request(&s.url(path), "GET", None, None);
        error_is(&r, 401, "unauthorized");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        error_is(
            &request(&s.url(path), "GET", Some("wrong"), None),
            401,
            "unauthorized",
        );
        assert_eq!(
            request(&s.url(path), "GET", Some("s3cret-token"), None).status,
            200,
            "{path}"
        );
    }
    let body = Some(("application/json", r#"{"query": "read a file"}"#));
    error_is(
        &request(&s.url("/v1/search"), "POST", None, body),
        401,
        "unauthorized",
    );
    assert_eq!(
        request(&s.url("/v1/search"), "POST", Some("s3cret-token"), body).status,
        200
    );

    // CORS: the configured origin is allowed, and a preflight needs no token.
    let preflight = cors_preflight(&s.url("/v1/search"), "https://app.example");
    assert!(
        preflight.contains("access-control-allow-origin: https://app.example"),
        "{preflight}"
    );
    assert!(
        !cors_preflight(&s.url("/v1/search"), "https://evil.example")
            .contains("access-control-allow-origin")
    );

    // Without the flags: no auth, no CORS headers.
    let open = Server::start(index.path(), &[]);
    assert_eq!(open.get("/readyz").status, 200);
    assert!(
        !cors_preflight(&open.url("/v1/search"), "https://app.example")
            .contains("access-control-allow-origin")
    );
}

/// The raw answer to a CORS preflight, headers lower-cased.
fn cors_preflight(url: &str, origin: &str) -> String {
    use std::io::{Read, Write};
    let url = url.strip_prefix("http://").unwrap();
    let (host, path) = url.split_once('/').unwrap();
    let mut c = std::net::TcpStream::connect(host).unwrap();
    write!(
        c,
        "OPTIONS /{path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, authorization\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    out.to_lowercase()
}
#[test]
fn sigterm_shuts_down_gracefully() {
    let index = index_copy();
    let mut s = Server::start(index.path(), &[]);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = s
        .wait_exit(Duration::from_secs(15))
        .expect("exits after SIGTERM");
    assert!(status.success(), "{status:?}: {}", s.stderr());
    assert!(s.stderr().contains("toolrag: shutting down"));
}

#[test]
fn serve_without_an_index_fails_at_once() {
    crate::common::toolrag()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--index",
            "/nonexistent/index",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no index in /nonexistent/index"))
        // The library says what is wrong, the command line how to mend it.
        .stderr(predicates::str::contains(
            "Build one with `toolrag index --out /nonexistent/index`.",
        ));
}
