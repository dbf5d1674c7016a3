//! Retrieval that transfers to registries nobody tuned on: the six
//! reference MCP servers (terse real descriptions), searched with the real
//! model. Calibrated fusion keeps a lone weak lexical match from outranking
//! the dense side's confident hit, the calibrated confidence does not
//! abstain on a good answer that a fixed cosine threshold refused, and the
//! calibration the build measured is stored and used.
//!
//! These show mechanisms on the published model's cosines (`--model minilm`,
//! with the settings the protocol chose for it), except the hub test, which
//! uses the default model as a user gets it.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use toolrag::index::{build, current_generation, BuildModel, BuildOptions, Manifest};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{
    calibration, Decision, Fusion, RetrieverId, SearchConfig, SearchRequest, Searcher,
};

use crate::common::{embedder, fixture, fresh_embedder, published_config, published_embedder};
use crate::server::harness::copy_dir;

/// One index of the reference servers for every test here.
fn reference_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::load(&[fixture("mcp-reference")], &LoadOptions::default()).unwrap();
        let e = published_embedder();
        build(
            reg,
            Some(BuildModel::Loaded(&e)),
            &BuildOptions::new(dir.path()),
            &|_| {},
        )
        .unwrap();
        dir
    })
    .path()
}

fn open(dir: &Path, config: SearchConfig) -> Searcher {
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(published_embedder());
    Searcher::open(dir, Some(e), config).unwrap()
}

fn searcher() -> &'static Searcher {
    static S: OnceLock<Searcher> = OnceLock::new();
    S.get_or_init(|| open(reference_index(), published_config()))
}

fn first(s: &Searcher, q: &str) -> String {
    s.search(&SearchRequest::new(q)).unwrap().hits[0].id.clone()
}

#[test]
fn a_lone_weak_lexical_match_does_not_outrank_a_confident_dense_hit() {
    // BM25 matches "what" and "s" in git_log's text; the dense side knows
    // this is a sum. Weighted fusion gave the weak match the same 1.0 as the
    // dense side's best hit.
    let q = "what's 19.5 plus 22.25?";
    let s = searcher();
    let r = s.search(&SearchRequest::new(q)).unwrap();
    assert_eq!(r.hits[0].id, "everything/get-sum", "{:?}", r.hits);
    let mut weighted = published_config();
    weighted.fusion = Fusion::Weighted { dense_weight: 0.5 };
    assert_ne!(
        first(&open(reference_index(), weighted), q),
        "everything/get-sum",
        "the old fusion ranked the sum first too: the test no longer shows the difference"
    );
    // Dense alone agrees with the calibrated hybrid.
    let dense = s
        .search(&SearchRequest {
            mode: toolrag::search::Mode::Dense,
            ..SearchRequest::new(q)
        })
        .unwrap();
    assert_eq!(dense.hits[0].id, "everything/get-sum");
}

#[test]
fn an_answerable_request_the_old_cosine_threshold_refused_navigates() {
    let q = "when was /etc/passwd last modified?";
    let s = searcher();
    let r = s.search(&SearchRequest::new(q)).unwrap();
    // The right tool is offered at the top (the first place goes to
    // git_log, dense's first by a clear margin: a miss of the first-place
    // rule, issue 37), and the search navigates.
    let at = r
        .hits
        .iter()
        .position(|h| h.id == "filesystem/get_file_info");
    assert!(at.is_some_and(|i| i < 2), "{:?}", r.hits);
    assert_eq!(r.decision, Decision::Navigate, "{:?}", r.abstain_reason);
    let cosine = r
        .hits
        .iter()
        .filter_map(|h| h.retrievers.score(&RetrieverId::DENSE))
        .fold(f32::MIN, f32::max);
    assert!(
        cosine < 0.30,
        "best cosine {cosine}: no longer below the old threshold"
    );
    // The old rule, a fixed best cosine of 0.30, abstains on it.
    let mut old = published_config();
    old.min_dense = 0.30;
    let r = open(reference_index(), old)
        .search(&SearchRequest::new(q))
        .unwrap();
    assert_eq!(r.decision, Decision::Abstain);
    assert!(r.abstain_reason.unwrap().contains("min-dense"));
}

#[test]
fn the_confidence_is_a_share_of_unrelated_requests() {
    let s = searcher();
    let related = s
        .search(&SearchRequest::new(
            "create a new branch called feature-x in /src/app",
        ))
        .unwrap();
    let unrelated = s
        .search(&SearchRequest::new(
            "play some jazz on spotify in the kitchen",
        ))
        .unwrap();
    for r in [&related, &unrelated] {
        assert!((0.0..=1.0).contains(&r.confidence), "{}", r.confidence);
        assert!(r.hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    }
    assert_eq!(related.hits[0].id, "git/git_create_branch");
    assert_eq!(related.decision, Decision::Navigate);
    assert_eq!(unrelated.decision, Decision::Abstain);
    assert!(related.confidence > unrelated.confidence);
    let reason = unrelated.abstain_reason.unwrap();
    assert!(reason.contains("calibration requests"), "{reason}");
}

#[test]
fn the_build_stores_its_calibration_and_an_old_index_is_measured_on_open() {
    let gen = current_generation(reference_index()).unwrap();
    let manifest = Manifest::read(&gen).unwrap();
    let summary = manifest.calibration.clone().expect("a calibration summary");
    assert_eq!(summary.requests, calibration::requests().count());
    assert!(
        summary.medians.contains_key(&RetrieverId::LEXICAL)
            && summary.medians.contains_key(&RetrieverId::DENSE)
    );
    assert!(manifest.files.iter().any(|f| f.path == calibration::FILE));
    let stored = calibration::read(&gen).unwrap().unwrap();
    assert_eq!(
        stored.retrievers,
        [RetrieverId::LEXICAL, RetrieverId::DENSE]
    );

    // A generation from before calibrations: no file, no summary. It opens,
    // measures its calibration, and answers as the stored one does.
    let copy = tempfile::tempdir().unwrap();
    let name = gen.file_name().unwrap();
    copy_dir(&gen, &copy.path().join(name));
    std::fs::write(
        copy.path().join("CURRENT"),
        name.to_string_lossy().as_bytes(),
    )
    .unwrap();
    let old = copy.path().join(name);
    std::fs::remove_file(old.join(calibration::FILE)).unwrap();
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(old.join("manifest.json")).unwrap()).unwrap();
    m.as_object_mut().unwrap().remove("calibration");
    m["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["path"] != calibration::FILE);
    std::fs::write(old.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    let measured = open(copy.path(), published_config());
    for q in [
        "what's 19.5 plus 22.25?",
        "stage README.md in the repo at /src/app",
    ] {
        let a = searcher().search(&SearchRequest::new(q)).unwrap();
        let b = measured.search(&SearchRequest::new(q)).unwrap();
        let ids = |r: &toolrag::search::SearchResult| {
            r.hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b), "{q}");
        assert_eq!(a.decision, b.decision, "{q}");
        assert!((a.confidence - b.confidence).abs() < 0.02, "{q}");
    }
}

#[test]
fn a_fair_cosine_on_a_hub_tool_is_not_evidence() {
    // time/convert_time sits near many everyday requests: the calibration
    // requests' own best cosines on it are about as high as this one's. A
    // weather request lands on it with a cosine that beats most calibration
    // requests' bests, so the plain share called it evidence; above the
    // tool's hubness it beats few of them.
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::load(&[fixture("mcp-reference")], &LoadOptions::default()).unwrap();
    build(
        reg,
        Some(BuildModel::Loaded(embedder())),
        &BuildOptions::new(dir.path()),
        &|_| {},
    )
    .unwrap();
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(fresh_embedder());
    let s = Searcher::open(dir.path(), Some(e), SearchConfig::default()).unwrap();
    let q = "what's the weather forecast for Lisbon this weekend?";
    let r = s.search(&SearchRequest::new(q)).unwrap();
    let dense = s
        .search(&SearchRequest {
            mode: toolrag::search::Mode::Dense,
            ..SearchRequest::new(q)
        })
        .unwrap();
    assert_eq!(dense.hits[0].id, "time/convert_time", "{:?}", dense.hits);
    let cosine = dense.hits[0].retrievers.score(&RetrieverId::DENSE).unwrap();

    let stored = calibration::read(&current_generation(dir.path()).unwrap())
        .unwrap()
        .unwrap();
    assert!(!stored.hubness.is_empty() && !stored.hub_tops.is_empty());
    let mut plain = stored.clone();
    plain.hubness.clear();
    plain.hub_tops.clear();
    let plain_share = calibration::Calibrator::new(&plain)
        .share(&RetrieverId::DENSE, cosine)
        .unwrap();
    assert!(
        plain_share > 0.8,
        "plain dense share {plain_share}: the request no longer looks like evidence without the correction"
    );
    assert_eq!(r.decision, Decision::Abstain, "{:?}", r.hits);
    assert!(
        r.confidence < SearchConfig::default().abstain_below,
        "{}",
        r.confidence
    );
}
