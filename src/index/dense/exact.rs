//! The exact scan: every vector compared with the query by its 8-bit code
//! (a quarter of the memory traffic of the floats), and the best candidates
//! scored again in full precision. Also the rescoring that the bit scan
//! hands its candidates to.

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

/// Writes the 8-bit code of `v` into `out` and returns the factor that turns
/// the code back into `v` (0 for a zero vector).
pub(super) fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
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
pub(super) fn quantized(v: &[f32]) -> (Vec<i8>, f32) {
    let mut code = vec![0i8; v.len()];
    let scale = quantize(v, &mut code);
    (code, scale)
}

/// The dot product of two 8-bit codes, with the CPU's widest integer
/// instructions (SimSIMD's run-time dispatch).
pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> f32 {
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
            let approx = dot_i8(&ca, &cb) * sa * sb;
            let exact = crate::embed::dot(a, b);
            assert!((approx - exact).abs() < 0.01, "{approx} vs {exact}");
        }
        let mut zero = vec![5i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, [0; 4]);
    }
}
