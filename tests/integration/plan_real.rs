//! `toolrag plan` with a real plan model: the llama.cpp-based server and the
//! small instruct model that `make planner` installs, started here on a free
//! port. One server serves both checks, since loading the model is the slow part.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{installed, root, toolrag, tools_index as index};

/// A request the shipped registry serves with one clear tool.
const REQUEST: &str = "read the text file /etc/hosts";

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `scripts/planner-server` on a free port; its first line is the base URL,
/// printed once the model answers.
fn start() -> (Server, String) {
    installed("target/planner/.installed", "make planner");
    let mut child = Command::new(root().join("scripts/planner-server"))
        .current_dir(root())
        .stdout(Stdio::piped())
        .spawn()
        .expect("scripts/planner-server runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Server(child);
    assert!(line.starts_with("http://"), "planner-server said {line:?}");
    (server, line.trim().to_string())
}

fn run_plan(url: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let out = toolrag()
        // A loaded CI machine can take minutes for a free-form answer: the
        // test is about the loop, not the model's speed.
        .args(["plan", REQUEST, "-k", "5", "--planner-timeout", "900"])
        .args(["--planner", url, "--index"])
        .arg(index())
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {stderr} {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), v, stderr)
}

/// The handles of the plan's candidates: exactly what retrieval offered.
fn offered_handles(plan: &Value) -> Vec<String> {
    plan["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["nodeId"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_real_model_plans_over_the_offered_tools_and_the_gate_holds() {
    let (_server, url) = start();

    // 1. Constrained by the request's schema: the plan lands, cites only
    //    offered handles, and the gate passed it.
    let (code, v, stderr) = run_plan(&url, &[]);
    assert_eq!(code, Some(0), "no plan landed: {v:#}\n{stderr}");
    assert_eq!(v["verdict"]["valid"], true);
    let attempts = v["attempts"].as_u64().unwrap();
    assert!((1..=3).contains(&attempts));
    let plan = &v["plan"];
    assert_eq!(plan["provenance"], "MODEL_PROPOSED");
    let offered = offered_handles(plan);
    assert_eq!(offered.len(), 5);
    for cited in plan["citedNodeIds"].as_array().unwrap() {
        assert!(
            offered.contains(&cited.as_str().unwrap().to_string()),
            "{cited} not offered"
        );
    }
    eprintln!(
        "constrained: {} after {attempts} attempt(s), cited {}",
        plan["decision"], plan["citedNodeIds"]
    );

    // 2. Without the constraint the model may write anything; whatever it
    //    writes, no plan that cites a handle not offered reaches the caller.
    let (code, v, stderr) = run_plan(&url, &["--no-constrain", "--max-retry", "1"]);
    match code {
        Some(0) => {
            assert_eq!(v["verdict"]["valid"], true);
            let offered = offered_handles(&v["plan"]);
            for cited in v["plan"]["citedNodeIds"].as_array().unwrap() {
                assert!(offered.contains(&cited.as_str().unwrap().to_string()));
            }
            eprintln!("free: landed after {} attempt(s)", v["attempts"]);
        }
        Some(1) => {
            let history = v["history"].as_array().unwrap();
            assert_eq!(history.len(), 2);
            for a in history {
                assert!(!a["verdict"]["violations"].as_array().unwrap().is_empty());
            }
            let codes: Vec<&Value> = history
                .iter()
                .flat_map(|a| a["verdict"]["violations"].as_array().unwrap())
                .map(|x| &x["code"])
                .collect();
            eprintln!("free: the gate caught every attempt: {codes:?}");
        }
        other => panic!("exit {other:?}: {stderr}"),
    }
}
