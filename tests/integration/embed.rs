//! The real embedding model: shape, normalisation, and that similarity means something.

use toolrag::embed::{dot, EmbedOptions, Embedder, FastEmbedder, ModelDir, TokenCounter};
use toolrag::registry::{LoadOptions, Registry};

use crate::common::{embedder, model_dir, root, shipped_tools};

#[test]
fn real_model_gives_384_dim_unit_vectors() {
    let e = embedder();
    assert_eq!(e.dimension(), 384);
    let q = e.embed_query("read the file /etc/hosts").unwrap();
    assert_eq!(q.len(), 384);
    let norm = dot(&q, &q).sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    let docs = e
        .embed_documents(&[
            "a".to_string(),
            "a much longer document about files".to_string(),
        ])
        .unwrap();
    assert_eq!(docs.len(), 2);
    for d in &docs {
        assert!((dot(d, d).sqrt() - 1.0).abs() < 1e-3);
    }
}

#[test]
fn file_request_is_closer_to_a_file_reading_tool_than_to_email() {
    let reg = Registry::load(&[shipped_tools()], &LoadOptions::default()).unwrap();
    let text = |id: &str| {
        let t = reg.get(id).unwrap_or_else(|| panic!("{id} in tools/"));
        format!("{}: {} {}", t.name, t.summary, t.description)
    };
    let e = embedder();
    let docs = e
        .embed_documents(&[text("filesystem/read_text_file"), text("email/send_email")])
        .unwrap();
    let q = e.embed_query("read the file /etc/hosts").unwrap();
    let (file, email) = (dot(&q, &docs[0]), dot(&q, &docs[1]));
    assert!(file > email + 0.05, "file {file} vs email {email}");
}

#[test]
fn query_and_document_paths_agree() {
    let e = embedder();
    let q = e.embed_query("list calendar events for tomorrow").unwrap();
    let d = e
        .embed_documents(&["list calendar events for tomorrow".to_string()])
        .unwrap();
    assert!(dot(&q, &d[0]) > 0.999);
}

#[test]
fn a_missing_model_file_is_named_without_a_front_end_s_advice() {
    let dir = tempfile::tempdir().unwrap();
    let err = ModelDir::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("missing model.onnx"), "{err}");
    // How to fetch it is each front end's hint (the CLI's, Python's).
    assert!(!err.contains("fetch-model") && !err.contains("--"), "{err}");
}

#[test]
fn a_corrupt_model_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "tokenizer.json",
        "config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
    ] {
        std::fs::copy(root().join("models").join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("model.onnx"), b"not an onnx model").unwrap();
    let md = ModelDir::open(dir.path()).unwrap();
    // Load ONNX Runtime through the real model first, so that what fails below
    // is the corrupt model itself.
    let _ = embedder();
    let err = FastEmbedder::load(&md, &EmbedOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unusable") && !err.contains("fetch-model"),
        "{err}"
    );
    assert!(!err.contains("ONNX Runtime library"), "{err}");
}

#[test]
fn tokens_are_counted_without_truncation() {
    let tc = TokenCounter::load(&model_dir()).unwrap();
    let long = "word ".repeat(1000);
    assert!(tc.count(&long) > 1000);
    assert_eq!(tc.count("hello"), 3); // [CLS] hello [SEP]
}

/// A copy of the shipped model's files in a folder of its own (the ONNX
/// Runtime library stays where `ORT_DYLIB_PATH` or the first load found it).
fn model_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in toolrag::embed::MODEL_FILES {
        std::fs::copy(root().join("models").join(f), dir.path().join(f)).unwrap();
    }
    dir
}

#[test]
fn a_local_folder_model_gets_its_prefixes() {
    use toolrag::embed::ModelConfig;
    let _ = embedder(); // ONNX Runtime is loaded once per process, from models/
    let copy = model_copy();
    let config = ModelConfig {
        dir: Some(copy.path().to_path_buf()),
        query_prefix: Some("query: ".into()),
        document_prefix: Some("passage: ".into()),
        ..ModelConfig::default()
    };
    let md = ModelDir::select(None, &config).unwrap();
    let prefixed = FastEmbedder::load(&md, &EmbedOptions::default()).unwrap();
    // The same weights (the published model's), with no prefix.
    let plain = &FastEmbedder::load(
        &crate::common::published_model_dir(),
        &EmbedOptions::default(),
    )
    .unwrap();
    let request = "list calendar events for tomorrow";
    // The prefix reaches the model: the prefixed model's query vector is the
    // plain model's vector of the prefixed text, and not of the bare text.
    let q = prefixed.embed_query(request).unwrap();
    let by_hand = plain.embed_query(&format!("query: {request}")).unwrap();
    let bare = plain.embed_query(request).unwrap();
    assert!(dot(&q, &by_hand) > 0.999, "{}", dot(&q, &by_hand));
    assert!(dot(&q, &bare) < 0.99, "{}", dot(&q, &bare));
    let d = prefixed.embed_documents(&[request.to_string()]).unwrap();
    let d_by_hand = plain.embed_query(&format!("passage: {request}")).unwrap();
    assert!(dot(&d[0], &d_by_hand) > 0.999);
    // Clause parts pooled from one pass see the prefix too.
    let parts = prefixed
        .embed_query_parts("read a file and send an email", &[(0, 11), (16, 29)])
        .unwrap();
    assert_eq!(parts.len(), 3);
    assert!(
        dot(
            &parts[0],
            &prefixed
                .embed_query("read a file and send an email")
                .unwrap()
        ) > 0.999
    );
    // The same weights with other settings are another model to an index.
    assert_ne!(prefixed.fingerprint(), plain.fingerprint());
    assert!(prefixed.fingerprint().starts_with(plain.fingerprint()));
    assert!(prefixed.model_id().contains("local model"));
}

#[test]
fn the_shipped_models_load_by_name() {
    use toolrag::embed::{ModelConfig, BUILTIN_MODELS, DEFAULT_MODEL};
    let _ = embedder();
    for m in BUILTIN_MODELS {
        let config = ModelConfig {
            name: Some(m.name.to_string()),
            ..ModelConfig::default()
        };
        let md = ModelDir::select(Some(&root().join("models")), &config)
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let e = FastEmbedder::load(&md, &EmbedOptions::default()).unwrap();
        assert_eq!(e.model_id(), m.id);
        assert_eq!(e.dimension(), 384);
        let q = e.embed_query("read the file /etc/hosts").unwrap();
        assert!((dot(&q, &q).sqrt() - 1.0).abs() < 1e-3);
    }
    // No choice is the default model.
    let md = ModelDir::select(Some(&root().join("models")), &ModelConfig::default()).unwrap();
    let e = FastEmbedder::load(&md, &EmbedOptions::default()).unwrap();
    assert_eq!(
        e.model_id(),
        toolrag::embed::builtin_model(DEFAULT_MODEL).unwrap().id
    );
}

#[test]
fn an_index_built_with_one_model_is_refused_by_another_naming_both() {
    let copy = model_copy();
    let work = tempfile::tempdir().unwrap();
    let index = work.path().join("ix");
    crate::common::toolrag()
        .args([
            "index",
            "tests/fixtures/mcp-reference",
            "--model",
            "minilm",
            "--out",
        ])
        .arg(&index)
        .assert()
        .success();
    // The same weights, used with a query prefix from the [model] table.
    let config = work.path().join("toolrag.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\ndir = {:?}\nquery-prefix = \"query: \"\n",
            copy.path().display().to_string()
        ),
    )
    .unwrap();
    // The copy has no ONNX Runtime library beside it or in its parent: the
    // binary falls back to the one scripts/fetch-model put in ./models.
    assert!(!std::fs::read_dir(copy.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("onnxruntime")));
    let out = crate::common::toolrag()
        .args(["query", "read a file", "--index"])
        .arg(&index)
        .arg("--config")
        .arg(&config)
        .env_remove("ORT_DYLIB_PATH")
        .env_remove("TOOLRAG_MODEL_DIR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("incompatible index"), "{err}");
    assert!(err.contains("all-MiniLM-L6-v2"), "{err}");
    assert!(err.contains("local model"), "{err}");
    // The tuned model is another model too.
    let out = crate::common::toolrag()
        .args(["query", "read a file", "--index"])
        .arg(&index)
        .args(["--model", "minilm-tools"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("all-MiniLM-L6-v2-tools") && err.contains("int8 ONNX)"),
        "{err}"
    );
    // The model it was built with still reads it.
    crate::common::toolrag()
        .args(["query", "read a file", "--index"])
        .arg(&index)
        .args(["--model", "minilm"])
        .assert()
        .success();
    // With no model named, the index's own model is found (not the default
    // model, which would refuse it).
    crate::common::toolrag()
        .args(["query", "read a file", "--index"])
        .arg(&index)
        .assert()
        .success();
}
