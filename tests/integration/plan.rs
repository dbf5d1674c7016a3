//! `toolrag plan` against a scripted OpenAI-compatible server: repairs, the
//! retry budget, exit codes, the request's schema, the key, format fallback.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{stdout_json, toolrag, tools_index as index};
use crate::scripted::{navigate, Scripted};

/// The request every test here plans for.
const REQUEST: &str = "show me what I changed in my git working tree";

/// The handles `toolrag plan` offers for [`REQUEST`] (k = 5, hybrid).
fn offered() -> &'static Vec<String> {
    static IDS: OnceLock<Vec<String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let set: Value = stdout_json(
            toolrag()
                .args(["query", REQUEST, "-k", "5", "--format", "khipu", "--index"])
                .arg(index()),
        );
        set["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["nodeId"].as_str().unwrap().to_string())
            .collect()
    })
}

/// `toolrag plan REQUEST --index … --planner URL` and `extra`, with no key.
fn plan_with(server: &Scripted, extra: &[&str]) -> std::process::Output {
    toolrag()
        .env_remove("TOOLRAG_PLANNER_API_KEY")
        .args(["plan", REQUEST, "--planner", &server.url, "--index"])
        .arg(index())
        .args(extra)
        .output()
        .unwrap()
}

/// The last user message of a request body.
fn last_user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn json_out(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_citation_of_a_handle_not_offered_is_sent_back_by_name_and_the_repair_lands() {
    let good = &offered()[0];
    let server = Scripted::start(json!([navigate("tool://nowhere/made_up"), navigate(good)]));
    let out = plan_with(&server, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_out(&out);
    assert_eq!(v["attempts"], 2);
    assert_eq!(v["verdict"]["valid"], true);
    assert_eq!(v["plan"]["citedNodeIds"], json!([good]));
    assert_eq!(v["plan"]["provenance"], "MODEL_PROPOSED");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let feedback = last_user_message(&reqs[1]["body"]);
    assert!(
        feedback.contains("\"tool://nowhere/made_up\""),
        "{feedback}"
    );
    assert!(feedback.contains("not offered"), "{feedback}");
    // The repair conversation carries the model's own rejected answer.
    let messages = reqs[1]["body"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert!(messages[2]["content"].as_str().unwrap().contains("made_up"));
}

#[test]
fn three_bad_plans_with_max_retry_2_exit_1_after_exactly_3_requests() {
    let server = Scripted::start(json!([navigate("tool://nowhere/made_up")]));
    let out = plan_with(&server, &["--max-retry", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.requests().len(), 3);
    let v = json_out(&out);
    assert_eq!(v["attempts"], 3);
    assert_eq!(v["verdict"]["valid"], false);
    let history = v["history"].as_array().unwrap();
    assert_eq!(history.len(), 3);
    for a in history {
        assert_eq!(a["verdict"]["violations"][0]["code"], "not-offered", "{a}");
    }
    // The human form names every attempt's violations too.
    let out = plan_with(&server, &["--max-retry", "0", "--format", "human"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("attempt 1: rejected"), "{text}");
    assert!(text.contains("not-offered at /steps/0/nodeId"), "{text}");
    assert!(text.contains("aborted"), "{text}");
}

#[test]
fn text_that_is_not_json_is_repaired() {
    let server = Scripted::start(json!([
        { "content": "Sure! I would use the git status tool." },
        navigate(&offered()[0]),
    ]));
    let out = plan_with(&server, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_out(&out)["attempts"], 2);
    let feedback = last_user_message(&server.requests()[1]["body"]);
    assert!(feedback.contains("not JSON"), "{feedback}");
}

#[test]
fn an_abstain_plan_with_its_reason_is_a_plan() {
    let server = Scripted::start(json!([{ "plan": {
        "decision": "ABSTAIN", "steps": [], "citedNodeIds": [],
        "abstainReason": "no offered tool books flights",
    }}]));
    let out = plan_with(&server, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_out(&out);
    assert_eq!(v["attempts"], 1);
    assert_eq!(v["plan"]["decision"], "ABSTAIN");
    assert_eq!(v["plan"]["abstainReason"], "no offered tool books flights");
    assert_eq!(v["plan"]["candidates"].as_array().unwrap().len(), 5);
}

#[test]
fn an_unreachable_planner_exits_2_within_seconds() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let out = toolrag()
        .args(["plan", REQUEST, "--planner", &url, "--index"])
        .arg(index())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{url}/chat/completions")), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn an_http_error_exits_2_at_once_naming_the_status() {
    let server = Scripted::start(json!([{ "status": 503, "body": "loading model" }]));
    let out = plan_with(&server, &["--max-retry", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        server.requests().len(),
        1,
        "no retry is spent on a broken planner"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HTTP 503"), "{err}");
    assert!(err.contains(&server.url), "{err}");
}

#[test]
fn the_requests_schema_names_every_offered_handle() {
    let server = Scripted::start(json!([navigate(&offered()[0])]));
    let out = plan_with(&server, &[]);
    assert_eq!(out.status.code(), Some(0));
    let body = &server.requests()[0]["body"];
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    let schema = &rf["json_schema"]["schema"];
    let navigate = &schema["anyOf"][0]["properties"];
    let want = json!(offered());
    assert_eq!(navigate["citedNodeIds"]["items"]["enum"], want);
    assert_eq!(
        navigate["steps"]["items"]["properties"]["nodeId"]["enum"],
        want
    );
    assert_eq!(
        schema["anyOf"][1]["properties"]["decision"]["enum"],
        json!(["ABSTAIN"])
    );
    // The user message offers the same handles.
    let user = last_user_message(body);
    for h in offered() {
        assert!(user.contains(h.as_str()), "{h} missing from {user}");
    }
}

#[test]
fn without_constraint_no_response_format_is_sent() {
    let server = Scripted::start(json!([navigate(&offered()[0])]));
    let out = plan_with(&server, &["--no-constrain"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(server.requests()[0]["body"]
        .get("response_format")
        .is_none());
}

#[test]
fn a_server_that_refuses_json_schema_is_asked_with_json_object_and_told_once() {
    let server = Scripted::start(json!([
        { "refuse_format": "json_schema" },
        navigate(&offered()[0]),
    ]));
    let out = plan_with(&server, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["body"]["response_format"]["type"], "json_schema");
    let rf = &reqs[1]["body"]["response_format"];
    assert_eq!(rf["type"], "json_object");
    assert!(rf["schema"]["anyOf"].is_array());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("refused response_format").count(), 1, "{err}");
    assert_eq!(
        json_out(&out)["attempts"],
        1,
        "a refused format is not an attempt"
    );
}

#[test]
fn the_key_is_sent_as_a_bearer_token_and_never_printed() {
    let key = "sk-test-7c1f0e9a-never-print-me";
    let server = Scripted::start(json!([
        { "content": "no json here" },
        navigate(&offered()[0]),
    ]));
    let out = toolrag()
        .env("TOOLRAG_PLANNER_API_KEY", key)
        .env("TOOLRAG_LOG", "trace")
        .args([
            "plan",
            REQUEST,
            "--planner",
            &server.url,
            "--format",
            "human",
            "--index",
        ])
        .arg(index())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    for r in server.requests() {
        assert_eq!(r["headers"]["authorization"], format!("Bearer {key}"));
    }
    let printed = [out.stdout, out.stderr].concat();
    assert!(!String::from_utf8_lossy(&printed).contains(key));
    // An error names the URL, never the key.
    let failing = Scripted::start(json!([{ "status": 401, "body": "bad key" }]));
    let out = toolrag()
        .env("TOOLRAG_PLANNER_API_KEY", key)
        .env("TOOLRAG_LOG", "trace")
        .args(["plan", REQUEST, "--planner", &failing.url, "--index"])
        .arg(index())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let printed = [out.stdout, out.stderr].concat();
    let printed = String::from_utf8_lossy(&printed);
    assert!(printed.contains("HTTP 401"), "{printed}");
    assert!(!printed.contains(key));
}

#[test]
fn bad_options_are_refused_before_anything_is_sent() {
    for (args, says) in [
        (vec!["--planner", "127.0.0.1:8080"], "http:// or https://"),
        (
            vec!["--planner", "http://127.0.0.1:9/v1", "-k", "0"],
            "-k must be at least 1",
        ),
        (
            vec![
                "--planner",
                "http://127.0.0.1:9/v1",
                "--planner-timeout",
                "0",
            ],
            "--planner-timeout",
        ),
        (
            vec![
                "--planner",
                "http://127.0.0.1:9/v1",
                "--prompt",
                "/nonexistent/prompt.txt",
            ],
            "/nonexistent/prompt.txt",
        ),
    ] {
        let out = toolrag()
            .args(["plan", REQUEST, "--index"])
            .arg(index())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_request_nothing_matches_is_refused_without_asking_the_model() {
    let server = Scripted::start(json!([navigate("tool://nowhere/made_up")]));
    let out = toolrag()
        .args([
            "plan",
            "zzqxj vvbnmw",
            "--mode",
            "lexical",
            "--planner",
            &server.url,
            "--index",
        ])
        .arg(index())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to plan over"), "{err}");
    assert!(server.requests().is_empty(), "the model was asked");
}

#[test]
fn a_prompt_file_replaces_the_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.txt");
    std::fs::write(&prompt, "You are a careful router. JSON only.").unwrap();
    let server = Scripted::start(json!([navigate(&offered()[0])]));
    let out = plan_with(&server, &["--prompt", prompt.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let body = &server.requests()[0]["body"];
    assert_eq!(
        body["messages"][0]["content"],
        "You are a careful router. JSON only."
    );
}

#[test]
fn plan_help_teaches() {
    let out = toolrag().args(["plan", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Examples:",
        "--planner <URL>",
        "--max-retry",
        "--no-constrain",
        "TOOLRAG_PLANNER_API_KEY",
        "Exit status",
    ] {
        assert!(help.contains(want), "missing {want:?} in\n{help}");
    }
}
