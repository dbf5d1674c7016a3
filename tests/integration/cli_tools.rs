//! `toolrag tools list|show` and the CLI's error contract (exit 2, `toolrag: ...`).

use predicates::prelude::*;

use crate::common::toolrag;

#[test]
fn list_shows_the_shipped_registry() {
    toolrag()
        .args(["tools", "list", "tools/"])
        .assert()
        .success()
        .stdout(predicate::str::contains("filesystem/read_text_file"))
        .stdout(predicate::str::is_match(r"\d+ tools in \d+ namespaces").unwrap());
}

#[test]
fn list_json_gives_bfcl_ids() {
    let out = toolrag()
        .args([
            "tools",
            "list",
            "../shared/data/bfcl/tools.jsonl",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 3258);
    assert_eq!(rows[0]["id"], "determine_body_mass_index#ab2e0d91");
}

#[test]
fn show_prints_the_normalised_tool() {
    let out = toolrag()
        .args(["tools", "show", "tool://filesystem/read_text_file"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["id"], "filesystem/read_text_file");
    assert!(t["examples"].as_array().unwrap().len() >= 2);
    assert!(t["inputSchema"]["properties"]["path"].is_object());
}

#[test]
fn show_unknown_id_is_a_clear_error() {
    toolrag()
        .args(["tools", "show", "nope/nothing"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "toolrag: no tool with id `nope/nothing`",
        ));
}

#[test]
fn broken_registry_exits_2_with_locations_and_no_panic() {
    toolrag()
        .args(["tools", "list", "tests/fixtures/broken"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "toolrag: the registry has 8 errors:",
        ))
        .stderr(predicate::str::contains("invalid_toml.toml:3:28"))
        .stderr(predicate::str::contains("panicked").not());
}
