//! Regression thresholds (`--min recall@5=0.9`): which are missed, and which
//! queries pull each missed metric down.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{EvalQuery, ModeReport, QueryOutcome};
use crate::search::{Decision, Mode};

/// A metric a threshold can be set on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Metric {
    /// `recall@1`, `recall@5` or `recall@10`.
    Recall(usize),
    /// `ndcg@10`.
    Ndcg10,
    /// `mrr@10`.
    Mrr10,
    /// `complete@10`.
    Complete10,
    /// `abstain-precision`: of the queries abstained on, the fraction that are `none`.
    AbstainPrecision,
    /// `abstain-recall`: of the `none` queries, the fraction abstained on.
    AbstainRecall,
}

impl Metric {
    /// Every metric name `FromStr` accepts.
    pub const NAMES: &'static [&'static str] = &[
        "recall@1",
        "recall@5",
        "recall@10",
        "ndcg@10",
        "mrr@10",
        "complete@10",
        "abstain-precision",
        "abstain-recall",
    ];

    /// The metric's value in `report`; `None` when it is undefined (no
    /// answerable query, or no abstention for the precision).
    pub fn value(self, report: &ModeReport) -> Option<f64> {
        let m = &report.scores.all.metrics;
        let v = match self {
            Metric::Recall(k) => m.recall_at(k)?,
            Metric::Ndcg10 => m.ndcg_at_10,
            Metric::Mrr10 => m.mrr_at_10,
            Metric::Complete10 => m.complete_at_10,
            Metric::AbstainPrecision => report.abstain.precision?,
            Metric::AbstainRecall => report.abstain.recall?,
        };
        (!v.is_nan()).then_some(v)
    }

    /// Whether this query counts against the metric: an answerable query
    /// that misses a need in the metric's top k (for nDCG and MRR: that has
    /// no hit in the top 10), an answerable query abstained on (precision),
    /// or a `none` query answered (recall).
    fn fails(self, q: &EvalQuery, o: &QueryOutcome) -> bool {
        match (self, &o.metrics) {
            (Metric::AbstainPrecision, _) => !q.is_none() && o.decision == Decision::Abstain,
            (Metric::AbstainRecall, _) => q.is_none() && o.decision != Decision::Abstain,
            (_, None) => false,
            (Metric::Recall(k), Some(m)) => m.recall_at(k).is_some_and(|r| r < 1.0),
            (Metric::Complete10, Some(m)) => m.complete_at_10 < 1.0,
            (Metric::Ndcg10 | Metric::Mrr10, Some(m)) => m.mrr_at_10 == 0.0,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Recall(k) => write!(f, "recall@{k}"),
            Metric::Ndcg10 => f.write_str("ndcg@10"),
            Metric::Mrr10 => f.write_str("mrr@10"),
            Metric::Complete10 => f.write_str("complete@10"),
            Metric::AbstainPrecision => f.write_str("abstain-precision"),
            Metric::AbstainRecall => f.write_str("abstain-recall"),
        }
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "recall@1" => Metric::Recall(1),
            "recall@5" => Metric::Recall(5),
            "recall@10" => Metric::Recall(10),
            "ndcg@10" => Metric::Ndcg10,
            "mrr@10" => Metric::Mrr10,
            "complete@10" => Metric::Complete10,
            "abstain-precision" => Metric::AbstainPrecision,
            "abstain-recall" => Metric::AbstainRecall,
            _ => {
                return Err(format!(
                    "unknown metric `{s}` (one of: {})",
                    Metric::NAMES.join(", ")
                ))
            }
        })
    }
}

impl From<Metric> for String {
    fn from(m: Metric) -> String {
        m.to_string()
    }
}

impl TryFrom<String> for Metric {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A lower bound on a metric: `METRIC=VALUE`, the value in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The metric.
    pub metric: Metric,
    /// The smallest passing value.
    pub min: f64,
}

impl FromStr for Threshold {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (metric, value) = s
            .split_once('=')
            .ok_or_else(|| format!("expected METRIC=VALUE, like recall@5=0.9, got `{s}`"))?;
        let min: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("`{value}` is not a number"))?;
        if !(0.0..=1.0).contains(&min) {
            return Err(format!("the threshold {min} is not between 0 and 1"));
        }
        Ok(Threshold {
            metric: metric.parse()?,
            min,
        })
    }
}

/// A query that counts against a missed threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailingQuery {
    /// The query id.
    pub id: String,
    /// Its line in the query file.
    pub line: usize,
    /// The request.
    pub query: String,
    /// Its kind (`none` for out-of-scope requests).
    pub kind: String,
    /// The needs (acceptable ids each); empty for `none`.
    pub expected: Vec<Vec<String>>,
    /// For each need, the 1-based rank where it was met, if it was.
    pub found_at: Vec<Option<usize>>,
    /// What was retrieved instead, best first.
    pub ranked: Vec<String>,
    /// The searcher's decision.
    pub decision: Decision,
}

/// The outcome of one threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckFailure {
    /// The threshold.
    pub threshold: Threshold,
    /// The measured value; `None` when undefined (which fails).
    pub value: Option<f64>,
    /// The queries that count against it.
    pub failing: Vec<FailingQuery>,
}

/// A threshold that held.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CheckPass {
    /// The threshold.
    pub threshold: Threshold,
    /// The measured value.
    pub value: f64,
}

/// The outcome of every threshold on one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// The mode the thresholds were applied to.
    pub mode: Mode,
    /// The thresholds that held, with their values.
    pub passed: Vec<CheckPass>,
    /// The thresholds that were missed.
    pub failed: Vec<CheckFailure>,
}

impl Check {
    /// Whether every threshold held.
    pub fn ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Applies `thresholds` to `report`, whose queries are `queries` (in the
/// order evaluated). A value passes when it is at least the threshold, up to
/// rounding (1e-9).
pub fn check(report: &ModeReport, queries: &[EvalQuery], thresholds: &[Threshold]) -> Check {
    let mut out = Check {
        mode: report.mode,
        passed: vec![],
        failed: vec![],
    };
    for t in thresholds {
        let value = t.metric.value(report);
        match value {
            Some(v) if v + 1e-9 >= t.min => out.passed.push(CheckPass {
                threshold: *t,
                value: v,
            }),
            _ => out.failed.push(CheckFailure {
                threshold: *t,
                value,
                failing: queries
                    .iter()
                    .zip(&report.queries)
                    .filter(|(q, o)| t.metric.fails(q, o))
                    .map(|(q, o)| failing_query(q, o))
                    .collect(),
            }),
        }
    }
    out
}

fn failing_query(q: &EvalQuery, o: &QueryOutcome) -> FailingQuery {
    let ranked = super::dedup(&o.ranked);
    FailingQuery {
        id: q.id.clone(),
        line: q.line,
        query: q.query.clone(),
        kind: q.kind.clone(),
        expected: q.groups.clone(),
        found_at: q
            .groups
            .iter()
            .map(|g| ranked.iter().position(|t| g.iter().any(|x| x == t)))
            .map(|p| p.map(|i| i + 1))
            .collect(),
        ranked: o.ranked.clone(),
        decision: o.decision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_and_reject_nonsense() {
        let t: Threshold = "Recall@5=0.9".parse().unwrap();
        assert_eq!((t.metric, t.min), (Metric::Recall(5), 0.9));
        assert_eq!(
            "abstain-recall=1".parse::<Threshold>().unwrap().metric,
            Metric::AbstainRecall
        );
        for bad in ["recall@5", "recall@3=0.5", "mrr@10=x", "ndcg@10=1.5"] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
        for name in Metric::NAMES {
            assert_eq!(name.parse::<Metric>().unwrap().to_string(), *name);
        }
    }
}
