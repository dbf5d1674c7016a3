//! The lint library: one failing and one passing fixture per rule (insta
//! snapshots), the realistic bad registries, the shipped registry, and the
//! dense similarity and token counts on the real model.

use std::collections::BTreeSet;
use std::path::PathBuf;

use toolrag::lint::render::{render, OutputFormat, RenderOptions};
use toolrag::lint::{self, Diagnostic, LintConfig, LintContext};
use toolrag::registry::{LoadOptions, Registry};

use crate::common::{embedder, model_dir, root};

/// Fixture paths are relative to the repository (the tests' working
/// directory, [`root`]), so that snapshots show stable paths.
fn load(rel: &str) -> Registry {
    root();
    Registry::load(&[PathBuf::from(rel)], &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{rel} loads: {e}"))
}

fn only(rule: &str) -> LintConfig {
    let mut c = LintConfig::default();
    c.select(&[rule]).unwrap();
    c
}

fn rendered(format: OutputFormat, diagnostics: &[Diagnostic], tools: usize) -> String {
    let mut out = Vec::new();
    let opts = RenderOptions {
        color: false,
        tools_checked: tools,
    };
    render(format, diagnostics, &opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn full(diagnostics: &[Diagnostic], tools: usize) -> String {
    rendered(OutputFormat::Full, diagnostics, tools)
}

fn concise(diagnostics: &[Diagnostic], tools: usize) -> String {
    rendered(OutputFormat::Concise, diagnostics, tools)
}

/// Every rule has a `fail` and a `pass` fixture under
/// tests/fixtures/lint/rules/<name>/. The failing one must produce findings
/// of that rule, the passing one none; both outputs are snapshotted.
#[test]
fn every_rule_fails_its_failing_fixture_and_passes_its_passing_one() {
    root();
    let mut missing = Vec::new();
    for info in lint::rules() {
        let dir = format!("tests/fixtures/lint/rules/{}", info.name);
        if !PathBuf::from(&dir).join("fail").is_dir() || !PathBuf::from(&dir).join("pass").is_dir()
        {
            missing.push(info.name);
            continue;
        }
        let cx = LintContext::new(only(info.code));
        let fail = load(&format!("{dir}/fail"));
        let found = lint::lint(&fail, &cx);
        assert!(
            !found.is_empty(),
            "{} finds nothing in its failing fixture",
            info.name
        );
        assert!(found.iter().all(|d| d.code == info.code));
        let pass = load(&format!("{dir}/pass"));
        let clean = lint::lint(&pass, &cx);
        assert!(
            clean.is_empty(),
            "{} flags its passing fixture:\n{}",
            info.name,
            concise(&clean, pass.len())
        );
        let text = format!(
            "--- fail ---\n{}\n--- pass ---\n{}",
            full(&found, fail.len()),
            full(&clean, pass.len())
        );
        insta::assert_snapshot!(format!("rule_{}_{}", info.code, info.name), text);
    }
    assert!(missing.is_empty(), "rules without fixtures: {missing:?}");
}

fn codes_by_tool(diagnostics: &[Diagnostic]) -> BTreeSet<(String, String)> {
    diagnostics
        .iter()
        .map(|d| (d.tool_id.clone(), d.name.clone()))
        .collect()
}

fn has(found: &BTreeSet<(String, String)>, tool: &str, rule: &str) -> bool {
    found.contains(&(tool.to_string(), rule.to_string()))
}

#[test]
fn an_mcp_filesystem_server_with_relative_paths() {
    let reg = load("tests/fixtures/lint/registries/mcp_filesystem.json");
    let found = lint::lint(&reg, &LintContext::new(LintConfig::default()));
    let f = codes_by_tool(&found);
    for tool in [
        "read_file",
        "write_file",
        "list_directory",
        "move_file",
        "search_files",
    ] {
        let id = format!("mcp_filesystem/{tool}");
        assert!(has(&f, &id, "relative-path-parameter"), "{id}");
    }
    assert!(has(
        &f,
        "mcp_filesystem/list_directory",
        "defaulted-path-parameter"
    ));
    assert!(has(
        &f,
        "mcp_filesystem/delete_file",
        "invalid-example-arguments"
    ));
    assert!(has(
        &f,
        "mcp_filesystem/delete_file",
        "missing-side-effect-annotations"
    ));
    assert!(has(
        &f,
        "mcp_filesystem/write_file",
        "missing-side-effect-annotations"
    ));
    assert!(has(
        &f,
        "mcp_filesystem/search_files",
        "unknown-boundary-target"
    ));
    // The absolute-path parameter of delete_file is fine.
    assert!(!has(
        &f,
        "mcp_filesystem/delete_file",
        "relative-path-parameter"
    ));
    insta::assert_snapshot!("registry_mcp_filesystem", concise(&found, reg.len()));
}

#[test]
fn a_poisoned_server_is_caught_tool_by_tool() {
    let reg = load("tests/fixtures/lint/registries/poisoned_server.json");
    let found = lint::lint(&reg, &LintContext::new(only("hidden-instructions")));
    let f = codes_by_tool(&found);
    for tool in [
        "add",
        "get_fact_of_the_day",
        "summarize_notes",
        "translate",
        "render_chart",
    ] {
        assert!(
            has(
                &f,
                &format!("poisoned_server/{tool}"),
                "hidden-instructions"
            ),
            "{tool}"
        );
    }
    let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
    for needle in [
        "<IMPORTANT>",
        "mcp.json",
        "U+2066",
        "never inform the user",
        "https://notes-backup.example.org/ingest",
        "Ignore any previous instructions",
        "base64",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(needle)),
            "{needle}: {messages:#?}"
        );
    }
    insta::assert_snapshot!("registry_poisoned_server", full(&found, reg.len()));
}

#[test]
fn confusable_tools_without_boundaries_are_paired() {
    let reg = load("tests/fixtures/lint/registries/confusable.jsonl");
    let found = lint::lint(&reg, &LintContext::new(only("confusable-tools")));
    let pairs: BTreeSet<(String, String)> = found
        .iter()
        .map(|d| {
            let other = d.message.split('`').nth(1).unwrap();
            (d.tool_id.clone(), other.to_string())
        })
        .collect();
    for (a, b) in [
        ("search_files", "find_files"),
        ("get_weather", "current_weather"),
        ("send_message", "post_message"),
    ] {
        let (a, b) = (format!("confusable/{a}"), format!("confusable/{b}"));
        assert!(
            pairs.contains(&(a.clone(), b.clone())),
            "{a} / {b}: {pairs:?}"
        );
        assert!(pairs.contains(&(b, a)));
    }
    assert!(!found
        .iter()
        .any(|d| d.tool_id == "confusable/convert_currency"));
}

#[test]
fn examples_that_violate_their_schema_are_errors() {
    let reg = load("tests/fixtures/lint/registries/bad_examples.json");
    let found = lint::lint(&reg, &LintContext::new(only("invalid-example-arguments")));
    let text = concise(&found, reg.len());
    for needle in [
        "\"May 3\" is not a \"date\"",
        "\"Paris\" does not match",
        "\"business-plus\" is not one of",
        "\"21\" is not of type \"number\"",
        "40 is greater than the maximum of 30",
        "\"room\" is a required property",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    insta::assert_snapshot!("registry_bad_examples", text);
}

#[test]
fn the_shipped_registry_passes_with_the_model() {
    let reg = load("tools");
    let vectors = lint::similarity::embed_tools(&reg, embedder()).unwrap();
    let cx = LintContext::new(LintConfig::default())
        .with_embeddings(vectors)
        .with_token_counter(toolrag::embed::TokenCounter::load(&model_dir()).unwrap());
    assert_eq!(cx.similarity_kind(&reg), lint::SimilarityKind::Dense);
    let found = lint::lint(&reg, &cx);
    assert!(found.is_empty(), "{}", concise(&found, reg.len()));
}

#[test]
fn dense_similarity_finds_paraphrases_that_share_no_words() {
    let reg = load("tests/fixtures/lint/dense");
    let mut config = only("confusable-tools");
    config.thresholds.confusable_dense = 0.6;
    let lexical = lint::lint(&reg, &LintContext::new(config.clone()));
    assert!(lexical.is_empty(), "{}", concise(&lexical, reg.len()));
    let vectors = lint::similarity::embed_tools(&reg, embedder()).unwrap();
    let dense = lint::lint(&reg, &LintContext::new(config).with_embeddings(vectors));
    let flagged: BTreeSet<&str> = dense.iter().map(|d| d.tool_id.as_str()).collect();
    assert_eq!(
        flagged,
        BTreeSet::from([
            "paraphrases/city_conditions",
            "paraphrases/get_weather",
            "paraphrases/language_converter",
            "paraphrases/translate_text",
        ])
    );
    assert!(dense.iter().all(|d| d.message.contains("dense cosine 0.")));
}

#[test]
fn token_counts_come_from_the_model_tokenizer_when_present() {
    let reg = load("tests/fixtures/lint/rules/oversized-description/fail");
    let counter = toolrag::embed::TokenCounter::load(&model_dir()).unwrap();
    let text = &reg.tools()[0].description;
    let exact = counter.count(text);
    let cx = LintContext::new(only("oversized-description")).with_token_counter(counter);
    let found = lint::lint(&reg, &cx);
    assert_eq!(found.len(), 1);
    assert!(
        found[0]
            .message
            .contains(&format!("is {exact} tokens long")),
        "{}",
        found[0].message
    );
}

#[test]
fn ignores_and_levels_from_the_config_apply() {
    let reg = load("tests/fixtures/lint/registries/mcp_filesystem.json");
    let config = toolrag::config::Config::parse(
        r#"
[lint]
"missing-examples" = "ignore"
relative-path-parameter = "warn"

[[lint.ignore]]
path = "tests/fixtures/lint/registries/*.json"
rules = ["missing-edge-cases"]

[[lint.ignore]]
tool = "mcp_filesystem/delete_*"
"#,
    )
    .unwrap()
    .lint;
    let found = lint::lint(&reg, &LintContext::new(config));
    assert!(!found.iter().any(|d| d.name == "missing-examples"));
    assert!(!found.iter().any(|d| d.name == "missing-edge-cases"));
    assert!(!found
        .iter()
        .any(|d| d.tool_id == "mcp_filesystem/delete_file"));
    assert!(found
        .iter()
        .filter(|d| d.name == "relative-path-parameter")
        .all(|d| d.level == lint::Level::Warn));
    assert!(found.iter().any(|d| d.name == "relative-path-parameter"));
}

#[test]
fn the_example_config_is_valid() {
    root();
    let c = toolrag::config::Config::from_file(std::path::Path::new("examples/toolrag.toml"))
        .unwrap()
        .lint;
    assert_eq!(c.thresholds.min_examples, 2);
    assert_eq!(c.ignore.len(), 2);
}
