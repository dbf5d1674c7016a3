//! The MCP server (`toolrag mcp`) driven by a real MCP client: the official Python SDK, spawning it over stdio.

use std::path::PathBuf;
use std::process::Command;

use crate::common::root;
use crate::server::harness::index_copy;

/// The venv `make mcp-client` sets up; `TOOLRAG_MCP_PYTHON` overrides it.
fn python() -> PathBuf {
    let p = std::env::var_os("TOOLRAG_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    // `make test` sets the venv up first; a missing client fails, it never skips.
    assert!(
        p.exists(),
        "{} is missing: run `make mcp-client` (a venv with the official MCP Python SDK)",
        p.display()
    );
    p
}

#[test]
fn the_official_python_client_searches_and_reads_cards() {
    let index = index_copy();
    let out = Command::new(python())
        .current_dir(root())
        .arg(root().join("tests/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_toolrag"))
        .arg(index.path())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert!(
        summary["protocol"].as_str().unwrap() >= "2025-06-18",
        "{summary}"
    );
    assert_eq!(
        summary["tools"],
        serde_json::json!(["get_tool", "search_tools"])
    );
    assert_eq!(summary["top"], "tool://filesystem/read_text_file");
}
