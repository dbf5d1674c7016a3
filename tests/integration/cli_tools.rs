//! `toolrag tools list|show` and the CLI's error contract (exit 2, `toolrag: ...`).

use predicates::prelude::*;

use crate::common::{jsonl_ids, root, stdout_json, toolrag};

#[test]
fn list_shows_the_shipped_registry() {
    toolrag()
        .args(["tools", "list", "tools/"])
        .assert()
        .success()
        .stdout(predicate::str::contains("filesystem/read_text_file"))
        .stdout(predicate::str::is_match(r"\d+ tools in \d+ namespaces").unwrap());
}

/// A registry in JSON Lines, one tool per line with its own `id`, as the
/// team's labelled datasets are written.
const JSONL: &str = "tests/fixtures/jsonl/tools.jsonl";

#[test]
fn list_json_gives_the_ids_of_a_jsonl_registry() {
    let rows: Vec<serde_json::Value> =
        stdout_json(toolrag().args(["tools", "list", JSONL, "--format", "json"]));
    // Every line's id, unchanged and in file order: the ids labelled queries
    // name, not `namespace/name`.
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, jsonl_ids(&root().join(JSONL)));
    assert_eq!(rows.len(), 11);
    assert_eq!(rows[0]["id"], "convert_currency#1f0a9c3e");
    // Two functions with one name stay two tools.
    assert_eq!(
        ids.iter()
            .filter(|id| id.starts_with("get_current_weather#"))
            .count(),
        2
    );
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
