//! The metric definitions of the team's scorer, `score.py`, line for line: the
//! per-query scores, their macro means per slice, and `score_rankings`, which
//! also runs the score-threshold abstain analysis of `abstain`. Its figures on
//! `tests/fixtures/eval` are recorded there for `make test`; `make
//! check-shared` compares with the scorer itself.
//!
//! Everything here is pure: rankings in, numbers out. Undefined means (no
//! query in a slice) are NaN, which JSON output writes as `null`, as
//! `score.py` does.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::abstain::ThresholdAbstain;
use super::EvalQuery;

/// The cut-offs of Recall@k.
pub const RECALL_KS: [usize; 3] = [1, 5, 10];
/// The cut-off of nDCG.
pub const NDCG_K: usize = 10;
/// The cut-off of MRR.
pub const MRR_K: usize = 10;
/// The cut-off of Complete@k.
pub const COMPLETE_K: usize = 10;

/// The metrics of one answerable query, or their mean over many.
///
/// The JSON names are `score.py`'s (`recall@1`, ..., `complete@10`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct QueryMetrics {
    /// The fraction of needs met by the first result.
    #[serde(rename = "recall@1")]
    pub recall_at_1: f64,
    /// The fraction of needs met by the first 5 results.
    #[serde(rename = "recall@5")]
    pub recall_at_5: f64,
    /// The fraction of needs met by the first 10 results.
    #[serde(rename = "recall@10")]
    pub recall_at_10: f64,
    /// nDCG@10 with binary gains, each need credited once.
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: f64,
    /// 1 / rank of the first result that meets any need, 0 beyond rank 10.
    #[serde(rename = "mrr@10")]
    pub mrr_at_10: f64,
    /// 1 when the first 10 results meet every need, else 0.
    #[serde(rename = "complete@10")]
    pub complete_at_10: f64,
}

impl QueryMetrics {
    /// Recall at cut-off `k` (1, 5 or 10); `None` for any other `k`.
    pub fn recall_at(&self, k: usize) -> Option<f64> {
        match k {
            1 => Some(self.recall_at_1),
            5 => Some(self.recall_at_5),
            10 => Some(self.recall_at_10),
            _ => None,
        }
    }

    fn all_nan() -> Self {
        QueryMetrics {
            recall_at_1: f64::NAN,
            recall_at_5: f64::NAN,
            recall_at_10: f64::NAN,
            ndcg_at_10: f64::NAN,
            mrr_at_10: f64::NAN,
            complete_at_10: f64::NAN,
        }
    }
}

/// Keeps each id at its first position.
pub fn dedup<S: AsRef<str>>(ids: &[S]) -> Vec<&str> {
    let mut seen = HashSet::new();
    ids.iter()
        .map(AsRef::as_ref)
        .filter(|id| seen.insert(*id))
        .collect()
}

/// For each need, whether any of its ids is among `ids`.
fn groups_hit(groups: &[Vec<String>], ids: &[&str]) -> Vec<bool> {
    let set: HashSet<&str> = ids.iter().copied().collect();
    groups
        .iter()
        .map(|g| g.iter().any(|t| set.contains(t.as_str())))
        .collect()
}

/// All metrics of one answerable query: `groups` are its needs (each a list of
/// acceptable tool ids), `ranked` the retrieved ids, best first. `ranked` is
/// de-duplicated first (each id keeps its first position); ids that are in no
/// group never match.
///
/// `score.py` refuses a query without groups; here every metric of such a
/// query is 0.
pub fn score_query<S: AsRef<str>>(groups: &[Vec<String>], ranked: &[S]) -> QueryMetrics {
    if groups.is_empty() {
        return QueryMetrics::default();
    }
    let ranked = dedup(ranked);
    let n = groups.len() as f64;
    let recall = |k: usize| {
        let hits = groups_hit(groups, &ranked[..k.min(ranked.len())]);
        hits.iter().filter(|h| **h).count() as f64 / n
    };
    let complete = groups_hit(groups, &ranked[..COMPLETE_K.min(ranked.len())])
        .iter()
        .all(|h| *h);

    // nDCG@10 with each group credited once.
    let mut id_to_groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        for t in dedup(g) {
            id_to_groups.entry(t).or_default().push(gi);
        }
    }
    let mut credited: HashSet<usize> = HashSet::new();
    let mut dcg = 0.0;
    for (i, t) in ranked.iter().take(NDCG_K).enumerate() {
        let Some(gs) = id_to_groups.get(t) else {
            continue;
        };
        if gs.iter().any(|g| !credited.contains(g)) {
            dcg += 1.0 / ((i + 2) as f64).log2();
            credited.extend(gs.iter().copied());
        }
    }
    let idcg: f64 = (1..=groups.len().min(NDCG_K))
        .map(|i| 1.0 / ((i + 1) as f64).log2())
        .sum();

    let mrr = ranked
        .iter()
        .take(MRR_K)
        .position(|t| id_to_groups.contains_key(t))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64);

    QueryMetrics {
        recall_at_1: recall(1),
        recall_at_5: recall(5),
        recall_at_10: recall(10),
        ndcg_at_10: dcg / idcg,
        mrr_at_10: mrr,
        complete_at_10: if complete { 1.0 } else { 0.0 },
    }
}

/// The macro mean of a slice of queries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Means {
    /// The means; NaN (`null` in JSON) when `n` is 0.
    #[serde(flatten)]
    pub metrics: QueryMetrics,
    /// How many queries were averaged.
    pub n: usize,
}

impl Means {
    /// The macro mean of `rows`.
    pub fn of(rows: &[QueryMetrics]) -> Means {
        if rows.is_empty() {
            return Means {
                metrics: QueryMetrics::all_nan(),
                n: 0,
            };
        }
        let n = rows.len() as f64;
        let mean = |f: fn(&QueryMetrics) -> f64| rows.iter().map(f).sum::<f64>() / n;
        Means {
            metrics: QueryMetrics {
                recall_at_1: mean(|m| m.recall_at_1),
                recall_at_5: mean(|m| m.recall_at_5),
                recall_at_10: mean(|m| m.recall_at_10),
                ndcg_at_10: mean(|m| m.ndcg_at_10),
                mrr_at_10: mean(|m| m.mrr_at_10),
                complete_at_10: mean(|m| m.complete_at_10),
            },
            n: rows.len(),
        }
    }
}

/// One query's retrieved list, as `score.py` reads a rankings line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Tool ids, best first.
    pub ranked: Vec<String>,
    /// The top-1 score, for the abstain analysis; `None` counts as -inf, as
    /// does an empty `ranked`.
    pub top1: Option<f64>,
}

impl Ranking {
    fn top1_score(&self) -> f64 {
        match self.top1 {
            Some(s) if !self.ranked.is_empty() && !s.is_nan() => s,
            _ => f64::NEG_INFINITY,
        }
    }
}

/// What `score.py`'s `score_rankings` returns; the JSON has its field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Means over all answerable queries.
    pub all: Means,
    /// Means per kind (`single`, `multi`, ...).
    pub by_kind: BTreeMap<String, Means>,
    /// Means per subset (`""` for queries without one).
    pub by_subset: BTreeMap<String, Means>,
    /// Answerable queries.
    pub n_answerable: usize,
    /// `none` queries.
    pub n_none: usize,
    /// Queries without a ranking (scored as an empty ranking).
    pub n_missing: usize,
    /// The score-threshold abstain analysis; present when there are `none`
    /// queries and at least one finite top-1 score.
    pub abstain: Option<ThresholdAbstain>,
}

/// Scores `rankings` (query id → ranking) against `queries`, as `score.py`
/// does without `--only-ranked`: a query without a ranking counts as an empty one.
pub fn score_rankings(queries: &[EvalQuery], rankings: &HashMap<String, Ranking>) -> Scores {
    let empty = Ranking::default();
    let mut all = Vec::new();
    let mut by_kind: BTreeMap<String, Vec<QueryMetrics>> = BTreeMap::new();
    let mut by_subset: BTreeMap<String, Vec<QueryMetrics>> = BTreeMap::new();
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    let mut missing = 0;
    for q in queries {
        let r = rankings.get(&q.id).unwrap_or_else(|| {
            missing += 1;
            &empty
        });
        if q.is_none() {
            neg.push(r.top1_score());
            continue;
        }
        pos.push(r.top1_score());
        let m = score_query(&q.groups, &r.ranked);
        all.push(m);
        by_kind.entry(q.kind.clone()).or_default().push(m);
        by_subset
            .entry(q.subset.clone().unwrap_or_default())
            .or_default()
            .push(m);
    }
    let has_scores = pos.iter().chain(neg.iter()).any(|x| x.is_finite());
    let abstain = (!neg.is_empty() && has_scores).then(|| ThresholdAbstain::of(&pos, &neg));
    Scores {
        all: Means::of(&all),
        by_kind: by_kind
            .iter()
            .map(|(k, v)| (k.clone(), Means::of(v)))
            .collect(),
        by_subset: by_subset
            .iter()
            .map(|(k, v)| (k.clone(), Means::of(v)))
            .collect(),
        n_answerable: all.len(),
        n_none: neg.len(),
        n_missing: missing,
        abstain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(groups: &[&[&str]]) -> Vec<Vec<String>> {
        groups
            .iter()
            .map(|g| g.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn single_need_at_rank_two() {
        let m = score_query(&g(&[&["a"]]), &["x", "a", "y"]);
        assert_eq!(m.recall_at_1, 0.0);
        assert_eq!(m.recall_at_5, 1.0);
        assert_eq!(m.mrr_at_10, 0.5);
        assert!((m.ndcg_at_10 - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(m.complete_at_10, 1.0);
    }

    #[test]
    fn duplicates_and_alternatives_count_once() {
        // "a" and its alternative "a2" meet the same need: only the first gains.
        let m = score_query(&g(&[&["a", "a2"], &["b"]]), &["a", "a", "a2", "b"]);
        assert_eq!(m.recall_at_1, 0.5);
        let idcg = 1.0 + 1.0 / 3f64.log2();
        let dcg = 1.0 + 1.0 / 4f64.log2(); // "b" is at position 3 after dedup
        assert!((m.ndcg_at_10 - dcg / idcg).abs() < 1e-12);
    }

    #[test]
    fn no_groups_scores_zero() {
        assert_eq!(score_query::<&str>(&[], &["a"]), QueryMetrics::default());
    }
}
