//! `toolrag eval`: metric parity with ../shared/eval/score.py, the golden
//! regression check on tools/ (real model), and its failure on a degraded docstring.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;
use toolrag::eval::{load_queries, score_rankings, Ranking};

use crate::common::{fixture, root, shipped_tools, toolrag};

const GOLDEN: &str = "tests/golden/tools-queries.jsonl";

fn score_py() -> std::path::PathBuf {
    root().join("../shared/eval/score.py")
}

/// `score.py QUERIES RANKINGS --json -`, parsed.
fn python_scores(queries: &Path, rankings: &Path) -> Value {
    let o = std::process::Command::new("python3")
        .arg(score_py())
        .arg(queries)
        .arg(rankings)
        .args(["--json", "-"])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Asserts that two JSON trees have the same keys and numbers within 1e-9
/// (`null` stands for NaN and infinities on both sides).
fn assert_same(rust: &Value, python: &Value, path: &str) {
    match (rust, python) {
        (Value::Object(a), Value::Object(b)) => {
            let mut ka: Vec<&String> = a.keys().collect();
            let mut kb: Vec<&String> = b.keys().collect();
            ka.sort();
            kb.sort();
            assert_eq!(ka, kb, "keys differ at {path}");
            for (k, v) in a {
                assert_same(v, &b[k], &format!("{path}.{k}"));
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-9, "{path}: rust {a} != python {b}");
        }
        _ => assert_eq!(rust, python, "at {path}"),
    }
}

fn read_rankings(path: &Path) -> HashMap<String, Ranking> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let ranked: Vec<String> = serde_json::from_value(v["ranked"].clone()).unwrap();
            let top1 = v["scores"].get(0).and_then(Value::as_f64);
            (
                v["id"].as_str().unwrap().to_string(),
                Ranking { ranked, top1 },
            )
        })
        .collect()
}

#[test]
fn metrics_match_score_py_on_the_fixture() {
    let (q, r) = (
        fixture("eval/queries.jsonl"),
        fixture("eval/rankings.jsonl"),
    );
    let queries = load_queries(&q).unwrap();
    let rust = serde_json::to_value(score_rankings(&queries, &read_rankings(&r))).unwrap();
    let python = python_scores(&q, &r);
    assert_same(&rust, &python, "$");
    // The fixture exercises what it is meant to: a missing ranking, multi-need
    // queries, and the abstain analysis.
    assert_eq!(python["n_missing"], 1);
    assert_eq!(python["by_kind"]["multi"]["n"], 4);
    assert!(python["abstain"]["auroc"].is_number());
}

/// The `--min` flags that `make test` passes to the golden eval: the Makefile
/// is the one place the thresholds are written.
fn makefile_thresholds() -> Vec<String> {
    let makefile = std::fs::read_to_string(root().join("Makefile")).unwrap();
    let line = makefile
        .lines()
        .find(|l| l.contains("eval --queries") && l.contains(GOLDEN))
        .expect("the Makefile's test target runs the golden eval");
    let words: Vec<&str> = line.split_whitespace().collect();
    let mins: Vec<String> = words
        .windows(2)
        .filter(|w| w[0] == "--min")
        .map(|w| w[1].to_string())
        .collect();
    assert!(!mins.is_empty(), "the golden eval sets thresholds: {line}");
    mins
}

/// Runs the golden eval on `registry` in hybrid mode as JSON, with `mins`.
fn golden_eval(registry: &Path, mins: &[String]) -> (i32, Value, String) {
    let mut cmd = toolrag();
    cmd.args([
        "eval",
        "--queries",
        GOLDEN,
        "--modes",
        "hybrid",
        "--format",
        "json",
    ])
    .arg("--registry")
    .arg(registry);
    for m in mins {
        cmd.args(["--min", m]);
    }
    let o = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let json = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout is not JSON; stderr: {stderr}"));
    (o.status.code().unwrap_or(-1), json, stderr)
}

/// The golden eval of the shipped tools/ with the Makefile's thresholds; run once.
fn shipped_golden() -> &'static (i32, Value, String) {
    static RUN: OnceLock<(i32, Value, String)> = OnceLock::new();
    RUN.get_or_init(|| golden_eval(&shipped_tools(), &makefile_thresholds()))
}

#[test]
fn golden_queries_on_tools_pass_the_makefile_thresholds() {
    let (code, report, stderr) = shipped_golden();
    assert_eq!(*code, 0, "{stderr}");
    assert!(stderr.contains("check (hybrid)") && !stderr.contains("FAILED"));
    assert_eq!(report["unknownIds"].as_array().map(Vec::len), Some(0));
    let hybrid = &report["modes"][0];
    assert_eq!(hybrid["mode"], "hybrid");
    assert!(report["queries"].as_u64().unwrap() >= 80);
    assert!(report["none"].as_u64().unwrap() > 0);

    // End to end parity: the report's own rankings, scored by score.py.
    let dir = tempfile::tempdir().unwrap();
    let rankings = dir.path().join("rankings.jsonl");
    let lines: Vec<String> = hybrid["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            serde_json::json!({"id": q["id"], "ranked": q["ranked"], "scores": [q["confidence"]]})
                .to_string()
        })
        .collect();
    std::fs::write(&rankings, lines.join("\n")).unwrap();
    let python = python_scores(&root().join(GOLDEN), &rankings);
    assert_same(&hybrid["scores"], &python, "$");
}

/// Rewrites filesystem/read_text_file of a copy of tools/ to be about bananas.
fn degraded_tools() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for ns in std::fs::read_dir(shipped_tools()).unwrap() {
        let ns = ns.unwrap().path();
        if !ns.is_dir() {
            continue;
        }
        let to = dir.path().join(ns.file_name().unwrap());
        std::fs::create_dir(&to).unwrap();
        for f in std::fs::read_dir(&ns).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
    }
    std::fs::write(
        dir.path().join("filesystem/read_text_file.toml"),
        r#"name = "read_text_file"
title = "Banana ripeness"
summary = "Tell how ripe a banana is from the colour of its peel."
description = """
Looks at the peel of a banana, its colour and its brown spots, and says whether
it is green, ripe or overripe, and how many days are left for banana bread.
"""
tags = ["fruit", "banana"]

[input_schema]
type = "object"
required = ["colour"]
additionalProperties = false

[input_schema.properties.colour]
type = "string"
description = "The colour of the peel, like yellow with brown spots."

[[examples]]
request = "is my banana with brown spots ripe enough to eat?"
arguments = { colour = "yellow with brown spots" }

[[examples]]
request = "how long until these green bananas are ready for banana bread?"
arguments = { colour = "green" }
"#,
    )
    .unwrap();
    dir
}

#[test]
fn a_degraded_docstring_fails_the_check_and_names_its_queries() {
    // The baseline: the shipped tools/, and the golden queries that need
    // read_text_file and find it in the top 5 there.
    let (_, baseline, _) = shipped_golden();
    let hybrid = &baseline["modes"][0];
    let recall5 = hybrid["scores"]["all"]["recall@5"].as_f64().unwrap();
    let queries = load_queries(&root().join(GOLDEN)).unwrap();
    let found: Vec<&str> = queries
        .iter()
        .zip(hybrid["queries"].as_array().unwrap())
        .filter(|(q, _)| {
            q.groups
                .iter()
                .flatten()
                .any(|t| t == "filesystem/read_text_file")
        })
        .filter(|(_, o)| o["metrics"]["recall@5"] == 1.0)
        .map(|(q, _)| q.id.as_str())
        .collect();
    assert!(
        !found.is_empty(),
        "the baseline finds some read_text_file query in the top 5"
    );

    // Regression check at the baseline: the degraded registry misses it, exits
    // 1, and lists those queries with what came back instead.
    let reg = degraded_tools();
    let (code, _, stderr) = golden_eval(reg.path(), &[format!("recall@5={recall5}")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("recall@5 = "), "{stderr}");
    assert!(stderr.contains("FAILED"), "{stderr}");
    for id in &found {
        assert!(
            stderr.contains(&format!("  {id} (line ")),
            "{id} not listed:\n{stderr}"
        );
    }
    assert!(
        stderr.contains("expected:  filesystem/read_text_file ("),
        "{stderr}"
    );
    assert!(stderr.contains("retrieved: "), "{stderr}");
}

#[test]
fn bad_input_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"id\": \"a\", \"query\": \"read a file\", \"relevant\": [\"filesystem/read_text_file\"]}\n{oops\n",
    )
    .unwrap();
    let o = toolrag()
        .args(["eval", "--modes", "lexical", "--queries"])
        .arg(&q)
        .arg("--registry")
        .arg(shipped_tools())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("q.jsonl:2: invalid query"), "{stderr}");

    let o = toolrag()
        .args(["eval", "--queries", GOLDEN, "--min", "recall@3=0.5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown metric"));
}

#[test]
fn lexical_only_eval_skips_dense_modes_and_renders_markdown() {
    let o = toolrag()
        .args([
            "eval",
            "--queries",
            GOLDEN,
            "--format",
            "markdown",
            "--modes",
            "lexical,dense",
        ])
        .arg("--index")
        .arg(lexical_index().path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("| lexical | "), "{stdout}");
    assert!(!stdout.contains("| dense | "), "{stdout}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("skipped dense mode"));
}

fn lexical_index() -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let o = toolrag()
        .args(["index", "--lexical-only", "--out"])
        .arg(out.path())
        .arg(shipped_tools())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}
