//! The one model-fallback policy of the binary: what a command does when the
//! embedding model is not there, and what it says about it.
//!
//! - The model is not wanted (a lexical mode, `--lexical-only`, a
//!   lexical-only index): it is not looked for, and nothing is said.
//! - It is a nicety the user did not ask for (`toolrag lint --lexical` still
//!   counts tokens with the model's tokenizer when there is one): used when
//!   present, and nothing is said when not.
//! - It is wanted if there is one (hybrid search, serving, building): without
//!   it the command goes on with BM25 and says so once, on stderr, with how to
//!   get the model.
//! - It is required (dense mode): its absence is the error.
//!
//! A model folder that exists but is broken is always an error.

use std::path::Path;
use std::sync::Arc;

use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelConfig, ModelDir};
use toolrag::search::Mode;

use super::ModelArgs;

/// How much a command needs the embedding model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Not wanted: not looked for, nothing said.
    No,
    /// Used when there is one; nothing said without it.
    IfPresent,
    /// Used when there is one; without it the command falls back to BM25
    /// and says so. The text says what it does instead ("serving BM25 only").
    Optional(&'static str),
    /// Required: no model is an error.
    Required,
}

impl Need {
    /// What a search in `mode` needs, given whether the index has vectors.
    pub fn for_search(mode: Mode, lexical_only_index: bool) -> Need {
        match mode {
            _ if lexical_only_index => Need::No,
            Mode::Lexical => Need::No,
            Mode::Hybrid => Need::Optional("using BM25 only"),
            Mode::Dense => Need::Required,
        }
    }
}

/// The one way the binary sets up the model: `sessions` single-threaded
/// sessions, fed in parallel. One single-threaded session per core is faster
/// than one session with several threads (BENCHMARKS.md).
pub fn embed_options(sessions: usize) -> EmbedOptions {
    EmbedOptions {
        threads: 1,
        sessions: sessions.max(1),
        ..EmbedOptions::default()
    }
}

/// One session per core, for work that embeds many texts (a build, lint).
pub fn one_session_per_core() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The note printed when an optional model is missing.
pub fn no_model_note(fallback: &str) -> String {
    format!("toolrag: note: no embedding model found; {fallback} (run scripts/fetch-model)")
}

impl ModelArgs {
    /// Takes the `[model]` table of the configuration the command read;
    /// `--model` still wins over it.
    pub fn configure(&mut self, config: &toolrag::config::Config) {
        self.config = config.model.clone();
    }

    /// The model choice: `--model` over the `[model]` table. A `--model`
    /// that names a shipped model is that model; one that names an existing
    /// folder is that folder; anything else is taken as a name (and refused
    /// with the choices when it is none).
    pub fn choice(&self) -> ModelConfig {
        let mut c = self.config.clone();
        if let Some(m) = &self.model {
            if toolrag::embed::builtin_model(m).is_none() && Path::new(m).is_dir() {
                c.dir = Some(m.into());
                c.name = None;
            } else {
                c.name = Some(m.clone());
                c.dir = None;
            }
        }
        c
    }

    /// The model folder, by the policy above: `None` when the model is not
    /// needed, or optional and not found (after saying so).
    pub fn locate(&self, need: Need) -> anyhow::Result<Option<ModelDir>> {
        let choice = self.choice();
        let fallback = match need {
            Need::No => return Ok(None),
            Need::IfPresent => None,
            Need::Optional(fallback) => Some(fallback),
            Need::Required => {
                return Ok(Some(ModelDir::select(self.model_dir.as_deref(), &choice)?))
            }
        };
        match ModelDir::select(self.model_dir.as_deref(), &choice) {
            Ok(dir) => Ok(Some(dir)),
            Err(e @ toolrag::Error::ModelNotFound { .. }) => {
                tracing::debug!("{e}");
                if let Some(fallback) = fallback {
                    eprintln!("{}", no_model_note(fallback));
                }
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The query embedder by the policy above, with `sessions` parallel
    /// sessions; `None` when the model is not needed or optional and missing.
    pub fn query_embedder(
        &self,
        need: Need,
        sessions: usize,
    ) -> anyhow::Result<Option<FastEmbedder>> {
        let Some(dir) = self.locate(need)? else {
            return Ok(None);
        };
        Ok(Some(FastEmbedder::load(&dir, &embed_options(sessions))?))
    }

    /// The query embedder for searching the index in `index` in `mode`: what
    /// [`Need::for_search`] says, with a note when the mode wanted vectors
    /// the index does not have.
    pub fn embedder_for_index(
        &self,
        index: &Path,
        mode: Mode,
        sessions: usize,
    ) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
        let gen = toolrag::index::current_generation(index)?;
        // A look at the metadata: `Searcher::open` verifies every file next.
        let lexical_only = toolrag::index::Manifest::read_unverified(&gen)?.lexical_only;
        if lexical_only && mode != Mode::Lexical {
            eprintln!(
                "toolrag: note: this index is lexical-only (built without the model); using BM25"
            );
        }
        let embedder = self.query_embedder(Need::for_search(mode, lexical_only), sessions)?;
        Ok(embedder.map(|e| Arc::new(e) as Arc<dyn Embedder>))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_search_needs() {
        assert_eq!(Need::for_search(Mode::Lexical, false), Need::No);
        assert_eq!(Need::for_search(Mode::Dense, true), Need::No);
        assert_eq!(Need::for_search(Mode::Dense, false), Need::Required);
        assert!(matches!(
            Need::for_search(Mode::Hybrid, false),
            Need::Optional(_)
        ));
    }

    #[test]
    fn an_unwanted_model_is_not_looked_for() {
        // A folder that does not exist would be an error if it were looked at.
        let args = ModelArgs {
            model: None,
            model_dir: Some("/nonexistent/toolrag-model".into()),
            config: ModelConfig::default(),
        };
        assert!(args.locate(Need::No).unwrap().is_none());
        assert!(args.locate(Need::Required).is_err());
    }
}

#[cfg(test)]
mod choice_tests {
    use super::*;

    fn args(model: Option<&str>, config: ModelConfig) -> ModelArgs {
        ModelArgs {
            model: model.map(str::to_string),
            model_dir: None,
            config,
        }
    }

    #[test]
    fn the_flag_wins_over_the_table() {
        let table = ModelConfig {
            dir: Some("/some/folder".into()),
            query_prefix: Some("query: ".into()),
            ..ModelConfig::default()
        };
        let c = args(Some("minilm-tools"), table.clone()).choice();
        assert_eq!(c.name.as_deref(), Some("minilm-tools"));
        assert_eq!(c.dir, None);
        // Settings the flag does not name are kept.
        assert_eq!(c.query_prefix.as_deref(), Some("query: "));
        // A folder that exists is a folder.
        let tmp = std::env::temp_dir();
        let c = args(Some(tmp.to_str().unwrap()), table.clone()).choice();
        assert_eq!(c.dir.as_deref(), Some(tmp.as_path()));
        // Without the flag, the table.
        assert_eq!(args(None, table.clone()).choice(), table);
    }

    #[test]
    fn a_fastembed_name_says_it_cannot_download() {
        let a = args(
            Some("intfloat/multilingual-e5-small"),
            ModelConfig::default(),
        );
        let err = a.locate(Need::Required).unwrap_err().to_string();
        assert!(err.contains("downloads no models"), "{err}");
        assert!(err.contains("query: "), "{err}");
        let a = args(Some("no-such-model"), ModelConfig::default());
        let err = a.locate(Need::Optional("x")).unwrap_err().to_string();
        assert!(err.contains("minilm-tools"), "{err}");
    }
}
