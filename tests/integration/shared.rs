//! Checks against the team's shared folder, which a clone of this repository
//! does not have beside it: metric parity with its `eval/score.py`, its
//! datasets in `data/` loading with their ids (and their queries naming
//! those ids), and its copy of the Khipu schema in `spec/`.
//!
//! They are ignored by default, so that `make test` needs nothing outside the
//! repository; `make check-shared` runs them (`cargo test --test integration
//! shared:: -- --ignored`), with `TOOLRAG_SHARED` naming the folder (default
//! `../shared`). A missing folder fails them, it never skips them.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolrag::eval::{load_queries, score_rankings};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::khipu;

use crate::common::{fixture, jsonl_ids, root, stdout_json, toolrag};
use crate::eval::{
    assert_same, read_rankings, report_rankings, shipped_golden, GOLDEN, RECORDED_SCORES,
};

/// `rel` in the shared folder: `$TOOLRAG_SHARED` (relative to the repository),
/// else `../shared`.
fn shared(rel: &str) -> PathBuf {
    let dir = std::env::var_os("TOOLRAG_SHARED").map_or_else(
        || root().join("../shared"),
        |d| root().join(PathBuf::from(d)),
    );
    let p = dir.join(rel);
    assert!(
        p.exists(),
        "{} is missing: these checks need the team's shared folder \
         (set TOOLRAG_SHARED, default ../shared); `make test` does not",
        p.display()
    );
    p
}

/// `score.py QUERIES RANKINGS --json -`, parsed.
fn python_scores(queries: &Path, rankings: &Path) -> Value {
    let o = std::process::Command::new("python3")
        .arg(shared("eval/score.py"))
        .arg(queries)
        .arg(rankings)
        .args(["--json", "-"])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
#[ignore = "needs the team's shared folder: make check-shared"]
fn metrics_match_score_py_on_the_fixture() {
    let (q, r) = (
        fixture("eval/queries.jsonl"),
        fixture("eval/rankings.jsonl"),
    );
    let queries = load_queries(&q).unwrap();
    let rust = serde_json::to_value(score_rankings(&queries, &read_rankings(&r))).unwrap();
    let python = python_scores(&q, &r);
    assert_same(&rust, &python, "$");
    // The figures `make test` checks against are still score.py's.
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(RECORDED_SCORES)).unwrap()).unwrap();
    assert_same(&recorded, &python, "$");
}

#[test]
#[ignore = "needs the team's shared folder: make check-shared"]
fn golden_eval_scores_match_score_py() {
    // End to end: the golden eval's own rankings of tools/, scored by score.py.
    let (code, report, stderr) = shipped_golden();
    assert_eq!(*code, 0, "{stderr}");
    let hybrid = &report["modes"][0];
    let dir = tempfile::tempdir().unwrap();
    let rankings = dir.path().join("rankings.jsonl");
    let lines: Vec<String> = report_rankings(hybrid)
        .into_iter()
        .map(|(id, r)| {
            serde_json::json!({"id": id, "ranked": r.ranked, "scores": [r.top1]}).to_string()
        })
        .collect();
    std::fs::write(&rankings, lines.join("\n")).unwrap();
    let python = python_scores(&root().join(GOLDEN), &rankings);
    assert_same(&hybrid["scores"], &python, "$");
}

#[test]
#[ignore = "needs the team's shared folder: make check-shared"]
fn every_dataset_loads_with_its_ids_and_its_queries_name_them() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(shared("data")).unwrap() {
        let dir = entry.unwrap().path();
        let tools = dir.join("tools.jsonl");
        if !tools.is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let reg = Registry::load(std::slice::from_ref(&tools), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<&str> = reg.tools().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(got, jsonl_ids(&tools), "{name}: every line, under its id");
        // Every id a labelled query names is a tool of its registry.
        for q in load_queries(&dir.join("queries.jsonl")).unwrap() {
            for id in q.groups.iter().flatten() {
                assert!(reg.get(id).is_some(), "{name} {}: no tool {id}", q.id);
            }
        }
        seen.push((name, reg.len()));
    }
    seen.sort();
    assert!(
        seen.contains(&("bfcl".to_string(), 3258)),
        "bfcl is there, with its 3,258 tools: {seen:?}"
    );
}

#[test]
#[ignore = "needs the team's shared folder: make check-shared"]
fn tools_list_json_gives_the_bfcl_ids() {
    let rows: Vec<Value> = stdout_json(
        toolrag()
            .args(["tools", "list"])
            .arg(shared("data/bfcl/tools.jsonl"))
            .args(["--format", "json"]),
    );
    assert_eq!(rows.len(), 3258);
    assert_eq!(rows[0]["id"], "determine_body_mass_index#ab2e0d91");
}

#[test]
#[ignore = "needs the team's shared folder: make check-shared"]
fn the_khipu_schema_is_the_teams_copy() {
    let teams = std::fs::read_to_string(shared("spec/khipu-plan.schema.json")).unwrap();
    assert_eq!(
        khipu::PLAN_SCHEMA,
        teams,
        "spec/khipu-plan.schema.json is the team's current schema"
    );
}
