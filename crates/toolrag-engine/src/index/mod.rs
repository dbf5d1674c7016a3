//! The write path: turning a registry into an on-disk index, atomically and
//! incrementally. The read path lives in `search`.
//!
//! # Layout
//!
//! ```text
//! index/
//!   README.md        committed; describes this layout
//!   LOCK             held by a running build (advisory file lock)
//!   CURRENT          the name of the live generation, replaced by rename
//!   gen-000007/      one complete, immutable index generation:
//!     manifest.json  format version, model, build time, tool ids and hashes,
//!                    counts, whether there is a graph, and every other file
//!                    of the generation with its size and CRC-32
//!     tools.json     the normalised tools, in ordinal order
//!     lexical/       the tantivy index
//!     impacts.bin    versioned header, then each term's BM25 score per tool,
//!                    precomputed from the tantivy index
//!     vectors.bin    versioned header, the point → tool map and the raw
//!                    vectors (absent when lexical-only)
//!     dense.hnsw.*   the HNSW graph (hnsw_rs file_dump), only above
//!                    `BuildOptions::graph_min_points` points
//!   .staging-*/      a build in progress; never read
//!   learnt.json      the requests learnt from use, per tool (`toolrag
//!                    learn`); every build gives each tool its own
//!   usage.jsonl      the MCP gateway's usage log, which `toolrag learn` reads
//! ```
//!
//! A build writes a staging folder, records every file's size and checksum
//! in its manifest (written last), renames it to the next `gen-N`, then
//! replaces `CURRENT` by renaming a temporary file over it. A build killed at
//! any moment leaves the previous generation live and intact. Opening a
//! generation ([`Manifest::read`]) verifies every file first: a missing,
//! resized or changed one is [`Error::Corrupt`] naming it.
//!
//! The write path is [`crate::build`](mod@crate::build). Modules:
//! `manifest`, `codec` (the header of toolrag's own binary files), `lexical`
//! and `impact` (BM25), `dense` (the vectors and their searches), `topk` (the
//! best-k selection they share).

pub(crate) mod codec;
mod config;
pub mod dense;
pub mod impact;
pub mod lexical;
pub(crate) mod manifest;
pub(crate) mod topk;

use std::path::{Path, PathBuf};

pub use config::IndexConfig;
pub use manifest::{Counts, FileEntry, Manifest, ModelInfo, ToolEntry, FORMAT_VERSION};

use toolrag_core::error::{Error, Result};

/// The file naming the live generation.
pub const CURRENT: &str = "CURRENT";
/// The builders' lock file.
pub const LOCK: &str = "LOCK";
const GEN_PREFIX: &str = "gen-";
pub(crate) const STAGING_PREFIX: &str = ".staging-";

/// The tools of the generation folder `gen` (its `tools.json`), in ordinal
/// order, as the build wrote them (with their learnt requests).
pub fn read_tools(gen: &Path) -> Result<Vec<toolrag_core::registry::ToolDef>> {
    let path = gen.join("tools.json");
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Index(format!("{}: {e}", path.display())))
}

/// The live generation folder of the index in `dir`.
pub fn current_generation(dir: &Path) -> Result<PathBuf> {
    if dir.is_file() {
        return Err(Error::InvalidInput(format!(
            "{} is a file: an index is a folder",
            dir.display()
        )));
    }
    let current = dir.join(CURRENT);
    let name = match std::fs::read_to_string(&current) {
        Ok(s) => s.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NoIndex {
                path: dir.to_path_buf(),
            })
        }
        Err(e) => return Err(Error::io(current, e)),
    };
    if !name.starts_with(GEN_PREFIX) || name.contains('/') {
        return Err(Error::Index(format!(
            "{}: unexpected content {name:?}",
            current.display()
        )));
    }
    let gen = dir.join(&name);
    if !gen.is_dir() {
        return Err(Error::Index(format!(
            "{} names {name}, which is missing",
            current.display()
        )));
    }
    Ok(gen)
}

/// The number of a generation folder name (`gen-000007` → 7); `None` for
/// any other name.
pub fn generation_number(name: &str) -> Option<u64> {
    name.strip_prefix(GEN_PREFIX)?.parse().ok()
}

/// Existing generation folders, oldest first.
fn generations(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = generation_number(&e.file_name().to_string_lossy())?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// An exclusive, advisory lock on an index folder, released on drop (and by the
/// OS when a build is killed).
#[derive(Debug)]
pub struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    /// Takes the lock of `dir`, failing at once with [`Error::Locked`] when
    /// another build holds it.
    pub fn acquire(dir: &Path) -> Result<BuildLock> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(BuildLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: dir.to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }
}

/// Makes `staging` the live generation of `dir`: rename it to the next
/// `gen-N`, then atomically replace `CURRENT`. Older generations but the
/// previous one are removed. Returns the new generation folder.
pub(crate) fn publish(dir: &Path, staging: &Path) -> Result<PathBuf> {
    let next = generations(dir).last().map_or(1, |(n, _)| n + 1);
    let name = format!("{GEN_PREFIX}{next:06}");
    let gen = dir.join(&name);
    std::fs::rename(staging, &gen).map_err(|e| Error::io(&gen, e))?;
    let tmp = dir.join(format!("{CURRENT}.tmp"));
    std::fs::write(&tmp, format!("{name}\n")).map_err(|e| Error::io(&tmp, e))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, dir.join(CURRENT)).map_err(|e| Error::io(dir.join(CURRENT), e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    // Keep the previous generation for readers that are still opening it.
    let gens = generations(dir);
    if gens.len() > 2 {
        for (_, old) in &gens[..gens.len() - 2] {
            if let Err(e) = std::fs::remove_dir_all(old) {
                tracing::warn!(target: "index", path = %old.display(), "cannot remove an old generation: {e}");
            }
        }
    }
    Ok(gen)
}

/// Removes staging folders left by killed builds. Call only with the lock held.
/// Whether `e` says the disk (or the user's quota) is full.
pub(crate) fn is_disk_full(e: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    e.kind() == std::io::ErrorKind::StorageFull
        || e.kind() == std::io::ErrorKind::QuotaExceeded
        || e.raw_os_error() == Some(ENOSPC)
}

pub(crate) fn remove_stale_staging(dir: &Path) {
    for e in std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
    {
        if e.file_name().to_string_lossy().starts_with(STAGING_PREFIX) {
            tracing::info!(target: "index", path = %e.path().display(), "removing a stale staging folder");
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
