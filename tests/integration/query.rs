//! Querying the shipped registry with the real model: the right tools come
//! back, filters and pins work, out-of-scope requests abstain, Khipu output
//! meets the contract, and bad input is handled.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use predicates::prelude::*;
use serde_json::Value;
use toolrag::index::{build, BuildModel, BuildOptions};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{
    calibration, khipu, Decision, Mode, RetrieverId, SearchConfig, SearchRequest, Searcher,
};

use crate::common::{fresh_embedder, shipped_tools, stdout_json, toolrag};

/// One index of tools/ for every test here, built once with the real model.
fn shipped_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::load(&[shipped_tools()], &LoadOptions::default()).unwrap();
        let e = fresh_embedder();
        let opts = BuildOptions::new(dir.path());
        build(reg, Some(BuildModel::Loaded(&e)), &opts, &|_| {}).unwrap();
        dir
    })
    .path()
}

fn searcher() -> &'static Searcher {
    static S: OnceLock<Searcher> = OnceLock::new();
    S.get_or_init(|| {
        let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(fresh_embedder());
        Searcher::open(shipped_index(), Some(e), SearchConfig::default()).unwrap()
    })
}

fn req(q: &str, k: usize) -> SearchRequest {
    SearchRequest {
        query: q.into(),
        k,
        ..Default::default()
    }
}

fn ids(r: &toolrag::search::SearchResult) -> Vec<&str> {
    r.hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn the_right_tool_is_in_the_top_3_for_hand_written_requests() {
    let cases = [
        ("show me what's in /etc/hosts", "filesystem/read_text_file"),
        (
            "open the PNG at /home/ana/logo.png and give me its bytes",
            "filesystem/read_binary_file",
        ),
        (
            "find every file called *.yaml under /etc",
            "filesystem/search_files",
        ),
        (
            "which source files mention TODO?",
            "filesystem/grep_content",
        ),
        ("remove the file /tmp/old.log", "filesystem/delete_file"),
        (
            "what changed in my working tree that isn't staged yet",
            "git/git_diff_unstaged",
        ),
        (
            "show the last ten commits of the repo at /srv/app",
            "git/git_log",
        ),
        (
            "download https://example.com/data.csv to /tmp/data.csv",
            "http/download_file",
        ),
        (
            "is https://example.com up? just the status code",
            "http/check_url_status",
        ),
        (
            "what processes are running right now",
            "shell/list_processes",
        ),
        (
            "what columns does the users table have",
            "sql/describe_table",
        ),
        ("which tables exist in the database", "sql/list_tables"),
        (
            "put a meeting with Bob on my calendar tomorrow at 3pm",
            "calendar/create_event",
        ),
        (
            "when am I free on Thursday afternoon for an hour",
            "calendar/find_free_slots",
        ),
        (
            "email the quarterly report to ana@example.com",
            "email/send_email",
        ),
        (
            "find emails from my landlord about the deposit",
            "email/search_email",
        ),
        (
            "send a direct message to Priya on Slack",
            "chat/send_direct_message",
        ),
        (
            "look up the Wikipedia article on the Treaty of Westphalia",
            "search/search_wikipedia",
        ),
        (
            "what time is it in Tokyo right now",
            "time/get_current_time",
        ),
        (
            "convert 9am New York time to Berlin time",
            "time/convert_time",
        ),
        (
            "remember that Ana prefers tea over coffee",
            "memory/add_observations",
        ),
    ];
    let mut misses = Vec::new();
    for (q, want) in cases {
        let r = searcher().search(&req(q, 3)).unwrap();
        if !ids(&r).contains(&want) {
            misses.push(format!("{q:?}: want {want}, got {:?}", ids(&r)));
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");
}

#[test]
fn namespace_tag_and_annotation_filters_hold() {
    let r = searcher()
        .search(&SearchRequest {
            namespaces: vec!["git".into()],
            ..req("delete things", 10)
        })
        .unwrap();
    assert!(
        !r.hits.is_empty() && r.hits.iter().all(|h| h.id.starts_with("git/")),
        "{:?}",
        ids(&r)
    );

    let tagged = searcher()
        .search(&SearchRequest {
            tags: vec!["slack".into()],
            ..req("send a message", 10)
        })
        .unwrap();
    for h in &tagged.hits {
        assert!(
            searcher()
                .tool(&h.id)
                .unwrap()
                .tags
                .contains(&"slack".to_string()),
            "{}",
            h.id
        );
    }

    for mode in [Mode::Hybrid, Mode::Lexical, Mode::Dense] {
        let r = searcher()
            .search(&SearchRequest {
                read_only: true,
                mode,
                ..req("delete the file /tmp/x", 10)
            })
            .unwrap();
        assert!(!r.hits.is_empty());
        for h in &r.hits {
            assert!(
                searcher().tool(&h.id).unwrap().annotations.is_read_only(),
                "{mode}: {}",
                h.id
            );
        }
        let r = searcher()
            .search(&SearchRequest {
                exclude_destructive: true,
                mode,
                ..req("delete the file /tmp/x", 10)
            })
            .unwrap();
        assert!(
            !ids(&r).contains(&"filesystem/delete_file"),
            "{mode}: {:?}",
            ids(&r)
        );
        for h in &r.hits {
            assert!(
                !toolrag::search::may_be_destructive(searcher().tool(&h.id).unwrap()),
                "{}",
                h.id
            );
        }
    }
}

#[test]
fn pinned_tools_are_always_included() {
    let r = searcher()
        .search(&SearchRequest {
            pin: vec!["tool://memory/open_nodes".into()],
            ..req("what time is it in Tokyo", 3)
        })
        .unwrap();
    assert_eq!(r.hits.len(), 3);
    let pinned: Vec<_> = r.hits.iter().filter(|h| h.pinned).collect();
    assert_eq!(pinned.len(), 1);
    assert_eq!(pinned[0].id, "memory/open_nodes");
    assert_eq!(
        r.hits[0].id, "time/get_current_time",
        "pins do not push out the best hit"
    );

    let err = searcher()
        .search(&SearchRequest {
            pin: vec!["nope/nothing".into()],
            ..req("what time is it", 3)
        })
        .unwrap_err();
    assert!(err
        .to_string()
        .contains("unknown pinned tool `nope/nothing`"));
}

#[test]
fn pins_from_the_config_file_are_included() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("toolrag.toml");
    std::fs::write(&cfg, "pinned = [\"memory/search_nodes\"]\n").unwrap();
    toolrag()
        .args(["query", "what time is it in Tokyo", "-k", "3", "--config"])
        .arg(&cfg)
        .arg("--index")
        .arg(shipped_index())
        .assert()
        .success()
        .stdout(
            predicate::str::contains("memory/search_nodes")
                .and(predicate::str::contains("(pinned)")),
        );
}

#[test]
fn clearly_out_of_scope_requests_abstain_with_the_nearest_misses() {
    for q in [
        "play some relaxing jazz music",
        "turn off the lights in the living room",
        "set the thermostat to 21 degrees",
        "bake a chocolate cake for the weekend",
    ] {
        let r = searcher().search(&req(q, 5)).unwrap();
        assert_eq!(
            r.decision,
            Decision::Abstain,
            "{q}: confidence {}",
            r.confidence
        );
        let why = r.abstain_reason.unwrap();
        assert!(why.contains("nearest misses: tool://"), "{why}");
    }
    let r = searcher()
        .search(&req("read the file /etc/hosts", 5))
        .unwrap();
    assert_eq!(r.decision, Decision::Navigate);
    assert!(r.abstain_reason.is_none());
}

/// A copy of the shipped index as an index built before languages were
/// calibrated: its calibration without `languages`.
fn index_without_languages() -> tempfile::TempDir {
    let gen = toolrag::index::current_generation(shipped_index()).unwrap();
    let copy = tempfile::tempdir().unwrap();
    let name = gen.file_name().unwrap();
    crate::server::harness::copy_dir(&gen, &copy.path().join(name));
    std::fs::write(
        copy.path().join("CURRENT"),
        name.to_string_lossy().as_bytes(),
    )
    .unwrap();
    let old = copy.path().join(name);
    let mut cal = calibration::read(&old).unwrap().unwrap();
    assert!(!cal.languages.is_empty(), "the build calibrates languages");
    cal.languages.clear();
    calibration::write(&old, &cal).unwrap();
    // The rewritten file leaves the manifest's checksummed list.
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(old.join("manifest.json")).unwrap()).unwrap();
    m["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["path"] != calibration::FILE);
    std::fs::write(old.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    copy
}

#[test]
fn a_request_in_another_language_is_judged_against_unrelated_requests_in_it() {
    // The model reads French less well than English: this request scores
    // below many English unrelated requests, and an index without the
    // languages' calibrations abstains on it at a strict setting (0.95).
    // Against French unrelated requests it stands out above that, and it
    // navigates to the right tool.
    let q = "envoie un e-mail à pierre@example.com pour dire que je serai en retard";
    assert_eq!(calibration::language_of(q), Some("fr"));
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(fresh_embedder());
    let mut strict = SearchConfig::default();
    strict.abstain_below = 0.95;
    let languages = Searcher::open(shipped_index(), Some(e.clone()), strict).unwrap();
    let r = languages.search(&req(q, 5)).unwrap();
    assert_eq!(r.hits[0].id, "email/send_email");
    assert_eq!(
        r.decision,
        Decision::Navigate,
        "{} {:?}",
        r.confidence,
        r.abstain_reason
    );
    let dir = index_without_languages();
    let old = Searcher::open(dir.path(), Some(e), strict).unwrap();
    assert!(old.calibrator().languages().is_empty());
    let before = old.search(&req(q, 5)).unwrap();
    assert_eq!(
        before.hits[0].id, "email/send_email",
        "the ranking is the same"
    );
    assert_eq!(before.decision, Decision::Abstain, "{}", before.confidence);
    assert!(before.confidence < r.confidence);

    // An unrelated request in German still abstains, and says against
    // which requests it was measured.
    let q = "bestell mir bitte heute Abend eine große Pizza mit Salami beim Italiener";
    assert_eq!(calibration::language_of(q), Some("de"));
    let r = languages.search(&req(q, 5)).unwrap();
    assert_eq!(r.decision, Decision::Abstain, "{}", r.confidence);
    let why = r.abstain_reason.unwrap();
    assert!(why.contains("in its language (de)"), "{why}");
    // English requests are judged as before.
    for q in ["read the file /etc/hosts", "play some relaxing jazz music"] {
        let a = languages.search(&req(q, 5)).unwrap();
        let b = old.search(&req(q, 5)).unwrap();
        assert_eq!(
            (a.decision, a.confidence),
            (b.decision, b.confidence),
            "{q}"
        );
    }
}

/// The candidate item schema of the Khipu contract.
fn candidate_validator() -> jsonschema::Validator {
    let plan: Value = serde_json::from_str(khipu::PLAN_SCHEMA).unwrap();
    let mut item = plan["properties"]["candidates"]["items"].clone();
    item["$schema"] = plan["$schema"].clone();
    jsonschema::validator_for(&item).unwrap()
}

#[test]
fn every_khipu_output_meets_the_contract() {
    let v = candidate_validator();
    // The contract is the repository's spec/ (`make check-shared` compares it
    // with the team's copy); the binary embeds that file as it is now.
    let spec =
        std::fs::read_to_string(crate::common::root().join("spec/khipu-plan.schema.json")).unwrap();
    assert_eq!(khipu::PLAN_SCHEMA, spec, "the embedded schema is spec/'s");
    for q in [
        "read the file /etc/hosts",
        "play some relaxing jazz music",
        "post in #deploys",
        "qué hora es en Madrid",
    ] {
        for k in [1, 5, 100] {
            let r = searcher().search(&req(q, k)).unwrap();
            let set = khipu::candidate_set(&r, |id| searcher().tool(id));
            let json = serde_json::to_value(&set).unwrap();
            assert_eq!(json["contentAccess"], "HANDLES_ONLY");
            for c in json["candidates"].as_array().unwrap() {
                let errors: Vec<String> = v.iter_errors(c).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{c}: {errors:?}");
                assert_eq!(c.as_object().unwrap().len(), 4, "exactly four fields: {c}");
                assert!(c["nodeId"].as_str().unwrap().starts_with("tool://"));
                assert!(c["note"].as_str().unwrap().chars().count() <= khipu::MAX_NOTE_CHARS);
            }
            assert_eq!(
                json["retrieval"]["scores"].as_array().unwrap().len(),
                set.candidates.len()
            );
            assert_eq!(
                json["retrieval"]["decision"],
                if r.decision == Decision::Abstain {
                    "ABSTAIN"
                } else {
                    "NAVIGATE"
                }
            );
        }
    }
}

#[test]
fn the_cli_khipu_format_validates_too() {
    let set: Value = stdout_json(
        toolrag()
            .args([
                "query",
                "post a message in #deploys",
                "-k",
                "4",
                "--format",
                "khipu",
                "--index",
            ])
            .arg(shipped_index()),
    );
    let v = candidate_validator();
    assert_eq!(set["candidates"].as_array().unwrap().len(), 4);
    for c in set["candidates"].as_array().unwrap() {
        assert!(v.is_valid(c), "{c}");
    }
    assert!(set["retrieval"]["ranks"][0].is_object());
}

#[test]
fn bad_input_is_handled() {
    for empty in ["", "   \n\t "] {
        let err = searcher().search(&req(empty, 5)).unwrap_err();
        assert!(err.to_string().contains("the query is empty"), "{err}");
    }
    // A megabyte of text: cut to the model window and a bounded BM25 query.
    let huge = "read the file /etc/hosts and count its lines ".repeat(24_000);
    assert!(huge.len() > 1_000_000);
    let r = searcher().search(&req(&huge, 5)).unwrap();
    assert!(!r.hits.is_empty());
    // Query syntax is plain text.
    for q in [
        "\"read\" file:(hosts) AND *etc* ~2 -x +y ^3 [a TO b] {c} \\ /",
        "title:\"",
        "((((",
        "*",
        "~",
    ] {
        searcher()
            .search(&req(q, 5))
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
    }
    let plain = searcher().search(&req("read file hosts", 5)).unwrap();
    let syntax = searcher().search(&req("\"read\" file:(hosts)", 5)).unwrap();
    assert_eq!(
        ids(&plain)[0],
        ids(&syntax)[0],
        "syntax characters do not change the meaning"
    );
    // Non-English text works.
    let r = searcher()
        .search(&req("envía un correo a ana@example.com con el informe", 5))
        .unwrap();
    assert!(ids(&r).contains(&"email/send_email"), "{:?}", ids(&r));
    // k larger than the index returns everything; k = 0 is refused by the CLI.
    let r = searcher().search(&req("anything at all", 100_000)).unwrap();
    assert_eq!(r.hits.len(), searcher().tools().len());
    toolrag()
        .args(["query", "read a file", "-k", "0", "--index"])
        .arg(shipped_index())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-k must be at least 1"));
    toolrag()
        .args(["query", "  ", "--index"])
        .arg(shipped_index())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the query is empty"));
}

#[test]
fn batch_answers_every_line_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.jsonl");
    std::fs::write(
        &file,
        "{\"id\": \"a\", \"query\": \"read the file /etc/hosts\", \"relevant\": []}\n\n{\"id\": 7, \"query\": \"what time is it in Tokyo\"}\n",
    )
    .unwrap();
    let out = toolrag()
        .args(["query", "-k", "3", "--batch"])
        .arg(&file)
        .arg("--index")
        .arg(shipped_index())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], "a");
    assert_eq!(lines[0]["ranked"][0], "filesystem/read_text_file");
    assert_eq!(lines[1]["id"], "7");
    assert_eq!(lines[1]["ranked"].as_array().unwrap().len(), 3);
    assert_eq!(lines[1]["scores"].as_array().unwrap().len(), 3);
    assert!(lines[1]["decision"].is_string());

    std::fs::write(&file, "{\"id\": \"a\"}\n").unwrap();
    toolrag()
        .args(["query", "--batch"])
        .arg(&file)
        .arg("--index")
        .arg(shipped_index())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "q.jsonl:1: each line needs a \"query\" string",
        ));
}

#[test]
fn resolve_returns_the_full_card_or_a_clear_error() {
    let out = toolrag()
        .args(["resolve", "tool://filesystem/read_text_file", "--index"])
        .arg(shipped_index())
        .output()
        .unwrap();
    assert!(out.status.success());
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(card["handle"], "tool://filesystem/read_text_file");
    assert!(card["inputSchema"]["properties"]["path"].is_object());
    assert!(card["annotations"]["readOnlyHint"].as_bool().unwrap());
    assert!(!card["examples"].as_array().unwrap().is_empty());
    toolrag()
        .args(["resolve", "tool://nope/nothing", "--index"])
        .arg(shipped_index())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown handle `tool://nope/nothing`",
        ));
}

/// Copies the index folder `from` (one level of generation folders) to `to`.
fn copy_index(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

#[test]
fn a_generation_without_impacts_is_refused_as_incompatible() {
    let gen = toolrag::index::current_generation(shipped_index()).unwrap();
    assert!(gen.join(toolrag::index::impact::FILE).is_file());
    let copy = tempfile::tempdir().unwrap();
    copy_index(shipped_index(), copy.path());
    let copied_gen = toolrag::index::current_generation(copy.path()).unwrap();
    std::fs::remove_file(copied_gen.join(toolrag::index::impact::FILE)).unwrap();
    // Also without its checksum entry: a listed file that is missing is damage.
    let manifest = copied_gen.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["path"] != toolrag::index::impact::FILE);
    std::fs::write(&manifest, m.to_string()).unwrap();
    let err = Searcher::open(copy.path(), None, SearchConfig::default()).unwrap_err();
    assert!(
        matches!(err, toolrag::Error::IncompatibleIndex { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("impacts.bin")
            && msg.contains("must be built again")
            && !msg.contains("toolrag index"),
        "{msg}"
    );
}

#[test]
fn a_query_time_boost_is_refused_with_a_rebuild_hint() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("toolrag.toml");
    std::fs::write(&cfg, "[search.boosts]\nname = 2.0\n").unwrap();
    toolrag()
        .args(["query", "what time is it", "--config"])
        .arg(&cfg)
        .arg("--index")
        .arg(shipped_index())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("build setting").and(predicate::str::contains("rebuild")));
    // The boosts the index was built with are the only ones it scores with.
    let s = searcher();
    toolrag::search::lexical::check_boosts(s.generation(), s.manifest(), &Default::default())
        .unwrap();
    let other = toolrag::index::lexical::FieldBoosts {
        name: 2.0,
        ..Default::default()
    };
    let err =
        toolrag::search::lexical::check_boosts(s.generation(), s.manifest(), &other).unwrap_err();
    assert!(
        matches!(err, toolrag::Error::IncompatibleIndex { .. }),
        "{err:?}"
    );
}

#[test]
fn hits_carry_each_retrievers_evidence() {
    let q = "show me what's in /etc/hosts";
    let hybrid = searcher().search(&req(q, 5)).unwrap();
    let lexical = searcher()
        .search(&SearchRequest {
            mode: Mode::Lexical,
            ..req(q, 50)
        })
        .unwrap();
    let dense = searcher()
        .search(&SearchRequest {
            mode: Mode::Dense,
            ..req(q, 50)
        })
        .unwrap();
    let top = &hybrid.hits[0];
    for (id, single) in [
        (RetrieverId::LEXICAL, &lexical),
        (RetrieverId::DENSE, &dense),
    ] {
        let e = top
            .retrievers
            .get(&id)
            .unwrap_or_else(|| panic!("{id}: {top:?}"));
        // The evidence is the tool's rank and raw score in that retriever's list.
        let at = single.hits.iter().position(|h| h.id == top.id).unwrap();
        assert_eq!(e.rank as usize, at + 1, "{id}");
        assert_eq!(e.score, single.hits[at].score, "{id}");
    }
    // A single-retriever mode has that retriever's evidence only.
    assert!(lexical
        .hits
        .iter()
        .all(|h| h.retrievers.len() == 1 && h.retrievers.rank(&RetrieverId::LEXICAL).is_some()));
    assert!(dense
        .hits
        .iter()
        .all(|h| h.retrievers.len() == 1 && h.retrievers.rank(&RetrieverId::DENSE).is_some()));
    let json = serde_json::to_value(top).unwrap();
    assert!(json["retrievers"]["lexical"]["rank"].is_u64(), "{json}");
    assert!(json["retrievers"]["dense"]["score"].is_f64(), "{json}");
    assert!(json.get("lexicalRank").is_none(), "{json}");
    let set =
        serde_json::to_value(khipu::candidate_set(&hybrid, |id| searcher().tool(id))).unwrap();
    assert_eq!(
        set["retrieval"]["ranks"][0]["retrievers"]["lexical"],
        json["retrievers"]["lexical"]["rank"]
    );
}

/// A test-only retriever: the same list for every query.
struct Constant(Vec<(u32, f32)>);

/// The test retriever's id: one defined outside the engine.
static CONSTANT: RetrieverId = RetrieverId::from_static("constant");

impl toolrag::search::Retriever for Constant {
    fn id(&self) -> &RetrieverId {
        &CONSTANT
    }
    fn normalise(&self) -> toolrag::search::Normalise {
        toolrag::search::Normalise::ByTop
    }
    fn weight(&self, _: &toolrag::search::Fusion) -> f32 {
        2.0
    }
    fn retrieve(
        &self,
        _query: &str,
        depth: usize,
        keep: Option<toolrag::search::Keep<'_>>,
    ) -> toolrag::Result<Vec<(u32, f32)>> {
        Ok(self
            .0
            .iter()
            .copied()
            .filter(|(o, _)| keep.is_none_or(|k| k(*o)))
            .take(depth)
            .collect())
    }
}

#[test]
fn a_new_retriever_is_one_impl_plus_registering_it() {
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(fresh_embedder());
    let q = "what time is it in Tokyo right now";
    let base = searcher().search(&req(q, 8)).unwrap();
    // A tool the request does not point at: the constant list lifts it.
    let lifted = "memory/open_nodes";
    assert!(!ids(&base).contains(&lifted), "{:?}", ids(&base));
    let ord = searcher()
        .tools()
        .iter()
        .position(|t| t.id == lifted)
        .unwrap() as u32;
    let with = Searcher::open(shipped_index(), Some(e), SearchConfig::default())
        .unwrap()
        .with_retriever(Arc::new(Constant(vec![(ord, 5.0)])))
        .unwrap();
    let r = with.search(&req(q, 8)).unwrap();
    // Fused with the other two: its weight 2 beats any lexical + dense sum (at most 1).
    assert_eq!(r.hits[0].id, lifted, "{:?}", ids(&r));
    let e = r.hits[0].retrievers.get(&CONSTANT).unwrap();
    assert_eq!((e.rank, e.score), (1, 5.0));
    assert!(r.hits[0].score >= 2.0, "{}", r.hits[0].score);
    // Everything else keeps its place and its fused score.
    let rest: Vec<(&str, f32)> = r.hits[1..]
        .iter()
        .map(|h| (h.id.as_str(), h.score))
        .collect();
    let before: Vec<(&str, f32)> = base.hits[..7]
        .iter()
        .map(|h| (h.id.as_str(), h.score))
        .collect();
    assert_eq!(rest, before);
    assert!(r.hits[1..]
        .iter()
        .all(|h| h.retrievers.get(&CONSTANT).is_none()));
    // The lexical and dense modes are their own retriever only.
    for mode in [Mode::Lexical, Mode::Dense] {
        let m = with.search(&SearchRequest { mode, ..req(q, 8) }).unwrap();
        assert!(m.hits.iter().all(|h| h.retrievers.get(&CONSTANT).is_none()));
    }
    // The filter applies to it too.
    let filtered = with
        .search(&SearchRequest {
            namespaces: vec!["time".into()],
            ..req(q, 8)
        })
        .unwrap();
    assert!(!ids(&filtered).contains(&lifted), "{:?}", ids(&filtered));
    // Ids are unique.
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(fresh_embedder());
    let twice = Searcher::open(shipped_index(), Some(e), SearchConfig::default())
        .unwrap()
        .with_retriever(Arc::new(Constant(vec![])))
        .unwrap()
        .with_retriever(Arc::new(Constant(vec![])));
    assert!(twice.is_err());
}

#[test]
fn an_unknown_search_setting_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("toolrag.toml");
    std::fs::write(&cfg, "[search]\nmin_dense = 0.9\n").unwrap();
    toolrag()
        .args(["query", "what time is it", "--config"])
        .arg(&cfg)
        .arg("--index")
        .arg(shipped_index())
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("min_dense").and(predicate::str::contains("toolrag.toml")),
        );
}
