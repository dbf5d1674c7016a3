//! An index finds its model from any working folder, as an MCP client that
//! starts `toolrag mcp --index DIR` from its own folder needs: the manifest
//! records the model's folder and sha256, and opening the index looks there,
//! next to the executable, in the user's data folder, in
//! `$TOOLRAG_MODEL_DIR` and in `./models`. An index built with the model is
//! never served as BM25 without being asked (`--mode lexical`,
//! `--lexical-only`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{root, shipped_tools, toolrag};

/// An index of `tools/` built by the binary from the checkout, so that it
/// records the checkout's model folder.
fn built_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        toolrag()
            .env_remove("TOOLRAG_MODEL_DIR")
            .args(["index", shipped_tools().to_str().unwrap(), "--out"])
            .arg(dir.path().join("ix"))
            .assert()
            .success();
        dir
    })
    .path()
}

/// A copy of the built index whose manifest records a model folder that is
/// not there, as when the index was built on another machine.
fn moved_index(into: &Path) -> PathBuf {
    let from = built_index().join("ix");
    let to = into.join("ix");
    for entry in walkdir::WalkDir::new(&from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&from).unwrap();
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(to.join(rel)).unwrap();
        } else {
            std::fs::copy(entry.path(), to.join(rel)).unwrap();
        }
    }
    let gen = toolrag::index::current_generation(&to).unwrap();
    let manifest = gen.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["model"]["dir"] = "/nonexistent/toolrag-models/minilm-tools".into();
    std::fs::write(&manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    to
}

/// `toolrag query` run from `/`, with no model variable and `home` as the
/// user's home (so the user's data folder is under it).
fn query_from_root(index: &Path, home: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = toolrag();
    cmd.current_dir("/")
        .env_remove("TOOLRAG_MODEL_DIR")
        .env_remove("ORT_DYLIB_PATH")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", home)
        .args([
            "query",
            "read the file /etc/hosts",
            "-k",
            "3",
            "--format",
            "json",
        ])
        .arg("--index")
        .arg(index)
        .args(extra);
    cmd.output().unwrap()
}

fn first_hit_is_hybrid(out: &std::process::Output) -> bool {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"][0]["id"], "filesystem/read_text_file", "{v:#}");
    v["hits"][0]["retrievers"]["dense"]["rank"].is_u64()
}

#[test]
fn the_manifest_records_the_model_folder_and_a_query_from_root_is_hybrid() {
    let gen = toolrag::index::current_generation(&built_index().join("ix")).unwrap();
    let m: Value =
        serde_json::from_slice(&std::fs::read(gen.join("manifest.json")).unwrap()).unwrap();
    let recorded = PathBuf::from(m["model"]["dir"].as_str().unwrap());
    assert!(recorded.is_absolute(), "{recorded:?}");
    assert_eq!(
        recorded.canonicalize().unwrap(),
        root().join("models/minilm-tools").canonicalize().unwrap()
    );
    let home = tempfile::tempdir().unwrap();
    let out = query_from_root(&built_index().join("ix"), home.path(), &[]);
    assert!(first_hit_is_hybrid(&out), "not hybrid from /");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("note"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_missing_model_is_an_error_not_a_quiet_fall_back_to_bm25() {
    let tmp = tempfile::tempdir().unwrap();
    let index = moved_index(tmp.path());
    let out = query_from_root(&index, tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "/nonexistent/toolrag-models/minilm-tools",
        "the user's data folder",
        "next to the executable",
        "--mode lexical",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // Asked for, BM25 answers.
    let out = query_from_root(&index, tmp.path(), &["--mode", "lexical"]);
    assert!(!first_hit_is_hybrid(&out));
    // `toolrag mcp` and `toolrag serve` refuse to start, unless --lexical-only.
    for args in [
        vec!["mcp", "--index"],
        vec!["serve", "--addr", "127.0.0.1:0", "--index"],
    ] {
        let out = toolrag()
            .current_dir("/")
            .env_remove("TOOLRAG_MODEL_DIR")
            .env("HOME", tmp.path())
            .env_remove("XDG_DATA_HOME")
            .args(&args)
            .arg(&index)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--lexical-only"), "{args:?}: {err}");
    }
}

#[test]
fn the_model_in_the_users_data_folder_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let index = moved_index(tmp.path());
    let models = tmp.path().join(".local/share/toolrag/models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(
        root().join("models/minilm-tools"),
        models.join("minilm-tools"),
    )
    .unwrap();
    // ONNX Runtime is looked for beside the model folder too.
    for entry in std::fs::read_dir(root().join("models")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("libonnxruntime.so") {
            std::os::unix::fs::symlink(&p, models.join(&name)).unwrap();
        }
    }
    let out = query_from_root(&index, tmp.path(), &[]);
    assert!(
        first_hit_is_hybrid(&out),
        "not hybrid with the data folder's model"
    );
}

#[test]
fn model_dir_may_name_the_models_folder_or_the_model_s_own_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let index = moved_index(tmp.path());
    for dir in ["models", "models/minilm-tools"] {
        let out = query_from_root(
            &index,
            tmp.path(),
            &["--model-dir", root().join(dir).to_str().unwrap()],
        );
        assert!(first_hit_is_hybrid(&out), "--model-dir {dir}");
    }
    // A folder that holds neither is still refused, naming where it looked.
    let out = query_from_root(
        &index,
        tmp.path(),
        &["--model-dir", tmp.path().to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&*tmp.path().to_string_lossy()), "{err}");
}
