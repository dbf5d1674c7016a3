use super::*;

/// An impact index from explicit postings, for the search logic alone.
fn index(tools: u32, lists: &[(&str, &[(u32, u16)])]) -> ImpactIndex {
    let mut sorted: Vec<_> = lists.to_vec();
    sorted.sort_by_key(|l| l.0);
    let mut ix = ImpactIndex {
        tools,
        scale: 1.0,
        term_ends: vec![],
        post_ends: vec![],
        maxes: vec![],
        blob: vec![],
        docs: vec![],
        imps: vec![],
    };
    for (t, l) in sorted {
        ix.blob.extend_from_slice(t.as_bytes());
        ix.term_ends.push(ix.blob.len() as u32);
        for &(d, w) in l {
            ix.docs.push(d);
            ix.imps.push(w);
        }
        ix.post_ends.push(ix.docs.len() as u64);
        ix.maxes.push(l.iter().map(|p| p.1).max().unwrap_or(0));
    }
    ix
}

/// The top `limit` by summing every posting: what `search` must equal.
fn brute(
    ix: &ImpactIndex,
    terms: &[&str],
    limit: usize,
    keep: Option<&dyn Fn(u32) -> bool>,
) -> Vec<(u32, f32)> {
    let mut acc = vec![0u32; ix.tools as usize];
    for t in terms {
        if let Some(l) = ix.list(t) {
            for (&d, &w) in l.docs.iter().zip(l.imps) {
                acc[d as usize] += u32::from(w);
            }
        }
    }
    let mut v: Vec<(u32, u32)> = acc
        .into_iter()
        .enumerate()
        .filter(|x| x.1 > 0 && keep.is_none_or(|k| k(x.0 as u32)))
        .map(|(d, s)| (d as u32, s))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(limit);
    v.into_iter().map(|(d, s)| (d, s as f32)).collect()
}

fn terms(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pruned_search_equals_the_full_sum() {
    // A rare, heavy term; a common, light one that every tool has; and a
    // middling one. The common list is skipped and looked up.
    let common: Vec<(u32, u16)> = (0..1000).map(|d| (d, 1 + (d % 7) as u16)).collect();
    let middle: Vec<(u32, u16)> = (0..1000)
        .step_by(3)
        .map(|d| (d, 20 + (d % 11) as u16))
        .collect();
    let rare: &[(u32, u16)] = &[(5, 300), (999, 280), (500, 290), (6, 10)];
    let ix = index(
        1000,
        &[("common", &common), ("middle", &middle), ("rare", rare)],
    );
    for limit in [1, 3, 10, 50, 2000] {
        for q in [
            &["rare", "common"][..],
            &["common"],
            &["rare", "middle", "common"],
            &["middle", "common", "absent"],
        ] {
            assert_eq!(
                ix.search(&terms(q), limit, None),
                brute(&ix, q, limit, None),
                "{q:?} top {limit}"
            );
        }
    }
}

#[test]
fn both_accumulations_equal_the_full_sum_on_random_lists() {
    // Lists from a handful of postings (sparse accumulation) to most of
    // the tools (dense), with weights that fall as lists grow, as BM25's
    // do; queries of one to all terms, with and without a filter.
    let mut state = 11u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let tools = 20_000u32;
    let names: Vec<String> = (0..12).map(|t| format!("t{t}")).collect();
    let lists: Vec<Vec<(u32, u16)>> = (0..12)
        .map(|t| {
            let len = [3, 40, 900, 9_000, 19_000][t % 5];
            let top = 60_000 / (1 + len as u64 / 50);
            let mut docs: Vec<u32> = (0..len).map(|_| next(u64::from(tools)) as u32).collect();
            docs.sort_unstable();
            docs.dedup();
            docs.into_iter()
                .map(|d| (d, 1 + next(top.max(1)) as u16))
                .collect()
        })
        .collect();
    let refs: Vec<(&str, &[(u32, u16)])> = names
        .iter()
        .zip(&lists)
        .map(|(n, l)| (n.as_str(), l.as_slice()))
        .collect();
    let ix = index(tools, &refs);
    let third = |d: u32| !d.is_multiple_of(3);
    for round in 0..60 {
        let take = 1 + next(12) as usize;
        let mut q: Vec<&str> = names.iter().map(String::as_str).collect();
        let n = q.len();
        for i in 0..n {
            q.swap(i, i + next((n - i) as u64) as usize);
        }
        q.truncate(take);
        let limit = [1, 10, 50, 200][round % 4];
        let want = brute(&ix, &q, limit, None);
        assert_eq!(ix.search(&terms(&q), limit, None), want, "{q:?} {limit}");
        let want = brute(&ix, &q, limit, Some(&third));
        let got = ix.search(&terms(&q), limit, Some(&third));
        assert_eq!(got, want, "{q:?} {limit} filtered");
    }
}

#[test]
fn the_filter_applies_before_the_cut() {
    let common: Vec<(u32, u16)> = (0..100).map(|d| (d, 1)).collect();
    let rare: &[(u32, u16)] = &[(1, 100), (2, 90), (3, 80)];
    let ix = index(100, &[("common", &common), ("rare", rare)]);
    let even = |d: u32| d.is_multiple_of(2);
    let got = ix.search(&terms(&["rare", "common"]), 3, Some(&even));
    assert_eq!(got, vec![(2, 91.0), (0, 1.0), (4, 1.0)]);
}

#[test]
fn a_missing_file_is_none_and_a_damaged_one_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    assert!(ImpactIndex::open(&path).unwrap().is_none());
    std::fs::write(&path, b"not an impacts file").unwrap();
    let err = ImpactIndex::open(&path).unwrap_err();
    assert!(matches!(err, Error::IncompatibleIndex { .. }), "{err}");
    assert!(err.to_string().contains("impacts.bin"), "{err}");
    let mut payload = 5u32.to_le_bytes().to_vec();
    payload.extend_from_slice(&1000u32.to_le_bytes());
    let mut header = IMPACTS.header(payload.len() as u64).to_vec();
    header.extend_from_slice(&payload);
    std::fs::write(&path, header).unwrap();
    let err = ImpactIndex::open(&path).unwrap_err().to_string();
    assert!(err.contains("truncated"), "{err}");
}

/// tantivy's own scoring of the boosted fields (a dis-max with tie-breaker
/// 1 sums its clauses): the reference the impacts must reproduce. Query
/// time no longer has it; this test keeps the proof.
fn tantivy_top(
    dir: &Path,
    boosts: &FieldBoosts,
    terms: &[String],
    limit: usize,
) -> Vec<(u32, f32)> {
    use tantivy::query::{BoostQuery, DisjunctionMaxQuery, Query, TermQuery};
    let index = Index::open_in_dir(dir).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let (_, fields) = super::super::lexical::schema();
    let mut clauses: Vec<Box<dyn Query>> = vec![];
    for term in terms {
        for (field, boost) in weighted_fields(&fields, boosts) {
            let q = TermQuery::new(
                Term::from_field_text(field, term),
                IndexRecordOption::WithFreqs,
            );
            clauses.push(Box::new(BoostQuery::new(Box::new(q), boost)));
        }
    }
    let query = DisjunctionMaxQuery::with_tie_breaker(clauses, 1.0);
    let top = searcher
        .search(
            &query,
            &tantivy::collector::TopDocs::with_limit(limit).order_by_score(),
        )
        .unwrap();
    top.into_iter()
        .map(|(score, addr)| {
            let ords = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("ord")
                .unwrap();
            (ords.first(addr.doc_id).unwrap() as u32, score)
        })
        .collect()
}

#[test]
fn impacts_rank_as_tantivy_scores_every_field() {
    let tools_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools");
    let reg = toolrag_core::registry::Registry::load(&[tools_dir], &Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lexical_dir = dir.path().join("lexical");
    super::super::lexical::write(&lexical_dir, reg.tools()).unwrap();
    let analyzer = crate::search::lexical::LexicalRetriever::analyse_with;
    for boosts in [
        FieldBoosts::default(),
        FieldBoosts {
            description: 0.75,
            params: 0.3,
            ..FieldBoosts::default()
        },
    ] {
        let out = dir.path().join(FILE);
        write(&lexical_dir, &boosts, &out).unwrap();
        let ix = ImpactIndex::open(&out).unwrap().unwrap();
        for q in [
            "show me what's in /etc/hosts",
            "open the PNG at /home/ana/logo.png and give me its bytes",
            "what time is it in Tokyo",
            "commit my staged changes with a message",
            "list the files in the project folder, then search them for TODO",
            "zzzz qqqq",
        ] {
            let terms = analyzer(q);
            let (a, b) = (
                ix.search(&terms, 30, None),
                tantivy_top(&lexical_dir, &boosts, &terms, 30),
            );
            assert_eq!(a.len(), b.len(), "{q}");
            for (x, y) in a.iter().zip(&b) {
                // Impacts are stored in 16 bits: scores agree to a few
                // thousandths, and tools swap places only on such near-ties.
                let tolerance = 2e-3 * y.1.max(1.0);
                assert!((x.1 - y.1).abs() <= tolerance, "{q}: {x:?} vs {y:?}");
                if x.0 != y.0 {
                    let twin = b.iter().find(|h| h.0 == x.0).expect("same tools");
                    assert!((twin.1 - y.1).abs() <= tolerance, "{q}: {x:?} vs {y:?}");
                }
            }
        }
    }
}

#[test]
fn no_known_term_finds_nothing() {
    let ix = index(10, &[("a", &[(1, 3)])]);
    assert!(ix.search(&terms(&["zzz"]), 5, None).is_empty());
    assert!(ix.search(&terms(&["a"]), 0, None).is_empty());
}
