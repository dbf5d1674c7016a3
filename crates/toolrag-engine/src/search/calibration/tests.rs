use super::*;

const LEXICAL: RetrieverId = RetrieverId::LEXICAL;
const DENSE: RetrieverId = RetrieverId::DENSE;

fn cal() -> Calibration {
    Calibration {
        retrievers: vec![LEXICAL, DENSE],
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
        retrievers: vec![LEXICAL, DENSE],
        tops: (0..20).map(|_| vec![None, Some(0.5)]).collect(),
        hubness,
        hub_tops,
        ..Calibration::default()
    });
    assert!(c.corrects_hubs());
    // 0.51 on the hub is what unrelated requests score there ...
    let on_hub = c.list_share(&DENSE, &[(0, 0.51), (1, 0.05)]).unwrap();
    // ... while 0.51 on a tool no unrelated request comes near stands out.
    let elsewhere = c.list_share(&DENSE, &[(1, 0.51), (0, 0.30)]).unwrap();
    assert!(on_hub < 0.5, "{on_hub}");
    assert_eq!(elsewhere, 1.0);
    // The plain share of both is the same: above every calibration top.
    assert_eq!(c.share(&DENSE, 0.51), Some(1.0));
}

#[test]
fn an_index_without_hubness_keeps_the_plain_share() {
    let c = Calibrator::new(&cal());
    assert!(!c.corrects_hubs());
    assert_eq!(c.list_share(&DENSE, &[(3, 0.3)]), c.share(&DENSE, 0.3));
    assert_eq!(c.list_share(&DENSE, &[]), None);
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
    assert_eq!(s.medians[&LEXICAL], 2.0);
    assert_eq!(s.medians[&DENSE], 0.30);
}

#[test]
fn a_share_counts_the_calibration_requests_below() {
    let c = Calibrator::new(&cal());
    assert_eq!(c.share(&DENSE, 0.1), Some(0.0));
    assert_eq!(c.share(&DENSE, 0.3), Some(0.5));
    assert_eq!(c.share(&DENSE, 0.9), Some(1.0));
    assert_eq!(c.share(&LEXICAL, 0.5), Some(0.25)); // above the request that found nothing
    assert_eq!(c.share(&RetrieverId::from_static("constant"), 0.5), None);
}

#[test]
fn evidence_starts_above_the_noise_quantile() {
    let c = Calibrator::new(&cal());
    assert_eq!(c.evidence(&DENSE, 0.1), 0.0);
    assert!((c.evidence(&DENSE, 0.3) - (0.5 - NOISE) / (1.0 - NOISE)).abs() < 1e-6);
    assert_eq!(c.evidence(&DENSE, 0.9), 1.0);
    assert_eq!(c.evidence(&RetrieverId::from_static("constant"), 0.1), 1.0);
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
    assert_eq!(fr.share(&DENSE, 0.2), Some(1.0));
    assert_eq!(c.share(&DENSE, 0.2), Some(0.0));
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

#[test]
fn served_requests_leave_the_decisions_noise_but_not_fusions() {
    // Requests 1 and 3 are ones the registry serves (both retrievers agreed).
    let c = Calibrator::new(&Calibration {
        served: vec![1, 3],
        ..cal()
    });
    // The decision's share: among requests 0 and 2 only (lexical 2.0 and
    // none, counted as -1), 3.0 beats both; among all four it beats three.
    assert_eq!(c.share(&LEXICAL, 3.0), Some(1.0));
    assert_eq!(Calibrator::new(&cal()).share(&LEXICAL, 3.0), Some(0.75));
    // Fusion's evidence still reads every request.
    let all = Calibrator::new(&cal());
    assert_eq!(c.evidence(&LEXICAL, 3.0), all.evidence(&LEXICAL, 3.0));
    assert_eq!(c.noise_level(&DENSE), all.noise_level(&DENSE));
    // A calibration written before issue 37 has no `served`: every request
    // is noise, as it was.
    let old: Calibration =
        serde_json::from_str(r#"{"retrievers": ["lexical"], "tops": [[1.0], [2.0]]}"#).unwrap();
    assert!(old.served.is_empty());
    let json = serde_json::to_string(&Calibration {
        served: vec![1],
        ..cal()
    })
    .unwrap();
    assert!(json.contains(r#""served":[1]"#), "{json}");
}

#[test]
fn the_noise_level_is_the_noise_quantile_of_every_requests_best() {
    let c = Calibrator::new(&cal());
    // dense bests ascending: 0.20 0.25 0.30 0.35; NOISE 0.25 of 4 is index 1.
    assert_eq!(c.noise_level(&DENSE), Some(0.25));
    assert_eq!(c.noise_level(&RetrieverId::from_static("nothing")), None);
}
