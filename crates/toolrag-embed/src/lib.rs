//! Dense embeddings: the [`Embedder`] trait, with separate methods for queries
//! and documents, and its fastembed implementation over a local ONNX model.
//!
//! The model is looked for in `--model-dir`, then `TOOLRAG_MODEL_DIR`, then
//! `./models` (see [`ModelDir::locate`]). The ONNX Runtime library is loaded
//! dynamically: from `ORT_DYLIB_PATH` when set, otherwise from the model folder
//! or its parent, otherwise from `TOOLRAG_MODEL_DIR` or `./models`.
#![warn(missing_docs)]

mod fast;
mod model_dir;

pub use fast::{EmbedOptions, FastEmbedder, TokenCounter};
pub use model_dir::{
    builtin_model, BuiltinModel, IndexModel, ModelConfig, ModelDir, ModelSettings, Pooling,
    BUILTIN_MODELS, DEFAULT_MODEL, MODEL_DIR_ENV, MODEL_FILES,
};

use rayon::prelude::*;

use toolrag_core::error::{Error, Result};

/// Documents are embedded this many at a time, in parallel chunks, so that
/// an embedder with several sessions keeps every core busy and a caller's
/// progress moves.
pub const EMBED_CHUNK: usize = 64;

/// Embeds `texts` as documents in parallel chunks of [`EMBED_CHUNK`], in
/// order; `on_chunk(n)` is called as each chunk of `n` texts is done (from
/// the worker threads, in no particular order). Fails on the first chunk the
/// embedder fails on, or that comes back with a vector per text missing.
/// The one embed loop of the index build and of lint's similarity rules.
pub fn embed_documents_chunked(
    embedder: &dyn Embedder,
    texts: &[String],
    on_chunk: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Vec<f32>>> {
    embed_documents_chunked_until(embedder, texts, on_chunk, &|| Ok(()))
}

/// [`embed_documents_chunked`], asking `go_on` before each chunk: its error
/// (a cancelled build) stops the embedding after the chunks in flight, so a
/// caller waits at most one chunk per worker.
pub fn embed_documents_chunked_until(
    embedder: &dyn Embedder,
    texts: &[String],
    on_chunk: &(dyn Fn(usize) + Sync),
    go_on: &(dyn Fn() -> Result<()> + Sync),
) -> Result<Vec<Vec<f32>>> {
    let chunks: Vec<Vec<Vec<f32>>> = texts
        .par_chunks(EMBED_CHUNK)
        .map(|chunk| {
            go_on()?;
            let vectors = embedder.embed_documents(chunk)?;
            if vectors.len() != chunk.len() {
                return Err(Error::Embed(format!(
                    "the model gave {} vectors for {} texts",
                    vectors.len(),
                    chunk.len()
                )));
            }
            on_chunk(chunk.len());
            Ok(vectors)
        })
        .collect::<Result<_>>()?;
    Ok(chunks.into_iter().flatten().collect())
}

/// Turns text into L2-normalised vectors.
///
/// Queries and documents are separate methods because they are used
/// differently: a query is one short text on the hot path; documents come in
/// large batches at index time.
pub trait Embedder: Send + Sync {
    /// A stable id of the model, recorded in index manifests.
    fn model_id(&self) -> &str;
    /// The vector dimension.
    fn dimension(&self) -> usize;
    /// A fingerprint of the exact model weights (the sha256 of the model file).
    fn fingerprint(&self) -> &str;
    /// The folder the model was loaded from, when it came from one: recorded
    /// in index manifests, so that the index finds its model again from any
    /// working folder.
    fn source_dir(&self) -> Option<&std::path::Path> {
        None
    }
    /// Embeds one query.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
    /// Embeds many documents; the output is parallel to the input.
    fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;

    /// Embeds a query and parts of it (byte spans): the whole query first, then
    /// one vector per span. The default embeds each part on its own; models that
    /// can pool parts from one pass override it.
    fn embed_query_parts(&self, text: &str, spans: &[(usize, usize)]) -> Result<Vec<Vec<f32>>> {
        embed_parts_one_by_one(self, text, spans)
    }
}

/// Embeds `text` as a query, then each span of it (byte ranges; one that is
/// not on character boundaries is skipped) as a query of its own: the
/// default [`Embedder::embed_query_parts`], and the fallback of embedders
/// that pool parts from one pass when they cannot.
pub fn embed_parts_one_by_one<E: Embedder + ?Sized>(
    embedder: &E,
    text: &str,
    spans: &[(usize, usize)],
) -> Result<Vec<Vec<f32>>> {
    let mut out = vec![embedder.embed_query(text)?];
    for &(a, b) in spans {
        if let Some(part) = text.get(a..b) {
            out.push(embedder.embed_query(part)?);
        }
    }
    Ok(out)
}

/// The dot product of two vectors; the cosine similarity for normalised ones.
/// Vectors of different lengths are compared over the shorter one.
///
/// The sum is taken in one fixed order (16 lanes, then a pairwise fold), so
/// the result is the same to the bit on every CPU and in every build: the
/// binary, the Python wheel (whose C code another compiler builds) and an
/// index built on another machine all see the same scores. SimSIMD's
/// `f32` kernels, used before, differ in the last bit between C compilers
/// (GCC against zig's clang: 3,301 of 4,000 random 384-dimensional products)
/// and between the kernels it picks per CPU. The AVX2 copy is the same
/// arithmetic on wider registers, chosen at run time.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_avx2(a, b) };
    }
    dot_lanes(a, b)
}

/// How many partial sums [`dot`] keeps: one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

/// [`dot`]'s arithmetic: partial sum `i` adds the products at positions
/// `i`, `i + LANES`, ... (the tail into the first ones), then the partial sums
/// are folded in halves. No fused multiply-add: Rust never contracts `x * y + z`,
/// so every instruction set gives the same bits.
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let (xs, x_tail) = a.as_chunks::<LANES>();
    let (ys, y_tail) = b.as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for (x, y) in xs.iter().zip(ys) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    for (i, (x, y)) in x_tail.iter().zip(y_tail).enumerate() {
        acc[i] += x * y;
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}

/// [`dot_lanes`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b)
}

#[cfg(test)]
mod dot_tests {
    use super::*;

    fn vectors(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        for n in [0, 1, 15, 16, 17, 383, 384, 385, 1024] {
            let (a, b) = (vectors(n, 1), vectors(n, 2));
            let portable = dot_lanes(&a, &b);
            assert_eq!(dot(&a, &b).to_bits(), portable.to_bits(), "n = {n}");
            let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((portable as f64 - exact).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn vectors_of_different_lengths_are_compared_over_the_shorter() {
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0]), 14.0);
    }
}
