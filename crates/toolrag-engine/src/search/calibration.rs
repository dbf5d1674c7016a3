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
//!   (`(share - NOISE) / (1 - NOISE)`, 0 below). A lone weak match on one
//!   common word is weak evidence, and its list then weighs little or, below
//!   the noise quantile, nothing;
//! - **the confidence of a search**: the fusion weights' mix of the
//!   retrievers' shares, in [0, 1]; `abstain-below` is a threshold on it;
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
use toolrag_core::error::{Error, Result};

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
    pub retrievers: Vec<String>,
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
}

pub use crate::index::manifest::CalibrationSummary;

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
            languages: self.languages.keys().cloned().collect(),
        }
    }
}

/// A calibration ready for searching: each retriever's calibration tops,
/// for English and for each calibrated language.
#[derive(Debug, Clone, Default)]
pub struct Calibrator {
    tops: HashMap<String, Vec<f32>>,
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
            tops: calibration.sorted_tops(),
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
    pub fn list_share(&self, id: &str, list: &[(u32, f32)]) -> Option<f32> {
        let best = list.first()?;
        if id == dense::ID && self.corrects_hubs() {
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
        retrievers: vec![lexical::ID.to_string()],
        ..Calibration::default()
    };
    if dense.is_some() {
        out.retrievers.push(dense::ID.to_string());
    }
    let mut dense_lists = Vec::new();
    for (i, q) in requests.iter().enumerate() {
        let mut tops = vec![lexical.retrieve(q, 1, None)?.first().map(|x| round(x.1))];
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
            dense_lists.push(list);
        }
        out.tops.push(tops);
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
    use crate::index::ModelInfo;
    use rayon::prelude::*;
    use std::sync::{Arc, Mutex};
    static LAST: Mutex<Option<(ModelInfo, Arc<Vec<RequestVectors>>)>> = Mutex::new(None);
    let key = ModelInfo::of(embedder);
    if let Some((model, v)) = &*LAST.lock().unwrap_or_else(|e| e.into_inner()) {
        if *model == key {
            return Ok(Arc::clone(v));
        }
    }
    let vectors: Vec<RequestVectors> = request_sets()
        .into_iter()
        .map(|(_, requests)| {
            requests
                .par_iter()
                .map(|q| embedder.embed_query_parts(q, &clause_spans(q)))
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
            ..Calibration::default()
        }
    }

    /// Calibration lists where tool 0 is a hub (every unrelated request's
    /// first, at 0.5) and tool 1 is near none of them (0.1).
    fn hub_lists() -> Vec<Vec<(u32, f32)>> {
        (0..20)
            .map(|i| vec![(0, 0.5 + i as f32 * 0.001), (1, 0.1)])
            .collect()
    }

    #[test]
    fn hubness_is_the_mean_of_a_tools_highest_calibration_cosines() {
        let (hubness, tops) = hubs(&hub_lists());
        assert_eq!(hubness.len(), 2);
        // tool 0: its 10 highest, 0.519 down to 0.510
        assert!((hubness[0] - 0.5145).abs() < 1e-3, "{hubness:?}");
        assert!((hubness[1] - 0.1).abs() < 1e-6);
        // each request's best above the hubness measured without it: near 0
        assert_eq!(tops.len(), 20);
        assert!(tops.iter().all(|t| t.abs() < 0.02), "{tops:?}");
    }

    #[test]
    fn a_hubs_cosine_is_weaker_evidence_than_the_same_cosine_elsewhere() {
        let (hubness, hub_tops) = hubs(&hub_lists());
        let c = Calibrator::new(&Calibration {
            retrievers: vec!["lexical".into(), "dense".into()],
            tops: (0..20).map(|_| vec![None, Some(0.5)]).collect(),
            hubness,
            hub_tops,
            ..Calibration::default()
        });
        assert!(c.corrects_hubs());
        // 0.51 on the hub is what unrelated requests score there ...
        let on_hub = c.list_share("dense", &[(0, 0.51), (1, 0.05)]).unwrap();
        // ... while 0.51 on a tool no unrelated request comes near stands out.
        let elsewhere = c.list_share("dense", &[(1, 0.51), (0, 0.30)]).unwrap();
        assert!(on_hub < 0.5, "{on_hub}");
        assert_eq!(elsewhere, 1.0);
        // The plain share of both is the same: above every calibration top.
        assert_eq!(c.share("dense", 0.51), Some(1.0));
    }

    #[test]
    fn an_index_without_hubness_keeps_the_plain_share() {
        let c = Calibrator::new(&cal());
        assert!(!c.corrects_hubs());
        assert_eq!(c.list_share("dense", &[(3, 0.3)]), c.share("dense", 0.3));
        assert_eq!(c.list_share("dense", &[]), None);
        // and an older calibration file, without the new fields, still reads
        let old = r#"{"retrievers":["lexical"],"tops":[[1.0]]}"#;
        let parsed: Calibration = serde_json::from_str(old).unwrap();
        assert!(parsed.hubness.is_empty() && parsed.hub_tops.is_empty());
        assert!(parsed.languages.is_empty());
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
    fn a_request_is_reliably_in_a_calibrated_language_or_in_none() {
        for (q, code) in [
            (
                "envoie un e-mail à pierre@example.com pour dire que je serai en retard",
                "fr",
            ),
            (
                "schick eine E-Mail an peter@example.com, dass ich mich verspäte",
                "de",
            ),
            (
                "crea un evento en mi calendario el viernes a las 10 con Marta",
                "es",
            ),
        ] {
            assert_eq!(language_of(q), Some(code), "{q}");
        }
        for q in [
            "send an email to pierre@example.com saying I will be late",
            "ls /etc/nginx/sites-enabled",
            // not a calibrated language: measured against the English requests
            "帮我查一下明天上海的天气",
            "",
        ] {
            assert_eq!(language_of(q), None, "{q}");
        }
    }

    #[test]
    fn every_language_translates_every_calibration_request() {
        let sets = request_sets();
        assert_eq!(sets[0].0, ENGLISH);
        assert_eq!(sets.len(), LANGUAGES.len() + 1);
        let english = sets[0].1.len();
        for (code, requests) in &sets {
            // Line by line: the same count, each distinct, and each in its language
            // where the detector is sure of a request at all.
            assert_eq!(requests.len(), english, "{code}");
            let distinct: std::collections::HashSet<&&str> = requests.iter().collect();
            assert_eq!(distinct.len(), requests.len(), "{code}");
            if *code != ENGLISH {
                let wrong: Vec<&&str> = requests
                    .iter()
                    .filter(|q| language_of(q).is_some_and(|c| c != *code))
                    .collect();
                assert!(wrong.len() * 20 < english, "{code}: {wrong:?}");
            }
        }
    }

    #[test]
    fn a_request_in_a_calibrated_language_gets_its_languages_calibrator() {
        let mut with = cal();
        with.languages.insert(
            "fr".into(),
            Calibration {
                tops: vec![vec![Some(0.5), Some(0.10)], vec![Some(0.7), Some(0.12)]],
                ..cal()
            },
        );
        let c = Calibrator::new(&with);
        assert_eq!(c.languages(), ["fr"]);
        assert_eq!(with.summary().languages, ["fr"]);
        let fr = c
            .for_language("envoie un e-mail à pierre pour dire que je serai en retard")
            .expect("French is calibrated");
        assert_eq!(fr.language(), Some("fr"));
        // The same cosine stands out from French noise, not from English noise.
        assert_eq!(fr.share("dense", 0.2), Some(1.0));
        assert_eq!(c.share("dense", 0.2), Some(0.0));
        assert!(c
            .for_language("send an email to pierre saying I will be late")
            .is_none());
        assert!(c
            .for_language("schick eine E-Mail an Peter, dass ich mich verspäte")
            .is_none());
        // A calibration without languages never runs the detector's verdict.
        let plain = Calibrator::new(&cal());
        assert!(plain
            .for_language("envoie un e-mail à pierre pour dire que je serai en retard")
            .is_none());
        assert!(plain.languages().is_empty() && plain.language().is_none());
    }

    /// An embedder that counts its calls: a fixed unit vector per text.
    struct Counting {
        fingerprint: String,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl toolrag_embed::Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn fingerprint(&self) -> &str {
            &self.fingerprint
        }
        fn embed_query(&self, _: &str) -> Result<Vec<f32>> {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(vec![1.0, 0.0])
        }
        fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    #[test]
    fn a_second_build_with_the_same_model_does_not_embed_the_calibration_again() {
        let counting = |fingerprint: &str| Counting {
            fingerprint: fingerprint.into(),
            calls: Default::default(),
        };
        let calls = |e: &Counting| e.calls.load(std::sync::atomic::Ordering::Relaxed);
        let a = counting("calibration-cache-test-a");
        let first = embed_requests(&a).unwrap();
        let total: usize = request_sets().iter().map(|(_, r)| r.len()).sum();
        assert_eq!(first.len(), LANGUAGES.len() + 1);
        assert!(
            calls(&a) >= total,
            "{} calls for {total} requests",
            calls(&a)
        );
        let after_first = calls(&a);
        let again = embed_requests(&a).unwrap();
        assert_eq!(
            calls(&a),
            after_first,
            "the same model embeds nothing again"
        );
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        // Another model's fingerprint embeds them again.
        let b = counting("calibration-cache-test-b");
        embed_requests(&b).unwrap();
        assert!(calls(&b) >= total);
    }

    #[test]
    fn the_requests_are_many_and_distinct() {
        let all: Vec<&str> = requests().collect();
        assert!(all.len() >= 100, "{}", all.len());
        let distinct: std::collections::HashSet<&str> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len());
    }
}
