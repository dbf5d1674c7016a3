//! Finding and checking the model folder.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

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

/// A folder holding the embedding model, its tokenizer files and (optionally)
/// the ONNX Runtime library.
#[derive(Debug, Clone)]
pub struct ModelDir {
    dir: PathBuf,
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
        let mut searched = Vec::new();
        let env = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty());
        let candidates: [(Option<PathBuf>, bool, &str); 3] = [
            (explicit.map(Path::to_path_buf), true, "--model-dir"),
            (env.map(PathBuf::from), true, MODEL_DIR_ENV),
            (Some(PathBuf::from("models")), false, "./models"),
        ];
        for (dir, strict, what) in candidates {
            let Some(dir) = dir else { continue };
            if strict || dir.join("model.onnx").exists() {
                return ModelDir::open(&dir);
            }
            searched.push(format!("{what} = {}", dir.display()));
        }
        Err(Error::ModelNotFound {
            searched: searched.join(", "),
        })
    }

    /// Opens `dir` as a model folder, checking that every file is there.
    pub fn open(dir: &Path) -> Result<ModelDir> {
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
            sha256: OnceLock::new(),
        })
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
    /// `libonnxruntime.so*` in the model folder or its parent.
    pub fn ort_library(&self) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let mut dirs = vec![self.dir.clone()];
        if let Some(parent) = self.dir.parent() {
            dirs.push(parent.to_path_buf());
        }
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
