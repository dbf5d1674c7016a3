//! `toolrag.toml`: the shipped example, and what every command does with a
//! bad file (prints where and why, exits 2).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use predicates::prelude::*;
use toolrag::config::Config;
use toolrag::index::lexical::FieldBoosts;
use toolrag::lint::Thresholds;
use toolrag::search::SearchConfig;

use crate::common::{fixture, root, stdout_json, toolrag};

const EXAMPLE: &str = "examples/toolrag.toml";

fn example_text() -> String {
    std::fs::read_to_string(root().join(EXAMPLE)).unwrap()
}

#[test]
fn the_example_loads_and_its_values_are_the_defaults() {
    let c = Config::load(Some(&root().join(EXAMPLE))).unwrap();
    assert!(c.pinned.is_empty());
    assert_eq!(c.search, SearchConfig::default());
    assert_eq!(c.index.boosts, Some(FieldBoosts::default()));
    // The [model] table spells out the default model and its settings.
    assert_eq!(c.model.name.as_deref(), Some(toolrag::embed::DEFAULT_MODEL));
    assert_eq!(c.model.pooling, Some(toolrag::embed::Pooling::Mean));
    assert_eq!(c.model.query_prefix.as_deref(), Some(""));
    // The lint table shows levels and ignores, and one threshold that is not
    // the default (its comment says so).
    assert_eq!(
        c.lint.thresholds,
        Thresholds {
            min_examples: 2,
            ..Thresholds::default()
        }
    );
    assert_eq!(c.lint.levels.len(), 2);
    assert_eq!(c.lint.ignore.len(), 2);
    assert!(c.lint.select.is_none());
}

/// Each `# or: key = value` line, put in place of the setting above it (or
/// uncommented where the setting is left out), still loads, and changes it.
#[test]
fn every_alternative_in_the_example_loads() {
    let text = example_text();
    let lines: Vec<&str> = text.lines().collect();
    let base = Config::parse(&text).unwrap();
    let mut tried = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(alt) = line.strip_prefix("# or: ") else {
            continue;
        };
        let key = alt.split('=').next().unwrap().trim();
        let setting = lines[..i]
            .iter()
            .rposition(|l| l.split('=').next().map(str::trim) == Some(key))
            .filter(|&j| !lines[j..i].iter().any(|l| l.starts_with('[')));
        let mut edited: Vec<&str> = lines.clone();
        match setting {
            Some(j) => {
                edited[j] = alt;
            }
            None => edited[i] = alt,
        }
        let c = Config::parse(&edited.join("\n"))
            .unwrap_or_else(|e| panic!("line {}: `{alt}`: {e}", i + 1));
        let changed = c.pinned != base.pinned
            || c.search != base.search
            || c.index != base.index
            || c.model != base.model
            || c.lint.select != base.lint.select;
        assert!(changed, "line {}: `{alt}` changes nothing", i + 1);
        tried += 1;
    }
    assert!(tried >= 4, "only {tried} alternatives");
}

/// The example shows every setting of `[search]`, `[index]` and
/// `[lint.thresholds]`: each field of those types is a key in it.
#[test]
fn the_example_shows_every_setting() {
    let table: toml::Table = toml::from_str(&example_text()).unwrap();
    let keys = |t: &toml::Value| -> Vec<String> { t.as_table().unwrap().keys().cloned().collect() };
    let fields =
        |v: serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let search = keys(&table["search"]);
    for f in fields(serde_json::to_value(SearchConfig::default()).unwrap()) {
        let internal = [
            "union-max-docs",
            "exact-max-points",
            "scan-max-points",
            "hnsw-ef",
            "boosts",
        ];
        if !internal.contains(&f.as_str()) {
            assert!(search.contains(&f), "[search] {f} is not in the example");
        }
    }
    let boosts = keys(&table["index"]["boosts"]);
    for f in fields(serde_json::to_value(FieldBoosts::default()).unwrap()) {
        assert!(
            boosts.contains(&f),
            "[index] boosts.{f} is not in the example"
        );
    }
    let thresholds = keys(&table["lint"]["thresholds"]);
    for f in fields(serde_json::to_value(Thresholds::default()).unwrap()) {
        assert!(
            thresholds.contains(&f),
            "[lint.thresholds] {f} is not in the example"
        );
    }
    assert!(table.contains_key("pinned") && table["search"].get("pinned").is_some());
}

/// A lexical-only index of a small registry, built once by the CLI.
fn lexical_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        toolrag()
            .arg("index")
            .arg(fixture("lint/registries/mcp_filesystem.json"))
            .arg("--out")
            .arg(dir.path())
            .arg("--lexical-only")
            .assert()
            .success();
        dir
    })
    .path()
}

fn write_config(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("toolrag.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn query_refuses_a_bad_config_naming_file_line_and_key_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in [
        (
            "[search]\nminDense = 0.9\n",
            ":2: unknown key `minDense` in [search]; did you mean `min-dense`?",
        ),
        (
            "[search]\nhnswEf = 64\n",
            ":2: `hnswEf` in [search] is an engine internal and no longer a setting",
        ),
        (
            "\n[search]\nfusion = { kind = \"rrf\", k = -60 }\n",
            ":3: `search.fusion.k` must be a finite number above 0, not -60",
        ),
        (
            "[search]\nmin-lexical = nan\n",
            ":2: `search.min-lexical` must be a finite number of at least 0, not NaN",
        ),
        (
            "[search]\nfusion = { kind = \"weighted\", dense-weight = inf }\n",
            ":2: `search.fusion.dense-weight` must be a finite number from 0 to 1, not inf",
        ),
    ] {
        let cfg = write_config(&dir, text);
        toolrag()
            .args(["query", "read a file", "--mode", "lexical", "--config"])
            .arg(&cfg)
            .arg("--index")
            .arg(lexical_index())
            .assert()
            .code(2)
            .stdout("")
            .stderr(
                predicate::str::contains(format!("toolrag: {}{expected}", cfg.display()))
                    .and(predicate::str::contains("panicked").not()),
            );
    }
}

#[test]
fn every_command_that_reads_the_config_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(&dir, "[search]\ndepth = 0\n");
    let queries = fixture("eval/queries.jsonl");
    let index = lexical_index();
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["serve".into(), "--index".into(), index.into()],
        vec!["mcp".into(), "--index".into(), index.into()],
        vec![
            "eval".into(),
            "--queries".into(),
            queries.into(),
            "--index".into(),
            index.into(),
            "--modes".into(),
            "lexical".into(),
        ],
        vec![
            "lint".into(),
            fixture("lint/registries/mcp_filesystem.json").into(),
            "--lexical".into(),
        ],
        vec![
            "index".into(),
            fixture("lint/registries/mcp_filesystem.json").into(),
            "--lexical-only".into(),
            "--out".into(),
            dir.path().join("never-built").into(),
        ],
    ];
    for args in runs {
        toolrag()
            .args(&args)
            .arg("--config")
            .arg(&cfg)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "{}:2: `search.depth` must be from 1 to 100000, not 0",
                cfg.display()
            )));
    }
    assert!(!dir.path().join("never-built").exists());
}

/// Kebab-case settings reach the searcher: a high `min-lexical` makes the
/// lexical mode abstain, and `pinned` adds a tool, where the defaults do
/// neither.
#[test]
fn kebab_case_settings_change_what_query_answers() {
    let dir = tempfile::tempdir().unwrap();
    let run = |cfg: &Path| -> serde_json::Value {
        stdout_json(
            toolrag()
                .args(["query", "list the directory", "--mode", "lexical"])
                .args(["--format", "json", "-k", "1", "--config"])
                .arg(cfg)
                .arg("--index")
                .arg(lexical_index()),
        )
    };
    let plain = run(&write_config(&dir, ""));
    assert_ne!(plain["decision"], "ABSTAIN", "{plain}");
    let strict = run(&write_config(&dir, "[search]\nmin-lexical = 1000.0\n"));
    assert_eq!(strict["decision"], "ABSTAIN", "{strict}");
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect()
    };
    let pinned = "mcp_filesystem/delete_file";
    assert_eq!(ids(&plain), ["mcp_filesystem/list_directory"], "{plain}");
    let with_pin = run(&write_config(&dir, &format!("pinned = [\"{pinned}\"]\n")));
    assert!(ids(&with_pin).iter().any(|i| i == pinned), "{with_pin}");
}
