//! Shared helpers: paths to fixtures, the shipped registry and the real model.

use std::path::PathBuf;
use std::sync::OnceLock;

use toolrag::embed::{EmbedOptions, FastEmbedder, ModelDir};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

pub fn shipped_tools() -> PathBuf {
    root().join("tools")
}

pub fn model_dir() -> ModelDir {
    // `make test` fetches the model first; a missing model fails, it never skips.
    ModelDir::open(&root().join("models"))
        .expect("the model is in models/ (run scripts/fetch-model)")
}

/// One real embedder shared by the tests of this binary (loading costs ~0.3 s).
pub fn embedder() -> &'static FastEmbedder {
    static E: OnceLock<FastEmbedder> = OnceLock::new();
    E.get_or_init(|| {
        FastEmbedder::load(&model_dir(), &EmbedOptions::default()).expect("model loads")
    })
}

pub fn toolrag() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("toolrag").unwrap();
    c.current_dir(root());
    c
}

/// A new embedder of its own, for tests that hand one to a `Searcher`.
pub fn fresh_embedder() -> FastEmbedder {
    FastEmbedder::load(&model_dir(), &EmbedOptions::default()).expect("model loads")
}
