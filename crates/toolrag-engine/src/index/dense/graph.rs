//! The HNSW graph (hnsw_rs): built from `vectors.bin` and dumped beside it
//! (`dense.hnsw.graph`, `dense.hnsw.data`), loaded and walked only for a
//! generation that has one (an index too large to scan).
//!
//! hnsw_rs ties a loaded graph's lifetime to its loader ([`HnswIo`]); here
//! the two live together in one [`Graph`] (a `self_cell`), so the loader is
//! freed with the index it serves. hnsw_rs trusts its files. A graph is
//! only opened once the generation's checksums have been verified
//! (`Manifest::read`, as `Searcher::open` does), so damage the build did not
//! write never reaches it; for files that match a damaged manifest, the
//! layout of `dense.hnsw.data` is checked first (a short one would make
//! hnsw_rs print "ERROR loading point" and `process::exit(1)`, which nothing
//! can catch), and a panic inside the loader (a truncated
//! `dense.hnsw.graph`: an `unwrap` on a short read) becomes
//! [`Error::Corrupt`].

use std::path::Path;

use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::prelude::{AnnT, FilterT, Hnsw, HnswIo};

use super::vectors::{VectorReader, FILE as VECTORS_FILE, STREAM_CHUNK};
use super::Point;
use toolrag_core::error::{Error, Result};

/// The basename of the HNSW dump files (`dense.hnsw.graph`, `dense.hnsw.data`).
pub const HNSW_BASENAME: &str = "dense";
/// The files of a dumped graph, relative to the generation folder.
pub(crate) const GRAPH_FILES: [&str; 2] = ["dense.hnsw.graph", "dense.hnsw.data"];
/// Graph degree (links per node and layer).
const HNSW_M: usize = 16;
/// Candidate list size while building.
const HNSW_EF_CONSTRUCTION: usize = 200;
const HNSW_MAX_LAYER: usize = 16;

/// The least `ef` chosen automatically (twice the points asked for, at least
/// this).
const AUTO_EF_MIN: usize = 128;

/// `1 - dot`: the cosine distance of normalised vectors. Unlike anndists'
/// `DistDot` it never asserts on rounding (a dot of 1.0000001).
#[derive(Debug, Default, Clone, Copy)]
pub struct DotDistance;

impl Distance<f32> for DotDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - toolrag_embed::dot(a, b)).max(0.0)
    }
}

/// Whether the generation folder `dir` holds a dumped graph.
pub(crate) fn has_graph(dir: &Path) -> bool {
    dir.join(GRAPH_FILES[0]).is_file()
}

/// Builds the HNSW graph over the vectors of `vectors.bin` in `dir` and dumps
/// it there. The vectors are streamed from the file in chunks: the graph holds
/// its own copy of each, so a flat array beside it would double the memory.
pub(crate) fn build_and_dump_hnsw(dir: &Path) -> Result<()> {
    let mut r = VectorReader::open(&dir.join(VECTORS_FILE))?;
    let (n, dim) = (r.points().len(), r.dim());
    if n == 0 {
        return Ok(());
    }
    let hnsw: Hnsw<'_, f32, DotDistance> =
        Hnsw::new(HNSW_M, n, HNSW_MAX_LAYER, HNSW_EF_CONSTRUCTION, DotDistance);
    r.for_each_chunk(STREAM_CHUNK, |first, _, vectors| {
        let data: Vec<(&[f32], usize)> = vectors
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| (v, first + i))
            .collect();
        hnsw.parallel_insert_slice(&data);
        Ok(())
    })?;
    hnsw.file_dump(dir, HNSW_BASENAME)
        .map_err(|e| Error::Index(format!("cannot write the HNSW graph: {e}")))?;
    Ok(())
}

type LoadedHnsw<'a> = Hnsw<'a, f32, DotDistance>;

self_cell::self_cell!(
    /// A loaded graph and the hnsw_rs loader it borrows from, dropped together.
    pub(crate) struct Graph {
        owner: HnswIo,
        #[not_covariant]
        dependent: LoadedHnsw,
    }
);

/// The magic number of `dense.hnsw.data` and of each of its records
/// (hnsw_rs `MAGICDATAP`).
const DATA_MAGIC: u32 = 0xa67f_0000;

/// Checks the layout of `dense.hnsw.data` before hnsw_rs reads it: the
/// header, then exactly `points` records of a `dim`-float vector each, with
/// ids below `points`. hnsw_rs trusts this file: a short one makes it call
/// `process::exit(1)` ("ERROR loading point"), a wrong record length makes
/// it allocate what the file says and read past the vector. The checksums
/// already refuse any damage the build did not write; this refuses a file
/// that is consistent with a damaged manifest, reading only the record
/// headers.
fn check_data_file(path: &Path, points: usize, dim: usize) -> Result<()> {
    use std::io::{BufReader, Read};
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let vector = (dim * 4) as u64;
    let header = 4 + std::mem::size_of::<usize>() as u64;
    let record = 4 + 8 + 8 + vector;
    let expected = header + points as u64 * record;
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    if size != expected {
        return Err(corrupt(format!(
            "it has {size} bytes; {points} vectors of {dim} dimensions take {expected}"
        )));
    }
    let mut r = BufReader::new(std::fs::File::open(path).map_err(|e| Error::io(path, e))?);
    let io = |e: std::io::Error| Error::io(path, e);
    let mut u32_ = [0u8; 4];
    let mut u64_ = [0u8; 8];
    r.read_exact(&mut u32_).map_err(io)?;
    let mut word = [0u8; std::mem::size_of::<usize>()];
    r.read_exact(&mut word).map_err(io)?;
    if u32::from_ne_bytes(u32_) != DATA_MAGIC || usize::from_ne_bytes(word) != dim {
        return Err(corrupt(format!(
            "its header is not that of {dim}-dimension vectors"
        )));
    }
    for i in 0..points {
        r.read_exact(&mut u32_).map_err(io)?;
        let magic = u32::from_ne_bytes(u32_);
        r.read_exact(&mut u64_).map_err(io)?;
        let id = u64::from_ne_bytes(u64_);
        r.read_exact(&mut u64_).map_err(io)?;
        let len = u64::from_ne_bytes(u64_);
        if magic != DATA_MAGIC || id >= points as u64 || len != vector {
            return Err(corrupt(format!("its record {i} is not a vector record")));
        }
        r.seek_relative(vector as i64).map_err(io)?;
    }
    Ok(())
}

impl Graph {
    /// Loads the graph dumped in `dir`, which must have `points` points of
    /// `dim` dimensions.
    pub(crate) fn load(dir: &Path, points: usize, dim: usize) -> Result<Graph> {
        check_data_file(&dir.join(GRAPH_FILES[1]), points, dim)?;
        let path = dir.join(GRAPH_FILES[0]);
        let corrupt = |reason: String| Error::Corrupt {
            path: path.clone(),
            reason,
        };
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Graph::try_new(HnswIo::new(dir, HNSW_BASENAME), |io| {
                io.load_hnsw_with_dist::<f32, DotDistance>(DotDistance)
            })
        }));
        let graph = match loaded {
            Ok(Ok(g)) => g,
            Ok(Err(e)) => return Err(corrupt(format!("hnsw_rs cannot load it: {e}"))),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                return Err(corrupt(format!("hnsw_rs failed loading it: {what}")));
            }
        };
        let found = graph.with_dependent(|_, h| h.get_nb_point());
        if found != points {
            return Err(corrupt(format!(
                "the graph has {found} points but {VECTORS_FILE} has {points}"
            )));
        }
        Ok(graph)
    }

    /// The `limit` nearest points to `query` by a walk with candidate list
    /// `ef` (0: automatic), best first, keeping only points whose tool passes
    /// `keep`.
    pub(crate) fn search(
        &self,
        points: &[Point],
        query: &[f32],
        limit: usize,
        ef: usize,
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(usize, f32)> {
        let ef = if ef > 0 {
            ef.max(limit)
        } else {
            (limit * 2).max(AUTO_EF_MIN)
        };
        let found = self.with_dependent(|_, h| match keep {
            None => h.search(query, limit, ef),
            Some(keep) => {
                let filter = ToolFilter { points, keep };
                h.search_filter(query, limit, ef, Some(&filter))
            }
        });
        let mut out: Vec<(usize, f32)> = found
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect();
        out.sort_by(crate::index::topk::by_score);
        out
    }
}

struct ToolFilter<'a> {
    points: &'a [Point],
    keep: &'a dyn Fn(u32) -> bool,
}

impl FilterT for ToolFilter<'_> {
    fn hnsw_filter(&self, id: &usize) -> bool {
        self.points.get(*id).is_some_and(|p| (self.keep)(p.tool))
    }
}
