//! The dense side: one vector per tool text and per example request, kept raw
//! (`vectors.bin`) and in an HNSW graph (hnsw_rs `file_dump`), with a map from
//! each point to its tool.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::prelude::{AnnT, FilterT, Hnsw, HnswIo};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"TRVEC001";
/// The basename of the HNSW dump files (`dense.hnsw.graph`, `dense.hnsw.data`).
pub const HNSW_BASENAME: &str = "dense";
/// Graph degree (links per node and layer).
const HNSW_M: usize = 16;
/// Candidate list size while building.
const HNSW_EF_CONSTRUCTION: usize = 200;
const HNSW_MAX_LAYER: usize = 16;

/// Up to this many points a search compares the query with every vector
/// instead of walking the graph: exact, and cheaper than HNSW at the `ef` a
/// deep fused search needs (on bfcl, 3,258 points, a full scan is about 1.25 M
/// multiply-adds, under 0.2 ms, where the graph walk at ef 300 took about
/// 2 ms per query vector). The scan compares 8-bit codes first and rescores
/// the best candidates in full precision (see `DenseIndex::scan`). Above it,
/// the graph.
pub const EXACT_MAX_POINTS: usize = 10_000;

/// Up to this many points (and above [`EXACT_MAX_POINTS`]) a search still
/// reads every point, but first by a one-bit code per dimension (the sign of
/// the vector less the mean of all vectors: 48 bytes for 384 dimensions), and
/// scores only the closest few thousand by Hamming distance with the 8-bit
/// codes and then in full precision. At 100k points the bit codes are 4.8 MB
/// and the pass costs less than the HNSW walk, with more of the exact answer
/// (BENCHMARKS.md, query latency on the synthetic registries, under "Index
/// build"). Above it, the graph.
pub const SCAN_MAX_POINTS: usize = 300_000;

/// How many points the bit-code pass hands to the 8-bit codes, per point
/// asked for (at least [`BINARY_MIN_CANDIDATES`]).
const BINARY_CANDIDATES_PER_LIMIT: usize = 40;
/// The fewest points the bit-code pass hands on.
const BINARY_MIN_CANDIDATES: usize = 400;

/// How an opened dense index searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseOptions {
    /// Scan every vector exactly up to this many points.
    pub exact_max_points: usize,
    /// Above `exact_max_points`, scan bit codes up to this many points (see
    /// [`SCAN_MAX_POINTS`]); walk the graph above.
    pub scan_max_points: usize,
    /// The HNSW candidate list size (`ef`) per query vector; 0 picks it from
    /// the number of points asked for (see [`DenseIndex::search`]).
    pub ef: usize,
}

/// The least `ef` chosen automatically (twice the points asked for, at least
/// this).
const AUTO_EF_MIN: usize = 128;

impl Default for DenseOptions {
    fn default() -> Self {
        DenseOptions {
            exact_max_points: EXACT_MAX_POINTS,
            scan_max_points: SCAN_MAX_POINTS,
            ef: 0,
        }
    }
}

/// What a point's vector embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PointKind {
    /// The tool's document text (name, summary, description, parameters).
    Tool = 0,
    /// One example request of the tool.
    Example = 1,
}

/// One vector's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The tool's ordinal in the index.
    pub tool: u32,
    /// What the vector embeds.
    pub kind: PointKind,
    /// A hash of the embedded text, so that a rebuild reuses the vector.
    pub text_hash: [u8; 16],
}

/// `1 - dot`: the cosine distance of normalised vectors. Unlike anndists'
/// `DistDot` it never asserts on rounding (a dot of 1.0000001).
#[derive(Debug, Default, Clone, Copy)]
pub struct DotDistance;

impl Distance<f32> for DotDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - crate::embed::dot(a, b)).max(0.0)
    }
}

/// Writes `vectors.bin` one vector at a time, so that a build never holds a
/// flat copy of every vector: the header and point table first, then each
/// point's vector in point order.
pub(crate) struct VectorWriter {
    w: BufWriter<std::fs::File>,
    path: std::path::PathBuf,
    dim: usize,
    left: usize,
}

impl VectorWriter {
    /// Creates `path` and writes the header and the point map.
    pub(crate) fn create(path: &Path, dim: usize, points: &[Point]) -> Result<VectorWriter> {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        let mut w = BufWriter::new(file);
        let io = |e| Error::io(path, e);
        w.write_all(MAGIC).map_err(io)?;
        w.write_all(&(dim as u32).to_le_bytes()).map_err(io)?;
        w.write_all(&(points.len() as u32).to_le_bytes())
            .map_err(io)?;
        for p in points {
            w.write_all(&p.tool.to_le_bytes()).map_err(io)?;
            w.write_all(&[p.kind as u8]).map_err(io)?;
            w.write_all(&p.text_hash).map_err(io)?;
        }
        Ok(VectorWriter {
            w,
            path: path.to_path_buf(),
            dim,
            left: points.len(),
        })
    }

    /// Appends the next point's vector.
    pub(crate) fn push(&mut self, v: &[f32]) -> Result<()> {
        if v.len() != self.dim {
            return Err(Error::Embed(format!(
                "the model gave {} dimensions, not {}",
                v.len(),
                self.dim
            )));
        }
        if self.left == 0 {
            return Err(Error::Index("more vectors than points".into()));
        }
        self.left -= 1;
        for x in v {
            self.w
                .write_all(&x.to_le_bytes())
                .map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Flushes and syncs the file; every point must have its vector.
    pub(crate) fn finish(self) -> Result<()> {
        if self.left != 0 {
            return Err(Error::Index(format!("{} points have no vector", self.left)));
        }
        let path = self.path;
        let file = self
            .w
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&path, e))
    }
}

/// An open `vectors.bin` whose header and point table have been read; the
/// vectors follow, in point order.
pub(crate) struct VectorReader {
    r: BufReader<std::fs::File>,
    path: std::path::PathBuf,
    dim: usize,
    points: Vec<Point>,
    /// Vectors not read yet.
    left: usize,
}

impl VectorReader {
    /// Opens `path` and reads its header and point table.
    pub(crate) fn open(path: &Path) -> Result<VectorReader> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut r = BufReader::new(file);
        let bad = |what: &str| Error::Index(format!("{}: {what}", path.display()));
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| bad("truncated header"))?;
        if &magic != MAGIC {
            return Err(bad("not a toolrag vector file"));
        }
        let mut u = [0u8; 4];
        r.read_exact(&mut u).map_err(|_| bad("truncated header"))?;
        let dim = u32::from_le_bytes(u) as usize;
        r.read_exact(&mut u).map_err(|_| bad("truncated header"))?;
        let n = u32::from_le_bytes(u) as usize;
        if len != (8 + 4 + 4 + 21 * n + 4 * n * dim) as u64 {
            return Err(bad("vector data has the wrong length"));
        }
        let mut points = Vec::with_capacity(n);
        let mut rec = [0u8; 21];
        for _ in 0..n {
            r.read_exact(&mut rec)
                .map_err(|_| bad("truncated point table"))?;
            let kind = match rec[4] {
                0 => PointKind::Tool,
                1 => PointKind::Example,
                _ => return Err(bad("unknown point kind")),
            };
            let mut text_hash = [0u8; 16];
            text_hash.copy_from_slice(&rec[5..21]);
            points.push(Point {
                tool: u32::from_le_bytes(rec[..4].try_into().expect("4 bytes")),
                kind,
                text_hash,
            });
        }
        Ok(VectorReader {
            r,
            path: path.to_path_buf(),
            dim,
            points,
            left: n,
        })
    }

    /// The vector dimension.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// The point map, in point order.
    pub(crate) fn points(&self) -> &[Point] {
        &self.points
    }

    /// Calls `f(first_point, points, vectors)` for consecutive chunks of at
    /// most `chunk_points` of the vectors not read yet (row-major, `dim`
    /// wide), with the points they belong to, so a large file is never held
    /// whole.
    pub(crate) fn for_each_chunk(
        &mut self,
        chunk_points: usize,
        mut f: impl FnMut(usize, &[Point], &[f32]) -> Result<()>,
    ) -> Result<()> {
        let mut chunk = Vec::new();
        let mut first = self.points.len() - self.left;
        while self.left > 0 {
            self.next_chunk(chunk_points.max(1), &mut chunk)?;
            let n = chunk.len() / self.dim.max(1);
            f(first, &self.points[first..first + n], &chunk)?;
            first += n;
        }
        Ok(())
    }

    /// Reads the next `max_points` vectors (fewer at the end; none when done),
    /// row-major, into `out` (cleared first).
    fn next_chunk(&mut self, max_points: usize, out: &mut Vec<f32>) -> Result<()> {
        out.clear();
        let take = max_points.min(self.left);
        let mut bytes = vec![0u8; take * self.dim * 4];
        self.r
            .read_exact(&mut bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))),
        );
        self.left -= take;
        Ok(())
    }
}

/// Vectors read (and graph points inserted) per step when streaming
/// `vectors.bin`: 4,096 × 384 floats is 6 MiB.
pub(crate) const STREAM_CHUNK: usize = 4096;

/// Reads `vectors.bin`: its header and point table, and the raw vectors only
/// when there are at most `vectors_up_to` points (a searcher of a large index
/// needs the map, not the vectors the graph holds).
fn read_vector_file(
    path: &Path,
    vectors_up_to: usize,
) -> Result<(usize, Vec<Point>, Option<Vec<f32>>)> {
    let mut r = VectorReader::open(path)?;
    if r.points.len() > vectors_up_to {
        return Ok((r.dim, r.points, None));
    }
    let mut vectors = Vec::new();
    r.next_chunk(r.left, &mut vectors)?;
    Ok((r.dim, r.points, Some(vectors)))
}

/// Builds the HNSW graph over the vectors of `vectors.bin` in `dir` and dumps
/// it there. The vectors are streamed from the file in chunks: the graph holds
/// its own copy of each, so a flat array beside it would double the memory.
pub(crate) fn build_and_dump_hnsw(dir: &Path) -> Result<()> {
    let mut r = VectorReader::open(&dir.join("vectors.bin"))?;
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

/// The opened dense side of an index.
pub struct DenseIndex {
    /// The graph, loaded only for indexes too large to scan.
    hnsw: Option<Hnsw<'static, f32, DotDistance>>,
    /// The raw vectors and their 8-bit codes, kept for the scans.
    exact: Option<ScanVectors>,
    /// The one-bit codes, for indexes between the exact and the graph sizes.
    bits: Option<BitCodes>,
    points: Vec<Point>,
    dim: usize,
    ef: usize,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("points", &self.points.len())
            .field("dim", &self.dim)
            .finish()
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

impl DenseIndex {
    /// Opens the dense side stored in `dir`: the point map and the dumped
    /// graph, plus the raw vectors when the index is small enough to scan.
    pub fn open(dir: &Path, options: DenseOptions) -> Result<DenseIndex> {
        let scan_up_to = options.exact_max_points.max(options.scan_max_points);
        let (dim, points, vectors) = read_vector_file(&dir.join("vectors.bin"), scan_up_to)?;
        let hnsw = if points.is_empty() || vectors.is_some() {
            None
        } else {
            // hnsw_rs ties the graph's lifetime to its loader; the loader is a few
            // bytes (no memory map), so leaking one per opened index is harmless.
            let io: &'static HnswIo = Box::leak(Box::new(HnswIo::new(dir, HNSW_BASENAME)));
            let h = io
                .load_hnsw_with_dist::<f32, DotDistance>(DotDistance)
                .map_err(|e| {
                    Error::Index(format!(
                        "cannot load the HNSW graph in {}: {e}",
                        dir.display()
                    ))
                })?;
            if h.get_nb_point() != points.len() {
                return Err(Error::Index(format!(
                    "the HNSW graph has {} points but vectors.bin has {}",
                    h.get_nb_point(),
                    points.len()
                )));
            }
            Some(h)
        };
        let exact = vectors.map(|v| ScanVectors::new(v, dim));
        let bits = match &exact {
            Some(e) if points.len() > options.exact_max_points => Some(BitCodes::new(e, dim)),
            _ => None,
        };
        Ok(DenseIndex {
            hnsw,
            exact,
            bits,
            points,
            dim,
            ef: options.ef,
        })
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The point table.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The `limit` nearest points to `query`, as `(point, cosine similarity)`,
    /// best first, keeping only points whose tool passes `keep`.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(usize, f32)> {
        if limit == 0 || query.len() != self.dim {
            return vec![];
        }
        if self.exact.is_some() {
            return self
                .search_many(&[(query, limit)], keep)
                .pop()
                .unwrap_or_default();
        }
        let Some(h) = &self.hnsw else { return vec![] };
        let ef = if self.ef > 0 {
            self.ef.max(limit)
        } else {
            (limit * 2).max(AUTO_EF_MIN)
        };
        let found = match keep {
            None => h.search(query, limit, ef),
            Some(keep) => {
                let filter = ToolFilter {
                    points: &self.points,
                    keep,
                };
                h.search_filter(query, limit, ef, Some(&filter))
            }
        };
        let mut out: Vec<(usize, f32)> = found
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }
}

impl DenseIndex {
    /// [`DenseIndex::search`] for several query vectors at once (a request
    /// and its clauses), each with its own limit. A scanned index is read
    /// once for all queries: the scan is bound by memory bandwidth, not by
    /// the arithmetic.
    pub fn search_many(
        &self,
        queries: &[(&[f32], usize)],
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Vec<(usize, f32)>> {
        let usable = queries.iter().all(|(q, _)| q.len() == self.dim);
        match (&self.exact, &self.bits) {
            (Some(exact), Some(bits)) if usable => self.scan_bits(exact, bits, queries, keep),
            (Some(exact), None) if usable => self.scan(exact, queries, keep),
            _ => queries
                .iter()
                .map(|(q, limit)| self.search(q, *limit, keep))
                .collect(),
        }
    }

    /// Every kept point's similarity with each query, the best `limit` of
    /// each: one pass over the vectors for all queries. The pass compares
    /// 8-bit codes (a quarter of the memory traffic, which is what a scan
    /// costs once the model has evicted the vectors from the CPU caches); the
    /// best `2 × limit` of each query are then scored again in full
    /// precision, so the result is the exact top `limit` unless a true
    /// neighbour's 8-bit score falls below twice as many others.
    fn scan(
        &self,
        exact: &ScanVectors,
        queries: &[(&[f32], usize)],
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Vec<(usize, f32)>> {
        let dim = self.dim;
        let coded: Vec<(Vec<i8>, f32)> = queries.iter().map(|(q, _)| quantized(q)).collect();
        let mut best: Vec<Best> = queries
            .iter()
            .map(|(_, limit)| Best::new(rescore_depth(*limit)))
            .collect();
        for (i, (code, scale)) in exact.codes.chunks_exact(dim).zip(&exact.scales).enumerate() {
            if keep.is_some_and(|k| !k(self.points[i].tool)) {
                continue;
            }
            for ((q, qs), b) in coded.iter().zip(best.iter_mut()) {
                b.push(i, dot_i8(q, code) * qs * scale);
            }
        }
        best.into_iter()
            .zip(queries)
            .map(|(b, &(q, limit))| {
                if limit == 0 {
                    return vec![];
                }
                self.rescore_full(exact, q, b, limit)
            })
            .collect()
    }
}

impl DenseIndex {
    /// The nearest kept points to each query (as many as its limit) by a
    /// pass over the one-bit codes: each query's closest candidates by
    /// Hamming distance are scored with the 8-bit codes, and the best
    /// `2 × limit` of those in full precision.
    fn scan_bits(
        &self,
        exact: &ScanVectors,
        bits: &BitCodes,
        queries: &[(&[f32], usize)],
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Vec<(usize, f32)>> {
        let wanted: Vec<usize> = queries
            .iter()
            .map(|(_, limit)| (BINARY_CANDIDATES_PER_LIMIT * limit).max(BINARY_MIN_CANDIDATES))
            .collect();
        let codes: Vec<Vec<u64>> = queries.iter().map(|(q, _)| bits.code(q)).collect();
        let mut cands = bits.candidates(&codes, &wanted);
        queries
            .iter()
            .zip(cands.iter_mut())
            .map(|(&(q, limit), cands)| {
                if limit == 0 {
                    return vec![];
                }
                if let Some(keep) = keep {
                    cands.retain(|&i| keep(self.points[i as usize].tool));
                }
                self.rescore(exact, q, cands, limit)
            })
            .collect()
    }

    /// The best `limit` of the candidate points for `query`: scored with the
    /// 8-bit codes, then the best `2 × limit` in full precision. The
    /// candidates are scattered over memory, so each one's cache lines are
    /// requested a few candidates ahead and the loads overlap.
    fn rescore(
        &self,
        exact: &ScanVectors,
        query: &[f32],
        cands: &[u32],
        limit: usize,
    ) -> Vec<(usize, f32)> {
        let dim = self.dim;
        let (q_code, q_scale) = quantized(query);
        let mut best = Best::new(rescore_depth(limit));
        for (j, &i) in cands.iter().enumerate() {
            if let Some(&ahead) = cands.get(j + PREFETCH_AHEAD) {
                let a = ahead as usize;
                prefetch(&exact.codes[a * dim..(a + 1) * dim]);
            }
            let i = i as usize;
            let code = &exact.codes[i * dim..(i + 1) * dim];
            best.push(i, dot_i8(&q_code, code) * q_scale * exact.scales[i]);
        }
        self.rescore_full(exact, query, best, limit)
    }

    /// The best `limit` of the 8-bit scan's best [`rescore_depth`] points,
    /// scored again in full precision (the vectors prefetched ahead).
    fn rescore_full(
        &self,
        exact: &ScanVectors,
        query: &[f32],
        best: Best,
        limit: usize,
    ) -> Vec<(usize, f32)> {
        let dim = self.dim;
        let picked = top(best.items, rescore_depth(limit));
        for &(i, _) in picked.iter().take(PREFETCH_AHEAD) {
            prefetch(&exact.vectors[i * dim..(i + 1) * dim]);
        }
        let rescored = picked
            .iter()
            .enumerate()
            .map(|(j, &(i, _))| {
                if let Some(&(a, _)) = picked.get(j + PREFETCH_AHEAD) {
                    prefetch(&exact.vectors[a * dim..(a + 1) * dim]);
                }
                (
                    i,
                    crate::embed::dot(query, &exact.vectors[i * dim..(i + 1) * dim]),
                )
            })
            .collect();
        top(rescored, limit)
    }
}

/// How many of the 8-bit scan's best points are scored again in full
/// precision for `limit` results.
fn rescore_depth(limit: usize) -> usize {
    (2 * limit).max(limit + 32)
}

/// How many candidates ahead the scans prefetch.
const PREFETCH_AHEAD: usize = 8;

/// Asks the CPU to start loading the cache lines of `data`.
#[inline(always)]
fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(data);
        let p = data.as_ptr().cast::<i8>();
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch is a hint; it reads nothing and cannot
            // fault, and the address is within `data`.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.add(off))
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// Codes per block of the bit-code layout.
const BLOCK: usize = 8;

/// One bit per dimension: whether the vector is above the mean of all
/// vectors there. Centring first matters: sentence embeddings share a large
/// common component, and the signs of raw vectors agree on most dimensions.
///
/// The codes are stored in blocks of [`BLOCK`] points, word by word (word 0
/// of the block's eight points, then word 1, ...), so that one vector
/// instruction compares a query word with eight points.
struct BitCodes {
    mean: Vec<f32>,
    /// 64-bit words per code.
    words: usize,
    /// The number of points (the last block is padded).
    n: usize,
    codes: Vec<u64>,
}

impl BitCodes {
    fn new(exact: &ScanVectors, dim: usize) -> BitCodes {
        let dim = dim.max(1);
        let n = exact.vectors.len() / dim;
        let mut mean = vec![0f64; dim];
        for v in exact.vectors.chunks_exact(dim) {
            for (m, x) in mean.iter_mut().zip(v) {
                *m += f64::from(*x);
            }
        }
        let mean: Vec<f32> = mean.iter().map(|m| (m / n.max(1) as f64) as f32).collect();
        let words = dim.div_ceil(64);
        let mut b = BitCodes {
            mean,
            words,
            n,
            codes: vec![0; n.div_ceil(BLOCK) * BLOCK * words],
        };
        for (i, v) in exact.vectors.chunks_exact(dim).enumerate() {
            for (w, word) in b.code(v).into_iter().enumerate() {
                let at = b.slot(i, w);
                b.codes[at] = word;
            }
        }
        b
    }

    /// Where word `w` of point `i`'s code is.
    fn slot(&self, i: usize, w: usize) -> usize {
        (i / BLOCK) * BLOCK * self.words + w * BLOCK + i % BLOCK
    }

    /// For each query code, about its `wanted` points nearest to it by Hamming
    /// distance, in point order. Each query's distance cut-off comes from a
    /// sample of the codes (blocks spread over them); then one pass over all the
    /// codes serves every query, since the pass is bound by memory, not by
    /// the arithmetic. The count lands within a few percent of `wanted`, and
    /// above it by at most the points at the cut-off distance itself.
    fn candidates(&self, queries: &[Vec<u64>], wanted: &[usize]) -> Vec<Vec<u32>> {
        let n = self.n;
        // Whole blocks: a block's codes share their cache lines, so a
        // sample of blocks reads an eighth of the memory of as many points
        // picked one by one.
        let stride = (n / SAMPLE).max(1) * BLOCK;
        let cutoffs: Vec<u32> = queries
            .iter()
            .zip(wanted)
            .map(|(q, &wanted)| {
                if wanted >= n {
                    return u32::MAX;
                }
                let mut counts = vec![0usize; self.words * 64 + 1];
                let sampled = sample_distances(self, q, stride, &mut counts);
                let target = (wanted * sampled).div_ceil(n);
                let mut sum = 0;
                counts
                    .iter()
                    .position(|c| {
                        sum += c;
                        sum >= target
                    })
                    .unwrap_or(counts.len() - 1) as u32
            })
            .collect();
        let flat: Vec<u64> = queries.concat();
        let mut out: Vec<Vec<u32>> = wanted
            .iter()
            .map(|&w| Vec::with_capacity(w.min(n) + w.min(n) / 2))
            .collect();
        within(&flat, &cutoffs, &self.codes, &mut out);
        // The padding of the last block is not a point.
        for o in &mut out {
            while o.last().is_some_and(|&i| i as usize >= n) {
                o.pop();
            }
        }
        out
    }

    fn code(&self, v: &[f32]) -> Vec<u64> {
        let mut code = vec![0u64; self.words];
        for (j, (x, m)) in v.iter().zip(&self.mean).enumerate() {
            if x > m {
                code[j / 64] |= 1 << (j % 64);
            }
        }
        code
    }
}

/// About how many points the bit-code pass samples to pick a query's
/// Hamming cut-off.
const SAMPLE: usize = 2048;

/// Counts the distances from `query` to the points of every block that
/// starts at a multiple of `stride` (a multiple of [`BLOCK`]) into
/// `counts` (indexed by distance); returns how many points were sampled.
fn sample_distances(bits: &BitCodes, query: &[u64], stride: usize, counts: &mut [usize]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU has the instructions, checked just above.
            return unsafe { sample_distances_avx512(bits, query, stride, counts) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: as above.
            return unsafe { sample_distances_popcnt(bits, query, stride, counts) };
        }
    }
    sample_distances_portable(bits, query, stride, counts)
}

/// The Hamming distances from `query` to the [`BLOCK`] codes of `block`
/// (laid out as in [`BitCodes`]); the compiler vectorises the lanes where the
/// caller's target allows.
#[inline(always)]
fn block_distances(query: &[u64], block: &[u64]) -> [u32; BLOCK] {
    let mut d = [0u32; BLOCK];
    for (q, lanes) in query.iter().zip(block.chunks_exact(BLOCK)) {
        for (dj, c) in d.iter_mut().zip(lanes) {
            *dj += (q ^ c).count_ones();
        }
    }
    d
}

/// [`sample_distances`] in plain Rust, a block at a time (the compiler
/// vectorises the eight lanes where the target allows).
#[inline(always)]
fn sample_distances_portable(
    bits: &BitCodes,
    query: &[u64],
    stride: usize,
    counts: &mut [usize],
) -> usize {
    let words = bits.words;
    if words == 0 {
        return 0;
    }
    let mut sampled = 0;
    let blocks = bits.codes.chunks_exact(BLOCK * words).enumerate();
    for (b, block) in blocks.step_by((stride / BLOCK).max(1)) {
        let d = block_distances(query, block);
        // The padding of the last block is not a point.
        let real = bits.n.saturating_sub(b * BLOCK).min(BLOCK);
        for &dj in &d[..real] {
            counts[dj as usize] += 1;
        }
        sampled += real;
    }
    sampled
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn sample_distances_avx512(
    bits: &BitCodes,
    query: &[u64],
    stride: usize,
    counts: &mut [usize],
) -> usize {
    sample_distances_portable(bits, query, stride, counts)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn sample_distances_popcnt(
    bits: &BitCodes,
    query: &[u64],
    stride: usize,
    counts: &mut [usize],
) -> usize {
    sample_distances_portable(bits, query, stride, counts)
}

/// For each query code (`queries` holds them end to end), the points whose
/// code (blocked as in [`BitCodes`]) is within that query's cut-off in
/// bits, appended to its list in `out`; with the widest population count
/// the CPU has.
fn within(queries: &[u64], cutoffs: &[u32], codes: &[u64], out: &mut [Vec<u32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU has the instructions, checked just above.
            unsafe { within_avx512(queries, cutoffs, codes, out) };
            return;
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: as above.
            unsafe { within_popcnt(queries, cutoffs, codes, out) };
            return;
        }
    }
    within_portable(queries, cutoffs, codes, out);
}

/// [`within`] in plain Rust.
#[inline(always)]
fn within_portable(queries: &[u64], cutoffs: &[u32], codes: &[u64], out: &mut [Vec<u32>]) {
    let words = queries.len() / cutoffs.len().max(1);
    if words == 0 {
        return;
    }
    for (b, block) in codes.chunks_exact(BLOCK * words).enumerate() {
        for ((query, &cutoff), out) in queries.chunks_exact(words).zip(cutoffs).zip(out.iter_mut())
        {
            let d = block_distances(query, block);
            for (j, dj) in d.iter().enumerate() {
                if *dj <= cutoff {
                    out.push((b * BLOCK + j) as u32);
                }
            }
        }
    }
}

/// [`within`] with AVX-512's vector population count: the eight points of a
/// block in one register, a word at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn within_avx512(queries: &[u64], cutoffs: &[u32], codes: &[u64], out: &mut [Vec<u32>]) {
    use std::arch::x86_64::{
        _mm512_add_epi64, _mm512_cmple_epu64_mask, _mm512_loadu_si512, _mm512_popcnt_epi64,
        _mm512_set1_epi64, _mm512_setzero_si512, _mm512_xor_si512,
    };
    let words = queries.len() / cutoffs.len().max(1);
    if words == 0 {
        return;
    }
    let limits: Vec<_> = cutoffs
        .iter()
        .map(|&c| _mm512_set1_epi64(i64::from(c)))
        .collect();
    for (b, block) in codes.chunks_exact(BLOCK * words).enumerate() {
        for ((query, limit), out) in queries.chunks_exact(words).zip(&limits).zip(out.iter_mut()) {
            let mut d = _mm512_setzero_si512();
            for (q, lanes) in query.iter().zip(block.chunks_exact(BLOCK)) {
                // SAFETY: `lanes` is eight u64s, the 64 bytes an unaligned
                // load reads.
                let c = unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) };
                let x = _mm512_xor_si512(c, _mm512_set1_epi64(*q as i64));
                d = _mm512_add_epi64(d, _mm512_popcnt_epi64(x));
            }
            let mut hits = _mm512_cmple_epu64_mask(d, *limit);
            while hits != 0 {
                out.push((b * BLOCK) as u32 + hits.trailing_zeros());
                hits &= hits - 1;
            }
        }
    }
}

/// [`within`] with the scalar population-count instruction, which the
/// default x86-64 target does not assume.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn within_popcnt(queries: &[u64], cutoffs: &[u32], codes: &[u64], out: &mut [Vec<u32>]) {
    within_portable(queries, cutoffs, codes, out);
}

/// The best `k` scores seen so far, kept without storing every score: items
/// below the running floor are dropped at once, and the list is cut back to
/// `k` whenever it doubles. A scan of n points then costs n comparisons
/// instead of n pushes and a selection over n.
struct Best {
    k: usize,
    items: Vec<(usize, f32)>,
    floor: f32,
}

impl Best {
    fn new(k: usize) -> Best {
        Best {
            k: k.max(1),
            items: Vec::with_capacity(2 * k.max(1)),
            floor: f32::NEG_INFINITY,
        }
    }

    fn push(&mut self, i: usize, score: f32) {
        if score < self.floor {
            return;
        }
        self.items.push((i, score));
        if self.items.len() >= 2 * self.k {
            self.items = top(std::mem::take(&mut self.items), self.k);
            self.floor = self.items.last().map_or(f32::NEG_INFINITY, |x| x.1);
            self.items.reserve(self.k);
        }
    }
}

/// The vectors an exact scan reads: in full precision (row-major) and in 8
/// bits, each code scaled so that its largest component is ±127, with the
/// factor back to the original kept beside it.
struct ScanVectors {
    vectors: Vec<f32>,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl ScanVectors {
    fn new(vectors: Vec<f32>, dim: usize) -> ScanVectors {
        let mut codes = vec![0i8; vectors.len()];
        let scales = vectors
            .chunks_exact(dim.max(1))
            .zip(codes.chunks_exact_mut(dim.max(1)))
            .map(|(v, c)| quantize(v, c))
            .collect();
        ScanVectors {
            vectors,
            codes,
            scales,
        }
    }
}

/// Writes the 8-bit code of `v` into `out` and returns the factor that turns
/// the code back into `v` (0 for a zero vector).
fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.fill(0);
        return 0.0;
    }
    let s = 127.0 / max;
    for (o, x) in out.iter_mut().zip(v) {
        *o = (x * s).round().clamp(-127.0, 127.0) as i8;
    }
    max / 127.0
}

/// The 8-bit code of `v` and the factor back (see [`quantize`]).
fn quantized(v: &[f32]) -> (Vec<i8>, f32) {
    let mut code = vec![0i8; v.len()];
    let scale = quantize(v, &mut code);
    (code, scale)
}

/// The dot product of two 8-bit codes, with the CPU's widest integer
/// instructions (SimSIMD's run-time dispatch).
fn dot_i8(a: &[i8], b: &[i8]) -> f32 {
    use simsimd::SpatialSimilarity;
    match i8::dot(a, b) {
        Some(d) => d as f32,
        None => a
            .iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum::<i32>() as f32,
    }
}

/// The best `limit` of `scored`, best first (ties by point id).
fn top(mut scored: Vec<(usize, f32)>, limit: usize) -> Vec<(usize, f32)> {
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit, by_score);
        scored.truncate(limit);
    }
    scored.sort_by(by_score);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic unit vectors (a small LCG; no test needs real embeddings).
    fn vectors(n: usize, dim: usize) -> Vec<f32> {
        let mut state = 7u64;
        let mut v: Vec<f32> = (0..n * dim)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        for c in v.chunks_exact_mut(dim) {
            let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt();
            c.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    #[test]
    fn small_indexes_search_exactly_and_honour_the_filter() {
        let (n, dim) = (300, 16);
        let v = vectors(n, dim);
        let points: Vec<Point> = (0..n)
            .map(|i| Point {
                tool: (i / 2) as u32,
                kind: PointKind::Tool,
                text_hash: [0; 16],
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut w = VectorWriter::create(&dir.path().join("vectors.bin"), dim, &points).unwrap();
        for x in v.chunks_exact(dim) {
            w.push(x).unwrap();
        }
        w.finish().unwrap();
        build_and_dump_hnsw(dir.path()).unwrap();
        let index = DenseIndex::open(dir.path(), DenseOptions::default()).unwrap();
        assert!(index.exact.is_some(), "a small index keeps its vectors");

        let query = &v[5 * dim..6 * dim];
        let mut expected: Vec<(usize, f32)> = v
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, x)| (i, crate::embed::dot(query, x)))
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = index.search(query, 10, None);
        let ids = |r: &[(usize, f32)]| r.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&expected[..10]));
        assert_eq!(got[0].0, 5);
        assert!((got[0].1 - 1.0).abs() < 1e-5);

        let even_tools = |t: u32| t.is_multiple_of(2);
        let filtered = index.search(query, 10, Some(&even_tools));
        assert_eq!(filtered.len(), 10);
        assert!(filtered
            .iter()
            .all(|(p, _)| index.points()[*p].tool.is_multiple_of(2)));
        let expected: Vec<usize> = expected
            .iter()
            .filter(|(p, _)| points[*p].tool.is_multiple_of(2))
            .take(10)
            .map(|x| x.0)
            .collect();
        assert_eq!(ids(&filtered), expected);

        let other = &v[9 * dim..10 * dim];
        let many = index.search_many(&[(query, 10), (other, 4)], Some(&even_tools));
        assert_eq!(many[0], filtered);
        assert_eq!(many[1], index.search(other, 4, Some(&even_tools)));
    }

    /// Writes `v` as `vectors.bin` (one tool per two points) and its graph.
    fn write_index(dir: &Path, v: &[f32], dim: usize) -> Vec<Point> {
        let points: Vec<Point> = (0..v.len() / dim)
            .map(|i| Point {
                tool: (i / 2) as u32,
                kind: PointKind::Tool,
                text_hash: [0; 16],
            })
            .collect();
        let mut w = VectorWriter::create(&dir.join("vectors.bin"), dim, &points).unwrap();
        for x in v.chunks_exact(dim) {
            w.push(x).unwrap();
        }
        w.finish().unwrap();
        build_and_dump_hnsw(dir).unwrap();
        points
    }

    #[test]
    fn the_bit_code_scan_finds_the_nearest_points_and_honours_the_filter() {
        // Not a multiple of the block size, and a dimension that does not
        // fill its last 64-bit word.
        let (n, dim) = (3003, 96);
        let v = vectors(n, dim);
        let dir = tempfile::tempdir().unwrap();
        let points = write_index(dir.path(), &v, dim);
        let options = DenseOptions {
            exact_max_points: 1000,
            scan_max_points: 10_000,
            ef: 0,
        };
        let index = DenseIndex::open(dir.path(), options).unwrap();
        assert!(index.bits.is_some() && index.hnsw.is_none());
        let exact_top = |q: &[f32], keep: &dyn Fn(u32) -> bool| -> Vec<usize> {
            let mut all: Vec<(usize, f32)> = v
                .chunks_exact(dim)
                .enumerate()
                .filter(|(i, _)| keep(points[*i].tool))
                .map(|(i, x)| (i, crate::embed::dot(q, x)))
                .collect();
            all.sort_by(|a, b| b.1.total_cmp(&a.1));
            all.iter().take(10).map(|x| x.0).collect()
        };
        let even_tools = |t: u32| t.is_multiple_of(2);
        let mut found = 0;
        for p in [0, 17, 1500, 3002] {
            let q = &v[p * dim..(p + 1) * dim];
            let got = index.search(q, 10, None);
            assert_eq!(got.len(), 10);
            assert_eq!(got[0].0, p, "a point is its own nearest");
            // Scores are full-precision cosines, best first.
            for (i, s) in &got {
                assert!((s - crate::embed::dot(q, &v[i * dim..(i + 1) * dim])).abs() < 1e-6);
            }
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1));
            let want = exact_top(q, &|_| true);
            found += got.iter().filter(|(i, _)| want.contains(i)).count();

            let filtered = index.search(q, 10, Some(&even_tools));
            assert!(filtered.iter().all(|(i, _)| even_tools(points[*i].tool)));
            assert!(filtered.iter().all(|(i, _)| *i < n));
            let want = exact_top(q, &even_tools);
            found += filtered.iter().filter(|(i, _)| want.contains(i)).count();
        }
        // Random vectors are the hard case for one-bit codes; real
        // embeddings agree better (BENCHMARKS.md).
        assert!(found >= 70, "{found} of 80 exact neighbours found");
    }

    #[test]
    fn every_population_count_agrees() {
        let words = 6;
        let mut state = 11u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state
        };
        let codes: Vec<u64> = (0..BLOCK * words * 50).map(|_| next()).collect();
        let queries: Vec<u64> = (0..words * 3).map(|_| next()).collect();
        let cutoffs = [150, 192, 0];
        let mut portable = vec![Vec::new(); 3];
        within_portable(&queries, &cutoffs, &codes, &mut portable);
        let mut dispatched = vec![Vec::new(); 3];
        within(&queries, &cutoffs, &codes, &mut dispatched);
        assert_eq!(portable, dispatched);
        assert!(!portable[1].is_empty() && portable[2].is_empty());

        // The sample of blocks, against distances counted one point at a
        // time (a last block padded: 397 points in 50 blocks).
        let bits = BitCodes {
            mean: vec![],
            words,
            n: 397,
            codes,
        };
        let query = &queries[..words];
        for stride in [BLOCK, 3 * BLOCK] {
            let mut want = vec![0usize; words * 64 + 1];
            for b in (0..50).step_by(stride / BLOCK) {
                for i in b * BLOCK..(b * BLOCK + BLOCK).min(bits.n) {
                    let d: u32 = (0..words)
                        .map(|w| (query[w] ^ bits.codes[bits.slot(i, w)]).count_ones())
                        .sum();
                    want[d as usize] += 1;
                }
            }
            let mut portable = vec![0usize; want.len()];
            let n = sample_distances_portable(&bits, query, stride, &mut portable);
            let mut dispatched = vec![0usize; want.len()];
            assert_eq!(sample_distances(&bits, query, stride, &mut dispatched), n);
            assert_eq!((portable, dispatched), (want.clone(), want.clone()));
            assert_eq!(n, want.iter().sum::<usize>());
        }
    }

    #[test]
    fn vectors_stream_back_in_chunks_and_the_writer_checks_counts() {
        let (n, dim) = (10, 4);
        let v = vectors(n, dim);
        let points: Vec<Point> = (0..n)
            .map(|i| Point {
                tool: i as u32,
                kind: PointKind::Example,
                text_hash: [i as u8; 16],
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let mut w = VectorWriter::create(&path, dim, &points).unwrap();
        assert!(w.push(&[0.0; 3]).is_err(), "a vector of the wrong width");
        for x in v.chunks_exact(dim) {
            w.push(x).unwrap();
        }
        assert!(w.push(&v[..dim]).is_err(), "one vector too many");
        w.finish().unwrap();

        let mut r = VectorReader::open(&path).unwrap();
        assert_eq!((r.dim(), r.points()), (dim, &points[..]));
        let mut seen = Vec::new();
        let mut seen_points = Vec::new();
        let mut firsts = Vec::new();
        r.for_each_chunk(3, |first, pts, chunk| {
            firsts.push(first);
            seen_points.extend_from_slice(pts);
            seen.extend_from_slice(chunk);
            Ok(())
        })
        .unwrap();
        assert_eq!(firsts, [0, 3, 6, 9]);
        assert_eq!(seen_points, points);
        assert_eq!(seen, v);

        let short = VectorWriter::create(&dir.path().join("short.bin"), dim, &points).unwrap();
        assert!(short.finish().is_err(), "points without vectors");
        std::fs::write(&path, b"TRVEC001").unwrap();
        assert!(read_vector_file(&path, usize::MAX).is_err());
    }

    #[test]
    fn eight_bit_codes_keep_the_dot_product_close() {
        let dim = 384;
        let v = vectors(50, dim);
        let mut ca = vec![0i8; dim];
        let mut cb = vec![0i8; dim];
        for pair in v.chunks_exact(dim).collect::<Vec<_>>().windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let sa = quantize(a, &mut ca);
            let sb = quantize(b, &mut cb);
            let approx = dot_i8(&ca, &cb) * sa * sb;
            let exact = crate::embed::dot(a, b);
            assert!((approx - exact).abs() < 0.01, "{approx} vs {exact}");
        }
        let mut zero = vec![5i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, [0; 4]);
    }
}
