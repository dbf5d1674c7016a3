//! `toolrag lint` and `toolrag rule` on the command line: exit codes 0/1/2,
//! the json, github and sarif formats (SARIF checked against the official
//! 2.1.0 schema shipped in the serde-sarif package), config and --output.

use std::path::PathBuf;

use predicates::prelude::*;
use serde_json::Value;

use crate::common::toolrag;

const FAILING: &str = "tests/fixtures/lint/registries/mcp_filesystem.json";
const WARN_ONLY: &str = "tests/fixtures/lint/rules/vague-description/fail";

fn run_json(args: &[&str]) -> (Option<i32>, Value) {
    let out = toolrag().args(args).output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), v)
}

#[test]
fn the_shipped_registry_passes_with_zero_errors_and_warnings() {
    // No --lexical: this is the run CI does, with the model's dense similarity.
    toolrag()
        .args(["lint", "--deny-warnings"])
        .assert()
        .code(0)
        .stdout(predicate::str::is_match(r"All checks passed \(\d+ tools checked\)\.").unwrap());
}

#[test]
fn errors_exit_1_and_warnings_alone_exit_0() {
    toolrag()
        .args(["lint", FAILING, "--lexical"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("error[TR005]"))
        .stdout(predicate::str::contains("mcp_filesystem.json:6:7"))
        .stdout(predicate::str::is_match(r"Found \d+ errors and \d+ warnings in 6 tools").unwrap());
    toolrag()
        .args(["lint", WARN_ONLY, "--lexical", "--select", "TR014"])
        .assert()
        .code(0);
    toolrag()
        .args([
            "lint",
            WARN_ONLY,
            "--lexical",
            "--select",
            "TR014",
            "--deny-warnings",
        ])
        .assert()
        .code(1);
}

#[test]
fn a_registry_that_does_not_load_exits_2_with_the_load_errors() {
    toolrag()
        .args(["lint", "tests/fixtures/broken/ns", "--lexical"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with("toolrag: the registry has"))
        .stderr(predicate::str::contains("invalid_toml.toml:"));
}

#[test]
fn a_bad_config_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("toolrag.toml");
    std::fs::write(&cfg, "[lint]\nmissing-exampels = \"warn\"\n").unwrap();
    toolrag()
        .args(["lint", WARN_ONLY, "--lexical", "--config"])
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown lint rule `missing-exampels`",
        ));
}

#[test]
fn a_config_can_lower_errors_to_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("toolrag.toml");
    std::fs::write(
        &cfg,
        "[lint]\nTR005 = \"warn\"\nTR007 = \"warn\"\nTR008 = \"warn\"\nTR011 = \"warn\"\n",
    )
    .unwrap();
    toolrag()
        .args(["lint", FAILING, "--lexical", "--config"])
        .arg(&cfg)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Found 0 errors"));
}

#[test]
fn json_gives_one_flat_object_per_diagnostic() {
    let (code, v) = run_json(&["lint", FAILING, "--lexical", "--format", "json"]);
    assert_eq!(code, Some(1));
    let rows = v.as_array().unwrap();
    assert!(rows.len() > 10);
    for r in rows {
        for key in [
            "code", "name", "level", "toolId", "file", "line", "column", "message",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let first = &rows[0];
    assert_eq!(first["file"], FAILING);
    assert_eq!(first["toolId"], "mcp_filesystem/read_file");
    assert_eq!(
        (first["line"].as_u64(), first["column"].as_u64()),
        (Some(6), Some(7))
    );
    assert!(rows.iter().any(|r| r["code"] == "TR005"
        && r["name"] == "relative-path-parameter"
        && r["level"] == "error"));
}

#[test]
fn github_prints_workflow_annotations() {
    let out = toolrag()
        .args(["lint", FAILING, "--lexical", "--format", "github"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let re = regex::Regex::new(
        r"^::(error|warning) title=TR\d{3} [a-z-]+,file=[^,:]+,line=\d+,col=\d+::\S.*$",
    )
    .unwrap();
    for line in text.lines() {
        assert!(re.is_match(line), "{line}");
    }
    assert!(text.contains(&format!(
        "::error title=TR005 relative-path-parameter,file={FAILING},line=6,col=7::mcp_filesystem/read_file: path parameter"
    )));
}

/// The official SARIF 2.1.0 JSON schema, as shipped inside the serde-sarif
/// package that builds this crate (found in Cargo's registry source folder).
fn official_sarif_schema() -> Value {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registry = cargo_home.join("registry/src");
    for index in std::fs::read_dir(&registry).expect("cargo registry sources") {
        let dir = index.unwrap().path();
        for pkg in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = pkg.file_name().to_string_lossy().into_owned();
            if name.starts_with("serde-sarif-0.8") {
                let text = std::fs::read_to_string(pkg.path().join("src/schema.json")).unwrap();
                let schema: Value = serde_json::from_str(&text).unwrap();
                assert!(schema["title"].as_str().unwrap().contains("2.1.0"));
                return schema;
            }
        }
    }
    panic!(
        "serde-sarif's schema.json not found under {}",
        registry.display()
    );
}

#[test]
fn sarif_is_valid_sarif_2_1_0() {
    let (code, v) = run_json(&["lint", FAILING, "--lexical", "--format", "sarif"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["version"], "2.1.0");
    assert_eq!(
        v["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );

    // Against the official schema. Its language-tag patterns have a bare `]`,
    // valid in ECMA-262 but not in Rust's regex syntax: escape it first.
    let text = official_sarif_schema().to_string();
    let bare = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert!(text.contains(bare));
    let text = text.replace(bare, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
    let validator = jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut broken = v.clone();
    broken["version"] = Value::from("2.0.0");
    assert!(!validator.is_valid(&broken), "the schema check is live");

    // A round trip through the typed model loses nothing.
    let typed: serde_sarif::sarif::Sarif = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), v);

    // What code scanning needs: rules, and results that point at them and at a file.
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "toolrag");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), toolrag::lint::rules().count());
    for r in run["results"].as_array().unwrap() {
        let i = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], r["ruleId"]);
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], FAILING);
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn output_goes_to_a_file_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lint.sarif");
    toolrag()
        .args([
            "lint",
            FAILING,
            "--lexical",
            "--format",
            "sarif",
            "--output",
        ])
        .arg(&file)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["version"], "2.1.0");
}

#[test]
fn statistics_count_diagnostics_and_tools_per_rule() {
    toolrag()
        .args(["lint", FAILING, "--lexical", "--statistics"])
        .assert()
        .code(1)
        .stdout(predicate::str::is_match(r"TR005 +relative-path-parameter +error +6 +5").unwrap());
}

#[test]
fn rule_explains_one_rule_or_lists_them_all() {
    toolrag()
        .args(["rule", "TR005"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "# relative-path-parameter (TR005)",
        ))
        .stdout(predicate::str::contains("## Why is this bad?"))
        .stdout(predicate::str::contains("Use instead:"));
    toolrag()
        .args(["rule", "hidden-instructions"])
        .assert()
        .success()
        .stdout(predicate::str::contains("tool poisoning"));
    let out = toolrag().args(["rule"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("TR0")).count(), 17);
    toolrag()
        .args(["rule", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no lint rule `nope`"));
}

#[test]
fn without_a_model_the_lint_says_so_once_and_goes_on_lexically() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::common::root().join("tests/fixtures/lint/registries/confusable.jsonl");
    let out = assert_cmd::Command::cargo_bin("toolrag")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("TOOLRAG_MODEL_DIR")
        .args([
            "lint",
            "--select",
            "confusable-tools,oversized-description",
            "--format",
            "concise",
        ])
        .arg(&fixture)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.matches("no embedding model found").count(),
        1,
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("lexical cosine"), "{stdout}");
}

#[test]
fn with_lexical_a_missing_model_is_not_news() {
    // `--lexical` asks for lexical similarity: no model is what was asked
    // for, so nothing is said about it, and the findings are the same.
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::common::root().join("tests/fixtures/lint/registries/confusable.jsonl");
    let run = |extra: &[&str]| {
        assert_cmd::Command::cargo_bin("toolrag")
            .unwrap()
            .current_dir(dir.path())
            .env_remove("TOOLRAG_MODEL_DIR")
            .args([
                "lint",
                "--select",
                "confusable-tools",
                "--format",
                "concise",
            ])
            .args(extra)
            .arg(&fixture)
            .output()
            .unwrap()
    };
    let lexical = run(&["--lexical"]);
    assert_eq!(lexical.status.code(), Some(0));
    let stderr = String::from_utf8(lexical.stderr).unwrap();
    assert!(!stderr.contains("no embedding model"), "{stderr}");
    let plain = run(&[]);
    assert!(String::from_utf8(plain.stderr)
        .unwrap()
        .contains("no embedding model found"));
    assert_eq!(lexical.stdout, plain.stdout);
    assert!(String::from_utf8(lexical.stdout)
        .unwrap()
        .contains("lexical cosine"));
}

#[test]
fn help_teaches_exit_codes_and_examples() {
    toolrag()
        .args(["lint", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Exit status: 0 when there are no errors",
        ))
        .stdout(predicate::str::contains(
            "toolrag lint --format sarif --output toolrag.sarif",
        ));
    toolrag()
        .args(["rule", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("toolrag rule TR005"));
}
