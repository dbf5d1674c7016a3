//! The 8-bit dot products of the scans, with the widest instructions the CPU
//! has (chosen at run time).
//!
//! SimSIMD's `i8` dot product is the fallback. On a CPU with AVX-512 VNNI a
//! kernel of our own does the same sum with half the multiply instructions.
//! VNNI's byte instruction (`vpdpbusd`) multiplies unsigned by signed bytes,
//! and both codes are signed, so SimSIMD 6.5 widens both to 16 bits and
//! takes 32 dimensions per instruction (`vpdpwssd`). This kernel takes 64:
//! it shifts the point's code into unsigned range (`c + 128`, one XOR per 64
//! bytes) and subtracts `128 × Σ q`, computed once per query:
//! `Σ c·q = Σ (c + 128)·q − 128·Σ q`, exact in 32-bit integers.
//! The dense retrieval of a bfcl request after its model call (3,258 points
//! × 384 dimensions, 2.6 query vectors a request, one core; `cargo run
//! --release --example search_breakdown`, 2026-12-03) took 0.218 ms p50 with
//! SimSIMD and takes 0.111 ms with this kernel: about 12 ns less a dot.
//!
//! On a CPU with AVX2 but no AVX-512 a second kernel multiplies bytes too
//! (`vpmaddubsw`, 32 dimensions an instruction), with the signs moved onto
//! the query so that no pair overflows 16 bits (see `dot_avx2`); SimSIMD's
//! AVX2 kernel widens to 16 bits first. On an AMD EPYC without AVX-512 the
//! same retrieval took 0.50–0.51 ms p50 with SimSIMD and 0.28–0.31 ms with it.

/// One query vector's 8-bit code, with what the kernels need beside it.
pub(super) struct QueryCode {
    /// The code (see [`quantize`]).
    pub(super) code: Vec<i8>,
    /// The factor from the code back to the vector.
    pub(super) scale: f32,
    /// `128 × Σ code`: what the unsigned shift of a point's code adds to
    /// the sum.
    bias: i32,
    /// Whether no byte of the code is -128, whose sign cannot be flipped in
    /// 8 bits: the AVX2 kernel needs it (codes from [`quantize`]
    /// never hold -128).
    signable: bool,
}

impl QueryCode {
    /// The code of `v`.
    pub(super) fn new(v: &[f32]) -> QueryCode {
        let (code, scale) = quantized(v);
        QueryCode::from_code(code, scale)
    }

    /// A query code as it is.
    fn from_code(code: Vec<i8>, scale: f32) -> QueryCode {
        let bias = 128 * code.iter().map(|&x| i32::from(x)).sum::<i32>();
        let signable = !code.contains(&i8::MIN);
        QueryCode {
            code,
            scale,
            bias,
            signable,
        }
    }
}

/// `out[j * n + p]` = the dot product of query `j`'s code with point `p`'s
/// code, for the `n` codes of `block` (each `dim` bytes, end to end).
pub(super) fn block_dots(queries: &[QueryCode], block: &[i8], dim: usize, out: &mut Vec<i32>) {
    let n = block.len().checked_div(dim).unwrap_or(0);
    out.clear();
    out.resize(n * queries.len(), 0);
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if vnni() {
        // SAFETY: the CPU has the instructions, checked just above.
        unsafe { block_dots_vnni(queries, block, dim, n, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2() && queries.iter().all(|q| q.signable) {
        // SAFETY: as above.
        unsafe { block_dots_avx2(queries, block, dim, n, out) };
        return;
    }
    block_loop(queries, block, dim, n, out, |q, c| dot_portable(&q.code, c));
}

/// `out[r]` = the dot product of `query` with the code of point `rows[r]`
/// (`codes` holds every point's code, `dim` bytes each). The rows are
/// scattered over memory, so each one's cache lines are requested a few rows
/// ahead and the loads overlap.
pub(super) fn row_dots(
    query: &QueryCode,
    codes: &[i8],
    dim: usize,
    rows: &[u32],
    out: &mut Vec<i32>,
) {
    out.clear();
    out.resize(rows.len(), 0);
    #[cfg(target_arch = "x86_64")]
    if vnni() {
        // SAFETY: as in `block_dots`.
        unsafe { row_dots_vnni(query, codes, dim, rows, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2() && query.signable {
        // SAFETY: as in `block_dots`.
        unsafe { row_dots_avx2(query, codes, dim, rows, out) };
        return;
    }
    row_loop(query, codes, dim, rows, out, |q, c| {
        dot_portable(&q.code, c)
    });
}

/// The loop of [`block_dots`] around one kernel's dot product `dot(q, c)`
/// of a query with a point's whole code; inlined into each kernel's scan,
/// so that the kernel's dot product is inlined into it with its instructions.
#[inline(always)]
fn block_loop(
    queries: &[QueryCode],
    block: &[i8],
    dim: usize,
    n: usize,
    out: &mut [i32],
    dot: impl Fn(&QueryCode, &[i8]) -> i32,
) {
    for (p, c) in block.chunks_exact(dim).enumerate() {
        for (j, q) in queries.iter().enumerate() {
            out[j * n + p] = dot(q, c);
        }
    }
}

/// The loop of [`row_dots`] around one kernel's dot product (see
/// [`block_loop`]), prefetching [`PREFETCH_AHEAD`] rows ahead.
#[inline(always)]
fn row_loop(
    query: &QueryCode,
    codes: &[i8],
    dim: usize,
    rows: &[u32],
    out: &mut [i32],
    dot: impl Fn(&QueryCode, &[i8]) -> i32,
) {
    for (r, &i) in rows.iter().enumerate() {
        if let Some(&ahead) = rows.get(r + PREFETCH_AHEAD) {
            let a = ahead as usize;
            prefetch(&codes[a * dim..(a + 1) * dim]);
        }
        let i = i as usize;
        out[r] = dot(query, &codes[i * dim..(i + 1) * dim]);
    }
}

/// How many rows ahead [`row_dots`] prefetches.
pub(super) const PREFETCH_AHEAD: usize = 8;

/// Asks the CPU to start loading the cache lines of `data`.
#[inline(always)]
pub(super) fn prefetch<T>(data: &[T]) {
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

/// The dot product of two 8-bit codes with SimSIMD's run-time dispatch (or
/// plain Rust where SimSIMD has no kernel).
pub(super) fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
    use simsimd::SpatialSimilarity;
    match i8::dot(a, b) {
        Some(d) => d as i32,
        None => a
            .iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum(),
    }
}

/// Whether the CPU has what the VNNI kernel uses (the answer is cached by
/// the standard library after the first call).
#[cfg(target_arch = "x86_64")]
fn vnni() -> bool {
    allowed(Kernel::Vnni)
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// Whether the CPU has what the AVX2 kernel uses.
#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    allowed(Kernel::Avx2) && std::arch::is_x86_feature_detected!("avx2")
}

/// The kernels, narrowest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(test), allow(dead_code))]
enum Kernel {
    Portable,
    Avx2,
    Vnni,
}

/// Set by the test that compares the kernels: the widest kernel it lets
/// run, so that each one is checked on a CPU that has them all.
#[cfg(test)]
static WIDEST: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(Kernel::Vnni as u8);

/// Whether `kernel` may run (always, outside the kernels' test).
#[cfg(target_arch = "x86_64")]
fn allowed(kernel: Kernel) -> bool {
    #[cfg(test)]
    return kernel as u8 <= WIDEST.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    {
        let _ = kernel;
        true
    }
}

/// The dot product of `q` with the code at `c` (`dim` bytes), with VNNI.
///
/// # Safety
/// The CPU has AVX-512 F, BW and VNNI, and `c` points at `dim` readable bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn dot_vnni(q: &QueryCode, c: *const i8, dim: usize) -> i32 {
    use std::arch::x86_64::{
        _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_maskz_loadu_epi8, _mm512_reduce_add_epi32,
        _mm512_set1_epi8, _mm512_setzero_si512, _mm512_xor_si512,
    };
    let flip = _mm512_set1_epi8(i8::MIN);
    let qp = q.code.as_ptr();
    let mut acc = _mm512_setzero_si512();
    let full = dim / 64;
    for k in 0..full {
        // SAFETY: 64 bytes at offset 64k lie within both codes (k < dim / 64).
        let (cv, qv) = unsafe {
            (
                _mm512_loadu_si512(c.add(64 * k).cast()),
                _mm512_loadu_si512(qp.add(64 * k).cast()),
            )
        };
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(cv, flip), qv);
    }
    let tail = dim % 64;
    if tail > 0 {
        let mask = (1u64 << tail) - 1;
        // SAFETY: the masked loads read only the `tail` bytes left in each
        // code. The masked-off bytes of the point's code are 0 and turn into
        // 128 after the shift; the query's are 0 too, so they add nothing.
        let (cv, qv) = unsafe {
            (
                _mm512_maskz_loadu_epi8(mask, c.add(64 * full)),
                _mm512_maskz_loadu_epi8(mask, qp.add(64 * full)),
            )
        };
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(cv, flip), qv);
    }
    _mm512_reduce_add_epi32(acc) - q.bias
}

/// The dot product of `q` with the code at `c` (`dim` bytes), with AVX2.
///
/// AVX2's byte multiply (`vpmaddubsw`) takes unsigned by signed bytes and
/// adds pairs into 16 bits with saturation. So the point's code goes in as
/// its absolute value (0 to 128; `|−128|` is 128 unsigned) and the query's
/// with the point's sign moved onto it (−127 to 127, as the query holds no
/// −128): a pair adds to at most 2 × 128 × 127 = 32,512, which fits, and the
/// sum is exact. 32 dimensions an instruction, where SimSIMD's AVX2 kernel
/// widens both codes to 16 bits first; the tail under 32 bytes is plain
/// arithmetic.
///
/// # Safety
/// The CPU has AVX2, `c` points at `dim` readable bytes, and `q.signable`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dot_avx2(q: &QueryCode, c: *const i8, dim: usize) -> i32 {
    use std::arch::x86_64::{
        _mm256_add_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256,
        _mm256_sign_epi8, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32,
    };
    let ones = _mm256_set1_epi16(1);
    let qp = q.code.as_ptr();
    let mut acc = _mm256_setzero_si256();
    let full = dim / 32;
    for k in 0..full {
        // SAFETY: 32 bytes at offset 32k lie within both codes (k < dim / 32).
        let (cv, qv) = unsafe {
            (
                _mm256_loadu_si256(c.add(32 * k).cast()),
                _mm256_loadu_si256(qp.add(32 * k).cast()),
            )
        };
        let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(cv, cv), _mm256_sign_epi8(qv, cv));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
    }
    let half = _mm_add_epi32(
        _mm256_castsi256_si128(acc),
        _mm256_extracti128_si256::<1>(acc),
    );
    let quad = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
    let one = _mm_add_epi32(quad, _mm_shuffle_epi32::<0b10_11_00_01>(quad));
    let mut sum = _mm_cvtsi128_si32(one);
    for i in 32 * full..dim {
        // SAFETY: i < dim, within both codes.
        sum += unsafe { i32::from(*c.add(i)) * i32::from(*qp.add(i)) };
    }
    sum
}

/// [`block_dots`] with VNNI.
///
/// # Safety
/// The CPU has AVX-512 F, BW and VNNI, and `out` has room for
/// `n × queries.len()` (`n` codes of `dim` bytes in `block`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn block_dots_vnni(
    queries: &[QueryCode],
    block: &[i8],
    dim: usize,
    n: usize,
    out: &mut [i32],
) {
    // SAFETY: `c` is a whole code of `dim` bytes; the caller checked the CPU.
    block_loop(queries, block, dim, n, out, |q, c| unsafe {
        dot_vnni(q, c.as_ptr(), dim)
    });
}

/// [`row_dots`] with VNNI.
///
/// # Safety
/// The CPU has AVX-512 F, BW and VNNI, and `out` has room for `rows.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn row_dots_vnni(q: &QueryCode, codes: &[i8], dim: usize, rows: &[u32], out: &mut [i32]) {
    // SAFETY: as in `block_dots_vnni`.
    row_loop(q, codes, dim, rows, out, |q, c| unsafe {
        dot_vnni(q, c.as_ptr(), dim)
    });
}

/// [`block_dots`] with AVX2.
///
/// # Safety
/// The CPU has AVX2, every query is `signable`, and `out` has room for
/// `n × queries.len()` (`n` codes of `dim` bytes in `block`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_dots_avx2(
    queries: &[QueryCode],
    block: &[i8],
    dim: usize,
    n: usize,
    out: &mut [i32],
) {
    // SAFETY: `c` is a whole code of `dim` bytes; the caller checked the CPU
    // and the queries.
    block_loop(queries, block, dim, n, out, |q, c| unsafe {
        dot_avx2(q, c.as_ptr(), dim)
    });
}

/// [`row_dots`] with AVX2.
///
/// # Safety
/// The CPU has AVX2, `q` is `signable`, and `out` has room for `rows.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_dots_avx2(q: &QueryCode, codes: &[i8], dim: usize, rows: &[u32], out: &mut [i32]) {
    // SAFETY: as in `block_dots_avx2`.
    row_loop(q, codes, dim, rows, out, |q, c| unsafe {
        dot_avx2(q, c.as_ptr(), dim)
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes over the whole range, -128 included, from a small LCG.
    fn codes(n: usize, seed: u64) -> Vec<i8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 56) as u8 as i8
            })
            .collect()
    }

    fn plain(a: &[i8], b: &[i8]) -> i32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum()
    }

    fn query(code: Vec<i8>) -> QueryCode {
        QueryCode::from_code(code, 1.0)
    }

    #[test]
    fn every_dot_product_kernel_agrees_with_plain_arithmetic() {
        // 384 is the model's width; the others leave a tail under the
        // kernels' width, or have nothing but a tail. The points' codes
        // cover the whole range, -128 included.
        for dim in [384, 100, 64, 33, 7, 1] {
            let n = 37;
            let block = codes(n * dim, dim as u64);
            let mut extreme = vec![-127i8; dim];
            extreme[0] = i8::MAX;
            let mut unsignable = vec![i8::MIN; dim];
            unsignable[0] = i8::MAX;
            // Queries as the index makes them (never -128), and one with -128,
            // which the AVX2 kernel leaves to the portable one.
            let sets = [
                vec![
                    query(codes(dim, 99)),
                    query(vec![i8::MAX; dim]),
                    query(extreme),
                ],
                vec![query(unsignable)],
            ];
            let rows: Vec<u32> = (0..n as u32).rev().step_by(3).collect();
            let mut out = vec![];
            let mut row_out = vec![];
            for widest in [Kernel::Vnni, Kernel::Avx2, Kernel::Portable] {
                WIDEST.store(widest as u8, std::sync::atomic::Ordering::Relaxed);
                for queries in &sets {
                    block_dots(queries, &block, dim, &mut out);
                    for (j, q) in queries.iter().enumerate() {
                        for (p, c) in block.chunks_exact(dim).enumerate() {
                            assert_eq!(
                                out[j * n + p],
                                plain(&q.code, c),
                                "dim {dim}, widest kernel {}",
                                widest as u8
                            );
                        }
                        row_dots(q, &block, dim, &rows, &mut row_out);
                        for (r, &i) in rows.iter().enumerate() {
                            let i = i as usize;
                            assert_eq!(
                                row_out[r],
                                plain(&q.code, &block[i * dim..(i + 1) * dim]),
                                "dim {dim}, widest kernel {}",
                                widest as u8
                            );
                        }
                    }
                }
            }
            WIDEST.store(Kernel::Vnni as u8, std::sync::atomic::Ordering::Relaxed);
        }
    }
}
