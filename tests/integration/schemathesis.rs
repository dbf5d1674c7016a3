//! Schemathesis (from PyPI, pinned in tests/schemathesis-requirements.txt)
//! against a running `toolrag serve` and its own `/openapi.json`, with every
//! check, for a bounded time: any finding (a 5xx, a status or body the
//! document does not allow, valid data refused, invalid data accepted) fails.
//! The server plans with the scripted plan model (tests/planner_scripted.py),
//! which always abstains, so that `POST /v1/plan` answers valid requests
//! with 200 rather than 501.

use std::path::PathBuf;
use std::process::Command;

use crate::common::root;
use crate::scripted::Scripted;
use crate::server::harness::{index_copy, Server};

/// The venv `make schemathesis` sets up; `TOOLRAG_SCHEMATHESIS` overrides the
/// `st` executable.
fn st() -> PathBuf {
    let p = std::env::var_os("TOOLRAG_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/schemathesis-venv/bin/st"));
    // `make test` sets the venv up first; a missing tool fails, it never skips.
    assert!(
        p.exists(),
        "{} is missing: run `make schemathesis` (a venv with schemathesis from PyPI)",
        p.display()
    );
    p
}

/// Seconds of generated requests (schemathesis' `--max-time`).
const SECONDS: &str = "60";

#[test]
fn schemathesis_finds_nothing_against_the_openapi_document() {
    let index = index_copy();
    let model = Scripted::start(serde_json::json!([{ "plan": {
        "decision": "ABSTAIN", "steps": [], "citedNodeIds": [],
        "abstainReason": "a stand-in plan model abstains",
    }}]));
    let s = Server::start(index.path(), &["--planner", &model.url]);
    let report = tempfile::tempdir().unwrap();
    let out = Command::new(st())
        .current_dir(report.path())
        .arg("--config-file")
        .arg(root().join("tests/schemathesis.toml"))
        .args(["run", &s.url("/openapi.json")])
        .args(["--checks", "all", "--max-time", SECONDS, "--workers", "2"])
        .args(["--seed", "19", "--request-timeout", "20"])
        .args(["--generation-database", "none", "--no-color"])
        .output()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::server::no_server_errors(&s);
}
