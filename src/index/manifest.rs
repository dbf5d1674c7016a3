//! `manifest.json`: what an index was built from and with.
//!
//! Persisted: change compatibly, or bump [`FORMAT_VERSION`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::lexical::FieldBoosts;
use crate::error::{Error, Result};

/// The on-disk format version. Bump it on any incompatible change to the files
/// of a generation folder; older or newer indexes are then refused with
/// [`Error::IncompatibleIndex`].
pub const FORMAT_VERSION: u32 = 2;

/// The embedding model an index was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// The vector dimension.
    pub dimension: usize,
    /// sha256 of the model file.
    pub sha256: String,
}

impl ModelInfo {
    /// The identity of `embedder`'s model.
    pub fn of(embedder: &dyn crate::embed::Embedder) -> ModelInfo {
        ModelInfo {
            id: embedder.model_id().to_string(),
            dimension: embedder.dimension(),
            sha256: embedder.fingerprint().to_string(),
        }
    }
}

impl std::fmt::Display for ModelInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "model {} ({} dims, sha256 {}…)",
            self.id,
            self.dimension,
            &self.sha256[..self.sha256.len().min(12)]
        )
    }
}

/// One tool's entry: its id and content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEntry {
    /// The tool id.
    pub id: String,
    /// sha256 (hex, 32 chars) of everything about the tool that the index uses.
    pub hash: String,
}

/// The counts of an index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Tools.
    pub tools: usize,
    /// Dense points (tool texts plus example requests).
    pub points: usize,
    /// Example requests with a vector.
    pub examples: usize,
    /// Namespaces.
    pub namespaces: usize,
}

/// The manifest of one index generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// [`FORMAT_VERSION`] at build time.
    pub format_version: u32,
    /// The toolrag version that built it.
    pub toolrag_version: String,
    /// The embedding model, or `None` for a lexical-only index.
    pub model: Option<ModelInfo>,
    /// Whether the index has no dense side.
    pub lexical_only: bool,
    /// When it was built (RFC 3339, UTC).
    pub built_at: String,
    /// The BM25 field boosts.
    pub boosts: FieldBoosts,
    /// Counts.
    pub counts: Counts,
    /// Every tool, in ordinal order.
    pub tools: Vec<ToolEntry>,
}

impl Manifest {
    /// Reads and checks `manifest.json` in `dir`: the format version must match.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.json");
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        // Check the version alone first, so that a future layout is reported as
        // incompatible rather than as damaged.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            format_version: u32,
            #[serde(default)]
            toolrag_version: String,
        }
        let v: Version = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Index(format!("{}: {e}", path.display())))?;
        if v.format_version != FORMAT_VERSION {
            return Err(Error::IncompatibleIndex {
                path: dir.to_path_buf(),
                found: format!(
                    "index format {} (toolrag {})",
                    v.format_version, v.toolrag_version
                ),
                expected: format!(
                    "index format {FORMAT_VERSION} (toolrag {})",
                    env!("CARGO_PKG_VERSION")
                ),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| Error::Index(format!("{}: {e}", path.display())))
    }

    /// Checks that the index was built with `model`; a lexical-only index fits any.
    pub fn check_model(&self, dir: &Path, model: &ModelInfo) -> Result<()> {
        match &self.model {
            Some(m) if m.sha256 != model.sha256 || m.dimension != model.dimension => {
                Err(Error::IncompatibleIndex {
                    path: dir.to_path_buf(),
                    found: m.to_string(),
                    expected: model.to_string(),
                })
            }
            _ => Ok(()),
        }
    }
}
