//! `toolrag eval`: the metrics on a fixture (the team's scorer's figures,
//! recorded), the golden regression check on tools/ (real model), and its
//! failure on a degraded docstring. Parity with the team's scorer itself is in
//! `shared`, run by `make check-shared`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;
use toolrag::eval::{load_queries, score_query, score_rankings, Ranking};

use crate::common::{fixture, root, shipped_tools, toolrag};

pub(crate) const GOLDEN: &str = "tests/golden/tools-queries.jsonl";

/// Asserts that `got` has the keys of `want` and its numbers within 1e-9
/// (`null` stands for NaN and infinities on both sides).
pub(crate) fn assert_same(got: &Value, want: &Value, path: &str) {
    match (got, want) {
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
            assert!((a - b).abs() <= 1e-9, "{path}: got {a}, want {b}");
        }
        _ => assert_eq!(got, want, "at {path}"),
    }
}

pub(crate) fn read_rankings(path: &Path) -> HashMap<String, Ranking> {
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

/// What the team's scorer, `score.py`, reports on the eval fixture, recorded
/// (`make check-shared` checks that it still does).
pub(crate) const RECORDED_SCORES: &str = "eval/scores.json";

#[test]
fn metrics_on_the_fixture_match_the_recorded_score_py_figures() {
    let (q, r) = (
        fixture("eval/queries.jsonl"),
        fixture("eval/rankings.jsonl"),
    );
    let queries = load_queries(&q).unwrap();
    let rust = serde_json::to_value(score_rankings(&queries, &read_rankings(&r))).unwrap();
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(RECORDED_SCORES)).unwrap()).unwrap();
    assert_same(&rust, &recorded, "$");
    // The fixture exercises what it is meant to: a missing ranking, multi-need
    // queries, and the abstain analysis.
    assert_eq!(rust["n_missing"], 1);
    assert_eq!(rust["by_kind"]["multi"]["n"], 4);
    assert!(rust["abstain"]["auroc"].is_number());

    // Two of its queries, worked out by hand. q02: its one need is met by an
    // alternative id at rank 2.
    let groups = |id: &str| queries.iter().find(|q| q.id == id).unwrap().groups.clone();
    let m = score_query(&groups("q02"), &["x", "b2", "b"]);
    assert_eq!(
        (m.recall_at_1, m.recall_at_5, m.complete_at_10),
        (0.0, 1.0, 1.0)
    );
    assert_eq!(m.mrr_at_10, 0.5);
    assert!((m.ndcg_at_10 - 1.0 / 3f64.log2()).abs() < 1e-12);
    // q05: three needs, met at ranks 6, 7 and 11 (beyond the cut).
    let ranked = [
        "x1", "x2", "x3", "x4", "x5", "g", "f", "x6", "x7", "x8", "h",
    ];
    let m = score_query(&groups("q05"), &ranked);
    assert_eq!((m.recall_at_1, m.recall_at_5), (0.0, 0.0));
    assert!((m.recall_at_10 - 2.0 / 3.0).abs() < 1e-12);
    assert!((m.mrr_at_10 - 1.0 / 6.0).abs() < 1e-12);
    assert_eq!(m.complete_at_10, 0.0);
    let dcg = 1.0 / 7f64.log2() + 1.0 / 8f64.log2();
    let ideal = 1.0 + 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
    assert!((m.ndcg_at_10 - dcg / ideal).abs() < 1e-12);
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
pub(crate) fn golden_eval(registry: &Path, mins: &[String]) -> (i32, Value, String) {
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
pub(crate) fn shipped_golden() -> &'static (i32, Value, String) {
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

    // The report's scores are those of its own rankings: scoring what each
    // query retrieved (and its confidence) gives the same numbers.
    let queries = load_queries(&root().join(GOLDEN)).unwrap();
    let rescored =
        serde_json::to_value(score_rankings(&queries, &report_rankings(hybrid))).unwrap();
    assert_same(&hybrid["scores"], &rescored, "$");
}

/// A mode report's rankings, as `score.py` reads a rankings file: each
/// query's retrieved ids, and its confidence as the top-1 score.
pub(crate) fn report_rankings(mode: &Value) -> HashMap<String, Ranking> {
    mode["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let ranked: Vec<String> = serde_json::from_value(q["ranked"].clone()).unwrap();
            let top1 = q["confidence"].as_f64();
            (
                q["id"].as_str().unwrap().to_string(),
                Ranking { ranked, top1 },
            )
        })
        .collect()
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
