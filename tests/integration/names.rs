//! Exact names and deprecation, on the real filesystem, git and fetch MCP
//! servers with the real model: a named tool comes first in every mode, a
//! deprecated tool ranks below its replacement and says so. On the published
//! model (`--model minilm`) with the settings the protocol chose for it.

use std::sync::{Arc, OnceLock};

use toolrag::index::{build, BuildModel, BuildOptions};
use toolrag::registry::{Deprecation, LoadOptions, Registry};
use toolrag::search::{khipu, Decision, Mode, SearchRequest, SearchResult, Searcher};

use crate::common::{fixture, published_config, published_embedder};

const SERVERS: [&str; 3] = ["filesystem", "git", "fetch"];

fn registry() -> Registry {
    let paths: Vec<_> = SERVERS
        .iter()
        .map(|s| fixture(&format!("mcp-reference/{s}.json")))
        .collect();
    Registry::load(&paths, &LoadOptions::default()).unwrap()
}

/// One index of the three servers, built once with the real model.
fn searcher() -> &'static Searcher {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static S: OnceLock<Searcher> = OnceLock::new();
    S.get_or_init(|| {
        let dir = DIR.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let e = published_embedder();
            let opts = BuildOptions::new(dir.path());
            build(registry(), Some(BuildModel::Loaded(&e)), &opts, &|_| {}).unwrap();
            dir
        });
        let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(published_embedder());
        Searcher::open(dir.path(), Some(e), published_config()).unwrap()
    })
}

fn search(query: &str, mode: Mode) -> SearchResult {
    let req = SearchRequest {
        query: query.into(),
        mode,
        ..SearchRequest::default()
    };
    searcher().search(&req).unwrap()
}

fn ids(r: &SearchResult) -> Vec<&str> {
    r.hits.iter().map(|h| h.id.as_str()).collect()
}

fn note<'r>(r: &'r SearchResult, id: &str) -> Option<&'r str> {
    r.hits.iter().find(|h| h.id == id)?.note.as_deref()
}

#[test]
fn only_read_file_of_the_reference_servers_is_deprecated() {
    let reg = registry();
    let deprecated: Vec<(&str, &Deprecation)> = reg
        .tools()
        .iter()
        .filter_map(|t| Some((t.id.as_str(), t.deprecated.as_ref()?)))
        .collect();
    let expected = Deprecation {
        replacement: Some("read_text_file".into()),
        replacement_id: Some("filesystem/read_text_file".into()),
    };
    assert_eq!(deprecated, [("filesystem/read_file", &expected)]);
    // tools.json keeps it, and the card shows it.
    let card = searcher().tool("tool://filesystem/read_file").unwrap();
    assert_eq!(card.deprecated.as_ref(), Some(&expected));
    let json = serde_json::to_value(card).unwrap();
    assert_eq!(
        json["deprecated"],
        serde_json::json!({"replacement": "read_text_file", "replacementId": "filesystem/read_text_file"})
    );
    let plain = serde_json::to_value(searcher().tool("git/git_log").unwrap()).unwrap();
    assert!(plain.get("deprecated").is_none(), "{plain}");
}

#[test]
fn a_read_request_ranks_read_file_below_read_text_file_and_says_why() {
    let want = "deprecated: use tool://filesystem/read_text_file instead";
    for query in [
        "read a file",
        "read the complete contents of a file as text",
        "open notes.txt and give me its text",
    ] {
        for mode in Mode::ALL {
            let r = search(query, mode);
            let ids = ids(&r);
            let text = ids.iter().position(|&i| i == "filesystem/read_text_file");
            let old = ids.iter().position(|&i| i == "filesystem/read_file");
            let (Some(text), Some(old)) = (text, old) else {
                panic!("{query:?} ({mode}): both read tools are in the top 10: {ids:?}");
            };
            assert!(text < old, "{query:?} ({mode}): {ids:?}");
            assert_eq!(note(&r, "filesystem/read_file"), Some(want), "{mode}");
            assert_eq!(note(&r, "filesystem/read_text_file"), None, "{mode}");
            // The Khipu candidate carries it in its routing note.
            let set = khipu::candidate_set(&r, |id| searcher().tool(id));
            let c = set
                .candidates
                .iter()
                .find(|c| c.node_id == "tool://filesystem/read_file")
                .unwrap();
            assert!(
                c.note.starts_with(&format!("filesystem: ({want}) ")),
                "{}",
                c.note
            );
            assert!(c.note.chars().count() <= khipu::MAX_NOTE_CHARS);
        }
    }
}

#[test]
fn a_replacement_the_retriever_missed_is_brought_above_the_deprecated_tool() {
    // Only read_file's text has the word; BM25 finds nothing else.
    let r = search("deprecated", Mode::Lexical);
    assert_eq!(
        ids(&r)[..2],
        ["filesystem/read_text_file", "filesystem/read_file"]
    );
    assert_eq!(
        note(&r, "filesystem/read_text_file"),
        Some("replaces deprecated tool://filesystem/read_file")
    );
}

#[test]
fn every_exact_name_form_puts_its_tool_first_in_every_mode() {
    let cases = [
        ("git_log", "git/git_log"),
        ("mcp__git__git_log", "git/git_log"),
        ("git/git_log", "git/git_log"),
        ("tool://git/git_log", "git/git_log"),
        ("read_text_file", "filesystem/read_text_file"),
        ("what does git_status say about /srv/app", "git/git_status"),
        (
            "run mcp__filesystem__list_allowed_directories",
            "filesystem/list_allowed_directories",
        ),
        // Named, a deprecated tool comes first all the same, with its note.
        ("read_file /etc/hosts", "filesystem/read_file"),
    ];
    for (query, want) in cases {
        for mode in Mode::ALL {
            let r = search(query, mode);
            assert_eq!(
                ids(&r).first(),
                Some(&want),
                "{query:?} ({mode}): {:?}",
                ids(&r)
            );
            assert_eq!(r.decision, Decision::Navigate, "{query:?} ({mode})");
            let n = r.hits[0].note.as_deref().unwrap_or_default();
            assert!(n.starts_with("named in the request"), "{query:?}: {n}");
        }
    }
}

#[test]
fn a_request_that_names_a_tool_is_never_abstained() {
    let gibberish = "qzxv wplk mrtn";
    let r = search(gibberish, Mode::Dense);
    assert_eq!(r.decision, Decision::Abstain, "the control abstains");
    let r = search(&format!("{gibberish} git_show"), Mode::Dense);
    assert_eq!(r.decision, Decision::Navigate);
    assert_eq!(ids(&r)[0], "git/git_show");
    assert_eq!(r.abstain_reason, None);
}

#[test]
fn a_filtered_out_tool_is_never_promoted() {
    let req = SearchRequest {
        query: "git_log".into(),
        namespaces: vec!["filesystem".into()],
        ..SearchRequest::default()
    };
    let r = searcher().search(&req).unwrap();
    assert!(!ids(&r).contains(&"git/git_log"), "{:?}", ids(&r));
    assert!(r
        .hits
        .iter()
        .all(|h| h.note.as_deref() != Some("named in the request")));
}

#[test]
fn plain_words_that_are_tool_names_promote_nothing() {
    // `fetch` is a tool of the fetch server; here it is a verb. The request
    // may still rank fetch first on its own merits, but nothing says it was
    // named.
    for query in ["fetch the page at https://example.com", "fetch"] {
        for mode in Mode::ALL {
            let r = search(query, mode);
            let notes: Vec<_> = r.hits.iter().filter_map(|h| h.note.as_deref()).collect();
            assert!(
                notes.iter().all(|n| !n.contains("named")),
                "{query:?} ({mode}): {notes:?}"
            );
        }
    }
}
