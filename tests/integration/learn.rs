//! `toolrag learn` from the command line, with the real model: a usage log
//! (with a line a crash cut short) becomes learnt requests that move the
//! called tool up for a request of the same kind; `tools show` lists them,
//! `--forget` undoes them, and bad input is an error that says what to do.

use std::path::Path;

use predicates::prelude::*;

use crate::common::{stdout_json, toolrag};

const TAUGHT: &str = r#"{"at":"2026-12-01T00:00:00Z","principal":"local","teach":true,"request":"ping the ops channel that the deploy is finished","handles":["chat/list_channels","chat/post_message"],"tool":"chat/post_message","outcome":"succeeded"}"#;
const PROBE: &str = "ping the release channel that we are done";

fn rank_of(index: &Path, tool: &str) -> usize {
    let v: serde_json::Value = stdout_json(
        toolrag()
            .args(["query", PROBE, "-k", "10", "--format", "json", "--index"])
            .arg(index),
    );
    let hits = v["hits"].as_array().expect("hits");
    hits.iter()
        .position(|h| h["id"] == tool)
        .map_or(99, |i| i + 1)
}

#[test]
fn learnt_requests_move_the_called_tool_up_and_forget_undoes_them() {
    let dir = tempfile::tempdir().unwrap();
    let ix = dir.path().join("ix");
    toolrag()
        .args(["index", "tools", "--out"])
        .arg(&ix)
        .assert()
        .success();
    let before = rank_of(&ix, "chat/post_message");
    assert!(before > 1, "already first: the test shows nothing");

    // A record, then a line a crash cut short.
    std::fs::write(
        ix.join("usage.jsonl"),
        format!("{TAUGHT}\n{{\"at\": \"2026-"),
    )
    .unwrap();
    toolrag()
        .args(["learn", "--max-age-days", "36500", "--index"])
        .arg(&ix)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("usage.jsonl:2: not a usage record, skipped")
                .and(predicate::str::contains(
                    "learnt 1 requests for 1 tools from 1 of 1 records",
                ))
                .and(predicate::str::contains("1 texts embedded")),
        );
    assert_eq!(rank_of(&ix, "chat/post_message"), 1);
    toolrag()
        .args(["tools", "show", "chat/post_message", "--index"])
        .arg(&ix)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ping the ops channel that the deploy is finished",
        ));
    // The registry's own view of the tool, with what this index learnt.
    toolrag()
        .args(["tools", "show", "chat/post_message", "tools", "--index"])
        .arg(&ix)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"learnt\""));

    toolrag()
        .args([
            "learn",
            "--max-age-days",
            "36500",
            "--forget",
            "tool://chat/post_message",
            "--index",
        ])
        .arg(&ix)
        .assert()
        .success();
    assert_eq!(rank_of(&ix, "chat/post_message"), before);
    // A reindex from the registry keeps the forget: nothing comes back.
    toolrag()
        .args(["index", "tools", "--out"])
        .arg(&ix)
        .assert()
        .success();
    assert_eq!(rank_of(&ix, "chat/post_message"), before);
}

#[test]
fn learn_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let ix = dir.path().join("ix");
    toolrag()
        .args(["learn", "--index"])
        .arg(&ix)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no index in"));
    toolrag()
        .args(["index", "tools", "--lexical-only", "--out"])
        .arg(&ix)
        .assert()
        .success();
    toolrag()
        .args(["learn", "--index"])
        .arg(&ix)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("lexical-only"));
    toolrag()
        .args(["index", "tools", "--out"])
        .arg(&ix)
        .assert()
        .success();
    toolrag()
        .args(["learn", "--forget", "chat/post_mesage", "--index"])
        .arg(&ix)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no tool `chat/post_mesage`"));
    std::fs::write(ix.join("learnt.json"), "{\"tools\": [").unwrap();
    toolrag()
        .args(["learn", "--index"])
        .arg(&ix)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("learnt.json:1:").and(predicate::str::contains("--reset")),
        );
    toolrag()
        .args(["learn", "--reset", "--index"])
        .arg(&ix)
        .assert()
        .success();
    toolrag()
        .args(["learn", "--per-tool", "0", "--index"])
        .arg(&ix)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--per-tool"));
}
