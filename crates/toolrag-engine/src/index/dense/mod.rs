//! The dense side: one vector per tool text and per example request, kept raw
//! in `vectors.bin` with a map from each point to its tool, and, for an index
//! too large to scan, in an HNSW graph (hnsw_rs `file_dump`).
//!
//! - `vectors`: the `vectors.bin` codec, streamed both ways;
//! - `exact`: the 8-bit exact scan and the full-precision rescoring;
//! - `bits`: the one-bit code scan, with its SIMD variants;
//! - `graph`: the hnsw_rs graph: build, load, walk.
//!
//! [`DenseIndex`] opens a generation's dense side and picks one of the three
//! searches by size: the graph when the generation has one, otherwise the
//! exact scan up to [`EXACT_MAX_POINTS`] and the bit scan above.

mod bits;
mod exact;
mod graph;
mod int8;
mod vectors;

use std::path::Path;

use toolrag_core::error::Result;

use bits::BitCodes;
use exact::ScanVectors;
pub(crate) use graph::{build_and_dump_hnsw, has_graph, GRAPH_FILES};
pub use graph::{DotDistance, HNSW_BASENAME};
pub(crate) use vectors::{VectorReader, VectorWriter, FILE as VECTORS_FILE, STREAM_CHUNK};

/// Up to this many points a search compares the query with every vector
/// instead of using the bit codes: exact, and cheaper than HNSW at the `ef` a
/// deep fused search needs (on bfcl, 3,258 points, a full scan is about 1.25 M
/// multiply-adds, under 0.2 ms, where the graph walk at ef 300 took about
/// 2 ms per query vector). The scan compares 8-bit codes first and rescores
/// the best candidates in full precision (see `DenseIndex::scan`).
pub const EXACT_MAX_POINTS: usize = 10_000;

/// Above [`EXACT_MAX_POINTS`] a search still reads every point, but first by
/// a one-bit code per dimension (the sign of the vector less the mean of all
/// vectors: 48 bytes for 384 dimensions), and scores only the closest few
/// thousand by Hamming distance with the 8-bit codes and then in full
/// precision. At 100k points the bit codes are 4.8 MB and the pass costs less
/// than the HNSW walk, with more of the exact answer (BENCHMARKS.md, query
/// latency on the synthetic registries, under "Index build"). A build writes
/// the HNSW graph only above this many points (the default of
/// `BuildOptions::graph_min_points`), and a generation with a graph is
/// searched through it.
pub const SCAN_MAX_POINTS: usize = 300_000;

/// How an opened dense index searches. The defaults are right for every
/// index; the fields are tuning for tests and benchmarks, never user
/// settings. Whether a generation is searched through its graph is decided by
/// the build (`BuildOptions::graph_min_points`), which writes a graph only for
/// indexes that need one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseOptions {
    /// Without a graph, scan every vector exactly up to this many points and
    /// scan bit codes above.
    pub exact_max_points: usize,
    /// The HNSW candidate list size (`ef`) per query vector; 0 picks it from
    /// the number of points asked for (see [`DenseIndex::search`]).
    pub ef: usize,
}

impl Default for DenseOptions {
    fn default() -> Self {
        DenseOptions {
            exact_max_points: EXACT_MAX_POINTS,
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
    /// One request learnt from use (`toolrag learn`): it counts for its tool
    /// together with the tool's own texts, never alone (see the dense
    /// retriever).
    Learnt = 2,
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

/// The opened dense side of an index.
pub struct DenseIndex {
    /// The graph, loaded only when the generation has one.
    graph: Option<graph::Graph>,
    /// The raw vectors and their 8-bit codes, kept for the scans.
    exact: Option<ScanVectors>,
    /// The one-bit codes, for indexes above the exact size without a graph.
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
            .field("graph", &self.graph.is_some())
            .finish()
    }
}

impl DenseIndex {
    /// Opens the dense side stored in the generation folder `dir`: the point
    /// map, plus the graph when the generation has one (the build writes one
    /// only for an index too large to scan), or else the raw vectors for the
    /// scans. Open a generation after [`crate::index::Manifest::read`] has
    /// verified its files: hnsw_rs can exit the process on some damage.
    pub fn open(dir: &Path, options: DenseOptions) -> Result<DenseIndex> {
        // With a graph the vectors stay on disk: the graph holds its own copy.
        let vectors_up_to = if has_graph(dir) { 0 } else { usize::MAX };
        let (dim, points, vectors) =
            vectors::read_vector_file(&dir.join(VECTORS_FILE), vectors_up_to)?;
        let graph = match vectors {
            Some(_) => None,
            None => Some(graph::Graph::load(dir, points.len(), dim)?),
        };
        let exact = vectors.map(|v| ScanVectors::new(v, dim));
        let bits = match &exact {
            Some(e) if points.len() > options.exact_max_points => Some(BitCodes::new(e, dim)),
            _ => None,
        };
        Ok(DenseIndex {
            graph,
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
        let Some(g) = &self.graph else { return vec![] };
        g.search(&self.points, query, limit, self.ef, keep)
    }

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
}

#[cfg(test)]
/// Deterministic unit vectors (a small LCG; no test needs real embeddings).
fn test_vectors(n: usize, dim: usize) -> Vec<f32> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(n: usize, dim: usize) -> Vec<f32> {
        test_vectors(n, dim)
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
        let index = DenseIndex::open(dir.path(), DenseOptions::default()).unwrap();
        assert!(index.exact.is_some(), "a small index keeps its vectors");
        assert!(index.graph.is_none());

        let query = &v[5 * dim..6 * dim];
        let mut expected: Vec<(usize, f32)> = v
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, x)| (i, toolrag_embed::dot(query, x)))
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

    /// Writes `v` as `vectors.bin` (one tool per two points), without a graph.
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
        points
    }

    #[test]
    fn a_generation_with_a_graph_is_walked_and_its_loader_freed_with_it() {
        let (n, dim) = (600, 16);
        let v = vectors(n, dim);
        let dir = tempfile::tempdir().unwrap();
        let points = write_index(dir.path(), &v, dim);
        assert!(!has_graph(dir.path()));
        build_and_dump_hnsw(dir.path()).unwrap();
        assert!(has_graph(dir.path()));
        let options = DenseOptions::default();
        // Opened and dropped many times: the loader goes with the index.
        for _ in 0..3 {
            let index = DenseIndex::open(dir.path(), options).unwrap();
            assert!(index.graph.is_some() && index.exact.is_none());
            let q = &v[42 * dim..43 * dim];
            let got = index.search(q, 5, None);
            assert_eq!(got.len(), 5);
            assert_eq!(got[0].0, 42, "a point is its own nearest");
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1));
            let even_tools = |t: u32| t.is_multiple_of(2);
            let filtered = index.search_many(&[(q, 5)], Some(&even_tools));
            assert!(filtered[0].iter().all(|(i, _)| even_tools(points[*i].tool)));
        }
        // The graph's answers are the exact ones on an index this small.
        let scanned = {
            let d = tempfile::tempdir().unwrap();
            write_index(d.path(), &v, dim);
            DenseIndex::open(d.path(), options).unwrap()
        };
        let index = DenseIndex::open(dir.path(), options).unwrap();
        for p in [0, 99, 599] {
            let q = &v[p * dim..(p + 1) * dim];
            let ids = |r: Vec<(usize, f32)>| r.into_iter().map(|x| x.0).collect::<Vec<_>>();
            assert_eq!(
                ids(index.search(q, 5, None)),
                ids(scanned.search(q, 5, None))
            );
        }
        drop(index);

        // A truncated graph file is refused, not a panic or an exit.
        let data = dir.path().join(GRAPH_FILES[0]);
        let bytes = std::fs::read(&data).unwrap();
        std::fs::write(&data, &bytes[..bytes.len() / 2]).unwrap();
        let err = DenseIndex::open(dir.path(), options).unwrap_err();
        assert!(
            matches!(err, toolrag_core::error::Error::Corrupt { .. }),
            "{err}"
        );
        std::fs::write(&data, &bytes).unwrap();
        assert!(DenseIndex::open(dir.path(), options).is_ok());

        // A truncated `dense.hnsw.data` would make hnsw_rs print "ERROR
        // loading point" and call `process::exit(1)`, which no catch_unwind
        // stops: its layout is checked before hnsw_rs reads it. So is a
        // record that says its vector is longer than the dimension.
        let vectors = dir.path().join(GRAPH_FILES[1]);
        let good = std::fs::read(&vectors).unwrap();
        std::fs::write(&vectors, &good[..good.len() - 7]).unwrap();
        let err = DenseIndex::open(dir.path(), options).unwrap_err();
        assert!(
            matches!(&err, toolrag_core::error::Error::Corrupt { path, .. } if *path == vectors),
            "{err}"
        );
        let mut longer = good.clone();
        // The first record's length field, after the header (4 + 8 bytes),
        // its magic (4) and its id (8).
        let at = 12 + 4 + 8;
        longer[at..at + 8].copy_from_slice(&(1u64 << 40).to_ne_bytes());
        std::fs::write(&vectors, &longer).unwrap();
        let err = DenseIndex::open(dir.path(), options).unwrap_err();
        assert!(err.to_string().contains("record 0"), "{err}");
        let mut wrong_id = good.clone();
        wrong_id[12 + 4..12 + 12].copy_from_slice(&(n as u64).to_ne_bytes());
        std::fs::write(&vectors, &wrong_id).unwrap();
        assert!(DenseIndex::open(dir.path(), options).is_err());
        std::fs::write(&vectors, &good).unwrap();
        assert!(DenseIndex::open(dir.path(), options).is_ok());
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
            ef: 0,
        };
        let index = DenseIndex::open(dir.path(), options).unwrap();
        assert!(index.bits.is_some() && index.graph.is_none());
        let exact_top = |q: &[f32], keep: &dyn Fn(u32) -> bool| -> Vec<usize> {
            let mut all: Vec<(usize, f32)> = v
                .chunks_exact(dim)
                .enumerate()
                .filter(|(i, _)| keep(points[*i].tool))
                .map(|(i, x)| (i, toolrag_embed::dot(q, x)))
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
                assert!((s - toolrag_embed::dot(q, &v[i * dim..(i + 1) * dim])).abs() < 1e-6);
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
}
