//! docs/rules/: one page per lint rule, generated from the rule's doc comment
//! (`RuleInfo::page`), and the index. The SARIF log links each rule to its
//! page (`helpUri`), so the pages must exist and say what the code says.
//!
//! `TOOLRAG_BLESS=1 cargo test --test integration rule_pages` rewrites them.

use crate::common::root;

#[test]
fn rule_pages_are_in_sync_with_the_rules_doc_comments() {
    let dir = root().join("docs/rules");
    let bless = std::env::var_os("TOOLRAG_BLESS").is_some();
    let mut expected: Vec<(String, String)> = toolrag::lint::rules()
        .map(|r| (format!("{}.md", r.code), r.page()))
        .collect();
    expected.push(("README.md".into(), toolrag::lint::rules_index_page()));
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &expected {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (name, text) in &expected {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        if &on_disk != text {
            stale.push(name.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "docs/rules/ is out of date for {stale:?}: run `TOOLRAG_BLESS=1 cargo test --test integration rule_pages`"
    );
    // No page for a rule that is gone.
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut names: Vec<String> = expected.into_iter().map(|(n, _)| n).collect();
    names.sort();
    assert_eq!(on_disk, names);
}

#[test]
fn rule_pages_carry_the_template_sections() {
    let page = toolrag::lint::find_rule("TR005").unwrap().page();
    assert!(page.contains("# TR005: relative-path-parameter"), "{page}");
    assert!(page.contains("Default level: `error`"), "{page}");
    assert!(page.contains("## Why is this bad?"), "{page}");
}
