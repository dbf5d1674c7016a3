//! Fusing the retrievers' lists into one ranking.
//!
//! The default is score-aware: each list's scores are normalised against the
//! strength of its own top hit, then mixed with weights that follow each
//! retriever's confidence on this query. Plain reciprocal-rank fusion is kept
//! as an option: it ignores scores, so a weak retriever's noise counts as much as
//! a strong one's hit (see BENCHMARKS.md for the measurements).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// How hybrid mode fuses the lists.
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
        #[serde(rename = "dense-weight")]
        dense_weight: f32,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted { dense_weight: 0.5 }
    }
}

impl Fusion {
    /// The share of the dense list in weighted fusion, clamped to 0..1 (0 for RRF).
    pub fn dense_share(&self) -> f32 {
        match *self {
            Fusion::Weighted { dense_weight } => dense_weight.clamp(0.0, 1.0),
            Fusion::Rrf { .. } => 0.0,
        }
    }
}

/// A retriever's list for fusion: `(tool ordinal, raw score)`, best first.
pub type Ranked = [(u32, f32)];

/// How a list's scores are brought to a common scale before weighted fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Normalise {
    /// Divided by the top score, so the best hit is 1 (BM25). A list whose
    /// top score is not positive contributes nothing.
    ByTop,
    /// Mapped so that the top hit is 1 and the bottom of the list 0 (cosines).
    ByRange,
}

impl Normalise {
    fn apply(self, list: &Ranked) -> Vec<(u32, f32)> {
        match self {
            Normalise::ByTop => by_top(list),
            Normalise::ByRange => by_range(list),
        }
    }
}

/// One retriever's list, tagged with what fusion needs to know about it.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    /// The retriever's id.
    pub retriever: &'a str,
    /// How its scores are normalised (weighted fusion).
    pub normalise: Normalise,
    /// The factor of its normalised scores (weighted fusion).
    pub weight: f32,
    /// The list, best first.
    pub ranked: &'a Ranked,
}

/// Fuses `lists` into `(tool ordinal, fused score)`, best first, ties by
/// ordinal. Each tool's score adds the lists' contributions in slice order.
pub fn fuse(fusion: Fusion, lists: &[List<'_>]) -> Vec<(u32, f32)> {
    let mut acc: HashMap<u32, f32> =
        HashMap::with_capacity(lists.iter().map(|l| l.ranked.len()).sum());
    match fusion {
        Fusion::Rrf { k } => {
            for list in lists {
                for (rank, (ord, _)) in list.ranked.iter().enumerate() {
                    *acc.entry(*ord).or_default() += 1.0 / (k + rank as f32 + 1.0);
                }
            }
        }
        Fusion::Weighted { .. } => {
            for list in lists {
                for (ord, s) in list.normalise.apply(list.ranked) {
                    *acc.entry(ord).or_default() += list.weight * s;
                }
            }
        }
    }
    let mut out: Vec<(u32, f32)> = acc.into_iter().collect();
    out.sort_by(crate::index::topk::by_score);
    out
}

/// Scores divided by the top score: 1 for the best hit.
fn by_top(list: &Ranked) -> Vec<(u32, f32)> {
    let top = list.first().map_or(0.0, |x| x.1);
    if top <= 0.0 {
        return vec![];
    }
    list.iter().map(|(o, s)| (*o, s / top)).collect()
}

/// Scores mapped so that the top hit is 1 and a score at the bottom of the
/// list is 0.
fn by_range(list: &Ranked) -> Vec<(u32, f32)> {
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

    fn lists<'a>(fusion: &Fusion, lexical: &'a Ranked, dense: &'a Ranked) -> [List<'a>; 2] {
        let w = fusion.dense_share();
        [
            List {
                retriever: "lexical",
                normalise: Normalise::ByTop,
                weight: 1.0 - w,
                ranked: lexical,
            },
            List {
                retriever: "dense",
                normalise: Normalise::ByRange,
                weight: w,
                ranked: dense,
            },
        ]
    }

    #[test]
    fn rrf_rewards_agreement() {
        let f = Fusion::Rrf { k: 60.0 };
        let fused = fuse(f, &lists(&f, &[(1, 9.0), (2, 5.0)], &[(2, 0.9), (3, 0.8)]));
        assert_eq!(fused[0].0, 2);
    }

    #[test]
    fn weighted_fusion_is_convex() {
        let f = Fusion::Weighted { dense_weight: 1.0 };
        let fused = fuse(f, &lists(&f, &[(1, 9.0)], &[(2, 0.9), (3, 0.1)]));
        assert_eq!(fused[0], (2, 1.0));
        assert!(fused.iter().all(|(o, s)| *o != 1 || *s == 0.0));
    }

    #[test]
    fn weighted_fusion_adds_lexical_then_dense_as_before() {
        // The arithmetic of the two-list fusion this replaced, written out:
        // (1 - w) * lexical / top, then + w * (dense - bottom) / span.
        let f = Fusion::Weighted { dense_weight: 0.37 };
        let lexical = [(4, 11.3), (2, 7.9), (9, 0.4)];
        let dense = [(2, 0.71), (7, 0.66), (4, 0.31)];
        let w = 0.37f32;
        let span = (0.71f32 - 0.31).max(1e-6);
        let mut want: Vec<(u32, f32)> = vec![
            (4, (1.0 - w) * (11.3 / 11.3) + w * ((0.31 - 0.31) / span)),
            (2, (1.0 - w) * (7.9 / 11.3) + w * ((0.71 - 0.31) / span)),
            (9, (1.0 - w) * (0.4 / 11.3)),
            (7, w * ((0.66 - 0.31) / span)),
        ];
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let got = fuse(f, &lists(&f, &lexical, &dense));
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0);
            assert_eq!(g.1.to_bits(), w.1.to_bits(), "{g:?} {w:?}");
        }
    }

    #[test]
    fn fusion_reads_kebab_case() {
        let f: Fusion =
            serde_json::from_str(r#"{"kind": "weighted", "dense-weight": 0.25}"#).unwrap();
        assert_eq!(f, Fusion::Weighted { dense_weight: 0.25 });
        assert!(
            serde_json::from_str::<Fusion>(r#"{"kind": "weighted", "dense_weight": 0.25}"#)
                .is_err()
        );
    }
}
