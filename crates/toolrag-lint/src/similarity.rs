//! Near-duplicate detection over a whole registry, for `confusable-tools`.
//!
//! Both measures compare every tool's [`document_text`] (the same text the
//! index embeds) with every other's:
//! - **lexical**: TF-IDF cosine over identifier-split, lowercased words. An
//!   inverted index means only pairs that share a word are ever touched, so a
//!   10k-tool registry takes well under a second;
//! - **dense**: the dot product of the model's normalised document vectors,
//!   brute force over all pairs in parallel (10k × 384 takes a few seconds).

use std::collections::HashMap;

use rayon::prelude::*;

use toolrag_core::error::Result;
use toolrag_core::registry::{document_text, split_identifier, Registry};
use toolrag_embed::{dot, Embedder};

/// Two tools (indexes into `Registry::tools()`, `a < b`) and their similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimilarPair {
    /// The earlier tool.
    pub a: usize,
    /// The later tool.
    pub b: usize,
    /// The cosine similarity, in `[0, 1]` for lexical scores.
    pub score: f32,
}

/// Words too common to tell tools apart.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "this",
    "that",
    "from",
    "into",
    "are",
    "is",
    "of",
    "to",
    "in",
    "on",
    "or",
    "by",
    "be",
    "as",
    "at",
    "an",
    "it",
    "its",
    "if",
    "not",
    "no",
    "can",
    "will",
    "which",
    "when",
    "was",
    "were",
    "has",
    "have",
    "you",
    "your",
    "all",
    "any",
    "use",
    "used",
    "using",
    "given",
    "parameters",
    "parameter",
    "default",
];

/// The words TF-IDF counts: identifier-split, lowercased, without stopwords
/// and one-letter words, with a plain plural `s` removed.
pub fn lexical_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(|c: char| !c.is_alphanumeric()) {
        for w in split_identifier(part) {
            if w.chars().count() < 2 || STOPWORDS.contains(&w.as_str()) {
                continue;
            }
            let stem = match w.strip_suffix('s') {
                Some(s) if s.len() >= 3 && !s.ends_with('s') => s.to_string(),
                _ => w,
            };
            out.push(stem);
        }
    }
    out
}

/// Sparse TF-IDF vectors (L2-normalised) for `texts`, with term ids.
fn tfidf(texts: &[String]) -> Vec<Vec<(u32, f32)>> {
    let counted: Vec<HashMap<String, u32>> = texts
        .par_iter()
        .map(|t| {
            let mut tf: HashMap<String, u32> = HashMap::new();
            for w in lexical_terms(t) {
                *tf.entry(w).or_default() += 1;
            }
            tf
        })
        .collect();
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut df: Vec<u32> = Vec::new();
    for doc in &counted {
        for term in doc.keys() {
            let next = ids.len() as u32;
            let id = *ids.entry(term).or_insert(next);
            if id as usize == df.len() {
                df.push(0);
            }
            df[id as usize] += 1;
        }
    }
    let n = texts.len() as f32;
    counted
        .iter()
        .map(|doc| {
            let mut v: Vec<(u32, f32)> = doc
                .iter()
                .map(|(term, &tf)| {
                    let id = ids[term.as_str()];
                    let idf = ((1.0 + n) / (1.0 + df[id as usize] as f32)).ln() + 1.0;
                    (id, (1.0 + (tf as f32).ln()) * idf)
                })
                .collect();
            let norm = v.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            v.sort_unstable_by_key(|(id, _)| *id);
            v
        })
        .collect()
}

/// Pairs of `texts` whose TF-IDF cosine is at least `threshold`.
pub fn lexical_pairs(texts: &[String], threshold: f32) -> Vec<SimilarPair> {
    let docs = tfidf(texts);
    let terms = docs
        .iter()
        .flat_map(|d| d.iter().map(|(t, _)| *t as usize + 1))
        .max()
        .unwrap_or(0);
    // Postings are filled in document order, so each list is sorted by doc.
    let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
    for (i, d) in docs.iter().enumerate() {
        for &(t, w) in d {
            postings[t as usize].push((i as u32, w));
        }
    }
    let n = docs.len();
    let mut pairs: Vec<SimilarPair> = docs
        .par_iter()
        .enumerate()
        .map_init(
            || (vec![0f32; n], Vec::<u32>::new()),
            |(acc, touched), (i, doc)| {
                for &(t, w) in doc {
                    let list = &postings[t as usize];
                    let start = list.partition_point(|&(j, _)| j as usize <= i);
                    for &(j, wj) in &list[start..] {
                        if acc[j as usize] == 0.0 {
                            touched.push(j);
                        }
                        acc[j as usize] += w * wj;
                    }
                }
                let mut found = Vec::new();
                for j in touched.drain(..) {
                    let score = std::mem::take(&mut acc[j as usize]);
                    if score >= threshold {
                        found.push(SimilarPair {
                            a: i,
                            b: j as usize,
                            score: score.min(1.0),
                        });
                    }
                }
                found
            },
        )
        .flatten()
        .collect();
    pairs.sort_by_key(|p| (p.a, p.b));
    pairs
}

/// Pairs of vectors whose dot product (the cosine, for normalised vectors) is
/// at least `threshold`.
pub fn dense_pairs(vectors: &[Vec<f32>], threshold: f32) -> Vec<SimilarPair> {
    let n = vectors.len();
    let mut pairs: Vec<SimilarPair> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let a = &vectors[i];
            (i + 1..n).filter_map(move |j| {
                let score = dot(a, &vectors[j]);
                (score >= threshold).then_some(SimilarPair { a: i, b: j, score })
            })
        })
        .collect();
    pairs.sort_by_key(|p| (p.a, p.b));
    pairs
}

/// The [`document_text`] of every tool, in registry order.
pub fn document_texts(registry: &Registry) -> Vec<String> {
    registry.tools().par_iter().map(document_text).collect()
}

/// Embeds every tool's [`document_text`], in registry order, for
/// [`LintContext::with_embeddings`](super::LintContext::with_embeddings).
/// Texts are grouped by length first (batches pad to their longest text),
/// then embedded in parallel chunks
/// ([`embed_documents_chunked`](toolrag_embed::embed_documents_chunked)).
pub fn embed_tools(registry: &Registry, embedder: &dyn Embedder) -> Result<Vec<Vec<f32>>> {
    let texts = document_texts(registry);
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let sorted: Vec<String> = order.iter().map(|&i| texts[i].clone()).collect();
    let vectors = toolrag_embed::embed_documents_chunked(embedder, &sorted, &|_| {})?;
    let mut out = vec![Vec::new(); texts.len()];
    for (v, &i) in vectors.into_iter().zip(&order) {
        out[i] = v;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_pairs_find_rewordings_and_skip_strangers() {
        let texts: Vec<String> = [
            "get_weather: Get the current weather for a city",
            "current_weather: Current weather in a city",
            "send_email: Send an email message to recipients",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let pairs = lexical_pairs(&texts, 0.5);
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].a, pairs[0].b), (0, 1));
        assert!(lexical_pairs(&texts[..1], 0.1).is_empty());
    }

    #[test]
    fn dense_pairs_use_the_dot_product() {
        let v = vec![vec![1.0, 0.0], vec![0.99, 0.141], vec![0.0, 1.0]];
        let pairs = dense_pairs(&v, 0.9);
        assert_eq!(pairs.len(), 1);
        assert!((dot(&[1.0; 11], &[2.0; 11]) - 22.0).abs() < 1e-6);
    }
}
