//! `POST /v1/plan` on `toolrag serve --planner URL`, against the scripted
//! OpenAI-compatible server (tests/planner_scripted.py): a repaired plan, a
//! spent budget, a planner that cannot be asked, no planner, concurrent plans
//! beside searches, and the key kept out of the server's log.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{stdout_json, toolrag};
use crate::scripted::{navigate, Scripted};
use crate::server::harness::{index_copy, Resp, Server};
use crate::server::{conforms, error_is, no_server_errors};

/// The request every test here plans for.
const REQUEST: &str = "show me what I changed in my git working tree";

/// `toolrag serve` with `--planner url` and `extra`, on a copy of the index.
fn serve(url: &str, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let index = index_copy();
    let mut args = vec!["--planner", url];
    args.extend_from_slice(extra);
    (Server::start(index.path(), &args), index)
}

/// The first handle offered for [`REQUEST`] (k = 5, hybrid), as `toolrag
/// query --format khipu` retrieves it from the index the servers serve.
fn first_offered() -> &'static str {
    static FIRST: OnceLock<String> = OnceLock::new();
    FIRST.get_or_init(|| {
        let index = index_copy();
        let set: Value = stdout_json(
            toolrag()
                .args(["query", REQUEST, "-k", "5", "--format", "khipu", "--index"])
                .arg(index.path()),
        );
        set["candidates"][0]["nodeId"].as_str().unwrap().to_string()
    })
}

fn plan(s: &Server, body: Value) -> Resp {
    s.post_json("/v1/plan", &body.to_string())
}

/// A port nothing listens on: bound, then freed.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_citation_not_offered_is_repaired_and_the_plan_lands_past_the_request_timeout() {
    // The scripted model: a handle that was not offered, then (slower than
    // the server's 1 s request timeout) the first offered one.
    let good = first_offered();
    let model = Scripted::start(json!([
        navigate("tool://nowhere/made_up"),
        { "sleep": 1.2, "plan": navigate(good)["plan"] },
    ]));
    let (s, _index) = serve(&model.url, &["--timeout-ms", "1000"]);
    let r = plan(&s, json!({"query": REQUEST}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    conforms(&v, "Planned");
    assert_eq!(v["attempts"], 2);
    assert_eq!(v["verdict"]["valid"], true);
    assert_eq!(v["plan"]["citedNodeIds"], json!([good]));
    assert_eq!(v["plan"]["provenance"], "MODEL_PROPOSED");
    assert_eq!(v["plan"]["candidates"].as_array().unwrap().len(), 5);
    assert!(r
        .header("x-toolrag-generation")
        .unwrap()
        .starts_with("gen-"));
    // The repair prompt names the handle that was not offered.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    let feedback = reqs[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(feedback.contains("tool://nowhere/made_up"), "{feedback}");
    let m = no_server_errors(&s);
    assert!(
        m.contains(r#"toolrag_plans_total{outcome="passed"} 1"#),
        "{m}"
    );
}

#[test]
fn a_spent_budget_is_422_with_every_attempts_verdict() {
    let model = Scripted::start(json!([navigate("tool://nowhere/made_up")]));
    let (s, _index) = serve(&model.url, &["--max-retry", "2"]);
    let r = plan(&s, json!({"query": REQUEST, "k": 3}));
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "plan_aborted"),
        "{}",
        r.body
    );
    let v = r.json();
    conforms(&v, "PlanAborted");
    assert_eq!(v["attempts"], 3);
    assert_eq!(v["verdict"]["valid"], false);
    let history = v["history"].as_array().unwrap();
    assert_eq!(history.len(), 3);
    for (i, a) in history.iter().enumerate() {
        assert_eq!(a["attempt"], i + 1);
        assert_eq!(a["verdict"]["violations"][0]["code"], "not-offered", "{a}");
        assert!(a["answer"].as_str().unwrap().contains("made_up"));
    }
    assert_eq!(history[2]["verdict"], v["verdict"]);
    assert_eq!(model.requests().len(), 3);
    // A request asks for fewer repairs; more than the server's is lowered.
    let r = plan(&s, json!({"query": REQUEST, "maxRetry": 0}));
    assert_eq!((r.status, r.json()["attempts"].clone()), (422, json!(1)));
    let r = plan(&s, json!({"query": REQUEST, "maxRetry": 10}));
    assert_eq!((r.status, r.json()["attempts"].clone()), (422, json!(3)));
    assert_eq!(model.requests().len(), 3 + 1 + 3);
    error_is(
        &plan(&s, json!({"query": REQUEST, "maxRetry": 11})),
        400,
        "invalid_request",
    );
    // Nothing offered, nothing to plan over: the model is not asked.
    let r = plan(
        &s,
        json!({"query": REQUEST, "namespaces": ["no-such-server"]}),
    );
    error_is(&r, 404, "no_candidates");
    assert_eq!(model.requests().len(), 3 + 1 + 3);
    let m = no_server_errors(&s);
    assert!(
        m.contains(r#"toolrag_plans_total{outcome="aborted"} 3"#),
        "{m}"
    );
}

#[test]
fn a_planner_that_cannot_be_asked_is_502_or_504_at_once() {
    let url = format!("http://127.0.0.1:{}/v1", free_port());
    let (s, _index) = serve(&url, &["--max-retry", "2"]);
    let started = Instant::now();
    let r = plan(&s, json!({"query": REQUEST}));
    error_is(&r, 502, "planner_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The answer does not name the server's planner; its log does.
    assert!(!r.body.contains(&url), "{}", r.body);
    assert!(s.stderr().contains(&url), "{}", s.stderr());
    drop(s);

    // An HTTP error: at once, with no retry spent.
    let model = Scripted::start(json!([{ "status": 503, "body": "loading model" }]));
    let (s, _index) = serve(&model.url, &["--max-retry", "2"]);
    let r = plan(&s, json!({"query": REQUEST}));
    error_is(&r, 502, "planner_unavailable");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("HTTP 503"));
    assert_eq!(model.requests().len(), 1);
    drop(s);

    // Slower than --planner-timeout: 504.
    let model = Scripted::start(json!([{ "sleep": 5.0, "content": "late" }]));
    let (s, _index) = serve(&model.url, &["--planner-timeout", "1"]);
    let started = Instant::now();
    let r = plan(&s, json!({"query": REQUEST}));
    error_is(&r, 504, "planner_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn without_a_planner_the_route_says_how_to_configure_one() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let r = plan(&s, json!({"query": REQUEST}));
    error_is(&r, 501, "planner_not_configured");
    assert!(r.body.contains("--planner"), "{}", r.body);
    // A body that is no plan request is still a 400 first.
    error_is(&plan(&s, json!(["x"])), 400, "invalid_request");
    error_is(
        &plan(
            &s,
            json!({"query": REQUEST, "planner": "http://169.254.169.254/"}),
        ),
        400,
        "invalid_request",
    );
    error_is(&plan(&s, json!({"query": " "})), 400, "empty_query");
}

#[test]
fn eight_concurrent_plans_land_while_a_search_answers_at_once() {
    // Every answer takes 2 s: eight plans one after the other would take 16.
    let good = first_offered();
    let model = Scripted::start(json!([{ "sleep": 2.0, "plan": navigate(good)["plan"] }]));
    let (s, _index) = serve(&model.url, &[]);
    let started = Instant::now();
    let answers = std::thread::scope(|scope| {
        let plans: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| plan(&s, json!({"query": REQUEST}))))
            .collect();
        // While the plans wait on the model, a search is answered at once.
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        let r = s.post_json(
            "/v1/search",
            r#"{"query": "read the file /etc/hosts", "k": 3}"#,
        );
        let searched = t.elapsed();
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(
            searched < Duration::from_millis(1500),
            "search took {searched:?}"
        );
        plans
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for r in &answers {
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        assert_eq!(
            (v["attempts"].clone(), v["plan"]["citedNodeIds"].clone()),
            (json!(1), json!([good]))
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(model.requests().len(), 8);
    let m = no_server_errors(&s);
    assert!(
        m.contains(r#"toolrag_plans_total{outcome="passed"} 8"#),
        "{m}"
    );
}

#[test]
fn the_key_goes_to_the_planner_and_never_to_the_log_or_the_client() {
    let key = "sk-test-4b2d9e1f-never-log-me";
    let model = Scripted::start(json!([
        { "content": "no json here" },
        { "plan": { "decision": "ABSTAIN", "steps": [], "citedNodeIds": [], "abstainReason": "nothing fits" } },
        { "status": 401, "body": "bad key" },
    ]));
    let index = index_copy();
    let env = [("TOOLRAG_PLANNER_API_KEY", key), ("TOOLRAG_LOG", "trace")];
    let s = Server::start_env(index.path(), &["--planner", &model.url], &env);
    let r = plan(&s, json!({"query": REQUEST}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["plan"]["decision"], "ABSTAIN");
    assert_eq!(r.json()["attempts"], 2);
    let failed = plan(&s, json!({"query": REQUEST}));
    error_is(&failed, 502, "planner_unavailable");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r["headers"]["authorization"], format!("Bearer {key}"));
    }
    for said in [s.stderr(), r.body, failed.body] {
        assert!(!said.contains(key), "the key leaked: {said}");
    }
}
