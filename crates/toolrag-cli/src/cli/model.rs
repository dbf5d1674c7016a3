//! The one model-fallback policy of the binary: what a command does when the
//! embedding model is not there, and what it says about it.
//!
//! - The model is not wanted (a lexical mode, `--lexical-only`, a
//!   lexical-only index): it is not looked for, and nothing is said.
//! - It is a nicety the user did not ask for (`toolrag lint --lexical` still
//!   counts tokens with the model's tokenizer when there is one): used when
//!   present, and nothing is said when not.
//! - It is wanted if there is one (building, the gateway's own index):
//!   without it the command goes on with BM25 and says so once, on stderr,
//!   with how to get the model.
//! - It is required (searching or serving an index built with the model,
//!   unless `--mode lexical` or `--lexical-only` says otherwise): the index
//!   records its model's folder and sha256, the model is looked for from any
//!   working folder ([`ModelArgs::for_index`]), and its absence is the error.
//!
//! A model folder that exists but is broken is always an error.

use std::path::Path;
use std::sync::Arc;

use toolrag::app::{self, ModelRequest};
use toolrag::embed::{Embedder, FastEmbedder, ModelDir};
use toolrag::search::Mode;

use super::ModelArgs;

/// How much a command needs the embedding model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Used when there is one; nothing said without it.
    IfPresent,
    /// Used when there is one; without it the command falls back to BM25
    /// and says so. The text says what it does instead ("serving BM25 only").
    Optional(&'static str),
}

pub use toolrag::app::{embed_options, one_session_per_core};

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

    /// The model asked for, for the library's one model choice
    /// ([`ModelRequest`]): `--model` and `--model-dir` over the `[model]` table.
    pub fn request(&self) -> ModelRequest {
        ModelRequest {
            model: self.model.clone(),
            model_dir: self.model_dir.clone(),
            table: self.config.clone(),
        }
    }

    /// The model folder, by the policy above: `None` when the model is not
    /// needed, or optional and not found (after saying so).
    pub fn locate(&self, need: Need) -> anyhow::Result<Option<ModelDir>> {
        let found = self.request().find()?;
        if let (None, Need::Optional(fallback)) = (&found, need) {
            eprintln!("{}", no_model_note(fallback));
        }
        Ok(found)
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
        Ok(Some(app::load_embedder(&dir, sessions)?))
    }

    /// The query embedder for searching the index in `index` in `mode`. A
    /// lexical search needs no model, nor does a lexical-only index (with a
    /// note when the mode wanted vectors). Otherwise the index's own model
    /// is required, found from any working folder ([`ModelArgs::for_index`]).
    pub fn embedder_for_index(
        &self,
        index: &Path,
        mode: Mode,
        sessions: usize,
    ) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
        if mode == Mode::Lexical {
            return Ok(None);
        }
        let Some(dir) = self.for_index(index)? else {
            eprintln!(
                "toolrag: note: this index is lexical-only (built without the model); using BM25"
            );
            return Ok(None);
        };
        let embedder = app::load_embedder(&dir, sessions)?;
        Ok(Some(Arc::new(embedder) as Arc<dyn Embedder>))
    }

    /// The model folder of the index in `index`: `None` for a lexical-only
    /// index; otherwise the model its manifest records, looked for where
    /// [`ModelRequest::for_model`] looks (a `--model` or `--model-dir` wins).
    /// Not finding it is an error that says where it looked and what to do:
    /// a dense index is never served as BM25 without being asked.
    pub fn for_index(&self, index: &Path) -> anyhow::Result<Option<ModelDir>> {
        let Some(info) = app::recorded_model(index)? else {
            return Ok(None);
        };
        match self.request().for_model(&info) {
            Ok(dir) => Ok(Some(dir)),
            Err(e @ toolrag::Error::ModelNotFound { .. }) => {
                Err(anyhow::Error::new(e).context(format!(
                    "the index in {} was built with {}, and that model is not here; put it back \
                     (scripts/fetch-model, or copy models/ next to the executable or into the \
                     user's data folder), name it with --model-dir, or search without it \
                     (--mode lexical; --lexical-only for serve and mcp)",
                    index.display(),
                    info.id
                )))
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod choice_tests {
    use super::*;
    use toolrag::embed::ModelConfig;

    fn args(model: Option<&str>, config: ModelConfig) -> ModelArgs {
        ModelArgs {
            model: model.map(str::to_string),
            model_dir: None,
            config,
        }
    }

    #[test]
    fn the_flag_wins_over_the_table() {
        // The choice itself is the library's (toolrag::app::ModelRequest).
        let table = ModelConfig {
            query_prefix: Some("query: ".into()),
            ..ModelConfig::default()
        };
        let c = args(Some("minilm-tools"), table).request().choice();
        assert_eq!(c.name.as_deref(), Some("minilm-tools"));
        assert_eq!(c.query_prefix.as_deref(), Some("query: "));
    }

    #[test]
    fn a_fastembed_name_says_it_cannot_download() {
        let a = args(
            Some("intfloat/multilingual-e5-small"),
            ModelConfig::default(),
        );
        let err = a.locate(Need::IfPresent).unwrap_err().to_string();
        assert!(err.contains("downloads no models"), "{err}");
        assert!(err.contains("query: "), "{err}");
        let a = args(Some("no-such-model"), ModelConfig::default());
        let err = a.locate(Need::Optional("x")).unwrap_err().to_string();
        assert!(err.contains("minilm-tools"), "{err}");
    }
}
