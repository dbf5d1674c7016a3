//! Calibration: what an unrelated request scores on this registry.
//!
//! A raw score means different things on different registries: terse real
//! MCP descriptions give lower cosines than long docstrings with examples,
//! and BM25 grows with the registry's vocabulary and the request's length.
//! So every build runs a fixed set of calibration requests ([`REQUESTS`]:
//! everyday requests that almost no registry serves, written once and never
//! tuned on a labelled set) through the registry's own retrievers, and keeps
//! each retriever's best raw score for each of them: the registry's noise,
//! measured with no labelled query. Against it, a retriever's best score on
//! a request becomes a **share**: the fraction of calibration requests whose
//! best is lower. A share means the same on every registry ("stronger than
//! 80% of unrelated requests here"), and it drives three things:
//!
//! - **fusion**: each retriever's list counts in proportion to its evidence
//!   on the request, its share above the noise quantile [`NOISE`]
//!   (`(share - NOISE) / (1 - NOISE)`, 0 below; with the default 0, the
//!   share itself). A lone weak match on one common word is weak evidence,
//!   and its list then weighs little;
//! - **the confidence of a search**: the fusion weights' mix of the
//!   retrievers' shares, in [0, 1]; `abstain-below` is a threshold on it;
//! - **agreement**: when the retrievers put the same tool first, each with a
//!   share above [`AGREEMENT`] (better than the median unrelated request),
//!   the search never abstains.
//!
//! [`NOISE`] and the default `abstain-below` were chosen by
//! leave-one-dataset-out over every labelled set (`scripts/lodo`,
//! BENCHMARKS.md "Held-out sets"). What a build measured is kept in the
//! generation (`calibration.json`, checksummed like every file) and
//! summarised in the manifest.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clauses::clause_spans;
use super::retriever::Retriever;
use super::{dense, lexical};
use crate::error::{Error, Result};

/// The calibration requests, one per line.
pub const REQUESTS: &str = include_str!("background.txt");

/// The calibration file in a generation folder.
pub const FILE: &str = "calibration.json";

/// The noise quantile: a retriever whose best score is at most this share
/// of the calibration requests' best scores adds nothing to the fusion.
/// Leave-one-dataset-out chose 0 over 0.1, 0.25 and 0.5 (mean held-out R@5
/// 0.7922 against 0.7922, 0.7901 and lower): the evidence is the share
/// itself, and a list counts for nothing only when its best is below every
/// calibration request's.
pub const NOISE: f32 = 0.0;

/// The share both retrievers must exceed, with the same first tool, for a
/// search never to abstain: better than the median unrelated request.
pub const AGREEMENT: f32 = 0.5;

/// The calibration requests, trimmed, without blank lines.
pub fn requests() -> impl Iterator<Item = &'static str> {
    REQUESTS.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// What the calibration requests scored on one generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// The retrievers measured, in order (`lexical`, then `dense` when the
    /// index has a dense side).
    pub retrievers: Vec<String>,
    /// Per calibration request, each retriever's best raw score, in the
    /// order of `retrievers`; `None` where it found nothing.
    pub tops: Vec<Vec<Option<f32>>>,
}

/// The manifest's summary of a generation's calibration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CalibrationSummary {
    /// How many calibration requests were run.
    pub requests: usize,
    /// Each retriever's median best raw score over the calibration requests:
    /// what a typical unrelated request scores on this registry.
    pub medians: BTreeMap<String, f32>,
}

impl Calibration {
    /// Each retriever's best raw scores, ascending, by retriever id (a
    /// request on which it found nothing counts as -1).
    fn sorted_tops(&self) -> HashMap<String, Vec<f32>> {
        self.retrievers
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut v: Vec<f32> = self
                    .tops
                    .iter()
                    .map(|t| t.get(i).copied().flatten().unwrap_or(-1.0))
                    .collect();
                v.sort_by(f32::total_cmp);
                (id.clone(), v)
            })
            .collect()
    }

    /// The manifest's summary: the request count and each retriever's median.
    pub fn summary(&self) -> CalibrationSummary {
        CalibrationSummary {
            requests: self.tops.len(),
            medians: self
                .sorted_tops()
                .into_iter()
                .map(|(id, v)| {
                    let m = if v.is_empty() { 0.0 } else { v[v.len() / 2] };
                    (id, m)
                })
                .collect(),
        }
    }
}

/// A calibration ready for searching: each retriever's calibration tops.
#[derive(Debug, Clone, Default)]
pub struct Calibrator {
    tops: HashMap<String, Vec<f32>>,
}

impl Calibrator {
    /// Prepares `calibration` for searching.
    pub fn new(calibration: &Calibration) -> Calibrator {
        Calibrator {
            tops: calibration.sorted_tops(),
        }
    }

    /// Whether retriever `id` was calibrated.
    pub fn knows(&self, id: &str) -> bool {
        self.tops.get(id).is_some_and(|v| !v.is_empty())
    }

    /// The share of calibration requests whose best score from retriever
    /// `id` is below `best`; `None` for a retriever the calibration did not
    /// measure.
    pub fn share(&self, id: &str, best: f32) -> Option<f32> {
        let tops = self.tops.get(id).filter(|v| !v.is_empty())?;
        Some(tops.partition_point(|&t| t < best) as f32 / tops.len() as f32)
    }

    /// The evidence of retriever `id` on a request whose best score is
    /// `best`: its share above [`NOISE`], rescaled to [0, 1]. A retriever
    /// the calibration did not measure counts in full (1).
    pub fn evidence(&self, id: &str, best: f32) -> f32 {
        self.share(id, best)
            .map_or(1.0, |s| ((s - NOISE) / (1.0 - NOISE)).max(0.0))
    }
}

/// Runs the calibration requests through `lexical` and, when given, `dense`,
/// each request embedded by the dense retriever's model or, with `vectors`,
/// taken from there (one entry per request, in the order of [`requests`]:
/// the whole request, then its clauses, as the model embeds a query).
pub fn measure(
    lexical: &lexical::LexicalRetriever,
    dense: Option<&dense::DenseRetriever>,
    vectors: Option<&[Vec<Vec<f32>>]>,
) -> Result<Calibration> {
    let mut out = Calibration {
        retrievers: vec![lexical::ID.to_string()],
        tops: Vec::new(),
    };
    if dense.is_some() {
        out.retrievers.push(dense::ID.to_string());
    }
    let round = |x: f32| (x * 1e4).round() / 1e4;
    for (i, q) in requests().enumerate() {
        let mut tops = vec![lexical.retrieve(q, 1, None)?.first().map(|x| round(x.1))];
        if let Some(d) = dense {
            let list = match vectors {
                Some(v) => d.retrieve_vectors(
                    v.get(i).ok_or_else(|| {
                        Error::Embed("a calibration request has no vector".into())
                    })?,
                    1,
                    None,
                ),
                None => d.retrieve(q, 1, None)?,
            };
            tops.push(list.first().map(|x| round(x.1)));
        }
        out.tops.push(tops);
    }
    Ok(out)
}

/// Embeds every calibration request as the dense retriever embeds a query:
/// the whole request, then one vector per clause.
pub fn embed_requests(embedder: &dyn crate::embed::Embedder) -> Result<Vec<Vec<Vec<f32>>>> {
    requests()
        .map(|q| embedder.embed_query_parts(q, &clause_spans(q)))
        .collect()
}

/// Reads the calibration of the generation folder `gen`; `None` for a
/// generation built before calibrations were stored.
pub fn read(gen: &Path) -> Result<Option<Calibration>> {
    let path = gen.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Corrupt {
                path: path.clone(),
                reason: format!("not a calibration: {e}"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Writes `calibration` into the generation folder `gen`.
pub fn write(gen: &Path, calibration: &Calibration) -> Result<()> {
    let path = gen.join(FILE);
    let bytes = serde_json::to_vec(calibration).map_err(|e| Error::Index(e.to_string()))?;
    std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        Calibration {
            retrievers: vec!["lexical".into(), "dense".into()],
            tops: vec![
                vec![Some(2.0), Some(0.30)],
                vec![Some(4.0), Some(0.35)],
                vec![None, Some(0.25)],
                vec![Some(1.0), Some(0.20)],
            ],
        }
    }

    #[test]
    fn the_summary_gives_each_retrievers_median() {
        let s = cal().summary();
        assert_eq!(s.requests, 4);
        assert_eq!(s.medians["lexical"], 2.0);
        assert_eq!(s.medians["dense"], 0.30);
    }

    #[test]
    fn a_share_counts_the_calibration_requests_below() {
        let c = Calibrator::new(&cal());
        assert_eq!(c.share("dense", 0.1), Some(0.0));
        assert_eq!(c.share("dense", 0.3), Some(0.5));
        assert_eq!(c.share("dense", 0.9), Some(1.0));
        assert_eq!(c.share("lexical", 0.5), Some(0.25)); // above the request that found nothing
        assert_eq!(c.share("constant", 0.5), None);
    }

    #[test]
    fn evidence_starts_above_the_noise_quantile() {
        let c = Calibrator::new(&cal());
        assert_eq!(c.evidence("dense", 0.1), 0.0);
        assert!((c.evidence("dense", 0.3) - (0.5 - NOISE) / (1.0 - NOISE)).abs() < 1e-6);
        assert_eq!(c.evidence("dense", 0.9), 1.0);
        assert_eq!(c.evidence("constant", 0.1), 1.0);
    }

    #[test]
    fn the_requests_are_many_and_distinct() {
        let all: Vec<&str> = requests().collect();
        assert!(all.len() >= 100, "{}", all.len());
        let distinct: std::collections::HashSet<&str> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len());
    }
}
