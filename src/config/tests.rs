//! The checks of `toolrag.toml`: every table, its keys, lines and ranges.

use super::keys::*;
use super::*;
use toolrag_core::settings::ConfigError;
use toolrag_engine::index::lexical::FieldBoosts;
use toolrag_engine::search::Fusion;
use toolrag_lint::{find_rule, Level, Profile, Thresholds, CONSUMER_RULES};

fn err(text: &str) -> ConfigError {
    match Config::parse(text) {
        Err(Error::Config(e)) => e,
        Err(other) => panic!("not a config error: {other}"),
        Ok(c) => panic!("accepted: {c:?}"),
    }
}

#[test]
fn kebab_case_keys_parse_to_their_values() {
    let c = Config::parse(
            r#"
pinned = ["a/one"]
[search]
depth = 30
fusion = { kind = "rrf", k = 20 }
clause-vectors = false
clause-penalty = 0.05
clause-depth = 0
query-cache = 0
min-dense = -0.25
min-lexical = 1.5
pinned = ["b/two"]
[index]
boosts = { name = 2.0, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }
[lint.thresholds]
min-examples = 3
confusable-dense = 0.9
"#,
        )
        .unwrap();
    assert_eq!(c.pinned, ["a/one", "b/two"]);
    let s = &c.search;
    assert_eq!(s.depth, 30);
    assert_eq!(s.fusion, Fusion::Rrf { k: 20.0 });
    assert!(!s.clause_vectors);
    assert_eq!(s.clause_penalty, 0.05);
    assert_eq!(s.clause_depth, 0);
    assert_eq!(s.query_cache, 0);
    assert_eq!(s.min_dense, -0.25);
    assert_eq!(s.min_lexical, 1.5);
    assert_eq!(c.index.boosts.unwrap().name, 2.0);
    assert_eq!(c.lint.thresholds.min_examples, 3);
    assert_eq!(c.lint.thresholds.confusable_dense, 0.9);

    let c =
        Config::parse("[search]\nfusion = { kind = \"weighted\", dense-weight = 0.7 }\n").unwrap();
    assert_eq!(c.search.fusion, Fusion::Weighted { dense_weight: 0.7 });
}

#[test]
fn an_empty_file_is_the_defaults() {
    let c = Config::parse("").unwrap();
    assert_eq!(c.search, SearchConfig::default());
    assert_eq!(c.index, IndexConfig::default());
    assert!(c.pinned.is_empty() && c.lint.levels.is_empty());
}

#[test]
fn old_spellings_are_refused_with_the_kebab_case_one() {
    for (old, new) in [
        ("minDense", "min-dense"),
        ("minLexical", "min-lexical"),
        ("clauseVectors", "clause-vectors"),
        ("clauseDepth", "clause-depth"),
        ("clausePenalty", "clause-penalty"),
        ("queryCache", "query-cache"),
        ("min_dense", "min-dense"),
    ] {
        let e = err(&format!("\n[search]\n{old} = 1\n"));
        assert_eq!(
            e.message,
            format!("unknown key `{old}` in [search]; did you mean `{new}`?")
        );
        assert_eq!(e.key.as_deref(), Some(format!("search.{old}").as_str()));
        assert_eq!(e.line, Some(3));
    }
    let e = err("[search]\nfusion = { kind = \"weighted\", dense_weight = 0.5 }\n");
    assert_eq!(
        e.message,
        "unknown key `dense_weight` in [search.fusion]; did you mean `dense-weight`?"
    );
    let e = err("[lint.thresholds]\nminExamples = 2\n");
    assert!(e.message.contains("did you mean `min-examples`?"), "{e}");
    let e = err("[lint.thresholds]\nmin-exampels = 2\n");
    assert!(e.message.contains("did you mean `min-examples`?"), "{e}");
}

#[test]
fn engine_internals_are_not_settings() {
    for key in [
        "unionMaxDocs",
        "exactMaxPoints",
        "scanMaxPoints",
        "hnswEf",
        "union-max-docs",
        "hnsw_ef",
    ] {
        let e = err(&format!("[search]\n{key} = 10\n"));
        assert!(
            e.message
                .contains("engine internal and no longer a setting"),
            "{e}"
        );
        assert!(e.message.contains(key), "{e}");
    }
    let e = err("[search]\nboosts = { name = 1.0 }\n");
    assert!(e.message.contains("[index]") && e.message.contains("rebuild"));
}

#[test]
fn unknown_keys_are_refused_in_every_table() {
    for (text, key) in [
        ("depht = 3\n", "depht"),
        ("[serach]\ndepth = 3\n", "serach"),
        ("[search]\nnope = 1\n", "search.nope"),
        (
            "[search]\nfusion = { kind = \"rrf\", k = 60, dense-weight = 0.5 }\n",
            "search.fusion.dense-weight",
        ),
        ("[index]\nx = 1\n", "index.x"),
        ("[index.boosts]\nnames = 1.0\n", "index.boosts.names"),
        ("[lint.thresholds]\nfoo = 1\n", "lint.thresholds.foo"),
        (
            "[[lint.ignore]]\npath = \"a\"\nrule = [\"TR001\"]\n",
            "lint.ignore[0].rule",
        ),
        ("[lint]\nnope = \"warn\"\n", "lint.nope"),
    ] {
        let e = err(text);
        assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
    }
    let e = err("depht = 3\n");
    assert_eq!(
        e.message,
        "unknown key `depht` at the top level; did you mean `depth` in [search]?"
    );
    let e = err("pinnd = []\n");
    assert_eq!(
        e.message,
        "unknown key `pinnd` at the top level; did you mean `pinned`?"
    );
    let e = err("min-dense = 0.3\n");
    assert_eq!(
        e.message,
        "unknown key `min-dense` at the top level; did you mean `min-dense` in [search]?"
    );
}

#[test]
fn nan_inf_and_out_of_range_numbers_are_refused_naming_the_key() {
    for (text, key) in [
            ("[search]\nfusion = { kind = \"rrf\", k = -1 }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = 0 }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = nan }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = inf }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = nan }\n", "search.fusion.dense-weight"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = 1.5 }\n", "search.fusion.dense-weight"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = -0.1 }\n", "search.fusion.dense-weight"),
            ("[search]\nmin-dense = nan\n", "search.min-dense"),
            ("[search]\nmin-dense = 1.5\n", "search.min-dense"),
            ("[search]\nmin-dense = -inf\n", "search.min-dense"),
            ("[search]\nmin-lexical = -0.5\n", "search.min-lexical"),
            ("[search]\nmin-lexical = inf\n", "search.min-lexical"),
            ("[search]\nclause-penalty = nan\n", "search.clause-penalty"),
            ("[search]\ndepth = 0\n", "search.depth"),
            ("[search]\ndepth = 1000000000\n", "search.depth"),
            ("[search]\ndepth = -3\n", "search.depth"),
            ("[search]\nquery-cache = 100000000000\n", "search.query-cache"),
            ("[index]\nboosts = { name = nan, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }\n", "index.boosts.name"),
            ("[index]\nboosts = { name = -1.0, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }\n", "index.boosts.name"),
            ("[index]\nboosts = { name = 0, summary = 0, description = 0.0, params = 0.0, examples = 0, tags = 0, namespace = 0, all = 0 }\n", "index.boosts"),
            ("[lint.thresholds]\nconfusable-dense = nan\n", "lint.thresholds.confusable-dense"),
            ("[lint.thresholds]\nconfusable-lexical = 1.2\n", "lint.thresholds.confusable-lexical"),
            ("[lint.thresholds]\nmin-examples = 1000\n", "lint.thresholds.min-examples"),
            ("[lint.thresholds]\nmin-edge-cases = -1\n", "lint.thresholds.min-edge-cases"),
            ("[lint.thresholds]\nmax-description-tokens = 0\n", "lint.thresholds.max-description-tokens"),
            ("[lint.thresholds]\nbase64-min-length = 2\n", "lint.thresholds.base64-min-length"),
        ] {
            let e = err(text);
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
            assert!(e.message.contains(key), "{text}: {e}");
            assert_eq!(e.line, Some(2), "{text}: {e}");
        }
}

#[test]
fn type_errors_name_the_key_and_line() {
    let e = err("[search]\n\nclause-vectors = \"yes\"\n");
    assert_eq!(e.key.as_deref(), Some("search.clause-vectors"));
    assert_eq!(e.line, Some(3));
    let e = err("[search]\nfusion = { kind = \"mean\" }\n");
    assert_eq!(e.key.as_deref(), Some("search.fusion.kind"), "{e}");
    let e = err("pinned = \"a/b\"\n");
    assert_eq!(e.key.as_deref(), Some("pinned"));
    let e = err("[lint]\nTR001 = \"loud\"\n");
    assert_eq!(e.key.as_deref(), Some("lint.TR001"), "{e}");
    let e = err("[[lint.ignore]]\ntool = \"a\"\n[[lint.ignore]]\npath = 3\n");
    assert_eq!(e.key.as_deref(), Some("lint.ignore[1].path"), "{e}");
    assert_eq!(e.line, Some(4));
    let e = err("search = 3\n");
    assert_eq!(e.key.as_deref(), Some("search"));
}

/// `[gateway]` is typed by the gateway's front end (`toolrag mcp`, whose
/// tests check its values); its keys are checked here, on every load.
#[test]
fn the_gateway_table_keys_are_checked() {
    let c = Config::parse("[gateway]\nallow = [\"memory\"]\nrelist-seconds = 0\n").unwrap();
    assert_eq!(c.gateway.len(), 2);
    let e = err("[gateway]\nallowed = []\n");
    assert!(e.message.contains("did you mean `allow`?"), "{e}");
    assert_eq!(e.line, Some(2));
    let e = err("[[gateway.policy]]\nprincipal = []\n");
    assert_eq!(e.key.as_deref(), Some("gateway.policy[0].principal"), "{e}");
    let e = err("gateway = 3\n");
    assert_eq!(e.key.as_deref(), Some("gateway"), "{e}");
}

#[test]
fn a_file_that_is_not_toml_gives_its_line() {
    let e = err("[search]\ndepth = 3\ndepth = 4\n");
    assert_eq!(e.key, None);
    assert!(e.message.starts_with("invalid TOML"), "{e}");
    assert_eq!(e.line, Some(3));
}

#[test]
fn errors_from_a_file_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolrag.toml");
    std::fs::write(&path, "[search]\nminDense = 0.3\n").unwrap();
    let e = Config::load(Some(&path)).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:2: unknown key `minDense` in [search]; did you mean `min-dense`?",
            path.display()
        )
    );
    std::fs::write(&path, "[search]\nmin-dense = 0.4\n").unwrap();
    let c = Config::load(Some(&path)).unwrap();
    assert_eq!(c.search.min_dense, 0.4);
    assert_eq!(c.file.as_deref(), Some(path.as_path()));
    let missing = dir.path().join("missing.toml");
    assert!(matches!(
        Config::load(Some(&missing)),
        Err(Error::Io { .. })
    ));
}

#[test]
fn validate_checks_a_config_built_in_code() {
    assert!(SearchConfig::default().validate().is_ok());
    assert!(Thresholds::default().validate().is_ok());
    assert!(Config::default().validate().is_ok());
    let mut s = SearchConfig::default();
    s.fusion = Fusion::Rrf { k: f32::NAN };
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("search.fusion.k") && e.contains("NaN"), "{e}");
    let mut c = Config::default();
    c.search.min_dense = f32::INFINITY;
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("search.min-dense"));
}

/// The key lists above are the types' own fields, so a field added to
/// one of them cannot be refused by mistake.
#[test]
fn the_key_lists_are_the_fields_of_the_types() {
    fn keys(v: serde_json::Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }
    fn sorted(list: &[&str], drop: &[&str]) -> Vec<String> {
        let mut k: Vec<String> = list
            .iter()
            .filter(|k| !drop.contains(k))
            .map(|k| k.to_string())
            .collect();
        k.sort();
        k
    }
    let mut search = keys(serde_json::to_value(SearchConfig::default()).unwrap());
    search.retain(|k| !ENGINE_INTERNALS.contains(&k.as_str()) && k != "boosts");
    assert_eq!(search, sorted(SEARCH_KEYS, &["pinned"]));
    assert_eq!(
        keys(serde_json::to_value(FieldBoosts::default()).unwrap()),
        sorted(BOOST_KEYS, &[])
    );
    assert_eq!(
        keys(serde_json::to_value(Thresholds::default()).unwrap()),
        sorted(THRESHOLD_KEYS, &[])
    );
    assert_eq!(
        keys(serde_json::to_value(IndexConfig::default()).unwrap()),
        sorted(INDEX_KEYS, &[])
    );
    let rrf = serde_json::to_value(Fusion::Rrf { k: 1.0 }).unwrap();
    assert_eq!(keys(rrf), sorted(RRF_KEYS, &[]));
    let w = serde_json::to_value(Fusion::Weighted { dense_weight: 0.5 }).unwrap();
    assert_eq!(keys(w), sorted(WEIGHTED_KEYS, &[]));
}

/// The `[lint]` table of a whole file, read as `toolrag lint` reads it.
fn lint_of(text: &str) -> Result<LintConfig> {
    Ok(Config::parse(text)?.lint)
}

#[test]
fn levels_by_name_or_code_and_unknown_rules_are_errors() {
    let c = lint_of(
        "[lint]\n\"missing-edge-cases\" = \"error\"\nTR001 = \"ignore\"\n[lint.thresholds]\nmin-examples = 2\n",
    )
    .unwrap();
    assert_eq!(c.levels.get("TR002"), Some(&Level::Error));
    assert_eq!(c.levels.get("TR001"), Some(&Level::Ignore));
    assert_eq!(c.thresholds.min_examples, 2);
    let e = lint_of("[lint]\nnope = \"warn\"\n").unwrap_err();
    assert!(e.to_string().contains("unknown lint rule `nope`"));
    let e = lint_of("[lint]\nmissingExamples = \"warn\"\n").unwrap_err();
    assert!(
        e.to_string().contains("did you mean `missing-examples`?"),
        "{e}"
    );
    let e = lint_of("[lint]\nselect = [\"TR001\", \"nope\"]\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("line 2: `lint.select`: unknown lint rule `nope`"),
        "{e}"
    );
    let e = lint_of("[[lint.ignore]]\nrules = [\"TR001\"]\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("`lint.ignore[0]`: an ignore entry needs"),
        "{e}"
    );
    let e = lint_of("[lint.thresholds]\nmin-exampels = 2\n").unwrap_err();
    assert!(e.to_string().contains("min-exampels"), "{e}");
}

#[test]
fn the_consumer_profile_keeps_what_a_consumer_can_act_on() {
    let mut c = lint_of("[lint]\nTR001 = \"error\"\nTR009 = \"ignore\"\n").unwrap();
    c.profile = Profile::Consumer;
    let level = |name| c.level_of(find_rule(name).unwrap());
    assert_eq!(level("missing-examples"), Level::Info);
    assert_eq!(level("missing-edge-cases"), Level::Info);
    assert_eq!(level("relative-path-parameter"), Level::Error);
    assert_eq!(level("hidden-instructions"), Level::Error);
    assert_eq!(
        level("confusable-tools"),
        Level::Ignore,
        "ignored stays ignored"
    );
    for name in CONSUMER_RULES {
        assert!(find_rule(name).is_some(), "{name}");
    }
}

#[test]
fn a_file_without_lint_table_is_the_default() {
    let c = lint_of("[search]\ndepth = 5\n").unwrap();
    assert!(c.levels.is_empty() && c.ignore.is_empty());
}
