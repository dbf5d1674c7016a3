//! A CLI that teaches (issue 20): every subcommand's `--help` ends with
//! examples, completions and a man page are generated, JSON is camelCase,
//! counts are in the right number, and `-` reads a registry from stdin.

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{fixture, toolrag};

/// Every subcommand path, nested ones included (`tools list`).
const COMMANDS: &[&[&str]] = &[
    &["tools"],
    &["tools", "list"],
    &["tools", "show"],
    &["index"],
    &["learn"],
    &["query"],
    &["resolve"],
    &["lint"],
    &["rule"],
    &["serve"],
    &["mcp"],
    &["gate"],
    &["eval"],
    &["completions"],
    &["man"],
];

#[test]
fn every_subcommand_long_help_ends_with_examples() {
    for cmd in COMMANDS {
        let out = toolrag().args(*cmd).arg("--help").output().unwrap();
        assert!(out.status.success(), "{cmd:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        let last = help
            .trim_end()
            .rsplit("\n\n")
            .next()
            .unwrap_or_default()
            .trim_start();
        assert!(
            last.starts_with("Example"),
            "`toolrag {} --help` does not end with examples:\n{help}",
            cmd.join(" ")
        );
    }
}

#[test]
fn help_names_only_paths_a_user_has() {
    // The team's datasets folder sits beside our checkouts, not beside a
    // user's: no example or explanation may send anyone there.
    let top: &[&str] = &[];
    for cmd in std::iter::once(top).chain(COMMANDS.iter().copied()) {
        for flag in ["--help", "-h"] {
            let out = toolrag().args(cmd).arg(flag).output().unwrap();
            assert!(out.status.success(), "{cmd:?}");
            let help = String::from_utf8(out.stdout).unwrap();
            assert!(
                !help.contains("shared/"),
                "`toolrag {} {flag}` names the team's shared folder:\n{help}",
                cmd.join(" ")
            );
        }
    }
}

#[test]
fn serve_and_mcp_show_their_long_help() {
    toolrag()
        .args(["mcp", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("mcpServers"));
    toolrag()
        .args(["serve", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("GET /readyz"))
        .stdout(predicate::str::contains(
            "toolrag serve --index /tmp/my-index",
        ));
}

#[test]
fn completions_are_generated_for_every_shell() {
    for (shell, marker) in [
        ("bash", "_toolrag()"),
        ("zsh", "#compdef toolrag"),
        ("fish", "complete -c toolrag"),
        ("elvish", "edit:completion:arg-completer[toolrag]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = toolrag().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: {text:.200}");
        assert!(
            text.contains("deny-warnings"),
            "{shell} completes lint's options"
        );
    }
}

#[test]
fn the_man_page_is_generated() {
    let out = toolrag().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH toolrag 1"),
        "{page:.200}"
    );
    let dir = tempfile::tempdir().unwrap();
    toolrag()
        .arg("man")
        .arg("--dir")
        .arg(dir.path())
        .assert()
        .success();
    assert!(dir.path().join("toolrag.1").is_file());
    assert!(dir.path().join("toolrag-lint.1").is_file());
}

#[test]
fn lint_json_is_camel_case_like_every_other_json_output() {
    let out = toolrag()
        .args(["lint", "--lexical", "--format", "json"])
        .arg(fixture("mcp-reference/time.json"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = v[0].as_object().unwrap();
    assert!(first.contains_key("toolId"), "{first:?}");
    for key in first.keys() {
        assert!(!key.contains('_'), "snake_case key `{key}`");
    }
}

#[test]
fn counts_are_singular_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let ns = dir.path().join("fs");
    std::fs::create_dir(&ns).unwrap();
    std::fs::write(
        ns.join("read.toml"),
        "name = \"read\"\nsummary = \"Read a file.\"\n",
    )
    .unwrap();
    toolrag()
        .args(["tools", "list"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("1 tool in 1 namespace\n"));
}

#[test]
fn lexical_lint_does_not_mention_a_missing_model() {
    // No models/ in the working directory and no TOOLRAG_MODEL_DIR: no model.
    let empty = tempfile::tempdir().unwrap();
    toolrag()
        .current_dir(empty.path())
        .env_remove("TOOLRAG_MODEL_DIR")
        .args(["lint", "--lexical"])
        .arg(fixture("mcp-reference/time.json"))
        .assert()
        .code(0)
        .stderr(predicate::str::contains("model").not());
    // Without --lexical it says once what it does instead.
    toolrag()
        .current_dir(empty.path())
        .env_remove("TOOLRAG_MODEL_DIR")
        .arg("lint")
        .arg(fixture("mcp-reference/time.json"))
        .assert()
        .code(0)
        .stderr(predicate::str::contains("no embedding model found"));
}

#[test]
fn a_registry_can_come_from_stdin() {
    let git = std::fs::read_to_string(fixture("mcp-reference/git.json")).unwrap();
    // An MCP tools/list result.
    let out = toolrag()
        .args(["tools", "list", "-", "--format", "json"])
        .write_stdin(git.clone())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 12);
    assert_eq!(v[0]["id"], "stdin/git_status");
    // With a namespace, beside a folder, and diagnostics located at <stdin>.
    toolrag()
        .args([
            "lint",
            "-",
            "--lexical",
            "--namespace",
            "git",
            "--format",
            "concise",
        ])
        .write_stdin(git)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("<stdin>:"))
        .stdout(predicate::str::contains("git/git_add"));
    // JSON Lines and a native TOML tool.
    toolrag()
        .args(["tools", "list", "-"])
        .write_stdin(
            "{\"name\": \"a\", \"description\": \"A.\"}\n{\"name\": \"b\", \"description\": \"B.\"}\n",
        )
        .assert()
        .success()
        .stdout(predicate::str::contains("2 tools in 1 namespace"));
    toolrag()
        .args(["tools", "list", "-", "--namespace", "fs"])
        .write_stdin("name = \"read\"\nsummary = \"Read a file.\"\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("fs/read"));
    // A broken one names <stdin> and exits 2.
    toolrag()
        .args(["tools", "list", "-"])
        .write_stdin("{\"tools\": [")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("<stdin>"));
}
