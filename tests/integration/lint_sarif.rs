//! The SARIF log as code scanning reads it: rule metadata (helpUri, tags,
//! precision, security-severity), URIs relative to %SRCROOT% and correctly
//! escaped, messages that do not start with a name, and Microsoft's validator
//! (`Sarif.Multitool validate --rule-kind "Sarif;Gh"`, installed by `make
//! sarif-multitool`) with no error and no warning.

use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, root, toolrag};

const FAILING: &str = "tests/fixtures/lint/registries/mcp_filesystem.json";

fn sarif_of(paths: &[&Path]) -> Value {
    let out = toolrag()
        .args(["lint", "--lexical", "--format", "sarif"])
        .args(paths)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_rule_has_a_help_page_tags_and_a_precision() {
    let v = sarif_of(&[Path::new(FAILING)]);
    let driver = &v["runs"][0]["tool"]["driver"];
    assert!(driver["informationUri"]
        .as_str()
        .unwrap()
        .starts_with("https://"));
    for rule in driver["rules"].as_array().unwrap() {
        let code = rule["id"].as_str().unwrap();
        let help = rule["helpUri"].as_str().unwrap();
        assert!(help.ends_with(&format!("/docs/rules/{code}.md")), "{help}");
        assert!(
            root().join(format!("docs/rules/{code}.md")).is_file(),
            "{code}"
        );
        let props = &rule["properties"];
        assert!(!props["tags"].as_array().unwrap().is_empty(), "{code}");
        assert!(
            ["very-high", "high", "medium", "low"].contains(&props["precision"].as_str().unwrap()),
            "{code}"
        );
        let security = props["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "security");
        let severity = props["security-severity"].as_str();
        assert_eq!(security, severity.is_some(), "{code}");
        if let Some(s) = severity {
            let s: f64 = s.parse().unwrap();
            assert!((0.0..=10.0).contains(&s), "{code}");
        }
    }
    let with_severity: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["properties"]["security-severity"].is_string())
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        with_severity,
        ["relative-path-parameter", "hidden-instructions"]
    );
}

#[test]
fn messages_do_not_start_with_a_name() {
    let v = sarif_of(&[Path::new(FAILING)]);
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        let text = r["message"]["text"].as_str().unwrap();
        assert!(!text.starts_with('`'), "{text}");
    }
}

#[test]
fn uris_are_relative_to_srcroot_and_escaped() {
    // Under the working directory (the repository root): relative, with a base id.
    let inside = tempfile::tempdir_in(root().join("target")).unwrap();
    let text = std::fs::read_to_string(fixture("mcp-reference/time.json")).unwrap();
    let odd = ["my tools #1.json", "we,ird:na%me.json", "ünï?.json"];
    for name in odd {
        std::fs::write(inside.path().join(name), &text).unwrap();
    }
    let paths: Vec<std::path::PathBuf> = odd.iter().map(|n| inside.path().join(n)).collect();
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let v = sarif_of(&refs);
    let run = &v["runs"][0];
    let base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
    let dir = inside
        .path()
        .strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut uris: Vec<String> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"]["artifactLocation"];
            assert_eq!(loc["uriBaseId"], "%SRCROOT%");
            loc["uri"].as_str().unwrap().to_string()
        })
        .collect();
    uris.sort();
    uris.dedup();
    let expected: Vec<String> = [
        "my%20tools%20%231.json",
        "we%2Cird%3Ana%25me.json",
        "%C3%BCn%C3%AF%3F.json",
    ]
    .iter()
    .map(|n| format!("{dir}/{n}"))
    .collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(uris, expected_sorted);

    // Outside it: an absolute file URI, escaped the same way.
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("my tools #1.json");
    std::fs::write(&file, &text).unwrap();
    let v = sarif_of(&[file.as_path()]);
    let loc = &v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert!(loc.get("uriBaseId").is_none(), "{loc}");
    let uri = loc["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("file:///") && uri.ends_with("/my%20tools%20%231.json"),
        "{uri}"
    );
}

#[test]
fn sarif_multitool_finds_no_error_and_no_warning() {
    // The platform's binary itself: the npm wrapper (`.bin/sarif-multitool`)
    // runs it through a shell, which splits "Sarif;Gh" at the `;`.
    let platform = if cfg!(target_os = "macos") {
        "darwin"
    } else {
        "linux"
    };
    let tool = root().join(format!(
        "target/sarif-multitool/node_modules/@microsoft/sarif-multitool-{platform}/Sarif.Multitool"
    ));
    assert!(
        tool.exists(),
        "{} is missing: run `make sarif-multitool`",
        tool.display()
    );
    let dir = tempfile::tempdir().unwrap();
    // A log with findings of many rules, and one with none.
    for (name, registry) in [
        ("findings.sarif", fixture("mcp-reference")),
        ("clean.sarif", root().join("tools")),
    ] {
        let log = dir.path().join(name);
        let out = toolrag()
            .args(["lint", "--lexical", "--format", "sarif", "--output"])
            .arg(&log)
            .arg(&registry)
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
        let report = dir.path().join(format!("{name}.validation.sarif"));
        let run = std::process::Command::new(&tool)
            .args([
                "validate",
                "--rule-kind",
                "Sarif;Gh",
                "--level",
                "Error;Warning",
            ])
            .arg("--output")
            .arg(&report)
            .arg(&log)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let findings: Vec<String> = v["runs"][0]["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| matches!(r["level"].as_str(), Some("error") | Some("warning") | None))
            .map(|r| format!("{} {}", r["ruleId"], r["message"]))
            .collect();
        assert!(findings.is_empty(), "{name}: {findings:#?}\n{stdout}");
        assert!(run.status.success(), "{name}: {stdout}");
    }
}
