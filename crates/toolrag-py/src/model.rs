//! The embedding model for the Python API: chosen by the library's one model
//! choice ([`toolrag::app::ModelRequest`]: `model=` over the `[model]`
//! table, a shipped name or a folder), found in `$TOOLRAG_MODEL_DIR` (which
//! the package points at the model the wheel carries, unless the user set
//! it), loaded once per process and shared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use toolrag::app;
use toolrag::embed::{FastEmbedder, ModelDir};

/// The model used when none is chosen.
#[pyfunction]
pub fn default_model_name() -> &'static str {
    toolrag::embed::DEFAULT_MODEL
}

/// Loaded embedders, by model folder and settings: building an index and
/// opening it (or several indexes) share one copy of the model.
fn cache() -> &'static Mutex<HashMap<String, Arc<FastEmbedder>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<FastEmbedder>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The embedder of `dir`, loaded on first use: one single-threaded session
/// per core, as the CLI's build uses, so threads searching one index run in
/// parallel and scores are the CLI's.
pub fn embedder(dir: &ModelDir) -> toolrag::Result<Arc<FastEmbedder>> {
    let key = format!("{}\u{0}{:?}", dir.path().display(), dir.settings());
    if let Some(e) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Arc::clone(e));
    }
    let loaded = Arc::new(app::load_embedder(dir, app::one_session_per_core())?);
    let mut map = cache().lock().unwrap_or_else(|p| p.into_inner());
    Ok(Arc::clone(map.entry(key).or_insert(loaded)))
}
