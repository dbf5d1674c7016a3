//! Fusing the retrievers' lists into one ranking.
//!
//! The default is calibrated: each list is normalised against its own top
//! (BM25 divided by its best score, cosines min-max scaled over the list),
//! and counts in proportion to its retriever's weight times its evidence on
//! this request: how far the retriever's best score stands above what the
//! registry's unrelated calibration requests score ([`super::calibration`]).
//! A retriever that found nothing, or only matches at the level of noise,
//! adds nothing, so the order is the other retriever's; a lone weak match on
//! one common word weighs little against the other side's confident hit.
//! Tools with no weighted evidence follow, in the order of the unweighted mix.
//!
//! Two rules stay as options: `weighted` (the same normalisations with fixed
//! weights, so the weakest list's best hit counts as much as the strongest's)
//! and reciprocal-rank fusion (ranks only). BENCHMARKS.md, "Held-out sets",
//! compares all three with each labelled set held out.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use toolrag_core::retrieval::RetrieverId;

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
    /// A convex mix of list-normalised scores: `w * dense + (1 - w) * lexical`,
    /// BM25 divided by its list's top score, cosines min-max scaled over
    /// their list.
    Weighted {
        /// The dense weight, 0..1.
        #[serde(rename = "dense-weight")]
        dense_weight: f32,
    },
    /// The weighted mix with each list's weight scaled by its retriever's
    /// calibrated evidence on the request (the default): scores in [0, 1].
    Calibrated {
        /// The dense weight, 0..1.
        #[serde(rename = "dense-weight")]
        dense_weight: f32,
    },
}

/// The default dense weight of calibrated fusion, chosen by
/// leave-one-dataset-out over every labelled set (`research/eval/lodo --model
/// minilm-tools`; BENCHMARKS.md, "Models") for the default model. The tuned
/// model's dense side is stronger, and every fold chose 0.7; with the
/// published model (`--model minilm`) every fold chose 0.5.
pub const DEFAULT_DENSE_WEIGHT: f32 = 0.7;

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Calibrated {
            dense_weight: DEFAULT_DENSE_WEIGHT,
        }
    }
}

impl Fusion {
    /// The share of the dense list in weighted or calibrated fusion, clamped
    /// to 0..1 (0 for RRF).
    pub fn dense_share(&self) -> f32 {
        match *self {
            Fusion::Weighted { dense_weight } | Fusion::Calibrated { dense_weight } => {
                dense_weight.clamp(0.0, 1.0)
            }
            Fusion::Rrf { .. } => 0.0,
        }
    }

    /// Whether each list's weight follows its retriever's evidence.
    pub fn is_calibrated(&self) -> bool {
        matches!(self, Fusion::Calibrated { .. })
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
    pub retriever: &'a RetrieverId,
    /// How its scores are normalised (weighted fusion).
    pub normalise: Normalise,
    /// The factor of its normalised scores (weighted and calibrated fusion).
    pub weight: f32,
    /// Its retriever's calibrated evidence on this request, 0 to 1
    /// (calibrated fusion; ignored by the others).
    pub evidence: f32,
    /// The list, best first, with the retriever's raw scores.
    pub ranked: &'a Ranked,
    /// The raw score at this registry's noise level: the [`NOISE`] quantile
    /// of the calibration requests' best scores (calibrated fusion; `None`
    /// when the retriever was not calibrated). The first place measures a
    /// [`Normalise::ByRange`] list from it (see [`fuse`]).
    ///
    /// [`NOISE`]: super::calibration::NOISE
    pub floor: Option<f32>,
}

/// How many of calibrated fusion's first tools the first place is chosen
/// among (see [`fuse`]): the top 5 stay the same tools, only their order
/// changes, so R@5 and any handle set of 5 or more are as the mix made them.
pub const FIRST_AMONG: usize = 5;

/// Fuses `lists` into `(tool ordinal, fused score)`, best first, ties by
/// ordinal. Each tool's score adds the lists' contributions in slice order.
///
/// Calibrated fusion chooses the **first place** on its own. The list's
/// order is built for the handle set: cosines min-max scaled over the list,
/// so a tool that both retrievers half-support climbs into the top 5. For
/// the one tool an agent mostly takes, the question is which tool's
/// evidence stands furthest above this registry's noise, so the first place
/// goes to the best tool of the same mix with each [`Normalise::ByRange`]
/// list measured from its [`List::floor`] (the noise level, 0 below it)
/// instead of from the list's bottom. On a small registry the bottom of the
/// dense list is far below the noise, which shrinks a clear dense margin at
/// the top to a few hundredths, and a lexical match on one name word then
/// outweighs it. The first place is chosen among the mix's top
/// `FIRST_AMONG`; the rest keep their order and every tool keeps its
/// fused score, so the first may score below the second. Leave-one-dataset-out
/// (`research/eval/rank1_first.py`, BENCHMARKS.md "Rank 1"): hybrid R@1
/// above both its halves on every held-out set, R@5 unchanged.
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
        Fusion::Weighted { .. } => return mix(lists, false, |l| l.normalise.apply(l.ranked)),
        Fusion::Calibrated { .. } => {
            let mut out = mix(lists, true, |l| l.normalise.apply(l.ranked));
            let among: Vec<u32> = out.iter().take(FIRST_AMONG).map(|x| x.0).collect();
            if let Some(first) = first_above_noise(lists, &among) {
                if let Some(i) = out.iter().position(|x| x.0 == first) {
                    let x = out.remove(i);
                    out.insert(0, x);
                }
            }
            return out;
        }
    }
    let mut out: Vec<(u32, f32)> = acc.into_iter().collect();
    out.sort_by(crate::index::topk::by_score);
    out
}

/// Weighted and calibrated fusion: each list scaled by `scale` (its
/// normalisation, or the first place's [`above_floor`]) and weighted by its
/// weight, times its evidence when `calibrated` (weighted fusion counts
/// every list in full). Ties (tools with no weighted evidence among them)
/// go to the mix without evidence, then to the ordinal.
fn mix(
    lists: &[List<'_>],
    calibrated: bool,
    scale: impl Fn(&List<'_>) -> Vec<(u32, f32)>,
) -> Vec<(u32, f32)> {
    let mut acc: HashMap<u32, (f32, f32)> =
        HashMap::with_capacity(lists.iter().map(|l| l.ranked.len()).sum());
    for list in lists {
        let evidence = if calibrated { list.evidence } else { 1.0 };
        for (ord, s) in scale(list) {
            let e = acc.entry(ord).or_default();
            e.0 += list.weight * evidence * s;
            e.1 += list.weight * s;
        }
    }
    let mut out: Vec<(u32, (f32, f32))> = acc.into_iter().collect();
    out.sort_by(|a, b| {
        b.1 .0
            .total_cmp(&a.1 .0)
            .then(b.1 .1.total_cmp(&a.1 .1))
            .then(a.0.cmp(&b.0))
    });
    out.into_iter().map(|(o, (s, _))| (o, s)).collect()
}

/// The first place of calibrated fusion (see [`fuse`]): the best tool of
/// `among` by the evidence-weighted [`mix`] with each list scaled by
/// [`above_floor`]. `None` when no list has a floor.
fn first_above_noise(lists: &[List<'_>], among: &[u32]) -> Option<u32> {
    if lists.iter().all(|l| l.floor.is_none()) {
        return None;
    }
    mix(lists, true, above_floor)
        .into_iter()
        .map(|(o, _)| o)
        .find(|o| among.contains(o))
}

/// A [`Normalise::ByRange`] list that has a floor, scaled from it: `(s -
/// floor) / (top - floor)`, 0 below; any other list as its normalisation
/// scales it.
fn above_floor(list: &List<'_>) -> Vec<(u32, f32)> {
    match (list.normalise, list.floor, list.ranked.first()) {
        (Normalise::ByRange, Some(floor), Some(&(_, top))) => {
            let floor = floor.min(top - 1e-3);
            let span = top - floor;
            list.ranked
                .iter()
                .map(|&(o, s)| (o, ((s - floor) / span).max(0.0)))
                .collect()
        }
        _ => list.normalise.apply(list.ranked),
    }
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

    static LEXICAL: RetrieverId = RetrieverId::LEXICAL;
    static DENSE: RetrieverId = RetrieverId::DENSE;

    fn lists<'a>(fusion: &Fusion, lexical: &'a Ranked, dense: &'a Ranked) -> [List<'a>; 2] {
        let w = fusion.dense_share();
        [
            List {
                retriever: &LEXICAL,
                normalise: Normalise::ByTop,
                weight: 1.0 - w,
                evidence: 1.0,
                ranked: lexical,
                floor: None,
            },
            List {
                retriever: &DENSE,
                normalise: Normalise::ByRange,
                weight: w,
                evidence: 1.0,
                ranked: dense,
                floor: None,
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

    /// Calibrated fusion's lists: lexical and dense with their evidences.
    fn calibrated<'a>(
        lexical: &'a Ranked,
        lexical_evidence: f32,
        dense: &'a Ranked,
        dense_evidence: f32,
    ) -> [List<'a>; 2] {
        [
            List {
                retriever: &LEXICAL,
                normalise: Normalise::ByTop,
                weight: 0.5,
                evidence: lexical_evidence,
                ranked: lexical,
                floor: None,
            },
            List {
                retriever: &DENSE,
                normalise: Normalise::ByRange,
                weight: 0.5,
                evidence: dense_evidence,
                ranked: dense,
                floor: None,
            },
        ]
    }

    const CALIBRATED: Fusion = Fusion::Calibrated { dense_weight: 0.5 };

    fn order(fused: &[(u32, f32)]) -> Vec<u32> {
        fused.iter().map(|x| x.0).collect()
    }

    #[test]
    fn the_first_place_weighs_the_dense_margin_above_the_noise() {
        // "show the last 5 commits": lexical puts git_show (1) first on the
        // name word, dense git_log (2) by a clear margin, and the bottom of
        // the dense list (3) is far below anything the request means.
        let lexical = [(1, 10.0), (2, 8.0)];
        let dense = [(2, 0.60), (1, 0.55), (3, 0.20)];
        let mut lists = calibrated(&lexical, 1.0, &dense, 1.0);
        let mixed = fuse(CALIBRATED, &lists);
        assert_eq!(order(&mixed), [1, 2, 3]);
        // Measured from the registry's noise level, the margin counts.
        lists[1].floor = Some(0.45);
        let fused = fuse(CALIBRATED, &lists);
        assert_eq!(order(&fused), [2, 1, 3]);
        // Every tool keeps its fused score: the first scores below the second.
        for (o, s) in &fused {
            let was = mixed.iter().find(|x| x.0 == *o).unwrap().1;
            assert_eq!(s.to_bits(), was.to_bits());
        }
        assert!(fused[0].1 < fused[1].1);
        // A floor on a list scaled by its top changes nothing.
        lists[0].floor = Some(9.0);
        lists[1].floor = None;
        assert_eq!(order(&fuse(CALIBRATED, &lists)), [1, 2, 3]);
        // Other fusions have no first-place step.
        let f = Fusion::Weighted { dense_weight: 0.5 };
        let mut weighted = lists;
        weighted[1].floor = Some(0.45);
        assert_eq!(order(&fuse(f, &weighted)), order(&fuse(f, &lists)));
    }

    #[test]
    fn the_first_place_is_chosen_among_the_top_five_only() {
        // Tool 9 leads the dense list above the noise but is sixth in the
        // mix (lexical alone ranks the others): the top five keep their
        // tools, so it is not promoted.
        let lexical = [(1, 10.0), (2, 9.9), (3, 9.8), (4, 9.7), (5, 9.6)];
        let dense = [
            (9, 0.60),
            (1, 0.30),
            (2, 0.30),
            (3, 0.30),
            (4, 0.30),
            (5, 0.30),
            (6, 0.0),
        ];
        let mut lists = calibrated(&lexical, 1.0, &dense, 0.1);
        let mixed = order(&fuse(CALIBRATED, &lists));
        assert_eq!(mixed.iter().position(|&o| o == 9), Some(FIRST_AMONG));
        lists[1].floor = Some(0.35);
        let fused = order(&fuse(CALIBRATED, &lists));
        assert_ne!(fused[0], 9);
        let (mut a, mut b) = (fused[..FIRST_AMONG].to_vec(), mixed[..FIRST_AMONG].to_vec());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn with_one_list_empty_the_order_is_the_others() {
        let dense = [(4, 0.7), (2, 0.6), (9, 0.5), (1, 0.2)];
        let fused = fuse(CALIBRATED, &calibrated(&[], 0.0, &dense, 0.8));
        assert_eq!(order(&fused), [4, 2, 9, 1]);
        let fused = fuse(CALIBRATED, &calibrated(&dense, 0.8, &[], 0.0));
        assert_eq!(order(&fused), [4, 2, 9, 1]);
    }

    #[test]
    fn a_list_below_its_noise_does_not_reorder_the_other() {
        // The lexical side matched one common word, at the level of noise
        // (evidence 0): its tools follow the dense order, never lead it.
        let lexical = [(7, 12.0)];
        let dense = [(4, 0.7), (2, 0.6), (7, 0.55), (9, 0.5), (1, 0.2)];
        let fused = fuse(CALIBRATED, &calibrated(&lexical, 0.0, &dense, 0.9));
        assert_eq!(order(&fused), [4, 2, 7, 9, 1]);
        // Weighted fusion lets the same weak match win: the reason for the change.
        let f = Fusion::Weighted { dense_weight: 0.5 };
        let weighted = fuse(f, &lists(&f, &lexical, &dense));
        assert_eq!(weighted[0].0, 7);
    }

    #[test]
    fn when_both_agree_on_the_first_tool_it_stays_first() {
        // A small LCG: random lists whose first tools agree, random evidences.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for _ in 0..500 {
            let first = next(50) as u32;
            let mut lexical = vec![(first, 30.0)];
            let mut dense = vec![(first, 0.9)];
            // A list holds each tool once.
            for i in 0..next(20) {
                let o = next(50) as u32;
                if !lexical.iter().any(|x| x.0 == o) {
                    lexical.push((o, 29.0 - i as f32));
                }
            }
            for i in 0..next(20) {
                let o = next(50) as u32;
                if !dense.iter().any(|x| x.0 == o) {
                    dense.push((o, 0.85 - 0.01 * i as f32));
                }
            }
            let (el, ed) = (next(101) as f32 / 100.0, next(101) as f32 / 100.0);
            let fused = fuse(CALIBRATED, &calibrated(&lexical, el, &dense, ed));
            assert_eq!(fused[0].0, first, "{lexical:?} {dense:?} {el} {ed}");
            assert!(
                fused.iter().all(|x| (0.0..=1.0).contains(&x.1)),
                "{fused:?}"
            );
        }
    }

    #[test]
    fn the_fused_score_is_the_evidence_weighted_mix() {
        let lexical = [(1, 10.0), (2, 5.0)];
        let dense = [(2, 0.8), (3, 0.4)];
        let fused = fuse(CALIBRATED, &calibrated(&lexical, 1.0, &dense, 0.5));
        // Tool 2: 0.5 * 1.0 * 0.5 + 0.5 * 0.5 * 1.0 = 0.5; tool 1: 0.5; ties by the unweighted mix.
        assert_eq!(fused[0], (2, 0.5));
        assert_eq!(fused[1], (1, 0.5));
        assert_eq!(fused[2], (3, 0.0));
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
