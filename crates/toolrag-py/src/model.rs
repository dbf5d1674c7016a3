//! The embedding model for the Python API: chosen as the CLI chooses it
//! (`model=` over the `[model]` table, a shipped name or a folder), found in
//! `$TOOLRAG_MODEL_DIR` (which the package points at the model the wheel
//! carries, unless the user set it), loaded once per process and shared.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use toolrag::embed::{EmbedOptions, FastEmbedder, ModelConfig, ModelDir};

/// The model used when none is chosen.
#[pyfunction]
pub fn default_model_name() -> &'static str {
    toolrag::embed::DEFAULT_MODEL
}

/// The model choice: `model` (a shipped name, or an existing folder) over
/// the configuration's `[model]` table, as `--model` does in the CLI.
pub fn choice(model: Option<&str>, table: &ModelConfig) -> ModelConfig {
    let mut c = table.clone();
    if let Some(m) = model {
        if toolrag::embed::builtin_model(m).is_none() && Path::new(m).is_dir() {
            c.dir = Some(m.into());
            c.name = None;
        } else {
            c.name = Some(m.to_string());
            c.dir = None;
        }
    }
    c
}

/// The model folder for `choice`: an error ([`toolrag::Error::ModelNotFound`]
/// and its kin) when there is none.
pub fn locate(choice: &ModelConfig) -> toolrag::Result<ModelDir> {
    ModelDir::select(None, choice)
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
    let sessions = std::thread::available_parallelism().map_or(2, |n| n.get());
    let opts = EmbedOptions {
        threads: 1,
        sessions,
        ..EmbedOptions::default()
    };
    let loaded = Arc::new(FastEmbedder::load(dir, &opts)?);
    let mut map = cache().lock().unwrap_or_else(|p| p.into_inner());
    Ok(Arc::clone(map.entry(key).or_insert(loaded)))
}
