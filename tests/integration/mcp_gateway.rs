//! `toolrag mcp --upstream` (the gateway), driven by the official Python MCP
//! client (tests/mcp_gateway_client.py) in front of real reference servers
//! (npm and PyPI, installed by `make mcp-client mcp-servers`) and the
//! fixture server of tests/mcp_gateway_fixture.py, with the real model.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::{installed, root};

fn python() -> PathBuf {
    installed("target/mcp-venv/bin/python", "make mcp-client")
}

/// A temporary folder with an upstream configuration, a state file for the
/// fixture server, and where the gateway keeps its index, lock and audit log.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// The fixture server alone, started with `state` as its state file.
    fn fixture(state: Value) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let s = Setup { dir };
        std::fs::write(s.state(), state.to_string()).unwrap();
        let fixture = root().join("tests/mcp_gateway_fixture.py");
        s.write_upstream(json!({"mcpServers": {"fixture": {
            "command": python(), "args": [fixture, "--state", s.state()]}}}));
        s
    }

    /// The real reference servers as the upstream: time (PyPI), memory and
    /// filesystem (npm, serving the temporary folder).
    fn reference_servers() -> Setup {
        let s = Setup::fixture(json!({}));
        let time = installed("target/mcp-venv/bin/mcp-server-time", "make mcp-client");
        let npm = |bin: &str| {
            installed(
                &format!("target/mcp-npm/node_modules/.bin/{bin}"),
                "make mcp-servers",
            )
        };
        s.write_upstream(json!({"mcpServers": {
            "time": {"command": time, "args": ["--local-timezone", "UTC"]},
            "memory": {"command": npm("mcp-server-memory"),
                       "env": {"MEMORY_FILE_PATH": s.path("memory.jsonl")}},
            "filesystem": {"command": npm("mcp-server-filesystem"), "args": [s.dir.path()]},
        }}));
        s
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn state(&self) -> PathBuf {
        self.path("state.json")
    }

    fn upstream(&self) -> PathBuf {
        self.path("upstream.json")
    }

    fn index(&self) -> PathBuf {
        self.path("gw-index")
    }

    fn write_upstream(&self, config: Value) {
        std::fs::write(
            self.upstream(),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }

    fn write_config(&self, toml: &str) -> PathBuf {
        let p = self.path("toolrag.toml");
        std::fs::write(&p, toml).unwrap();
        p
    }

    /// Runs one scenario of the Python client; its JSON summary.
    fn scenario(&self, name: &str, config: Option<&Path>) -> Value {
        let out = self.run_client(name, config);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "scenario {name} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim()).expect("one JSON line")
    }

    fn run_client(&self, name: &str, config: Option<&Path>) -> Output {
        let mut cmd = Command::new(python());
        cmd.current_dir(root())
            .arg(root().join("tests/mcp_gateway_client.py"))
            .arg(name)
            .arg("--binary")
            .arg(env!("CARGO_BIN_EXE_toolrag"))
            .arg("--upstream")
            .arg(self.upstream())
            .arg("--index")
            .arg(self.index())
            .arg("--state")
            .arg(self.state())
            .arg("--dir")
            .arg(self.dir.path());
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        cmd.output().expect("python runs")
    }

    /// `toolrag mcp --upstream ... --index ...` with `extra` flags.
    fn toolrag(&self, extra: &[&str]) -> Output {
        crate::common::toolrag()
            .arg("mcp")
            .arg("--upstream")
            .arg(self.upstream())
            .arg("--index")
            .arg(self.index())
            .args(extra)
            .output()
            .unwrap()
    }

    /// The audit log's records.
    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("gw-index.audit.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn decisions(&self, tool: &str) -> Vec<(String, String)> {
        self.audit()
            .into_iter()
            .filter(|r| r["event"] == "decision" && r["tool"] == tool)
            .map(|r| {
                (
                    r["decision"].as_str().unwrap().to_string(),
                    r["decidedBy"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

#[test]
fn real_servers_are_searched_read_and_called_through_the_gateway() {
    let s = Setup::reference_servers();
    std::fs::write(s.path("hello.txt"), "hi").unwrap();
    let summary = s.scenario("real", None);
    assert!(
        summary["time"].as_str().unwrap().contains("Asia/Tokyo"),
        "{summary}"
    );
    assert_eq!(
        summary["asked"], 1,
        "delete_entities was approved by the person: {summary}"
    );
    // The approval and the calls that needed none are in the audit log.
    assert_eq!(
        s.decisions("memory/delete_entities"),
        [("approved".to_string(), "person (elicitation)".to_string())]
    );
    assert_eq!(
        s.decisions("memory/create_entities"),
        [(
            "allowed".to_string(),
            "annotations: no approval needed".to_string()
        )]
    );
    let read = s.decisions("time/get_current_time");
    assert_eq!(read[0].0, "allowed", "{read:?}");
    // The lock file pinned every tool it saw.
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("gw-index.lock.json")).unwrap())
            .unwrap();
    assert!(
        lock["tools"]["filesystem/read_text_file"]["sha256"].is_string(),
        "{lock}"
    );
}

#[test]
fn a_tool_added_upstream_becomes_searchable_without_a_failed_request() {
    let s = Setup::fixture(json!({}));
    let summary = s.scenario("sync", None);
    assert_eq!(summary["failures"], 0, "{summary}");
    assert!(summary["searches"].as_u64().unwrap() > 0, "{summary}");
}

#[test]
fn a_poisoned_tool_is_quarantined_and_check_lists_it() {
    let s = Setup::fixture(json!({"poison": true}));
    let check = s.toolrag(&["--check"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("quarantined fixture/lookup_order"),
        "{stdout}"
    );
    assert!(stdout.contains("hidden-instructions"), "{stdout}");
    assert!(
        stdout.contains("1 tool quarantined, 0 servers failed"),
        "{stdout}"
    );
    s.scenario("quarantine", None);
    assert_eq!(
        s.decisions("fixture/lookup_order"),
        [("refused".to_string(), "gateway: quarantine".to_string())]
    );

    // A clean server passes the check.
    let clean = Setup::fixture(json!({}));
    let check = clean.toolrag(&["--check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn a_rug_pull_is_quarantined_until_a_person_accepts_it() {
    let s = Setup::fixture(json!({}));
    s.scenario("rug-pull", None);
    // The change is pinned only when a person accepts it.
    let check = s.toolrag(&["--check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stdout).contains("changed since it was pinned"));
    let accept = s.toolrag(&["--accept", "fixture/delete_note"]);
    assert!(
        accept.status.success(),
        "{}",
        String::from_utf8_lossy(&accept.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&accept.stdout).trim(),
        "accepted fixture/delete_note"
    );
    s.scenario("accepted", None);
    let unknown = s.toolrag(&["--accept", "fixture/nope"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no upstream tool `fixture/nope`"));
}

#[test]
fn an_approved_call_is_forwarded_and_logged() {
    let s = Setup::fixture(json!({}));
    let summary = s.scenario("approve", None);
    let question = summary["question"].as_str().unwrap();
    assert!(question.contains("destructive"), "{question}");
    assert_eq!(
        s.decisions("fixture/delete_note"),
        [("approved".to_string(), "person (elicitation)".to_string())]
    );
    let record = s
        .audit()
        .into_iter()
        .find(|r| r["tool"] == "fixture/delete_note")
        .unwrap();
    assert_eq!(record["server"], "fixture");
    assert_eq!(record["argumentsSha256"].as_str().unwrap().len(), 64);
    assert!(
        !s.audit()
            .iter()
            .any(|r| r.to_string().contains("groceries")),
        "arguments are hashed"
    );
}

#[test]
fn a_rejected_call_is_not_forwarded_and_the_model_is_told() {
    let s = Setup::fixture(json!({}));
    let summary = s.scenario("reject", None);
    assert!(
        summary["answer"].as_str().unwrap().contains("Do not retry"),
        "{summary}"
    );
    assert_eq!(
        s.decisions("fixture/delete_note"),
        [("rejected".to_string(), "person (elicitation)".to_string())]
    );
}

#[test]
fn without_elicitation_the_call_is_refused_until_allowed_in_the_config() {
    let s = Setup::fixture(json!({}));
    let refused = s.scenario("no-elicitation", None);
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["text"].as_str().unwrap();
    assert!(text.contains("allow = [\"fixture/delete_note\"]"), "{text}");
    assert!(text.contains("does not support elicitation"), "{text}");
    assert_eq!(refused["calls"], json!([]));
    assert_eq!(s.decisions("fixture/delete_note")[0].0, "refused");

    let config = s.write_config("[gateway]\nallow = [\"fixture/delete_note\"]\n");
    let allowed = s.scenario("no-elicitation", Some(&config));
    assert_eq!(allowed["isError"], false, "{allowed}");
    assert_eq!(allowed["text"], "deleted note groceries");
    assert_eq!(
        s.decisions("fixture/delete_note")[1],
        (
            "allowed".to_string(),
            "allow-list: fixture/delete_note".to_string()
        )
    );
}

#[test]
fn the_output_guard_marks_or_blocks_a_result_that_addresses_the_model() {
    let s = Setup::fixture(json!({}));
    let marked = s.scenario("output-guard", None);
    assert_eq!(marked["isError"], false, "{marked}");
    let texts = marked["texts"].as_array().unwrap();
    assert!(
        texts[0].as_str().unwrap().contains("not instructions"),
        "{marked}"
    );
    assert!(
        texts[1].as_str().unwrap().contains("Ignore all previous"),
        "the data itself is kept"
    );
    assert_eq!(marked["guard"]["action"], "marked");

    let config = s.write_config("[gateway]\noutput-guard = \"block\"\n");
    let blocked = s.scenario("output-guard", Some(&config));
    assert_eq!(blocked["isError"], true, "{blocked}");
    let text = blocked["texts"][0].as_str().unwrap();
    assert!(text.contains("withheld"), "{text}");
    assert!(!text.contains("Ignore all previous"), "{text}");
    let results: Vec<String> = s
        .audit()
        .into_iter()
        .filter(|r| r["event"] == "result")
        .map(|r| r["decision"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results, ["marked", "blocked"]);
}

#[test]
fn a_server_that_dies_is_restarted() {
    let s = Setup::fixture(json!({}));
    let summary = s.scenario("restart", None);
    assert!(
        summary["crash"].as_str().unwrap().contains("stopped"),
        "{summary}"
    );
}

#[test]
fn arguments_that_do_not_match_the_schema_are_refused_before_the_server() {
    let s = Setup::fixture(json!({}));
    let summary = s.scenario("invalid-arguments", None);
    let error = summary["error"].as_str().unwrap();
    assert!(error.contains("city"), "{error}");
    assert_eq!(s.decisions("fixture/get_weather")[0].0, "invalid-arguments");
}

#[test]
fn a_failing_server_is_named_with_its_stderr_and_the_log_has_no_colour_codes() {
    let s = Setup::fixture(json!({}));
    let fixture = root().join("tests/mcp_gateway_fixture.py");
    s.write_upstream(json!({"mcpServers": {
        "good": {"command": python(), "args": [fixture, "--state", s.state()]},
        "broken": {"command": python(), "args": ["-c", "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(4)"]},
    }}));
    let check = s.toolrag(&["--check"]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(
        check.status.code(),
        Some(1),
        "a failed server fails the check: {stderr}"
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("failed server broken"));
    assert!(stderr.contains("server `broken`"), "{stderr}");
    assert!(
        stderr.contains("boom: no config"),
        "its stderr is shown: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no ANSI escapes on a pipe: {stderr:?}"
    );
}

#[test]
fn two_gateways_on_one_index_folder_both_start() {
    // Two clients, one gateway each, the same fresh index folder: one builds,
    // the other waits for that build instead of failing on the build lock.
    let s = Setup::fixture(json!({}));
    let runs: Vec<Output> = std::thread::scope(|scope| {
        let a = scope.spawn(|| s.run_client("invalid-arguments", None));
        let b = scope.spawn(|| s.run_client("invalid-arguments", None));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    for out in runs {
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_streamable_http_server_is_searched_and_called_through_the_gateway() {
    let server = crate::mcp_import::HttpServer::start(&["--header", "X-Fixture-Token=sesame"]);
    let s = Setup::fixture(json!({}));
    // VS Code's format: `servers`, `"type": "http"`, and the header the server requires.
    s.write_upstream(json!({"servers": {"remote": {
        "type": "http", "url": server.url(), "headers": {"X-Fixture-Token": "sesame"}}}}));
    let summary = s.scenario("http", None);
    assert_eq!(
        summary["found"][0], "tool://remote/fixture_tool_03",
        "{summary}"
    );
    assert_eq!(s.decisions("remote/fixture_tool_03")[0].0, "allowed");
}

#[test]
fn learning_from_use_ranks_the_called_tool_first_and_forget_undoes_it() {
    let s = Setup::reference_servers();
    let summary = s.scenario("learn", None);
    // The Python client checked every step; the summary says what it saw.
    for (q, before) in summary["before"].as_object().unwrap() {
        assert!(before.as_u64().unwrap() > 1, "{q}: {summary}");
        assert_eq!(summary["after"][q], 1, "{q}: {summary}");
    }
    assert_eq!(
        summary["learnt"],
        json!(["memory/add_observations", "time/get_current_time"])
    );
}

#[test]
fn learning_can_be_turned_off_and_teachers_named() {
    let s = Setup::fixture(json!({}));
    let config = s.write_config("[gateway]\nrecord-usage = false\n");
    let out = s.run_client("sync", Some(&config));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!s.index().join("usage.jsonl").exists(), "nothing recorded");
    let config = s.write_config("[gateway]\nteachers = [\"\"]\n");
    let out = s.toolrag(&["--check", "--config", config.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("gateway.teachers"),
        "{err}"
    );
}
