//! `POST /v1/gate`: the CLI's verdict on every fixture plan, approvals resolved in the served index, and a precise 4xx (never a 5xx) for a body that is not a gate request.

use std::path::Path;

use serde_json::{json, Value};

use super::harness::{index_copy, request, Server};
use super::{conforms, error_is, no_server_errors};
use crate::common::{fixture, toolrag};

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn plan(name: &str) -> Value {
    read(&fixture(&format!("gate/plans/{name}.json")))
}

fn offered(file: &str) -> Value {
    read(&fixture(&format!("gate/{file}")))
}

/// `toolrag gate PLAN --offered OFFERED --index INDEX --format json`, parsed.
fn cli_verdict(name: &str, offered: Option<&str>, index: &Path) -> Value {
    let mut cmd = toolrag();
    cmd.arg("gate")
        .arg(fixture(&format!("gate/plans/{name}.json")))
        .arg("--index")
        .arg(index)
        .args(["--format", "json"]);
    if let Some(file) = offered {
        cmd.arg("--offered").arg(fixture(&format!("gate/{file}")));
    }
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_gate_route_answers_the_cli_verdict_over_the_served_index() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let gate = |body: &Value| {
        let r = s.post_json("/v1/gate", &body.to_string());
        assert_eq!(r.status, 200, "{body}: {}", r.body);
        assert_eq!(
            r.header("x-toolrag-generation"),
            Some(s.generation().as_str())
        );
        conforms(&r.json(), "Verdict");
        r.json()
    };

    // A valid plan citing a destructive tool: valid, and the tool needs approval.
    let git = offered("offered-git.json");
    let v = gate(&json!({"plan": plan("valid-git-reset"), "offered": git}));
    assert_eq!(
        v,
        json!({"valid": true, "violations": [], "requiresApproval": [
            {"nodeId": "tool://git/git_reset", "reasons": ["destructive"]}
        ]})
    );
    // The offered set may also be a bare array of candidates.
    let bare = json!({"plan": plan("valid-git-reset"), "offered": git["candidates"]});
    assert_eq!(gate(&bare), v);

    // A step citing a tool that was not offered: 200, valid false, code and pointer.
    let v = gate(&json!({"plan": plan("not-offered-step"), "offered": git}));
    assert_eq!(v["valid"], false);
    assert_eq!(v["violations"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["violations"][0]["code"], "not-offered");
    assert_eq!(v["violations"][0]["path"], "/steps/1/nodeId");

    // Byte for byte the verdict of `toolrag gate --format json --index`.
    for (name, file) in [
        ("valid-git-reset", Some("offered-git.json")),
        ("not-offered-step", Some("offered-git.json")),
        ("valid-two-approvals", Some("offered-chat.json")),
        ("all-checks-at-once", Some("offered-git.json")),
        ("schema-not-an-object", None),
    ] {
        let mut body = json!({"plan": plan(name)});
        if let Some(file) = file {
            body["offered"] = offered(file);
        }
        assert_eq!(gate(&body), cli_verdict(name, file, index.path()), "{name}");
    }

    // Every fixture plan gets its expected verdict.
    let dir = fixture("gate/plans");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(stem) = name.strip_suffix(".expected.json") else {
            continue;
        };
        let expected = read(&path);
        let mut body = json!({"plan": plan(stem)});
        if let Some(file) = expected["offered"].as_str() {
            body["offered"] = offered(file);
        }
        let v = gate(&body);
        let where_: Vec<(&Value, &Value)> = v["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (&x["code"], &x["path"]))
            .collect();
        let want: Vec<(&Value, &Value)> = expected["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (&x["code"], &x["path"]))
            .collect();
        assert_eq!((&v["valid"], where_), (&expected["valid"], want), "{stem}");
        // Fixtures gated without an index say nothing about approvals.
        if expected["index"] == true {
            let approvals = expected.get("requiresApproval").cloned();
            assert_eq!(
                v["requiresApproval"],
                approvals.unwrap_or(json!([])),
                "{stem}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} fixtures");

    let m = s.get("/metrics").body;
    let line = format!(
        r#"toolrag_http_requests_total{{route="/v1/gate",method="POST",status="200"}} {}"#,
        checked + 3 + 5
    );
    assert!(m.contains(&line), "no {line:?} in\n{m}");
}

#[test]
fn a_body_that_is_not_a_gate_request_is_a_precise_4xx_and_a_token_is_needed() {
    let index = index_copy();
    let token_file = index.path().join("token");
    std::fs::write(&token_file, "gate-token\n").unwrap();
    let s = Server::start(
        index.path(),
        &["--token-file", token_file.to_str().unwrap()],
    );
    let good = json!({"plan": plan("valid-git-reset"), "offered": offered("offered-git.json")})
        .to_string();

    // Auth, like every /v1 route.
    let url = s.url("/v1/gate");
    let body = Some(("application/json", good.as_str()));
    let r = request(&url, "POST", None, body);
    error_is(&r, 401, "unauthorized");
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    error_is(
        &request(&url, "POST", Some("wrong"), body),
        401,
        "unauthorized",
    );
    assert_eq!(s.post_json("/v1/gate", &good).json()["valid"], true);

    let bare_plan = plan("valid-git-reset").to_string();
    let big = json!({"plan": {"planId": "x".repeat(70 * 1024)}}).to_string();
    let long_note = json!({"plan": {}, "offered": [{"nodeId": "tool://a/b", "nodeKind": "ARTIFACT",
        "label": "DECLARED", "note": "x".repeat(201)}]})
    .to_string();
    #[rustfmt::skip]
    let cases: Vec<(&str, u16, &str, &str)> = vec![
        (r#"{"plan": "#, 400, "malformed_json", "the body is not valid JSON: EOF while parsing"),
        ("", 400, "malformed_json", "the body is not valid JSON"),
        ("{}", 400, "invalid_request", "missing field `plan`"),
        (r#"{"offered": []}"#, 400, "invalid_request", "missing field `plan`"),
        (&bare_plan, 400, "invalid_request", "missing field `plan`: the body looks like a bare plan"),
        (r#"{"plan": null}"#, 400, "invalid_request", "plan: the plan is null"),
        ("[]", 400, "invalid_request", "a gate request must be a JSON object with a `plan`, not an array"),
        (r#"{"plan": {}, "ofered": []}"#, 400, "invalid_request", "ofered: unknown field `ofered`, expected `plan` or `offered`"),
        (r#"{"plan": {}, "offered": 3}"#, 400, "invalid_request", "the offered candidate set must be an object with \"candidates\" or an array of candidates"),
        (r#"{"plan": {}, "offered": {"query": "x"}}"#, 400, "invalid_request", "the offered candidate set has no \"candidates\" field"),
        (r#"{"plan": {}, "offered": [{"nodeId": 3}]}"#, 400, "invalid_request", "offered candidates: [0].nodeId: invalid type: integer `3`"),
        (&big, 413, "body_too_large", "the body is over the limit of 65536 bytes"),
        (&long_note, 400, "invalid_request", "offered.0.note: value is longer than 200 characters"),
    ];
    for (body, status, code, message) in cases {
        let r = s.post_json("/v1/gate", body);
        error_is(&r, status, code);
        let got = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(got.starts_with(message), "{body:.80}: {got}");
    }
    let r = request(
        &url,
        "POST",
        Some("gate-token"),
        Some(("text/plain", good.as_str())),
    );
    error_is(&r, 415, "unsupported_media_type");
    error_is(&s.get("/v1/gate"), 405, "method_not_allowed");

    // Never a 5xx; /readyz answered 503 only while the index loaded.
    let m = no_server_errors(&s);
    assert!(
        m.contains(
            r#"toolrag_http_requests_total{route="/v1/gate",method="POST",status="400"} 12"#
        ),
        "{m}"
    );
}
