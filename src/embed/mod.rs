//! Dense embeddings: the [`Embedder`] trait, with separate methods for queries
//! and documents, and its fastembed implementation over a local ONNX model.
//!
//! The model is looked for in `--model-dir`, then `TOOLRAG_MODEL_DIR`, then
//! `./models` (see [`ModelDir::locate`]). The ONNX Runtime library is loaded
//! dynamically: from `ORT_DYLIB_PATH` when set, otherwise from the model folder.

mod fast;
mod model_dir;

pub use fast::{EmbedOptions, FastEmbedder, TokenCounter};
pub use model_dir::{ModelDir, MODEL_DIR_ENV};

use crate::error::Result;

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
    /// Embeds one query.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
    /// Embeds many documents; the output is parallel to the input.
    fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;

    /// Embeds a query and parts of it (byte spans): the whole query first, then
    /// one vector per span. The default embeds each part on its own; models that
    /// can pool parts from one pass override it.
    fn embed_query_parts(&self, text: &str, spans: &[(usize, usize)]) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![self.embed_query(text)?];
        for &(a, b) in spans {
            if let Some(part) = text.get(a..b) {
                out.push(self.embed_query(part)?);
            }
        }
        Ok(out)
    }
}

/// The dot product of two vectors; the cosine similarity for normalised ones.
///
/// SimSIMD picks the widest instructions the CPU has at run time (AVX2, AVX-512,
/// NEON), which the portable build cannot assume. Vectors of different lengths
/// are compared over the shorter one.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    use simsimd::SpatialSimilarity;
    let n = a.len().min(b.len());
    match f32::dot(&a[..n], &b[..n]) {
        Some(d) => d as f32,
        None => a.iter().zip(b).map(|(x, y)| x * y).sum(),
    }
}
