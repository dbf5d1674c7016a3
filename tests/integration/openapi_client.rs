//! openapi-python-client (from PyPI, pinned in
//! tests/openapi-client-requirements.txt) generates a Python client from
//! `crates/toolrag-serve/src/openapi.json` without a warning, with one `Mode` enum shared
//! by the request and the response (a nullable enum used to give three
//! identical classes), and the generated models read what the server sends.

use std::path::PathBuf;
use std::process::Command;

use crate::common::root;

/// The venv `make openapi-client` sets up.
fn venv_bin(name: &str) -> PathBuf {
    let p = root().join("target/openapi-client-venv/bin").join(name);
    // `make test` sets the venv up first; a missing tool fails, it never skips.
    assert!(
        p.exists(),
        "{} is missing: run `make openapi-client` (a venv with openapi-python-client from PyPI)",
        p.display()
    );
    p
}

#[test]
fn a_python_client_is_generated_with_one_type_per_schema() {
    let dir = tempfile::tempdir().unwrap();
    // No post hooks: they run ruff, which the venv does not need.
    std::fs::write(dir.path().join("config.yaml"), "post_hooks: []\n").unwrap();
    let out = Command::new(venv_bin("openapi-python-client"))
        .current_dir(dir.path())
        .arg("generate")
        .arg("--path")
        .arg(root().join("crates/toolrag-serve/src/openapi.json"))
        .args(["--meta", "none", "--output-path", "toolrag_client"])
        .args(["--config", "config.yaml"])
        .output()
        .expect("openapi-python-client runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(!said.to_lowercase().contains("warning"), "{said}");

    let mut models: Vec<String> = std::fs::read_dir(dir.path().join("toolrag_client/models"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    models.sort();
    assert!(models.contains(&"mode.py".to_string()), "{models:?}");
    let mode_classes: Vec<&String> = models.iter().filter(|m| m.contains("mode")).collect();
    assert_eq!(mode_classes, ["mode.py"], "{models:?}");

    let check = r#"
from toolrag_client.models import Mode, SearchBody, Retrieval
assert SearchBody.from_dict({"query": "x", "mode": "lexical"}).mode is Mode.LEXICAL
assert SearchBody.from_dict({"query": "x", "mode": None}).mode is None
assert SearchBody.from_dict({"query": "x"}).to_dict() == {"query": "x"}
r = Retrieval.from_dict({"mode": "dense", "scores": [0.5], "ranks": [{"retrievers": {"dense": 1}, "pinned": False}],
                         "decision": "NAVIGATE", "abstainReason": None, "confidence": 0.5})
assert r.mode is Mode.DENSE
print("ok")
"#;
    let out = Command::new(venv_bin("python"))
        .current_dir(dir.path())
        .args(["-c", check])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
