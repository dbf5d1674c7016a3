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
fn a_missing_model_says_how_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = ModelDir::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("missing model.onnx"), "{err}");
    assert!(err.contains("scripts/fetch-model"), "{err}");
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
        err.contains("unusable") && err.contains("fetch-model"),
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
