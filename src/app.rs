//! The application layer: what every front end (the command line, the
//! Python extension) does the same way around an index, written once so
//! that they cannot drift apart.
//!
//! 1. Load the configuration: [`Config::load`] (`toolrag.toml`).
//! 2. Choose the embedding model: [`ModelRequest`] (a name or a folder over
//!    the `[model]` table), found where [`ModelDir::select`] looks, or, for an
//!    index, where [`ModelDir::for_index`] looks for the model it was built
//!    with.
//! 3. Load it: [`load_embedder`], one single-threaded session per core
//!    ([`one_session_per_core`]), as every front end measures fastest.
//! 4. Build ([`build`], with [`build_options`] from the `[index]` table) or
//!    open ([`open`], with the `[search]` table) the index.
//! 5. Report a build's progress to a [`Progress`], which the front end draws
//!    (the command line as a bar on stderr; so does the Python `progress=True`).
//!
//! What a front end says about it is its own: a missing optional model is a
//! note on the command line's stderr, a `ModelNotFound` exception in Python.
//!
//! ```
//! use toolrag::app::{self, ModelRequest};
//! use toolrag::config::Config;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let ns = dir.path().join("files");
//! # std::fs::create_dir(&ns).unwrap();
//! # std::fs::write(ns.join("read_file.toml"), "name = \"read_file\"\nsummary = \"Read a file.\"\n").unwrap();
//! # let out = tempfile::tempdir().unwrap();
//! let config = Config::parse("[search]\ndepth = 20\n")?;
//! // The model the caller asked for (here: none named, so the `[model]` table's).
//! let wanted = ModelRequest::new(None, None, &config);
//! assert_eq!(wanted.choice(), config.model);
//! // A lexical-only build (no model), then the index opened as configured.
//! let registry = toolrag::Registry::load(&[dir.path().to_path_buf()], &Default::default())?;
//! let opts = app::build_options(out.path(), &config);
//! let report = app::build(registry, None, &opts, &())?;
//! assert!(report.lexical_only);
//! let searcher = app::open(out.path(), None, &config)?;
//! assert_eq!(searcher.tools().len(), 1);
//! // The index records no model: there is none to look for.
//! assert!(wanted.for_index(out.path())?.is_none());
//! # Ok::<(), toolrag::Error>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolrag_core::{Error, Registry, Result};
use toolrag_embed::{EmbedOptions, Embedder, FastEmbedder, IndexModel, ModelConfig, ModelDir};
use toolrag_engine::build::{BuildModel, BuildOptions, BuildProgress, BuildReport};
use toolrag_engine::index::ModelInfo;
use toolrag_engine::search::Searcher;

use crate::config::Config;

/// The embedding model a caller asked for: a shipped model's name or a
/// model folder (`--model`, Python's `model=`) over the configuration's
/// `[model]` table, and the models folder to look in (`--model-dir`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    /// A shipped model's name, or a folder holding a model.
    pub model: Option<String>,
    /// The models folder, where shipped models are looked for first.
    pub model_dir: Option<PathBuf>,
    /// The `[model]` table of the configuration.
    pub table: ModelConfig,
}

impl ModelRequest {
    /// The request of `model` and `model_dir` under `config`'s `[model]` table.
    pub fn new(model: Option<String>, model_dir: Option<PathBuf>, config: &Config) -> Self {
        ModelRequest {
            model,
            model_dir,
            table: config.model.clone(),
        }
    }

    /// The model choice: `model` over the `[model]` table. A `model` that
    /// names a shipped model is that model; one that names an existing
    /// folder is that folder; anything else is taken as a name (and refused
    /// with the choices by [`ModelRequest::select`] when it is none). The
    /// table's other settings (prefixes, pooling) are kept.
    pub fn choice(&self) -> ModelConfig {
        let mut c = self.table.clone();
        if let Some(m) = &self.model {
            if toolrag_embed::builtin_model(m).is_none() && Path::new(m).is_dir() {
                c.dir = Some(m.into());
                c.name = None;
            } else {
                c.name = Some(m.clone());
                c.dir = None;
            }
        }
        c
    }

    /// The model folder of the choice ([`ModelDir::select`]); not finding
    /// one is [`Error::ModelNotFound`].
    pub fn select(&self) -> Result<ModelDir> {
        ModelDir::select(self.model_dir.as_deref(), &self.choice())
    }

    /// [`ModelRequest::select`], with `None` when no model is found, for a
    /// caller that goes on without one. A model that is there but broken, or
    /// a name that is no model, is still an error.
    pub fn find(&self) -> Result<Option<ModelDir>> {
        match self.select() {
            Ok(dir) => Ok(Some(dir)),
            Err(e @ Error::ModelNotFound { .. }) => {
                tracing::debug!("{e}");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The model folder of the index in `index`: `None` for a lexical-only
    /// index; otherwise [`ModelRequest::for_model`] of the model it records.
    pub fn for_index(&self, index: &Path) -> Result<Option<ModelDir>> {
        match recorded_model(index)? {
            Some(info) => self.for_model(&info).map(Some),
            None => Ok(None),
        }
    }

    /// The folder of the model an index was built with (`info`, from
    /// [`recorded_model`]), looked for where [`ModelDir::for_index`] looks
    /// (from any working folder, the weights checked by their sha256); a
    /// chosen model or models folder wins. Not finding it is
    /// [`Error::ModelNotFound`].
    pub fn for_model(&self, info: &ModelInfo) -> Result<ModelDir> {
        let built_with = IndexModel {
            id: &info.id,
            fingerprint: &info.sha256,
            dir: info.dir.as_deref(),
        };
        ModelDir::for_index(self.model_dir.as_deref(), &self.choice(), &built_with)
    }
}

/// The model the index in `index` records: `None` for a lexical-only index.
/// A look at the metadata only: [`open`] verifies every file.
pub fn recorded_model(index: &Path) -> Result<Option<ModelInfo>> {
    let generation = toolrag_engine::index::current_generation(index)?;
    let manifest = toolrag_engine::index::Manifest::read_unverified(&generation)?;
    Ok(manifest.model.filter(|_| !manifest.lexical_only))
}

/// One session per core, for work that embeds many texts (a build, lint)
/// or serves searches from several threads.
pub fn one_session_per_core() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The one way the front ends set up the model: `sessions` single-threaded
/// sessions, fed in parallel. One single-threaded session per core is
/// faster than one session with several threads (BENCHMARKS.md).
pub fn embed_options(sessions: usize) -> EmbedOptions {
    EmbedOptions {
        threads: 1,
        sessions: sessions.max(1),
        ..EmbedOptions::default()
    }
}

/// The embedder of `dir` with `sessions` sessions ([`embed_options`]).
pub fn load_embedder(dir: &ModelDir, sessions: usize) -> Result<FastEmbedder> {
    FastEmbedder::load(dir, &embed_options(sessions))
}

/// The model of a build, loaded by the build when it needs it (after the
/// registry is indexed and released), one session per core.
pub fn deferred_model(dir: ModelDir) -> BuildModel<'static> {
    BuildModel::Deferred(Box::new(move || {
        load_embedder(&dir, one_session_per_core()).map(|e| Box::new(e) as Box<dyn Embedder>)
    }))
}

/// What a build tells its caller as it goes, for the caller to draw. Every
/// method does nothing unless implemented; `()` is a caller that draws
/// nothing.
pub trait Progress: Sync {
    /// `total` texts need embedding; none are done yet.
    fn embedding(&self, total: usize) {
        let _ = total;
    }
    /// `done` more texts were embedded.
    fn embedded(&self, done: usize) {
        let _ = done;
    }
    /// Embedding is over; the rest is writing.
    fn embedding_done(&self) {}
    /// A large share of the build's memory was just freed: a caller whose
    /// allocator keeps freed pages (mimalloc) may return them now.
    fn memory_freed(&self) {}
}

/// Draws nothing.
impl Progress for () {}

/// The build settings of `config` (the `[index]` table) for an index in `out`.
pub fn build_options(out: impl Into<PathBuf>, config: &Config) -> BuildOptions {
    let mut opts = BuildOptions::new(out);
    opts.boosts = config.index.boosts.unwrap_or_default();
    opts
}

/// Builds (or rebuilds) the index of `registry` with `model` (`None`: BM25
/// only) as `opts` say ([`build_options`]), telling `progress` as it goes.
pub fn build(
    registry: Registry,
    model: Option<BuildModel<'_>>,
    opts: &BuildOptions,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    let on_progress = |p: BuildProgress| match p {
        BuildProgress::EmbedStart { total } => progress.embedding(total),
        BuildProgress::Embedded { done } => progress.embedded(done),
        BuildProgress::EmbedDone => progress.embedding_done(),
        BuildProgress::MemoryFreed => progress.memory_freed(),
        _ => {}
    };
    toolrag_engine::build::build(registry, model, opts, &on_progress)
}

/// Opens the index in `index` for search with `embedder` (`None`: BM25
/// only), as `config`'s `[search]` table says.
pub fn open(
    index: &Path,
    embedder: Option<Arc<dyn Embedder>>,
    config: &Config,
) -> Result<Searcher> {
    Searcher::open(index, embedder, config.search)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: Option<&str>, table: ModelConfig) -> ModelRequest {
        ModelRequest {
            model: model.map(str::to_string),
            model_dir: None,
            table,
        }
    }

    #[test]
    fn the_named_model_wins_over_the_table() {
        let table = ModelConfig {
            dir: Some("/some/folder".into()),
            query_prefix: Some("query: ".into()),
            ..ModelConfig::default()
        };
        let c = request(Some("minilm-tools"), table.clone()).choice();
        assert_eq!(c.name.as_deref(), Some("minilm-tools"));
        assert_eq!(c.dir, None);
        // Settings the name does not give are kept.
        assert_eq!(c.query_prefix.as_deref(), Some("query: "));
        // A folder that exists is a folder.
        let tmp = std::env::temp_dir();
        let c = request(Some(tmp.to_str().unwrap()), table.clone()).choice();
        assert_eq!(c.dir.as_deref(), Some(tmp.as_path()));
        // Without a name, the table.
        assert_eq!(request(None, table.clone()).choice(), table);
    }

    #[test]
    fn a_fastembed_name_says_it_cannot_download() {
        let r = request(
            Some("intfloat/multilingual-e5-small"),
            ModelConfig::default(),
        );
        let err = r.find().unwrap_err().to_string();
        assert!(err.contains("downloads no models"), "{err}");
        assert!(err.contains("query: "), "{err}");
        let r = request(Some("no-such-model"), ModelConfig::default());
        let err = r.find().unwrap_err().to_string();
        assert!(err.contains("minilm-tools"), "{err}");
    }
}
