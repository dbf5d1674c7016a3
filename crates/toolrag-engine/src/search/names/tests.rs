use super::*;
use toolrag_core::registry::{test_tool, Deprecation};

fn tokens(query: &str) -> Vec<&str> {
    name_tokens(query).into_iter().map(|t| t.text).collect()
}

/// The tools of the tests, by ordinal.
fn tools() -> Vec<ToolDef> {
    let mut tools = vec![
        test_tool("git", "git_log"),                   // 0
        test_tool("filesystem", "read_text_file"),     // 1
        test_tool("filesystem", "read_file"),          // 2
        test_tool("fetch", "fetch"),                   // 3
        test_tool("everything", "echo"),               // 4
        test_tool("time", "time"),                     // 5
        test_tool("files", "search"),                  // 6
        test_tool("web", "search"),                    // 7
        test_tool("mail", "search"),                   // 8
        test_tool("js", "readFile"),                   // 9
        test_tool("brave-search", "brave_web_search"), // 10
        test_tool("calc", "math.sqrt"),                // 11
    ];
    tools[2].deprecated = Some(Deprecation {
        replacement: Some("read_text_file".into()),
        replacement_id: Some("filesystem/read_text_file".into()),
    });
    tools
}

fn named(query: &str) -> Vec<u32> {
    let mut n = Names::new(&tools()).named(query, &|_| true);
    n.sort_unstable();
    n
}

#[test]
fn identifiers_are_tokens_and_plain_words_are_not() {
    assert_eq!(
        tokens("fetch the page at https://example.com"),
        ["https://example.com"]
    );
    assert_eq!(tokens("what time is it? echo it back"), Vec::<&str>::new());
    assert_eq!(
        tokens("run git_log. Then (read_text_file), git/git_log's output"),
        ["git_log", "read_text_file", "git/git_log"]
    );
    assert_eq!(
        tokens("mcp__git__git_log or tool://git/git_log: readFile, foo::bar, a-b"),
        [
            "mcp__git__git_log",
            "tool://git/git_log",
            "readFile",
            "foo::bar",
            "a-b"
        ]
    );
    // A code span is a name however it is spelt; a sentence's capital is
    // not camelCase; punctuation alone is no token.
    assert_eq!(tokens("call `fetch` now"), ["fetch"]);
    assert_eq!(tokens("Fetch it -- now ..."), Vec::<&str>::new());
    // Brands and model names in prose are PascalCase, not identifiers.
    assert_eq!(
        tokens("post it on GitHub, lighter than AlexNet, `GetWeather`"),
        ["GetWeather"]
    );
}

#[test]
fn a_plain_word_that_is_a_tool_name_names_nothing() {
    for q in [
        "fetch the page at https://example.com",
        "echo hello back to me",
        "what time is it in Tokyo",
        "search the web for rust",
        "read a file",
    ] {
        assert_eq!(named(q), Vec::<u32>::new(), "{q:?}");
    }
}

#[test]
fn every_exact_form_names_its_tool() {
    for q in [
        "git_log",
        "show me git_log output",
        "GIT_LOG please",
        "mcp__git__git_log",
        "git/git_log",
        "tool://git/git_log",
    ] {
        assert_eq!(named(q), [0], "{q:?}");
    }
    assert_eq!(named("read_text_file /etc/hosts"), [1]);
    assert_eq!(named("use `fetch` on it"), [3]);
    assert_eq!(named("fetch/fetch the page"), [3]);
    assert_eq!(named("call readFile"), [9]);
    assert_eq!(named("mcp__brave-search__brave_web_search rust"), [10]);
    // Claude Code writes `math.sqrt` as `math_sqrt`; the plain name works too.
    assert_eq!(named("mcp__calc__math_sqrt of 2"), [11]);
    assert_eq!(named("math.sqrt of 2"), [11]);
    // The wrong server names nothing.
    assert_eq!(named("mcp__time__git_log"), Vec::<u32>::new());
    assert_eq!(named("git_log and read_text_file"), [0, 1]);
}

#[test]
fn a_shared_name_promotes_at_most_three_tools_that_pass_the_filter() {
    assert_eq!(named("`search` for it"), [6, 7, 8]);
    let mut four = tools();
    four.push(test_tool("news", "search"));
    let names = Names::new(&four);
    assert_eq!(names.named("`search`", &|_| true), Vec::<u32>::new());
    // The filter narrows the name before the cut.
    assert_eq!(names.named("`search`", &|o| o == 7), [7]);
    // A filtered-out tool is never named.
    assert_eq!(names.named("git_log", &|o| o != 0), Vec::<u32>::new());
}

#[test]
fn named_tools_go_first_in_fused_order_and_missing_ones_follow() {
    let mut ranked = vec![(5, 0.9), (7, 0.8), (4, 0.7), (6, 0.6)];
    promote(&mut ranked, &[6, 8, 7]);
    assert_eq!(ranked, [(7, 0.8), (6, 0.6), (8, 0.0), (5, 0.9), (4, 0.7)]);
}

#[test]
fn the_step_demotes_deprecated_tools_and_then_promotes_names() {
    let names = Names::new(&tools());
    let fused = vec![(2, 0.9), (4, 0.5), (1, 0.4)];
    // Deprecated read_file goes below read_text_file, scored no higher;
    // nothing is named.
    let step = names.apply("read a file", fused.clone(), None);
    assert_eq!(step.ranked, [(4, 0.5), (1, 0.4), (2, 0.4)]);
    assert!(!step.named);
    assert!(step.notes.is_empty());
    // Named, it comes first all the same.
    let step = names.apply("read_file /etc/hosts", fused.clone(), None);
    assert_eq!(step.ranked[0].0, 2);
    assert!(step.named);
    assert_eq!(step.notes, [(2, NAMED_NOTE.to_string())]);
    // A filter that drops the named tool: no promotion, no ABSTAIN override.
    let keep = |o: u32| o != 2;
    let step = names.apply("read_file /etc/hosts", vec![(4, 0.5)], Some(&keep));
    assert_eq!((step.ranked, step.named), (vec![(4, 0.5)], false));
}

#[test]
fn hits_carry_the_step_notes_and_the_deprecation() {
    let tools = tools();
    let names = Names::new(&tools);
    let step = names.apply("read_file", vec![(1, 0.5)], None);
    let hit = |o: usize| Hit {
        id: tools[o].id.clone(),
        score: 0.0,
        retrievers: Default::default(),
        pinned: false,
        summary: String::new(),
        note: None,
    };
    let mut hits = vec![hit(2), hit(1)];
    let by_id = |id: &str| {
        let o = tools.iter().position(|t| t.id == id)?;
        Some((o as u32, &tools[o]))
    };
    step.annotate(&mut hits, by_id);
    assert_eq!(
        hits[0].note.as_deref(),
        Some("named in the request; deprecated: use tool://filesystem/read_text_file instead")
    );
    assert_eq!(hits[1].note, None);
}
