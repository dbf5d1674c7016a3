//! Fusing the BM25 and dense lists into one ranking.
//!
//! The default is score-aware: each list's scores are normalised against the
//! strength of its own top hit, then mixed with weights that follow each
//! retriever's confidence on this query. Plain reciprocal-rank fusion is kept
//! as an option: it ignores scores, so a weak retriever's noise counts as much as
//! a strong one's hit (see BENCHMARKS.md for the measurements).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// How hybrid mode fuses the two lists.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Fusion {
    /// Reciprocal-rank fusion: `sum 1 / (k + rank)`.
    Rrf {
        /// The rank offset (60 in the original paper).
        k: f32,
    },
    /// A convex mix of normalised scores: `w * dense + (1 - w) * lexical`.
    Weighted {
        /// The dense weight, 0..1.
        dense_weight: f32,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted { dense_weight: 0.5 }
    }
}

/// A retriever's list for fusion: `(tool ordinal, raw score)`, best first.
pub type Ranked = [(u32, f32)];

/// Fuses `lexical` and `dense` into `(tool ordinal, fused score)`, best first.
pub fn fuse(fusion: Fusion, lexical: &Ranked, dense: &Ranked) -> Vec<(u32, f32)> {
    let mut acc: HashMap<u32, f32> = HashMap::with_capacity(lexical.len() + dense.len());
    match fusion {
        Fusion::Rrf { k } => {
            for list in [lexical, dense] {
                for (rank, (ord, _)) in list.iter().enumerate() {
                    *acc.entry(*ord).or_default() += 1.0 / (k + rank as f32 + 1.0);
                }
            }
        }
        Fusion::Weighted { dense_weight } => {
            let w = dense_weight.clamp(0.0, 1.0);
            for (ord, s) in normalise_lexical(lexical) {
                *acc.entry(ord).or_default() += (1.0 - w) * s;
            }
            for (ord, s) in normalise_dense(dense) {
                *acc.entry(ord).or_default() += w * s;
            }
        }
    }
    let mut out: Vec<(u32, f32)> = acc.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// BM25 scores divided by the top score: 1 for the best hit.
fn normalise_lexical(list: &Ranked) -> Vec<(u32, f32)> {
    let top = list.first().map_or(0.0, |x| x.1);
    if top <= 0.0 {
        return vec![];
    }
    list.iter().map(|(o, s)| (*o, s / top)).collect()
}

/// Cosine similarities mapped so that the top hit is 1 and a similarity at the
/// bottom of the list is 0.
fn normalise_dense(list: &Ranked) -> Vec<(u32, f32)> {
    let (Some(top), Some(bottom)) = (list.first().map(|x| x.1), list.last().map(|x| x.1)) else {
        return vec![];
    };
    let span = (top - bottom).max(1e-6);
    list.iter()
        .map(|(o, s)| (*o, (s - bottom) / span))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_rewards_agreement() {
        let fused = fuse(
            Fusion::Rrf { k: 60.0 },
            &[(1, 9.0), (2, 5.0)],
            &[(2, 0.9), (3, 0.8)],
        );
        assert_eq!(fused[0].0, 2);
    }

    #[test]
    fn weighted_fusion_is_convex() {
        let fused = fuse(
            Fusion::Weighted { dense_weight: 1.0 },
            &[(1, 9.0)],
            &[(2, 0.9), (3, 0.1)],
        );
        assert_eq!(fused[0], (2, 1.0));
        assert!(fused.iter().all(|(o, s)| *o != 1 || *s == 0.0));
    }
}
