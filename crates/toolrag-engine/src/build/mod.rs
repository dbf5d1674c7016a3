//! Building an index generation, reusing the vectors of unchanged texts.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::index::dense::{self, Point, PointKind};
use crate::index::lexical::{self, FieldBoosts};
use crate::index::manifest::{
    Counts, FileEntry, Manifest, ModelInfo, ToolEntry, FORMAT_VERSION, MANIFEST,
};
use crate::index::{current_generation, publish, remove_stale_staging, BuildLock, STAGING_PREFIX};
use toolrag_core::error::{Error, Result};
use toolrag_core::registry::{document_text, Registry, ToolDef};

mod reuse;
mod vectors;

pub use reuse::content_hash;
use reuse::{previous_manifest, text_hash, tool_texts};
use toolrag_embed::Embedder;

/// What to build and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The index folder (default `index/`).
    pub out: PathBuf,
    /// BM25 field boosts.
    pub boosts: FieldBoosts,
    /// The HNSW graph is built and written only when the index has more
    /// dense points than this (default [`dense::SCAN_MAX_POINTS`]: below it,
    /// a scan of the vectors is faster and exact, and the graph would be
    /// written for nothing). A searcher walks the graph exactly when the
    /// generation has one; 0 forces a graph on any index with points.
    pub graph_min_points: usize,
    /// Called at named points of the build (`after-lexical`,
    /// `after-vectors`, `before-publish`), for a caller that wants to stop
    /// there: the binary's `TOOLRAG_FAIL_AT` test hook aborts the process,
    /// as a `kill -9` would. The library itself never exits.
    pub fail_point: Option<fn(&str)>,
    /// Set by the caller to stop the build (a Ctrl-C): checked between phases
    /// and before each chunk of texts is embedded, it ends the build with
    /// [`Error::Cancelled`], nothing published and the staged generation
    /// removed.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            out: PathBuf::from("index"),
            boosts: FieldBoosts::default(),
            graph_min_points: dense::SCAN_MAX_POINTS,
            fail_point: None,
            cancel: None,
        }
    }
}

impl BuildOptions {
    /// The default options for building into `out`.
    pub fn new(out: impl Into<PathBuf>) -> BuildOptions {
        BuildOptions {
            out: out.into(),
            ..BuildOptions::default()
        }
    }

    /// The named point `name` of the build: the fail point's hook, then the
    /// cancel.
    fn checkpoint(&self, name: &str) -> Result<()> {
        if let Some(f) = self.fail_point {
            f(name);
        }
        self.go_on()
    }

    /// [`Error::Cancelled`] once the caller asked the build to stop.
    pub(crate) fn go_on(&self) -> Result<()> {
        match &self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(Error::Cancelled {
                out: self.out.clone(),
            }),
            _ => Ok(()),
        }
    }
}

/// Progress, reported to an optional callback.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum BuildProgress {
    /// `total` texts need embedding; none are done yet.
    EmbedStart {
        /// Texts to embed.
        total: usize,
    },
    /// `done` more texts were embedded.
    Embedded {
        /// Texts embedded by this step.
        done: usize,
    },
    /// Embedding is over; the rest is writing.
    EmbedDone,
    /// A large share of the build's memory was just freed (the registry, the
    /// vector cache). A caller whose allocator keeps freed pages resident
    /// (the binary's mimalloc) may return them to the OS now, before the
    /// next phase allocates.
    MemoryFreed,
}

/// What a build did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildReport {
    /// Tools in the new index.
    pub tools: usize,
    /// Tools not in the previous index.
    pub new: usize,
    /// Tools whose content hash changed.
    pub changed: usize,
    /// Tools of the previous index that are gone.
    pub removed: usize,
    /// Tools whose content hash did not change.
    pub reused: usize,
    /// Texts embedded by this build.
    pub embedded_texts: usize,
    /// Texts whose vector came from the previous index.
    pub reused_texts: usize,
    /// Whether the index is lexical-only.
    pub lexical_only: bool,
    /// Wall time of the whole build, in seconds.
    pub seconds: f64,
    /// Wall time spent embedding, in seconds.
    pub embed_seconds: f64,
    /// Whether the generation has an HNSW graph.
    pub graph: bool,
    /// The new generation folder.
    pub generation: PathBuf,
}

impl std::fmt::Display for BuildReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "indexed {} tools: {} new, {} changed, {} removed, {} reused in {:.1} s",
            self.tools, self.new, self.changed, self.removed, self.reused, self.seconds
        )?;
        if self.lexical_only {
            write!(f, " (lexical only)")
        } else {
            write!(
                f,
                " ({} texts embedded, {} vectors reused)",
                self.embedded_texts, self.reused_texts
            )
        }
    }
}

/// Where a build gets its embedding model.
pub enum BuildModel<'a> {
    /// An embedder the caller holds, and may keep using after the build.
    Loaded(&'a dyn Embedder),
    /// A loader, called once the registry has been indexed lexically and
    /// released; the embedder is dropped again before the graph is built. A
    /// large build then holds the registry, the model and the graph one after
    /// the other, never together.
    Deferred(Box<dyn FnOnce() -> Result<Box<dyn Embedder>> + 'a>),
}

impl std::fmt::Debug for BuildModel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildModel::Loaded(e) => write!(f, "Loaded({})", e.model_id()),
            BuildModel::Deferred(_) => write!(f, "Deferred"),
        }
    }
}

/// An embedder owned by the build or borrowed from the caller.
enum HeldEmbedder<'a> {
    Borrowed(&'a dyn Embedder),
    Owned(Box<dyn Embedder>),
}

impl HeldEmbedder<'_> {
    fn get(&self) -> &dyn Embedder {
        match self {
            HeldEmbedder::Borrowed(e) => *e,
            HeldEmbedder::Owned(e) => e.as_ref(),
        }
    }
}

/// Returns freed heap pages to the operating system. A registry is many small
/// allocations; once it is dropped, the allocator keeps their pages resident
/// unless asked, and the model loaded next would sit on top of them. The
/// library asks glibc's malloc, which ONNX Runtime uses whatever the Rust
/// global allocator is (and which is the Rust one when the caller keeps the
/// system allocator); then it tells the caller
/// ([`BuildProgress::MemoryFreed`]), who knows its own allocator (the
/// binary's mimalloc).
fn release_freed_memory(progress: &(dyn Fn(BuildProgress) + Sync)) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
    progress(BuildProgress::MemoryFreed);
}

/// Builds an index of `registry` into `opts.out`. With `model` `None` the
/// index is lexical-only. `progress` hears about embedding progress.
///
/// The build runs in phases so that its peak memory is the largest of them,
/// not their sum: the lexical index and `tools.json` from the registry, which
/// is then dropped; the model, embedding only the texts whose vectors the
/// previous generation does not have, each vector written to `vectors.bin` as
/// it is placed; then the graph, streamed from that file.
///
/// A failure while writing the new generation (a full disk, an I/O error) is
/// [`Error::BuildFailed`]: the half-written generation is removed, and the
/// live one, which the build never touches, keeps serving.
pub fn build(
    registry: Registry,
    model: Option<BuildModel<'_>>,
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildProgress) + Sync),
) -> Result<BuildReport> {
    check_out(opts)
        .and_then(|()| build_generation(registry, model, opts, progress))
        .map_err(|e| {
            let failed = build_failed(&opts.out, e);
            if matches!(failed, Error::BuildFailed { .. } | Error::Cancelled { .. }) {
                // Only this process's staging folder: another build's is its own.
                let staging = opts
                    .out
                    .join(format!("{STAGING_PREFIX}{}", std::process::id()));
                let _ = std::fs::remove_dir_all(staging);
            }
            failed
        })
}

/// Refuses an index path that is a file, and a build cancelled before it
/// started.
fn check_out(opts: &BuildOptions) -> Result<()> {
    if opts.out.exists() && !opts.out.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{} is a file: an index is a folder (a new one, or one holding an index)",
            opts.out.display()
        )));
    }
    opts.go_on()
}

/// What a build error means to the user: a failure to write the new
/// generation is a failed build (with "the disk is full" when it is), not a
/// damaged index; other errors (a bad registry, the model, the lock) are
/// already about their cause.
fn build_failed(out: &Path, e: Error) -> Error {
    let (reason, disk_full) = match &e {
        Error::Io { source, .. } => (e.to_string(), crate::index::is_disk_full(source)),
        Error::DiskFull(m) => (m.clone(), true),
        Error::Index(m) => (m.clone(), false),
        _ => return e,
    };
    Error::BuildFailed {
        out: out.to_path_buf(),
        reason,
        disk_full,
    }
}

fn build_generation(
    registry: Registry,
    model: Option<BuildModel<'_>>,
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildProgress) + Sync),
) -> Result<BuildReport> {
    let started = Instant::now();
    let out = &opts.out;
    let _lock = BuildLock::acquire(out)?;
    remove_stale_staging(out);
    let previous = previous_manifest(out);
    let lexical_only = model.is_none();
    let registry = crate::learn::attach_from(registry, out)?;

    let tools = registry.tools();
    let hashes: Vec<String> = tools.par_iter().map(content_hash).collect();
    let mut report = BuildReport {
        tools: tools.len(),
        lexical_only,
        ..BuildReport::default()
    };
    count_changes(&previous, tools, &hashes, &mut report);

    let staging = out.join(format!("{STAGING_PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;

    let mut counts = Counts {
        tools: tools.len(),
        namespaces: registry.namespaces().len(),
        ..Counts::default()
    };

    // Phase 1, from the registry: the texts to embed, the lexical index and
    // tools.json.
    let (points, point_texts) = if lexical_only {
        (Vec::new(), Vec::new())
    } else {
        points_of(tools)
    };
    let entries = write_lexical(&staging, tools, hashes)?;
    drop(registry);
    release_freed_memory(progress);
    crate::index::impact::write(
        &staging.join("lexical"),
        &opts.boosts,
        &staging.join(crate::index::impact::FILE),
    )?;
    release_freed_memory(progress);
    opts.checkpoint("after-lexical")?;

    // Phase 2, with the model: embed what the previous generation lacks and
    // write every point's vector; then measure the registry's noise with the
    // calibration requests.
    let mut model_info = None;
    let mut calibration = None;
    if let Some(model) = model {
        let embedded = vectors::embed_and_write(
            model,
            &previous,
            &points,
            point_texts,
            &staging,
            &mut report,
            progress,
            opts,
        )?;
        release_freed_memory(progress);
        counts.points = points.len();
        counts.examples = points
            .iter()
            .filter(|p| p.kind == PointKind::Example)
            .count();
        drop(points);
        opts.checkpoint("after-vectors")?;
        calibration = Some(calibrate(
            &staging,
            counts.tools,
            Some(embedded.calibration.as_slice()),
        )?);

        // Phase 3: the graph, streamed from vectors.bin, only for an index
        // too large to scan.
        if counts.points > opts.graph_min_points {
            opts.go_on()?;
            dense::build_and_dump_hnsw(&staging)?;
            report.graph = dense::has_graph(&staging);
        }
        model_info = Some(embedded.info);
    }

    let calibration = match calibration {
        Some(c) => c,
        None => calibrate(&staging, counts.tools, None)?,
    };
    crate::search::calibration::write(&staging, &calibration)?;
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        toolrag_version: env!("CARGO_PKG_VERSION").to_string(),
        model: model_info,
        lexical_only,
        built_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        boosts: opts.boosts,
        counts,
        graph: report.graph,
        calibration: Some(calibration.summary()),
        tools: entries,
        files: file_entries(&staging)?,
    };
    // The manifest is written last: a generation without one is incomplete.
    let manifest_path = staging.join(MANIFEST);
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::Index(e.to_string()))?;
    std::fs::write(&manifest_path, bytes).map_err(|e| Error::io(&manifest_path, e))?;
    opts.checkpoint("before-publish")?;
    report.generation = publish(out, &staging)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Writes the lexical index and tools.json of `tools` to the staged
/// generation; gives back the manifest's entry of each tool.
fn write_lexical(staging: &Path, tools: &[ToolDef], hashes: Vec<String>) -> Result<Vec<ToolEntry>> {
    lexical::write(&staging.join("lexical"), tools)?;
    write_tools_json(&staging.join("tools.json"), tools)?;
    Ok(tools
        .iter()
        .zip(hashes)
        .map(|(t, hash)| ToolEntry {
            id: t.id.clone(),
            hash,
        })
        .collect())
}

/// Counts the tools that are new, changed, unchanged and removed since the
/// previous generation, by content hash.
fn count_changes(
    previous: &reuse::Previous,
    tools: &[ToolDef],
    hashes: &[String],
    report: &mut BuildReport,
) {
    let old: HashMap<&str, &str> = previous
        .tools
        .iter()
        .map(|t| (t.id.as_str(), t.hash.as_str()))
        .collect();
    for (t, h) in tools.iter().zip(hashes) {
        match old.get(t.id.as_str()) {
            None => report.new += 1,
            Some(o) if *o == h => report.reused += 1,
            Some(_) => report.changed += 1,
        }
    }
    let current: std::collections::HashSet<&str> = tools.iter().map(|t| t.id.as_str()).collect();
    report.removed = old.keys().filter(|id| !current.contains(*id)).count();
}

/// The dense points of `tools` (the tool's own text, then each example and
/// learnt request) and their texts, in the same order.
fn points_of(tools: &[ToolDef]) -> (Vec<Point>, Vec<String>) {
    let texts: Vec<Vec<(PointKind, String)>> = tools.par_iter().map(tool_texts).collect();
    let mut points = Vec::new();
    let mut point_texts = Vec::new();
    for (ord, tt) in texts.into_iter().enumerate() {
        for (kind, text) in tt {
            points.push(Point {
                tool: ord as u32,
                kind,
                text_hash: text_hash(&text),
            });
            point_texts.push(text);
        }
    }
    (points, point_texts)
}

/// Runs the calibration requests through the staged generation's retrievers:
/// lexical, and dense when `vectors` (the requests' embeddings) are given.
fn calibrate(
    staging: &Path,
    tools: usize,
    vectors: Option<&[crate::search::calibration::RequestVectors]>,
) -> Result<crate::search::Calibration> {
    use crate::search::{dense::DenseRetriever, lexical::LexicalRetriever, SearchConfig};
    let lexical = LexicalRetriever::open(staging)?;
    let dense = match vectors {
        Some(_) => Some(DenseRetriever::open_without_model(
            staging,
            tools,
            &SearchConfig::default(),
            dense::DenseOptions::default(),
        )?),
        None => None,
    };
    crate::search::calibration::measure(&lexical, dense.as_ref(), vectors)
}

/// Writes `tools.json` one tool at a time (a copy of a large registry would
/// double its memory). Item spans only serve lint; the index keeps the tool's
/// own location.
fn write_tools_json(path: &Path, tools: &[ToolDef]) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| Error::io(path, e);
    w.write_all(b"[").map_err(io)?;
    for (i, t) in tools.iter().enumerate() {
        if i > 0 {
            w.write_all(b",").map_err(io)?;
        }
        let mut t = t.clone();
        t.source.spans.clear();
        serde_json::to_writer(&mut w, &t).map_err(|e| Error::Index(e.to_string()))?;
    }
    w.write_all(b"]").map_err(io)?;
    let file = w
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, e))
}

/// The size and checksum of every file under the generation folder `dir`
/// but the manifest, sorted by path. tantivy's lock files are left out: a
/// reader may create and remove them.
fn file_entries(dir: &Path) -> Result<Vec<FileEntry>> {
    let mut rels = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.map_err(|e| {
            let path = e.path().unwrap_or(dir).to_path_buf();
            Error::io(path, e.into())
        })?;
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e.path().strip_prefix(dir).expect("under the walked folder");
        let rel: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let rel = rel.join("/");
        if rel == MANIFEST || rel.ends_with(".lock") {
            continue;
        }
        rels.push(rel);
    }
    rels.par_iter().map(|rel| FileEntry::of(dir, rel)).collect()
}

#[cfg(test)]
mod tests;
