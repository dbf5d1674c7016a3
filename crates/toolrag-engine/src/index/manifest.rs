//! `manifest.json`: what an index was built from and with.
//!
//! Persisted: change compatibly, or bump [`FORMAT_VERSION`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::lexical::FieldBoosts;
use toolrag_core::error::{Error, Result};
use toolrag_core::retrieval::RetrieverId;

/// The on-disk format version. Bump it on any incompatible change to the files
/// of a generation folder, or to how they are read (the analyser of the
/// lexical index included); older or newer indexes are then refused with
/// [`Error::IncompatibleIndex`], whose message says to rebuild.
///
/// 4: runs of Chinese, Japanese and Korean characters are indexed as
/// character bigrams. A format-3 index holds each run as one term, which the
/// bigrams of a request never match, so CJK text in it would silently go
/// unfound (and a word glued to CJK text, as `README` in `读取README文件`,
/// with it); refusing it asks for the rebuild that fixes this.
pub const FORMAT_VERSION: u32 = 4;

/// The embedding model an index was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// The vector dimension.
    pub dimension: usize,
    /// sha256 of the model file.
    pub sha256: String,
    /// The model folder the index was built with, absolute: the first place
    /// the model is looked for when the index is opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<std::path::PathBuf>,
}

impl ModelInfo {
    /// The identity of `embedder`'s model.
    pub fn of(embedder: &dyn toolrag_embed::Embedder) -> ModelInfo {
        ModelInfo {
            id: embedder.model_id().to_string(),
            dimension: embedder.dimension(),
            sha256: embedder.fingerprint().to_string(),
            dir: embedder.source_dir().map(std::path::Path::to_path_buf),
        }
    }

    /// Whether `other` is the same model (id, dimension and weights), wherever
    /// its folder is.
    pub fn same_model(&self, other: &ModelInfo) -> bool {
        self.id == other.id && self.dimension == other.dimension && self.sha256 == other.sha256
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

/// One file of a generation, as the build wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// The path relative to the generation folder, `/`-separated.
    pub path: String,
    /// The size in bytes.
    pub size: u64,
    /// The CRC-32 of the content (damage detection, not security).
    pub crc32: u32,
}

impl FileEntry {
    /// The entry of the file `rel` in the generation folder `dir`, as it is now.
    pub(crate) fn of(dir: &Path, rel: &str) -> Result<FileEntry> {
        let path = dir.join(rel);
        let (size, crc32) = checksum(&path)?;
        Ok(FileEntry {
            path: rel.to_string(),
            size,
            crc32,
        })
    }

    /// Checks the file against this entry.
    pub(crate) fn verify(&self, dir: &Path) -> Result<()> {
        let corrupt = |path: PathBuf, reason: String| Error::Corrupt { path, reason };
        // Only plain relative paths: a damaged manifest must not send the
        // check outside the generation.
        let rel = Path::new(&self.path);
        if self.path.is_empty()
            || !rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(corrupt(
                dir.join(MANIFEST),
                format!("it lists a file outside the generation ({:?})", self.path),
            ));
        }
        let path = dir.join(rel);
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(corrupt(path, "it is missing".into()))
            }
            Err(e) => return Err(Error::io(path, e)),
        };
        if size != self.size {
            return Err(corrupt(
                path,
                format!("it has {size} bytes, the build wrote {}", self.size),
            ));
        }
        let (_, crc32) = checksum(&path)?;
        if crc32 != self.crc32 {
            return Err(corrupt(
                path,
                "its checksum is not the one the build recorded".into(),
            ));
        }
        Ok(())
    }
}

/// The size and CRC-32 of the file at `path`, read in 1 MiB blocks.
fn checksum(path: &Path) -> Result<(u64, u32)> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok((size, h.finalize()))
}

/// The manifest's file name in a generation folder.
pub(crate) const MANIFEST: &str = "manifest.json";

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
    /// Whether the generation has an HNSW graph (`dense.hnsw.*`); searched
    /// through it if so, by a scan of the vectors if not.
    #[serde(default)]
    pub graph: bool,
    /// What the calibration requests scored on this registry (the noise
    /// floors; the full measurement is `calibration.json`). `None` for a
    /// generation built before calibrations were stored: it is measured when
    /// the index is opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationSummary>,
    /// Every tool, in ordinal order.
    pub tools: Vec<ToolEntry>,
    /// Every file of the generation but the manifest, with its size and
    /// checksum, verified when the generation is opened.
    #[serde(default)]
    pub files: Vec<FileEntry>,
}

impl Manifest {
    /// Reads and checks `manifest.json` in the generation folder `dir`: the
    /// format version must match ([`Error::IncompatibleIndex`]), and every
    /// file it lists must be there with the size and checksum the build
    /// recorded ([`Error::Corrupt`] naming the file). Opening a generation
    /// goes through here, so a damaged file is refused before any reader
    /// (tantivy, hnsw_rs, the vector codec) sees it.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let manifest = Manifest::read_unverified(dir)?;
        manifest.verify(dir)?;
        Ok(manifest)
    }

    /// Checks every file the manifest lists against the generation folder
    /// `dir` (in parallel; the largest first so that they finish together).
    pub fn verify(&self, dir: &Path) -> Result<()> {
        let listed = |name: &str| self.files.iter().any(|f| f.path == name);
        if self.graph && !crate::index::dense::GRAPH_FILES.iter().all(|g| listed(g)) {
            return Err(Error::Corrupt {
                path: dir.join(MANIFEST),
                reason: "it records a graph but not its files".into(),
            });
        }
        let mut order: Vec<&FileEntry> = self.files.iter().collect();
        order.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
        let started = std::time::Instant::now();
        // The first failure in the manifest's order, so the message is stable.
        let results: Vec<Result<()>> = order.par_iter().map(|f| f.verify(dir)).collect();
        let mut failed: Vec<(&str, Error)> = order
            .iter()
            .zip(results)
            .filter_map(|(f, r)| r.err().map(|e| (f.path.as_str(), e)))
            .collect();
        failed.sort_by(|a, b| a.0.cmp(b.0));
        if let Some((_, e)) = failed.into_iter().next() {
            return Err(e);
        }
        tracing::debug!(
            target: "index",
            files = self.files.len(),
            bytes = self.files.iter().map(|f| f.size).sum::<u64>(),
            ms = started.elapsed().as_secs_f64() * 1e3,
            "checksums verified"
        );
        Ok(())
    }

    /// Reads `manifest.json` in `dir` and checks its format version, without
    /// verifying the files it lists (for a look at the metadata only; open a
    /// generation with [`Manifest::read`]).
    pub fn read_unverified(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST);
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
        let corrupt = |e: serde_json::Error| Error::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        };
        let v: Version = serde_json::from_slice(&bytes).map_err(corrupt)?;
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
        serde_json::from_slice(&bytes).map_err(corrupt)
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

/// The manifest's summary of a generation's calibration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CalibrationSummary {
    /// How many calibration requests were run.
    pub requests: usize,
    /// Each retriever's median best raw score over the calibration requests:
    /// what a typical unrelated request scores on this registry.
    pub medians: BTreeMap<RetrieverId, f32>,
    /// The languages calibrated beside English, by code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
}
