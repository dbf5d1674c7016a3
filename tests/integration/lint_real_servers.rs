//! The lint on the six reference MCP servers (tests/fixtures/mcp-reference,
//! their real `tools/list`): what it must find there and what it must not
//! (issue 20). BENCHMARKS.md ("Lint on real servers") has the counts.

use std::path::PathBuf;

use toolrag::lint::{self, Diagnostic, Level, LintConfig, LintContext, Profile};
use toolrag::registry::{LoadOptions, Registry};

use crate::common::{fixture, toolrag};

fn server(name: &str) -> PathBuf {
    fixture(&format!("mcp-reference/{name}.json"))
}

fn lint_server(name: &str, profile: Profile) -> Vec<Diagnostic> {
    let registry = Registry::load(&[server(name)], &LoadOptions::default()).unwrap();
    let config = LintConfig {
        profile,
        ..LintConfig::default()
    };
    lint::lint(&registry, &LintContext::new(config))
}

fn has(ds: &[Diagnostic], rule: &str, tool: &str, pointer_end: &str) -> bool {
    ds.iter()
        .any(|d| d.name == rule && d.tool_id == tool && d.pointer.ends_with(pointer_end))
}

#[test]
fn git_add_files_are_relative_to_repo_path_which_is_sound() {
    let ds = lint_server("git", Profile::Author);
    assert!(!has(
        &ds,
        "relative-path-parameter",
        "git/git_add",
        "/files"
    ));
    // The base they are relative to is what must be absolute.
    assert!(has(
        &ds,
        "relative-path-parameter",
        "git/git_add",
        "/repo_path"
    ));
    // `target` of git_diff is a branch or commit, not a path.
    assert!(!has(
        &ds,
        "relative-path-parameter",
        "git/git_diff",
        "/target"
    ));
}

#[test]
fn move_file_source_and_destination_are_paths() {
    let ds = lint_server("filesystem", Profile::Author);
    assert!(has(
        &ds,
        "relative-path-parameter",
        "filesystem/move_file",
        "/source"
    ));
    assert!(has(
        &ds,
        "relative-path-parameter",
        "filesystem/move_file",
        "/destination"
    ));
}

#[test]
fn use_x_instead_in_prose_is_a_boundary() {
    let ds = lint_server("filesystem", Profile::Author);
    let confusable = |a: &str, b: &str| {
        ds.iter().any(|d| {
            d.name == "confusable-tools" && d.tool_id == a && d.message.contains(&format!("`{b}`"))
        })
    };
    // "DEPRECATED: Use read_text_file instead."
    assert!(!confusable(
        "filesystem/read_file",
        "filesystem/read_text_file"
    ));
    assert!(!confusable(
        "filesystem/read_text_file",
        "filesystem/read_file"
    ));
}

#[test]
fn examples_and_edge_cases_written_in_prose_count() {
    let ds = lint_server("filesystem", Profile::Author);
    // "Use pattern like '*.ext' ..."
    assert!(!ds
        .iter()
        .any(|d| d.name == "missing-examples" && d.tool_id == "filesystem/search_files"));
    // "If the destination exists, the operation will fail."
    assert!(!ds
        .iter()
        .any(|d| d.name == "missing-edge-cases" && d.tool_id == "filesystem/move_file"));
    // A description with neither is still told.
    assert!(ds
        .iter()
        .any(|d| d.name == "missing-examples" && d.tool_id == "filesystem/list_directory"));
}

#[test]
fn the_consumer_profile_keeps_what_a_consumer_can_act_on() {
    let author = lint_server("memory", Profile::Author);
    let consumer = lint_server("memory", Profile::Consumer);
    assert_eq!(author.len(), consumer.len(), "nothing is dropped");
    for (a, c) in author.iter().zip(&consumer) {
        if lint::CONSUMER_RULES.contains(&a.name.as_str()) {
            assert_eq!(a.level, c.level, "{a:?}");
        } else {
            assert_eq!(c.level, Level::Info, "{c:?}");
        }
    }
    // Authoring advice alone never fails a consumer's run, even with --deny-warnings.
    toolrag()
        .args([
            "lint",
            "--lexical",
            "--profile",
            "consumer",
            "--deny-warnings",
        ])
        .arg(server("time"))
        .assert()
        .code(0);
    toolrag()
        .args(["lint", "--lexical", "--deny-warnings"])
        .arg(server("time"))
        .assert()
        .code(1);
}

/// The counts BENCHMARKS.md reports, per server: (errors, warnings) as an
/// author, and as a consumer.
#[test]
fn findings_per_reference_server() {
    let mut rows = Vec::new();
    for name in ["filesystem", "git", "memory", "time", "fetch", "everything"] {
        let (e, w) = lint::count_levels(&lint_server(name, Profile::Author));
        let (ce, cw) = lint::count_levels(&lint_server(name, Profile::Consumer));
        println!(
            "{name:12} author {e:3} errors {w:3} warnings   consumer {ce:3} errors {cw:3} warnings"
        );
        rows.push((name, e, w, ce, cw));
    }
    let total: (usize, usize) = rows.iter().fold((0, 0), |t, r| (t.0 + r.1, t.1 + r.2));
    println!(
        "total        author {:3} errors {:3} warnings",
        total.0, total.1
    );
    // The table of BENCHMARKS.md; each remaining finding is explained there.
    assert_eq!(
        rows,
        [
            ("filesystem", 14, 41, 14, 2),
            ("git", 12, 55, 12, 3),
            ("memory", 0, 27, 0, 4),
            ("time", 0, 5, 0, 0),
            ("fetch", 0, 2, 0, 0),
            ("everything", 0, 28, 0, 0),
        ]
    );
}
