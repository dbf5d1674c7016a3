//! The score-threshold analysis of abstaining, as in `score.py`: how well a
//! query's top-1 score separates answerable from `none` requests (AUROC), the
//! best threshold (Youden's J), and the quantiles of each side.
//!
//! Top-1 scores may be -inf (no result); none is NaN.

use serde::{Deserialize, Serialize};

/// Linear-interpolated quantile of an ascending slice (numpy's default
/// method); NaN for an empty slice.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = (sorted.len() - 1) as f64 * q;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let (a, b) = (sorted[lo], sorted[hi]);
    if a == b {
        return a;
    }
    let frac = pos - lo as f64;
    if !(a.is_finite() && b.is_finite()) {
        return if frac < 0.5 { a } else { b };
    }
    a + (b - a) * frac
}

/// The distribution of top-1 scores on one side of the abstain analysis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Describe {
    /// How many queries.
    pub n: usize,
    /// How many had no result (a top-1 score of -inf).
    pub n_no_result: usize,
    /// The mean of the finite scores.
    pub mean: f64,
    /// The smallest score.
    pub min: f64,
    /// The 10th percentile.
    pub p10: f64,
    /// The 25th percentile.
    pub p25: f64,
    /// The median.
    pub p50: f64,
    /// The 75th percentile.
    pub p75: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The largest score.
    pub max: f64,
}

/// Quantiles and mean of `vals`.
pub fn describe(vals: &[f64]) -> Describe {
    let mut v = vals.to_vec();
    v.sort_by(f64::total_cmp);
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    Describe {
        n: v.len(),
        n_no_result: v.len() - finite.len(),
        mean: if finite.is_empty() {
            f64::NAN
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        },
        min: quantile(&v, 0.0),
        p10: quantile(&v, 0.10),
        p25: quantile(&v, 0.25),
        p50: quantile(&v, 0.50),
        p75: quantile(&v, 0.75),
        p90: quantile(&v, 0.90),
        max: quantile(&v, 1.0),
    }
}

/// P(pos > neg) + 0.5 P(pos == neg), by rank sums with average ranks for ties;
/// NaN when either side is empty.
pub fn auroc(pos: &[f64], neg: &[f64]) -> f64 {
    if pos.is_empty() || neg.is_empty() {
        return f64::NAN;
    }
    let mut all: Vec<(f64, bool)> = pos
        .iter()
        .map(|x| (*x, true))
        .chain(neg.iter().map(|x| (*x, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        let n_pos = all[i..=j].iter().filter(|t| t.1).count();
        rank_sum_pos += avg_rank * n_pos as f64;
        i = j + 1;
    }
    let np = pos.len() as f64;
    let u = rank_sum_pos - np * (np + 1.0) / 2.0;
    u / (np * neg.len() as f64)
}

/// One operating point of the rule "answer iff top-1 score >= threshold".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OperatingPoint {
    /// The threshold.
    pub threshold: f64,
    /// The fraction of answerable queries with a score at or above it.
    pub answerable_kept: f64,
    /// The fraction of `none` queries with a score below it.
    pub none_abstained: f64,
    /// `answerable_kept + none_abstained - 1` (only on the Youden point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub youden_j: Option<f64>,
}

/// The score-threshold analysis of abstaining, as in `score.py`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdAbstain {
    /// AUROC of the top-1 score, answerable (positive) vs `none` (negative).
    pub auroc: f64,
    /// Top-1 scores of the `none` queries.
    pub none_top1: Describe,
    /// Top-1 scores of the answerable queries.
    pub answerable_top1: Describe,
    /// The threshold maximising Youden's J (ties: the larger threshold).
    pub best_youden: Option<OperatingPoint>,
    /// The most abstaining threshold that keeps at least 95% of answerable queries.
    #[serde(rename = "at_kept_0.95")]
    pub at_kept_0_95: Option<OperatingPoint>,
    /// The most abstaining threshold that keeps at least 99% of answerable queries.
    #[serde(rename = "at_kept_0.99")]
    pub at_kept_0_99: Option<OperatingPoint>,
}

impl ThresholdAbstain {
    /// The analysis of top-1 scores `pos` (answerable) and `neg` (`none`).
    pub fn of(pos: &[f64], neg: &[f64]) -> Self {
        let (best_youden, at_kept_0_95, at_kept_0_99) = tradeoff(pos, neg);
        ThresholdAbstain {
            auroc: auroc(pos, neg),
            none_top1: describe(neg),
            answerable_top1: describe(pos),
            best_youden,
            at_kept_0_95,
            at_kept_0_99,
        }
    }
}

/// The operating points of "answer iff top-1 score >= t", over every observed
/// score `t`: (best Youden, best at kept >= 0.95, best at kept >= 0.99).
fn tradeoff(
    pos: &[f64],
    neg: &[f64],
) -> (
    Option<OperatingPoint>,
    Option<OperatingPoint>,
    Option<OperatingPoint>,
) {
    if pos.is_empty() || neg.is_empty() {
        return (None, None, None);
    }
    let mut ps = pos.to_vec();
    ps.sort_by(f64::total_cmp);
    let mut ns = neg.to_vec();
    ns.sort_by(f64::total_cmp);
    let mut ts: Vec<f64> = ps.iter().chain(ns.iter()).copied().collect();
    ts.sort_by(f64::total_cmp);
    ts.dedup_by(|a, b| a == b);
    // bisect_left: how many values are < t.
    let below = |v: &[f64], t: f64| v.partition_point(|x| *x < t);
    let mut best: Option<OperatingPoint> = None;
    let mut at = [None::<OperatingPoint>; 2];
    for t in ts {
        let kept = (ps.len() - below(&ps, t)) as f64 / ps.len() as f64;
        let abstained = below(&ns, t) as f64 / ns.len() as f64;
        let j = kept + abstained - 1.0;
        if best.is_none_or(|b| j >= b.youden_j.unwrap_or(f64::NEG_INFINITY)) {
            best = Some(OperatingPoint {
                threshold: t,
                answerable_kept: kept,
                none_abstained: abstained,
                youden_j: Some(j),
            });
        }
        for (slot, target) in at.iter_mut().zip([0.95, 0.99]) {
            if kept >= target && slot.is_none_or(|b| abstained >= b.none_abstained) {
                *slot = Some(OperatingPoint {
                    threshold: t,
                    answerable_kept: kept,
                    none_abstained: abstained,
                    youden_j: None,
                });
            }
        }
    }
    (best, at[0], at[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_and_auroc_counts_ties_half() {
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(
            quantile(&[f64::NEG_INFINITY, f64::NEG_INFINITY], 0.5),
            f64::NEG_INFINITY
        );
        assert_eq!(auroc(&[2.0, 3.0], &[1.0, 2.0]), 0.875);
        let a = ThresholdAbstain::of(&[0.9, 0.8, 0.4], &[0.5, 0.1]);
        let best = a.best_youden.unwrap();
        assert_eq!((best.threshold, best.none_abstained), (0.8, 1.0));
        assert!((best.youden_j.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    }
}
