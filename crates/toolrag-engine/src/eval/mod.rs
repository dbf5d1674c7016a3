//! Retrieval evaluation: run labelled queries through a [`Searcher`] in each
//! mode and score the results with the metrics of the team's scorer, `score.py`
//! (`make check-shared` checks the parity).
//!
//! - [`load_queries`] reads the dev format (`id`, `query`, `relevant`,
//!   optional `groups`, `kind`, `subset`), with `file:line` errors.
//! - [`score_query`] and [`score_rankings`] are `score.py`'s definitions:
//!   Recall@1/5/10, nDCG@10 (each need credited once), MRR@10 and Complete@10
//!   over answerable queries, macro means overall, per kind and per subset, and
//!   the score-threshold abstain analysis (AUROC, Youden's J).
//! - [`run`] searches every query in every mode, one query at a time so the
//!   latencies are those of a single request, and adds what `score.py` cannot
//!   see: abstain precision and recall of the searcher's own decision, and
//!   latency p50/p95.
//! - [`check`] compares a mode's numbers with `--min` thresholds and lists
//!   the queries that pull a missed metric down.
//!
//! ```
//! use toolrag_engine::eval::{score_query, Metric};
//!
//! let needs = vec![vec!["fs/read".to_string(), "fs/cat".to_string()]];
//! let m = score_query(&needs, &["fs/list", "fs/cat"]);
//! assert_eq!((m.recall_at_1, m.recall_at_5, m.mrr_at_10), (0.0, 1.0, 0.5));
//! assert_eq!("recall@5".parse::<Metric>(), Ok(Metric::Recall(5)));
//! ```

mod abstain;
mod check;
mod metrics;
mod query;

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use abstain::{auroc, describe, quantile, Describe, OperatingPoint, ThresholdAbstain};
pub use check::{check, Check, CheckFailure, CheckPass, FailingQuery, Metric, Threshold};
pub use metrics::{
    dedup, score_query, score_rankings, Means, QueryMetrics, Ranking, Scores, COMPLETE_K, MRR_K,
    NDCG_K, RECALL_KS,
};
pub use query::{load_queries, parse_queries, EvalQuery, KIND_NONE};

use crate::search::{Decision, Mode, SearchRequest, Searcher};
use toolrag_core::error::{Error, Result};

/// A query searched once before timing starts, so the first timed query does
/// not pay for cold caches. It is no labelled request, and its embedding
/// never serves one from the searcher's cache.
const WARM_UP_QUERY: &str = "toolrag eval warm-up request";

/// What one query returned in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryOutcome {
    /// The query id.
    pub id: String,
    /// The retrieved tool ids, best first.
    pub ranked: Vec<String>,
    /// The searcher's confidence (the top-1 score of the abstain analysis).
    pub confidence: f64,
    /// The searcher's decision.
    pub decision: Decision,
    /// The metrics; `None` for `none` queries.
    pub metrics: Option<QueryMetrics>,
    /// Wall time of the search, in milliseconds.
    pub latency_ms: f64,
}

/// Abstain precision and recall of the searcher's own decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionAbstain {
    /// `none` queries.
    pub n_none: usize,
    /// Queries the searcher abstained on, of any kind.
    pub abstained: usize,
    /// `none` queries the searcher abstained on.
    pub abstained_none: usize,
    /// Of the queries abstained on, the fraction that were `none`; `None` when
    /// the searcher never abstained.
    pub precision: Option<f64>,
    /// Of the `none` queries, the fraction abstained on; `None` without any.
    pub recall: Option<f64>,
}

impl DecisionAbstain {
    fn of(queries: &[EvalQuery], outcomes: &[QueryOutcome]) -> Self {
        let abstained = |o: &&QueryOutcome| o.decision == Decision::Abstain;
        let n_none = queries.iter().filter(|q| q.is_none()).count();
        let total = outcomes.iter().filter(abstained).count();
        let none = queries
            .iter()
            .zip(outcomes)
            .filter(|(q, o)| q.is_none() && abstained(o))
            .count();
        let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
        DecisionAbstain {
            n_none,
            abstained: total,
            abstained_none: none,
            precision: ratio(none, total),
            recall: ratio(none, n_none),
        }
    }
}

/// Search latency over the queries of one mode, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// The median.
    pub p50_ms: f64,
    /// The 95th percentile.
    pub p95_ms: f64,
    /// The mean.
    pub mean_ms: f64,
    /// The slowest query.
    pub max_ms: f64,
}

impl Latency {
    fn of(ms: &[f64]) -> Self {
        let mut v = ms.to_vec();
        v.sort_by(f64::total_cmp);
        Latency {
            p50_ms: quantile(&v, 0.5),
            p95_ms: quantile(&v, 0.95),
            mean_ms: v.iter().sum::<f64>() / v.len().max(1) as f64,
            max_ms: v.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// The evaluation of one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeReport {
    /// The mode.
    pub mode: Mode,
    /// `score.py`'s numbers, with the confidence as the top-1 score.
    pub scores: Scores,
    /// Abstain precision and recall of the searcher's decision.
    pub abstain: DecisionAbstain,
    /// Search latency, one query at a time.
    pub latency: Latency,
    /// Every query's outcome, in file order.
    pub queries: Vec<QueryOutcome>,
}

/// A mode that was asked for but not evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedMode {
    /// The mode.
    pub mode: Mode,
    /// Why it was skipped.
    pub reason: String,
}

/// The evaluation of a query file over an index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalReport {
    /// Results requested per query.
    pub k: usize,
    /// Tools in the index.
    pub tools: usize,
    /// Queries in the file.
    pub queries: usize,
    /// Answerable queries per kind.
    pub kinds: HashMap<String, usize>,
    /// `none` queries.
    pub none: usize,
    /// Expected tool ids that are not in the index (they can never be found).
    pub unknown_ids: Vec<String>,
    /// The evaluated modes, in the order asked.
    pub modes: Vec<ModeReport>,
    /// The modes asked for but not evaluated.
    pub skipped: Vec<SkippedMode>,
}

impl EvalReport {
    /// The report of `mode`, if it was evaluated.
    pub fn mode(&self, mode: Mode) -> Option<&ModeReport> {
        self.modes.iter().find(|m| m.mode == mode)
    }
}

/// Searches every query in `mode`, one at a time, and scores the results.
///
/// `searcher` must be able to serve `mode` (see [`Searcher::has_dense`]):
/// hybrid would silently fall back to BM25, and dense fails.
pub fn evaluate_mode(
    searcher: &Searcher,
    queries: &[EvalQuery],
    mode: Mode,
    k: usize,
) -> Result<ModeReport> {
    let request = |query: &str| SearchRequest {
        query: query.to_string(),
        k,
        mode,
        ..SearchRequest::default()
    };
    searcher.search(&request(WARM_UP_QUERY))?;
    let mut outcomes = Vec::with_capacity(queries.len());
    let mut rankings = HashMap::with_capacity(queries.len());
    for q in queries {
        let start = Instant::now();
        let result = searcher.search(&request(&q.query)).map_err(|e| match e {
            Error::InvalidInput(m) => {
                Error::InvalidInput(format!("query {} (line {}): {m}", q.id, q.line))
            }
            other => other,
        })?;
        let latency_ms = start.elapsed().as_secs_f64() * 1e3;
        let ranked: Vec<String> = result.hits.into_iter().map(|h| h.id).collect();
        let ranking = Ranking {
            ranked,
            top1: Some(f64::from(result.confidence)),
        };
        outcomes.push(QueryOutcome {
            id: q.id.clone(),
            ranked: ranking.ranked.clone(),
            confidence: f64::from(result.confidence),
            decision: result.decision,
            metrics: (!q.is_none()).then(|| score_query(&q.groups, &ranking.ranked)),
            latency_ms,
        });
        rankings.insert(q.id.clone(), ranking);
    }
    let latencies: Vec<f64> = outcomes.iter().map(|o| o.latency_ms).collect();
    Ok(ModeReport {
        mode,
        scores: score_rankings(queries, &rankings),
        abstain: DecisionAbstain::of(queries, &outcomes),
        latency: Latency::of(&latencies),
        queries: outcomes,
    })
}

/// Evaluates `queries` in each of `modes`, retrieving `k` tools per query.
///
/// `open` opens the index for one mode. Each mode gets a searcher of its own
/// so that no mode is timed with query embeddings cached by an earlier one.
/// A dense or hybrid mode whose searcher has no dense side (a lexical-only
/// index, or no model) is skipped and listed in [`EvalReport::skipped`].
pub fn run(
    mut open: impl FnMut(Mode) -> Result<Searcher>,
    queries: &[EvalQuery],
    modes: &[Mode],
    k: usize,
) -> Result<EvalReport> {
    if k == 0 {
        return Err(Error::InvalidInput("k must be at least 1".into()));
    }
    let mut report = EvalReport {
        k,
        tools: 0,
        queries: queries.len(),
        kinds: HashMap::new(),
        none: queries.iter().filter(|q| q.is_none()).count(),
        unknown_ids: vec![],
        modes: vec![],
        skipped: vec![],
    };
    for q in queries.iter().filter(|q| !q.is_none()) {
        *report.kinds.entry(q.kind.clone()).or_default() += 1;
    }
    let mut seen = BTreeSet::new();
    for &mode in modes {
        if !seen.insert(mode.to_string()) {
            continue;
        }
        let searcher = open(mode)?;
        if report.tools == 0 {
            report.tools = searcher.tools().len();
            let known: std::collections::HashSet<&str> =
                searcher.tools().iter().map(|t| t.id.as_str()).collect();
            let unknown: BTreeSet<&str> = queries
                .iter()
                .flat_map(|q| q.groups.iter().flatten())
                .map(String::as_str)
                .filter(|id| !known.contains(id))
                .collect();
            report.unknown_ids = unknown.into_iter().map(str::to_string).collect();
        }
        if mode != Mode::Lexical && !searcher.has_dense() {
            let reason = if searcher.manifest().lexical_only {
                "the index is lexical-only (built without the model)"
            } else {
                "no embedding model"
            };
            report.skipped.push(SkippedMode {
                mode,
                reason: reason.into(),
            });
            continue;
        }
        report
            .modes
            .push(evaluate_mode(&searcher, queries, mode, k)?);
    }
    Ok(report)
}
