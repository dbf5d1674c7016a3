//! The exact scan: every vector compared with the query by its 8-bit code
//! (a quarter of the memory traffic of the floats), and the best candidates
//! scored again in full precision. Also the rescoring that the bit scan
//! hands its candidates to.

use super::int8::{block_dots, prefetch, quantize, row_dots, QueryCode, PREFETCH_AHEAD};
use super::DenseIndex;
use crate::index::topk::{top, Best};

impl DenseIndex {
    /// Every kept point's similarity with each query, the best `limit` of
    /// each: one pass over the vectors for all queries. The pass compares
    /// 8-bit codes (a quarter of the memory traffic, which is what a scan
    /// costs once the model has evicted the vectors from the CPU caches); the
    /// best `2 × limit` of each query are then scored again in full
    /// precision, so the result is the exact top `limit` unless a true
    /// neighbour's 8-bit score falls below twice as many others.
    pub(super) fn scan(
        &self,
        exact: &ScanVectors,
        queries: &[(&[f32], usize)],
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Vec<(usize, f32)>> {
        let dim = self.dim;
        let coded: Vec<QueryCode> = queries.iter().map(|(q, _)| QueryCode::new(q)).collect();
        let mut best: Vec<Best> = queries
            .iter()
            .map(|(_, limit)| Best::new(rescore_depth(*limit)))
            .collect();
        let mut dots = Vec::new();
        let block_len = SCAN_BLOCK * dim.max(1);
        for (b, block) in exact.codes.chunks(block_len).enumerate() {
            block_dots(&coded, block, dim, &mut dots);
            let n = block.len() / dim.max(1);
            for p in 0..n {
                let i = b * SCAN_BLOCK + p;
                if keep.is_some_and(|k| !k(self.points[i].tool)) {
                    continue;
                }
                for (j, (q, best)) in coded.iter().zip(best.iter_mut()).enumerate() {
                    best.push(i, dots[j * n + p] as f32 * q.scale * exact.scales[i]);
                }
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

    /// The best `limit` of the candidate points for `query`: scored with the
    /// 8-bit codes, then the best `2 × limit` in full precision. The
    /// candidates are scattered over memory, so each one's cache lines are
    /// requested a few candidates ahead and the loads overlap.
    pub(super) fn rescore(
        &self,
        exact: &ScanVectors,
        query: &[f32],
        cands: &[u32],
        limit: usize,
    ) -> Vec<(usize, f32)> {
        let q = QueryCode::new(query);
        let mut dots = Vec::new();
        row_dots(&q, &exact.codes, self.dim, cands, &mut dots);
        let mut best = Best::new(rescore_depth(limit));
        for (&i, &d) in cands.iter().zip(&dots) {
            let i = i as usize;
            best.push(i, d as f32 * q.scale * exact.scales[i]);
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
        let picked = top(best.into_items(), rescore_depth(limit));
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
                    toolrag_embed::dot(query, &exact.vectors[i * dim..(i + 1) * dim]),
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

/// Points per call of the dot-product kernel in the full scan: a block's
/// codes (96 KiB at 384 dimensions) and its dots stay in the CPU's L2 cache.
const SCAN_BLOCK: usize = 256;

/// The vectors an exact scan reads: in full precision (row-major) and in 8
/// bits, each code scaled so that its largest component is ±127, with the
/// factor back to the original kept beside it.
pub(super) struct ScanVectors {
    pub(super) vectors: Vec<f32>,
    pub(super) codes: Vec<i8>,
    pub(super) scales: Vec<f32>,
}

impl ScanVectors {
    pub(super) fn new(vectors: Vec<f32>, dim: usize) -> ScanVectors {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bit_codes_keep_the_dot_product_close() {
        let dim = 384;
        let v = super::super::test_vectors(50, dim);
        let mut ca = vec![0i8; dim];
        let mut cb = vec![0i8; dim];
        for pair in v.chunks_exact(dim).collect::<Vec<_>>().windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let sa = quantize(a, &mut ca);
            let sb = quantize(b, &mut cb);
            let approx = super::super::int8::dot_portable(&ca, &cb) as f32 * sa * sb;
            let exact = toolrag_embed::dot(a, b);
            assert!((approx - exact).abs() < 0.01, "{approx} vs {exact}");
        }
        let mut zero = vec![5i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, [0; 4]);
    }
}
