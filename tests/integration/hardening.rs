//! Errors that name their cause (issue 19): a registry file with a UTF-8
//! byte order mark loads; TR013 names each bad character of a tool name once.

use serde_json::Value;
use toolrag::registry::{LoadOptions, Registry};

use crate::common::toolrag;

const TOOL: &str = r#"{"name": "read_file", "description": "Reads a file.", "inputSchema": {"type": "object", "properties": {}}}"#;

#[test]
fn a_byte_order_mark_is_skipped_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let bom = "\u{feff}";
    let files = [
        ("mcp.json", format!("{bom}{{\"tools\": [{TOOL}]}}")),
        ("lines.jsonl", format!("{bom}{TOOL}\n")),
    ];
    for (name, text) in &files {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let reg = Registry::load(std::slice::from_ref(&path), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(reg.len(), 1, "{name}");
        assert_eq!(reg.tools()[0].name, "read_file");
    }
    // TOML too (a native tool file).
    let ns = dir.path().join("fs");
    std::fs::create_dir(&ns).unwrap();
    let toml = ns.join("read_file.toml");
    std::fs::write(
        &toml,
        format!("{bom}name = \"read_file\"\ndescription = \"Reads a file.\"\n\n[input_schema]\ntype = \"object\"\n"),
    )
    .unwrap();
    let reg = Registry::load(std::slice::from_ref(&toml), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("toml: {e}"));
    assert_eq!(reg.len(), 1);
}

#[test]
fn tr013_names_each_bad_character_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("names.json");
    std::fs::write(
        &file,
        r#"{"tools": [
  {"name": "../../etc/passwd", "description": "Reads the password file of the host.", "inputSchema": {"type": "object"}},
  {"name": "read file/v2", "description": "Reads a file from the disk of the host.", "inputSchema": {"type": "object"}}
]}"#,
    )
    .unwrap();
    let out = toolrag()
        .args(["lint", "--lexical", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let messages: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["code"] == "TR013")
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{rows}");
    assert!(
        messages[0].starts_with(r#"tool name `../../etc/passwd` contains "/";"#),
        "{}",
        messages[0]
    );
    assert!(!messages[0].contains("///"), "{}", messages[0]);
    assert!(
        messages[1].starts_with(r#"tool name `read file/v2` contains " ", "/";"#),
        "{}",
        messages[1]
    );
}

/// A description, schema or file over a limit is a `file:line` error naming
/// the limit, before the text is parsed and copied; raising the limit loads it.
#[test]
fn registry_limits_are_file_line_errors_and_can_be_raised() {
    use toolrag::registry::LoadLimits;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    let long = "x".repeat(1_000_000);
    std::fs::write(
        &file,
        format!("{TOOL}\n{{\"name\": \"huge\", \"description\": \"{long}\"}}\n"),
    )
    .unwrap();
    let err = Registry::load(std::slice::from_ref(&file), &LoadOptions::default()).unwrap_err();
    let m = err.to_string();
    assert!(
        m.contains("big.jsonl:2:1: tool `huge`: the description is 1000000 bytes"),
        "{m}"
    );
    // The library names the limit; how to raise it is each front end's to say.
    assert!(
        m.contains("over the limit description-bytes of 65536"),
        "{m}"
    );
    assert!(
        !m.contains("--limit"),
        "no CLI wording from the library: {m}"
    );

    let mut opts = LoadOptions::default();
    opts.limits.set("description-bytes", 2_000_000).unwrap();
    let reg = Registry::load(std::slice::from_ref(&file), &opts).unwrap();
    assert_eq!(reg.len(), 2);

    // The same from the command line.
    let out = toolrag()
        .args(["tools", "list"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("raise it with --limit description-bytes=N")
    );
    let out = toolrag()
        .args(["tools", "list", "--limit", "description-bytes=2000000"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Tools per file and schema depth.
    let mut limits = LoadLimits::default();
    limits.set("tools-per-file", 1).unwrap();
    let opts = LoadOptions {
        limits,
        ..Default::default()
    };
    let e = Registry::load(std::slice::from_ref(&file), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("big.jsonl:2:1") && e.contains("tools-per-file"),
        "{e}"
    );
    let deep = dir.path().join("deep.json");
    let mut schema = r#"{"type": "string"}"#.to_string();
    for _ in 0..40 {
        schema = format!(r#"{{"type": "object", "properties": {{"a": {schema}}}}}"#);
    }
    std::fs::write(
        &deep,
        format!("{{\"tools\": [\n  {{\"name\": \"deep\", \"inputSchema\": {schema}}}\n]}}"),
    )
    .unwrap();
    let e = Registry::load(std::slice::from_ref(&deep), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("deep.json:2:3") && e.contains("schema-depth"),
        "{e}"
    );
}
