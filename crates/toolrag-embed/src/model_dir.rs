//! Finding and checking the model folder.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use toolrag_core::error::{Error, Result};

/// The environment variable naming the model folder.
pub const MODEL_DIR_ENV: &str = "TOOLRAG_MODEL_DIR";

/// The files a model folder must hold, besides the ONNX Runtime library.
pub const MODEL_FILES: [&str; 5] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// How a model's output becomes one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// The mean of the token vectors (sentence-transformers' MiniLM, E5).
    #[default]
    Mean,
    /// The first token's vector (`[CLS]`; BGE).
    Cls,
}

/// The `[model]` table of `toolrag.toml`: which model embeds text, and how.
///
/// ```toml
/// [model]
/// name = "minilm-tools"            # a model shipped with toolrag (see `BUILTIN_MODELS`)
/// # dir = "models/e5-small"        # or a folder: model.onnx and its tokenizer files
/// # name = "intfloat/multilingual-e5-small"   # or a fastembed model name (needs a model hub)
/// pooling = "mean"                 # or "cls"
/// query-prefix = ""                # e5-style models want "query: "
/// document-prefix = ""             # ... and "passage: "
/// ```
///
/// `--model NAME|DIR` on the command line overrides `name` and `dir`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ModelConfig {
    /// A model shipped with toolrag, or a fastembed model name.
    pub name: Option<String>,
    /// A folder holding `model.onnx` and its tokenizer files (relative paths
    /// are taken from the configuration file's folder).
    pub dir: Option<PathBuf>,
    /// How token vectors are pooled; `None`: the model's own (mean for the
    /// shipped models).
    pub pooling: Option<Pooling>,
    /// Text put before every query before it is embedded.
    pub query_prefix: Option<String>,
    /// Text put before every document (tool text) before it is embedded.
    pub document_prefix: Option<String>,
}

/// A model shipped with toolrag, chosen by name with `--model` or `[model] name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinModel {
    /// The name to choose it by.
    pub name: &'static str,
    /// The id recorded in index manifests.
    pub id: &'static str,
    /// Its folder inside the models folder (`None`: the models folder itself).
    pub subdir: Option<&'static str>,
    /// One line for `--help` and error messages.
    pub about: &'static str,
}

impl BuiltinModel {
    /// Its folder inside the models folder `root`.
    pub fn folder_in(&self, root: &Path) -> PathBuf {
        match self.subdir {
            Some(sub) => root.join(sub),
            None => root.to_path_buf(),
        }
    }

    /// Its folder when `root` was named as the models folder: the folder
    /// inside it ([`BuiltinModel::folder_in`]), or `root` itself when that
    /// is missing and `root` holds a model, so that `--model-dir` may name
    /// either the models folder or the model's own folder.
    pub fn model_in(&self, root: &Path) -> PathBuf {
        let inside = self.folder_in(root);
        if !inside.is_dir() && root.join("model.onnx").is_file() {
            return root.to_path_buf();
        }
        inside
    }
}

/// The models shipped with toolrag. Both are all-MiniLM-L6-v2 (384
/// dimensions, mean pooling, no prefixes): `minilm` is the published model
/// (fetched from PyPI by `scripts/fetch-model`), `minilm-tools` the same
/// model fine-tuned on tool retrieval by `research/training/train-model` and kept in
/// the repository (`models/minilm-tools/`, with its training manifest).
pub const BUILTIN_MODELS: [BuiltinModel; 2] = [
    BuiltinModel {
        name: "minilm",
        id: "sentence-transformers/all-MiniLM-L6-v2 (int8 ONNX)",
        subdir: None,
        about: "all-MiniLM-L6-v2 as published (int8 weights, fp32 compute)",
    },
    BuiltinModel {
        name: "minilm-tools",
        id: "toolrag/all-MiniLM-L6-v2-tools (int8 ONNX, integer MatMul)",
        subdir: Some("minilm-tools"),
        about: "all-MiniLM-L6-v2 fine-tuned on tool retrieval (integer int8: about twice as fast)",
    },
];

/// The model used when none is chosen: the tuned model, which is ahead of
/// the published one on every held-out set (BENCHMARKS.md, "Models").
pub const DEFAULT_MODEL: &str = "minilm-tools";

/// The shipped model called `name`, if there is one.
pub fn builtin_model(name: &str) -> Option<&'static BuiltinModel> {
    BUILTIN_MODELS.iter().find(|m| m.name == name)
}

/// What turns text into the model's input, and names the model: recorded in
/// index manifests through the embedder's id and fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSettings {
    /// The id recorded in index manifests.
    pub id: String,
    /// How token vectors are pooled.
    pub pooling: Pooling,
    /// Put before every query.
    pub query_prefix: String,
    /// Put before every document.
    pub document_prefix: String,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            id: BUILTIN_MODELS[0].id.to_string(),
            pooling: Pooling::Mean,
            query_prefix: String::new(),
            document_prefix: String::new(),
        }
    }
}

impl ModelSettings {
    /// Whether vectors depend on more than the weights (a prefix, or pooling
    /// other than the mean): then the fingerprint says so, so that an index
    /// built with other settings is refused rather than misread.
    pub fn is_plain(&self) -> bool {
        self.pooling == Pooling::Mean
            && self.query_prefix.is_empty()
            && self.document_prefix.is_empty()
    }

    fn apply(&mut self, config: &ModelConfig) {
        if let Some(p) = config.pooling {
            self.pooling = p;
        }
        if let Some(p) = &config.query_prefix {
            self.query_prefix = p.clone();
        }
        if let Some(p) = &config.document_prefix {
            self.document_prefix = p.clone();
        }
    }
}

/// A folder holding the embedding model, its tokenizer files and (optionally)
/// the ONNX Runtime library, with the settings it is used with.
#[derive(Debug, Clone)]
pub struct ModelDir {
    dir: PathBuf,
    settings: ModelSettings,
    sha256: OnceLock<String>,
}

impl ModelDir {
    /// Finds the model folder: `explicit` (from `--model-dir`), then
    /// `$TOOLRAG_MODEL_DIR`, then `./models`.
    ///
    /// An explicitly named folder that is incomplete is an error
    /// ([`Error::ModelCorrupt`]); finding nothing is [`Error::ModelNotFound`],
    /// whose message says how to fetch the model.
    pub fn locate(explicit: Option<&Path>) -> Result<ModelDir> {
        ModelDir::select(explicit, &ModelConfig::default())
    }

    /// Finds the model `config` chooses. A `dir` is opened as it is. A
    /// shipped model (`name`, else [`DEFAULT_MODEL`]) is looked for in the
    /// models folder: `explicit` (from `--model-dir`), then
    /// `$TOOLRAG_MODEL_DIR`, then `./models`, then next to the executable and
    /// in the user's data folder (see [`ModelDir::for_index`]). A fastembed model name is
    /// refused with what to do instead: this build downloads nothing.
    pub fn select(explicit: Option<&Path>, config: &ModelConfig) -> Result<ModelDir> {
        if let Some(dir) = &config.dir {
            let mut settings = ModelSettings {
                id: format!("local model {}", dir.display()),
                ..ModelSettings::default()
            };
            settings.apply(config);
            return ModelDir::open_with(dir, settings);
        }
        let name = config.name.as_deref().unwrap_or(DEFAULT_MODEL);
        let Some(builtin) = builtin_model(name) else {
            return Err(unknown_model(name));
        };
        let mut settings = ModelSettings {
            id: builtin.id.to_string(),
            ..ModelSettings::default()
        };
        settings.apply(config);
        let mut searched = Vec::new();
        let env = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty());
        let mut candidates: Vec<(Option<PathBuf>, bool, &str)> = vec![
            (
                explicit.map(Path::to_path_buf),
                true,
                "the given models folder",
            ),
            (env.map(PathBuf::from), true, MODEL_DIR_ENV),
            (Some(PathBuf::from("models")), false, "./models"),
        ];
        // Then the places a model is installed for use from any folder.
        for (root, what) in installed_folders() {
            candidates.push((Some(root), false, what));
        }
        for (root, strict, what) in candidates {
            let Some(root) = root else { continue };
            let dir = builtin.model_in(&root);
            if strict || dir.join("model.onnx").exists() {
                return ModelDir::open_with(&dir, settings);
            }
            searched.push(format!("{what} = {}", dir.display()));
        }
        Err(Error::ModelNotFound {
            searched: searched.join(", "),
        })
    }

    /// Finds the model that built an index, from any working folder.
    ///
    /// A model the command chooses (`explicit`, from `--model-dir`, or a
    /// `name` or `dir` in `config`) is taken as [`ModelDir::select`] takes
    /// it. Otherwise the model `built_with` names is looked for, in order:
    /// the folder the index was built with; next to the executable
    /// (`<bin>/models`, `<bin>/../share/toolrag/models`); the user's data
    /// folder (`~/.local/share/toolrag/models` on Linux);
    /// `$TOOLRAG_MODEL_DIR`; `./models`. A folder is taken only when its
    /// `model.onnx` has the weights the index was built with (sha256).
    pub fn for_index(
        explicit: Option<&Path>,
        config: &ModelConfig,
        built_with: &IndexModel<'_>,
    ) -> Result<ModelDir> {
        if explicit.is_some() || config.dir.is_some() || config.name.is_some() {
            return ModelDir::select(explicit, config);
        }
        let weights = built_with.fingerprint.split('+').next().unwrap_or_default();
        let mut settings = ModelSettings {
            id: built_with.id.to_string(),
            ..ModelSettings::default()
        };
        settings.apply(config);
        let mut candidates = Vec::new();
        if let Some(dir) = built_with.dir {
            candidates.push((dir.to_path_buf(), "the folder the index was built with"));
        }
        if let Some(builtin) = BUILTIN_MODELS.iter().find(|m| m.id == built_with.id) {
            let mut roots = installed_folders();
            if let Some(env) = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
                roots.push((PathBuf::from(env), "$TOOLRAG_MODEL_DIR"));
            }
            roots.push((PathBuf::from("models"), "./models"));
            for (root, what) in roots {
                candidates.push((builtin.folder_in(&root), what));
            }
        }
        let mut searched = Vec::new();
        for (dir, what) in candidates {
            if !dir.join("model.onnx").is_file() {
                searched.push(format!("{what} = {}", dir.display()));
                continue;
            }
            let found = ModelDir::open_with(&dir, settings.clone())?;
            if weights.is_empty() || found.model_sha256()? == weights {
                return Ok(found);
            }
            searched.push(format!(
                "{what} = {} (another model: its sha256 is not the index's)",
                dir.display()
            ));
        }
        Err(Error::ModelNotFound {
            searched: format!(
                "for the index's model {}: {}",
                built_with.id,
                searched.join(", ")
            ),
        })
    }

    /// Opens `dir` as a model folder, checking that every file is there; the
    /// model is taken to be the shipped `minilm` (mean pooling, no prefixes).
    pub fn open(dir: &Path) -> Result<ModelDir> {
        ModelDir::open_with(dir, ModelSettings::default())
    }

    /// [`ModelDir::open`] with the settings the model is used with.
    pub fn open_with(dir: &Path, settings: ModelSettings) -> Result<ModelDir> {
        if !dir.is_dir() {
            return Err(Error::ModelCorrupt {
                dir: dir.to_path_buf(),
                message: "the folder does not exist".into(),
            });
        }
        let missing: Vec<&str> = MODEL_FILES
            .iter()
            .copied()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(Error::ModelCorrupt {
                dir: dir.to_path_buf(),
                message: format!("missing {}", missing.join(", ")),
            });
        }
        Ok(ModelDir {
            dir: dir.to_path_buf(),
            settings,
            sha256: OnceLock::new(),
        })
    }

    /// The settings the model is used with.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The ONNX model file.
    pub fn model_file(&self) -> PathBuf {
        self.dir.join("model.onnx")
    }

    /// The ONNX Runtime library to load: `$ORT_DYLIB_PATH` when set, otherwise a
    /// `libonnxruntime.so*` in the model folder or its parent, otherwise the
    /// one `scripts/fetch-model` put in `$TOOLRAG_MODEL_DIR` or `./models` (the
    /// runtime does not depend on the model, so a folder model of one's own,
    /// such as a `research/training/train-model` output, needs no copy of it).
    pub fn ort_library(&self) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let mut dirs = vec![self.dir.clone()];
        if let Some(parent) = self.dir.parent() {
            dirs.push(parent.to_path_buf());
        }
        if let Some(env) = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
            dirs.push(PathBuf::from(env));
        }
        dirs.push(PathBuf::from("models"));
        for d in dirs {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut libs: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with("libonnxruntime.so")
                            || n == "libonnxruntime.dylib"
                            || n == "onnxruntime.dll"
                    })
                })
                .collect();
            libs.sort();
            if let Some(l) = libs.pop() {
                return Some(l);
            }
        }
        None
    }

    /// The sha256 of `model.onnx`, hex-encoded; computed once.
    pub fn model_sha256(&self) -> Result<String> {
        if let Some(s) = self.sha256.get() {
            return Ok(s.clone());
        }
        let path = self.model_file();
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let sum = hex::encode(Sha256::digest(&bytes));
        Ok(self.sha256.get_or_init(|| sum).clone())
    }
}

/// The model an index was built with, as its manifest records it: what
/// [`ModelDir::for_index`] looks for.
#[derive(Debug, Clone, Copy)]
pub struct IndexModel<'a> {
    /// The model's id ([`ModelSettings::id`]).
    pub id: &'a str,
    /// The embedder's fingerprint: the weights' sha256, then `+` and a hash
    /// of the settings when they are not plain.
    pub fingerprint: &'a str,
    /// The model folder the index was built with, when recorded.
    pub dir: Option<&'a Path>,
}

/// The models folders a model is installed in for use from any working
/// folder, in order: next to the executable, then the user's data folder.
fn installed_folders() -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        out.push((bin.join("models"), "next to the executable"));
        out.push((
            bin.join("..").join("share").join("toolrag").join("models"),
            "beside the executable",
        ));
    }
    if let Some(data) = dirs::data_dir() {
        out.push((
            data.join("toolrag").join("models"),
            "the user's data folder",
        ));
    }
    out
}

/// The error for a model name that is not shipped: a fastembed model gets
/// what to do instead of a download; anything else the list of names.
fn unknown_model(name: &str) -> Error {
    let known: Vec<&str> = BUILTIN_MODELS.iter().map(|m| m.name).collect();
    let fastembed = fastembed::TextEmbedding::list_supported_models()
        .into_iter()
        .find(|m| m.model_code.eq_ignore_ascii_case(name));
    let message = match fastembed {
        Some(m) => format!(
            "`{}` is a fastembed model ({} dimensions), which fastembed downloads from a model hub; \
             this build of toolrag downloads no models (no model hub is reachable from where it is \
             built and tested). Get the model's files ({} and tokenizer.json, config.json, \
             special_tokens_map.json, tokenizer_config.json) on a machine that can reach the hub, \
             put them in a folder as model.onnx and the tokenizer files, and choose it with \
             `--model DIR` or `[model] dir = \"DIR\"`, with the model's prefixes{}",
            m.model_code,
            m.dim,
            m.model_file,
            if m.model_code.to_ascii_lowercase().contains("e5") {
                " (`query-prefix = \"query: \"`, `document-prefix = \"passage: \"` for E5 models)"
            } else {
                ""
            }
        ),
        None => format!(
            "no model is called `{name}`: choose one of {} (shipped with toolrag), a folder \
             holding model.onnx and its tokenizer files, or a fastembed model name",
            known.join(", ")
        ),
    };
    Error::ModelUnavailable {
        name: name.to_string(),
        message,
    }
}
