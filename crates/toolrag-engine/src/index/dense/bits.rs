//! The one-bit scan: a code per point of one bit per dimension (the sign
//! after subtracting the mean vector), compared with each query by Hamming
//! distance in one pass for all query vectors, with the widest population
//! count the CPU has (chosen at run time); the closest candidates go on to
//! the 8-bit codes and full precision (`exact`).

use super::exact::ScanVectors;
use super::DenseIndex;

/// How many points the bit-code pass hands to the 8-bit codes, per point
/// asked for (at least [`BINARY_MIN_CANDIDATES`]).
const BINARY_CANDIDATES_PER_LIMIT: usize = 40;
/// The fewest points the bit-code pass hands on.
const BINARY_MIN_CANDIDATES: usize = 400;

impl DenseIndex {
    /// The nearest kept points to each query (as many as its limit) by a
    /// pass over the one-bit codes: each query's closest candidates by
    /// Hamming distance are scored with the 8-bit codes, and the best
    /// `2 × limit` of those in full precision.
    pub(super) fn scan_bits(
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
pub(super) struct BitCodes {
    mean: Vec<f32>,
    /// 64-bit words per code.
    words: usize,
    /// The number of points (the last block is padded).
    n: usize,
    codes: Vec<u64>,
}

impl BitCodes {
    pub(super) fn new(exact: &ScanVectors, dim: usize) -> BitCodes {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
