//! Calibration: what an unrelated request scores on this registry.
//!
//! A raw score means different things on different registries: terse real
//! MCP descriptions give lower cosines than long docstrings with examples,
//! and BM25 grows with the registry's vocabulary and the request's length.
//! So every build runs a fixed set of calibration requests ([`REQUESTS`]:
//! everyday requests that almost no registry serves, written once and never
//! tuned on a labelled set) through the registry's own retrievers, and keeps
//! each retriever's best raw score for each of them: the registry's noise,
//! measured with no labelled query. A calibration request on which both
//! retrievers put the same tool first is left out of the noise that the
//! decision judges against: the registry likely serves it (a registry of
//! everyday tools, such as recipes, distances and shopping, serves many of
//! them), and counting it as unrelated text would make good requests there
//! look like noise ([`Calibration::served`]; fusion's evidence still counts
//! every request). Against it, a retriever's best score on
//! a request becomes a **share**: the fraction of calibration requests whose
//! best is lower. A share means the same on every registry ("stronger than
//! 80% of unrelated requests here"), and it drives three things:
//!
//! - **fusion**: each retriever's list counts in proportion to its evidence
//!   on the request, its share above the noise quantile [`NOISE`]
//!   (`(share - NOISE) / (1 - NOISE)`, 0 below). A lone weak match on one
//!   common word is weak evidence, and its list then weighs little or, below
//!   the noise quantile, nothing;
//! - **the confidence of a search**: the larger of the retrievers' shares,
//!   in [0, 1] (one retriever standing out from the noise is enough);
//!   `abstain-below` is a threshold on it;
//! - **agreement**: when the retrievers put the same tool first, each with a
//!   share above [`AGREEMENT`] (better than the median unrelated request),
//!   the search never abstains.
//!
//! The dense side's share also corrects for **hubs** (as CSLS does for
//! nearest neighbours across embedding spaces): some tools sit close to
//! almost any request ("add observations", "convert time") and win unrelated
//! requests with fair cosines. A tool's hubness is the mean of its [`HUB_K`]
//! highest cosines to the calibration requests, and a request's dense
//! evidence is its best cosine *above the tool's hubness*, ranked against
//! the calibration requests' own (each measured with hubness computed
//! without it). Only the confidence and the agreement use it; the ranking
//! does not change.
//!
//! **Languages.** The model reads English best: a request in Spanish or
//! German scores lower on every tool than the same request in English, and
//! against English noise a good foreign request looks unrelated. So the
//! calibration requests come in [`LANGUAGES`] too (the same requests,
//! translated), each measured on its own. A request the English noise would
//! abstain on, and that the detector (`whatlang`, choosing between English
//! and [`LANGUAGES`]) reliably finds to be in one of them, gets a second
//! opinion: its confidence and agreement against the noise of its own
//! language. It navigates when either says so: it stands out from unrelated
//! requests in English or in its language. The detector runs only then (most
//! requests never need it), and fusion always weighs against the English
//! noise, so rankings do not depend on it.
//!
//! [`NOISE`] and the default `abstain-below` were chosen by
//! leave-one-dataset-out over every labelled set (`research/eval/lodo`,
//! BENCHMARKS.md "Held-out sets"). What a build measured is kept in the
//! generation (`calibration.json`, checksummed like every file) and
//! summarised in the manifest.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clauses::clause_spans;
use super::retriever::Retriever;
use super::{dense, lexical};
use toolrag_core::error::{Error, Result};
use toolrag_core::retrieval::RetrieverId;

/// The calibration requests, one per line.
pub const REQUESTS: &str = include_str!("background.txt");

/// The languages with calibration requests of their own beside English
/// ([`REQUESTS`], translated line by line): the ISO 639-1 code, the
/// detector's language, the requests. The most used languages of the web
/// written in the Latin script, which the shipped English models read in
/// part (shared word pieces, cognates). Languages in other scripts are left
/// to the English requests: to an English model every request in Chinese
/// looks like every other, so Chinese noise on a Chinese registry sits as
/// high as the answerable requests (on `tests/golden/zh`, Chinese requests
/// abstained on 14 of 37 answerable requests against 6 with the English
/// noise, BENCHMARKS.md "Abstain").
pub const LANGUAGES: &[(&str, whatlang::Lang, &str)] = &[
    ("es", whatlang::Lang::Spa, include_str!("background.es.txt")),
    ("fr", whatlang::Lang::Fra, include_str!("background.fr.txt")),
    ("de", whatlang::Lang::Deu, include_str!("background.de.txt")),
    ("pt", whatlang::Lang::Por, include_str!("background.pt.txt")),
    ("it", whatlang::Lang::Ita, include_str!("background.it.txt")),
];

/// The code of English, the calibration's own language.
pub const ENGLISH: &str = "en";

/// The calibration file in a generation folder.
pub const FILE: &str = "calibration.json";

/// The noise quantile: a retriever whose best score is at most this share
/// of the calibration requests' best scores adds nothing to the fusion.
/// Leave-one-dataset-out on the default model chose 0.25 over 0, 0.1 and 0.5
/// (mean R@5 over the eight sets 0.8545 against 0.8533, 0.8532 and 0.8504;
/// the gain is golden's, +0.009): a list whose best is below a quarter of the
/// calibration requests' adds nothing. The published model's folds chose 0
/// (0.7922 against 0.7901 at 0.25).
pub const NOISE: f32 = 0.25;

/// The share both retrievers must exceed, with the same first tool, for a
/// search never to abstain: better than the median unrelated request.
pub const AGREEMENT: f32 = 0.5;

/// How many of a tool's highest cosines to the calibration requests make
/// its hubness: CSLS's customary neighbourhood, not tuned here (5, 20 and 30
/// gave within 0.02 of abstain recall on the held-out sets).
pub const HUB_K: usize = 10;

/// How deep each calibration request's dense list is read to measure
/// hubness: the searcher's default depth, so a request's list and the
/// calibration's are alike.
pub const HUB_DEPTH: usize = 50;

/// The calibration requests, trimmed, without blank lines.
pub fn requests() -> impl Iterator<Item = &'static str> {
    lines(REQUESTS)
}

fn lines(text: &'static str) -> impl Iterator<Item = &'static str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// Every set of calibration requests, by language code: English
/// ([`requests`]) first, then each of [`LANGUAGES`].
pub fn request_sets() -> Vec<(&'static str, Vec<&'static str>)> {
    std::iter::once((ENGLISH, requests().collect()))
        .chain(LANGUAGES.iter().map(|(c, _, t)| (*c, lines(t).collect())))
        .collect()
}

/// The code of `request`'s language when the detector, choosing between
/// English and [`LANGUAGES`], is reliably sure it is one of [`LANGUAGES`];
/// `None` otherwise (English, or a request too short or mixed to tell).
/// Choosing among six languages rather than all it knows makes the detector
/// sure of more short requests; on the labelled sets it took no English
/// request for another language (BENCHMARKS.md, "Abstain").
pub fn language_of(request: &str) -> Option<&'static str> {
    static DETECTOR: std::sync::OnceLock<whatlang::Detector> = std::sync::OnceLock::new();
    let detector = DETECTOR.get_or_init(|| {
        whatlang::Detector::with_allowlist(
            std::iter::once(whatlang::Lang::Eng)
                .chain(LANGUAGES.iter().map(|(_, lang, _)| *lang))
                .collect(),
        )
    });
    let info = detector.detect(request)?;
    if !info.is_reliable() {
        return None;
    }
    LANGUAGES
        .iter()
        .find(|(_, lang, _)| *lang == info.lang())
        .map(|(code, _, _)| *code)
}

/// One set of calibration requests' vectors: per request, as the model
/// embeds a query, the whole request, then its clauses.
pub type RequestVectors = Vec<Vec<Vec<f32>>>;

/// What the calibration requests scored on one generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// The retrievers measured, in order (`lexical`, then `dense` when the
    /// index has a dense side).
    pub retrievers: Vec<RetrieverId>,
    /// Per calibration request, each retriever's best raw score, in the
    /// order of `retrievers`; `None` where it found nothing.
    pub tops: Vec<Vec<Option<f32>>>,
    /// Each tool's hubness, by ordinal: the mean of its [`HUB_K`] highest
    /// cosines among the calibration requests' dense lists (0 for a tool in
    /// none of them). Empty for a lexical index, or one built before
    /// hubness was measured: its dense share is then the plain one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hubness: Vec<f32>,
    /// Per calibration request, its best cosine above the hubness of the
    /// tool, each tool's hubness measured without that request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hub_tops: Vec<f32>,
    /// The same measured with each of [`LANGUAGES`]' requests, by language
    /// code (their own `languages` empty). Empty for an index built before
    /// languages were calibrated: every request is then measured against
    /// the English requests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub languages: BTreeMap<String, Calibration>,
    /// The calibration requests (indexes into `tops`) on which both
    /// retrievers put the same tool first: the registry likely serves them,
    /// so the decision's shares leave them out of the noise (and `hubness`
    /// and `hub_tops` are measured without them); fusion's evidence counts
    /// every request. Empty for an index built before issue 37.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub served: Vec<u32>,
}

pub use crate::index::manifest::CalibrationSummary;

impl Calibration {
    /// Each retriever's best raw scores, ascending, by retriever id (a
    /// request on which it found nothing counts as -1); with `unrelated`,
    /// only the requests the registry does not serve.
    fn sorted_tops(&self, unrelated: bool) -> HashMap<RetrieverId, Vec<f32>> {
        self.retrievers
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut v: Vec<f32> = self
                    .tops
                    .iter()
                    .enumerate()
                    .filter(|(n, _)| !unrelated || !self.served.contains(&(*n as u32)))
                    .map(|(_, t)| t.get(i).copied().flatten().unwrap_or(-1.0))
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
                .sorted_tops(false)
                .into_iter()
                .map(|(id, v)| {
                    let m = if v.is_empty() { 0.0 } else { v[v.len() / 2] };
                    (id, m)
                })
                .collect(),
            languages: self.languages.keys().cloned().collect(),
        }
    }
}

/// A calibration ready for searching: each retriever's calibration tops,
/// for English and for each calibrated language.
#[derive(Debug, Clone, Default)]
pub struct Calibrator {
    /// Every calibration request's bests, ascending (fusion's evidence).
    tops: HashMap<RetrieverId, Vec<f32>>,
    /// The unrelated requests' bests, ascending (the decision's shares).
    noise: HashMap<RetrieverId, Vec<f32>>,
    hubness: Vec<f32>,
    /// The calibration requests' hub-corrected bests, ascending.
    hub_tops: Vec<f32>,
    /// The code of the language of these calibration requests; `None` for
    /// English.
    language: Option<String>,
    /// The calibrators of the other languages, by code.
    languages: HashMap<String, Calibrator>,
}

impl Calibrator {
    /// Prepares `calibration` for searching.
    pub fn new(calibration: &Calibration) -> Calibrator {
        let mut c = Calibrator::one(calibration);
        c.languages = calibration
            .languages
            .iter()
            .map(|(code, cal)| {
                let mut l = Calibrator::one(cal);
                l.language = Some(code.clone());
                (code.clone(), l)
            })
            .collect();
        c
    }

    /// The calibrator of `request`'s language, when the request is reliably
    /// in one that was calibrated ([`language_of`]); `None` otherwise (and
    /// without running the detector when no language was calibrated).
    pub fn for_language(&self, request: &str) -> Option<&Calibrator> {
        if self.languages.is_empty() {
            return None;
        }
        self.languages.get(language_of(request)?)
    }

    /// The code of the language of this calibrator's requests; `None` for
    /// English.
    pub fn language(&self) -> Option<&str> {
        self.language.as_deref()
    }

    /// The codes of the languages calibrated beside English.
    pub fn languages(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.languages.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    fn one(calibration: &Calibration) -> Calibrator {
        // Both or neither: an index measures the two together.
        let (hubness, mut hub_tops) =
            if calibration.hubness.is_empty() || calibration.hub_tops.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                (calibration.hubness.clone(), calibration.hub_tops.clone())
            };
        hub_tops.sort_by(f32::total_cmp);
        Calibrator {
            tops: calibration.sorted_tops(false),
            noise: calibration.sorted_tops(true),
            hubness,
            hub_tops,
            language: None,
            languages: HashMap::new(),
        }
    }

    /// Whether the dense share corrects for hubs (the index measured them).
    pub fn corrects_hubs(&self) -> bool {
        !self.hub_tops.is_empty()
    }

    /// The share of a request on retriever `id`'s `list` (best first): for
    /// the dense retriever of an index that measured hubness, the share of
    /// calibration requests whose best cosine above the tool's hubness is
    /// below this list's; otherwise the share of its best score
    /// ([`Calibrator::share`]). `None` for an empty list or a retriever the
    /// calibration did not measure.
    pub fn list_share(&self, id: &RetrieverId, list: &[(u32, f32)]) -> Option<f32> {
        let best = list.first()?;
        if *id == RetrieverId::DENSE && self.corrects_hubs() {
            let above = list
                .iter()
                .map(|&(o, s)| s - self.hubness.get(o as usize).copied().unwrap_or(0.0))
                .fold(f32::MIN, f32::max);
            let n = self.hub_tops.len();
            return Some(self.hub_tops.partition_point(|&t| t < above) as f32 / n as f32);
        }
        self.share(id, best.1)
    }

    /// Whether retriever `id` was calibrated.
    pub fn knows(&self, id: &RetrieverId) -> bool {
        self.tops.get(id).is_some_and(|v| !v.is_empty())
    }

    /// The share of the unrelated calibration requests (those the registry
    /// does not serve, [`Calibration::served`]) whose best score from
    /// retriever `id` is below `best`; `None` for a retriever the
    /// calibration did not measure.
    pub fn share(&self, id: &RetrieverId, best: f32) -> Option<f32> {
        share_in(&self.noise, id, best)
    }

    /// The raw score at retriever `id`'s noise level: the [`NOISE`] quantile
    /// of the calibration requests' best scores (a request on which it found
    /// nothing counting as -1). `None` for a retriever the calibration did
    /// not measure.
    pub fn noise_level(&self, id: &RetrieverId) -> Option<f32> {
        let tops = self.tops.get(id).filter(|v| !v.is_empty())?;
        let at = ((NOISE * tops.len() as f32) as usize).min(tops.len() - 1);
        Some(tops[at])
    }

    /// The evidence of retriever `id` on a request whose best score is
    /// `best`: its share among every calibration request above [`NOISE`],
    /// rescaled to [0, 1]. A retriever the calibration did not measure
    /// counts in full (1).
    pub fn evidence(&self, id: &RetrieverId, best: f32) -> f32 {
        share_in(&self.tops, id, best).map_or(1.0, |s| ((s - NOISE) / (1.0 - NOISE)).max(0.0))
    }
}

/// The share of `tops[id]` below `best`; `None` when it has none.
fn share_in(tops: &HashMap<RetrieverId, Vec<f32>>, id: &RetrieverId, best: f32) -> Option<f32> {
    let tops = tops.get(id).filter(|v| !v.is_empty())?;
    Some(tops.partition_point(|&t| t < best) as f32 / tops.len() as f32)
}

/// Runs every set of calibration requests ([`request_sets`]) through
/// `lexical` and, when given, `dense`: English into the calibration itself,
/// each other language into its `languages`. Each request is embedded by the
/// dense retriever's model or, with `vectors`, taken from there (one
/// [`RequestVectors`] per set, in the order of [`request_sets`]).
pub fn measure(
    lexical: &lexical::LexicalRetriever,
    dense: Option<&dense::DenseRetriever>,
    vectors: Option<&[RequestVectors]>,
) -> Result<Calibration> {
    let mut sets = request_sets().into_iter().enumerate();
    let (_, (_, english)) = sets.next().expect("English comes first");
    let set_vectors = |i: usize| -> Result<Option<&RequestVectors>> {
        vectors
            .map(|v| {
                v.get(i).ok_or_else(|| {
                    Error::Embed("a set of calibration requests has no vectors".into())
                })
            })
            .transpose()
    };
    let mut out = measure_set(&english, lexical, dense, set_vectors(0)?)?;
    for (i, (code, requests)) in sets {
        let cal = measure_set(&requests, lexical, dense, set_vectors(i)?)?;
        out.languages.insert(code.to_string(), cal);
    }
    Ok(out)
}

/// [`measure`] for one set of requests.
fn measure_set(
    requests: &[&str],
    lexical: &lexical::LexicalRetriever,
    dense: Option<&dense::DenseRetriever>,
    vectors: Option<&RequestVectors>,
) -> Result<Calibration> {
    let mut out = Calibration {
        retrievers: vec![RetrieverId::LEXICAL],
        ..Calibration::default()
    };
    if dense.is_some() {
        out.retrievers.push(RetrieverId::DENSE);
    }
    let mut dense_lists = Vec::new();
    // Per request: both retrievers put the same tool first.
    let mut agreed = Vec::new();
    for (i, q) in requests.iter().enumerate() {
        let lexical_first = lexical.retrieve(q, 1, None)?.first().copied();
        let mut tops = vec![lexical_first.map(|x| round(x.1))];
        let mut dense_first = None;
        if let Some(d) = dense {
            let list = match vectors {
                Some(v) => d.retrieve_vectors(
                    v.get(i).ok_or_else(|| {
                        Error::Embed("a calibration request has no vector".into())
                    })?,
                    HUB_DEPTH,
                    None,
                ),
                None => d.retrieve(q, HUB_DEPTH, None)?,
            };
            tops.push(list.first().map(|x| round(x.1)));
            dense_first = list.first().map(|x| x.0);
            dense_lists.push(list);
        }
        out.tops.push(tops);
        agreed.push(lexical_first.is_some_and(|x| Some(x.0) == dense_first));
    }
    // A request on which both retrievers put the same tool first is one the
    // registry likely serves (a registry of everyday tools serves many):
    // it is not noise. Unless that would leave none.
    if agreed.contains(&false) {
        out.served = (0..agreed.len() as u32)
            .filter(|&n| agreed[n as usize])
            .collect();
        let mut unrelated = agreed.iter().map(|a| !a);
        dense_lists.retain(|_| unrelated.next().unwrap_or(true));
    }
    if dense.is_some() {
        (out.hubness, out.hub_tops) = hubs(&dense_lists);
    }
    Ok(out)
}

fn round(x: f32) -> f32 {
    (x * 1e4).round() / 1e4
}

/// Each tool's hubness and each calibration request's best cosine above it
/// (with hubness measured without that request), from the calibration
/// requests' dense lists.
fn hubs(lists: &[Vec<(u32, f32)>]) -> (Vec<f32>, Vec<f32>) {
    let tools = lists
        .iter()
        .flatten()
        .map(|&(o, _)| o as usize + 1)
        .max()
        .unwrap_or(0);
    // Per tool, (cosine, request) for every list it is in, highest first.
    let mut seen: Vec<Vec<(f32, usize)>> = vec![Vec::new(); tools];
    for (i, list) in lists.iter().enumerate() {
        for &(o, s) in list {
            seen[o as usize].push((s, i));
        }
    }
    for v in &mut seen {
        v.sort_by(|a, b| b.0.total_cmp(&a.0));
    }
    let hub = |o: usize, without: Option<usize>| -> f32 {
        let (sum, n) = seen[o]
            .iter()
            .filter(|(_, i)| Some(*i) != without)
            .take(HUB_K)
            .fold((0f32, 0usize), |(sum, n), x| (sum + x.0, n + 1));
        if n == 0 {
            0.0
        } else {
            sum / n as f32
        }
    };
    let hubness: Vec<f32> = (0..tools).map(|o| round(hub(o, None))).collect();
    let tops = lists
        .iter()
        .enumerate()
        .map(|(i, list)| {
            let best = list
                .iter()
                .map(|&(o, s)| s - hub(o as usize, Some(i)))
                .fold(f32::MIN, f32::max);
            round(if list.is_empty() { -1.0 } else { best })
        })
        .collect();
    (hubness, tops)
}

/// Embeds every set of calibration requests ([`request_sets`]), in order,
/// as the dense retriever embeds a query: the whole request, then one
/// vector per clause. The requests are embedded in parallel (an embedder
/// with several sessions keeps every core busy). The vectors depend only on
/// the model, so the process keeps the last model's (about 2 MB) and a
/// second build with the same model (the MCP gateway's rebuilds when a
/// server's tools change) takes them from there instead of embedding again.
pub fn embed_requests(
    embedder: &dyn toolrag_embed::Embedder,
) -> Result<std::sync::Arc<Vec<RequestVectors>>> {
    embed_requests_until(embedder, &|| Ok(()))
}

/// [`embed_requests`], asking `go_on` before each request: its error (a
/// cancelled build) stops the embedding.
pub fn embed_requests_until(
    embedder: &dyn toolrag_embed::Embedder,
    go_on: &(dyn Fn() -> Result<()> + Sync),
) -> Result<std::sync::Arc<Vec<RequestVectors>>> {
    use crate::index::ModelInfo;
    use rayon::prelude::*;
    use std::sync::{Arc, Mutex};
    static LAST: Mutex<Option<(ModelInfo, Arc<Vec<RequestVectors>>)>> = Mutex::new(None);
    let key = ModelInfo::of(embedder);
    if let Some((model, v)) = &*LAST.lock().unwrap_or_else(|e| e.into_inner()) {
        if model.same_model(&key) {
            return Ok(Arc::clone(v));
        }
    }
    let vectors: Vec<RequestVectors> = request_sets()
        .into_iter()
        .map(|(_, requests)| {
            requests
                .par_iter()
                .map(|q| {
                    go_on()?;
                    embedder.embed_query_parts(q, &clause_spans(q))
                })
                .collect::<Result<_>>()
        })
        .collect::<Result<_>>()?;
    let vectors = Arc::new(vectors);
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, Arc::clone(&vectors)));
    Ok(vectors)
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
mod tests;
