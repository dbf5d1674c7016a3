//! The scripted OpenAI-compatible plan model (tests/planner_scripted.py) that
//! the plan loop's tests talk to: `toolrag plan`, `POST /v1/plan`, schemathesis.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::common::root;

/// The scripted plan model, killed on drop.
pub struct Scripted {
    child: Child,
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Scripted {
    /// Starts it with `answers` (see tests/planner_scripted.py).
    pub fn start(answers: Value) -> Scripted {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, answers.to_string()).unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(root().join("tests/planner_scripted.py"))
            .arg(&script)
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("http://"),
            "the scripted server said {line:?}"
        );
        Scripted {
            child,
            url: line.trim().to_string(),
            log,
            _dir: dir,
        }
    }

    /// The requests received, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A judgment citing `handle`, as the scripted server answers it.
pub fn navigate(handle: &str) -> Value {
    json!({ "plan": {
        "decision": "NAVIGATE",
        "steps": [{ "action": "CITE", "nodeId": handle, "rationale": "it answers the request" }],
        "citedNodeIds": [handle],
        "abstainReason": null,
    }})
}
