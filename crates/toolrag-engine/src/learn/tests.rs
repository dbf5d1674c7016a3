use super::*;
use toolrag_core::registry::{test_tool, Example};

fn rec(who: &str, request: &str, tool: &str, outcome: UsageOutcome) -> UsageRecord {
    UsageRecord::new(who, true, request, vec![tool.to_string()], tool, outcome)
}

fn tools() -> Vec<ToolDef> {
    let mut log = test_tool("git", "git_log");
    log.examples.push(Example {
        request: "show the history".into(),
        arguments: None,
    });
    vec![log, test_tool("git", "git_show"), test_tool("math", "add")]
}

#[test]
fn learns_successful_calls_of_teachers_only() {
    let ok = UsageOutcome::Succeeded;
    let records = vec![
        rec("ann", "show the last 5 commits", "git/git_log", ok),
        rec(
            "ann",
            "what changed lately",
            "git/git_log",
            UsageOutcome::ToolError,
        ),
        rec("ann", "what broke", "git/git_log", UsageOutcome::Failed),
        UsageRecord::new("eve", false, "add 2 and 3", vec![], "math/add", ok),
        rec("ann", "push it", "git/git_push", ok),
        rec("ann", "  Show the   HISTORY ", "git/git_log", ok),
    ];
    let (learnt, report) = learn(
        &records,
        &tools(),
        &Learnt::default(),
        &LearnOptions::default(),
    );
    let got: Vec<&str> = learnt.requests_of("git/git_log").collect();
    assert_eq!(
        got,
        ["show the last something commits"],
        "the number is taken out"
    );
    assert_eq!(report.unsuccessful, 2);
    assert_eq!(report.not_teachers, 1);
    assert_eq!(report.unknown_tools, 1);
    assert_eq!(
        report.documented, 1,
        "a documented example is not learnt again"
    );
    assert_eq!((report.tools, report.learnt), (1, 1));
}

#[test]
fn a_request_counts_for_the_tool_called_most_after_it() {
    let ok = UsageOutcome::Succeeded;
    let mut records = vec![rec(
        "mallory",
        "show the last 5 commits",
        "git/git_show",
        ok,
    )];
    for who in ["ann", "bob"] {
        records.push(rec(who, "show the last 5 commits", "git/git_log", ok));
    }
    let (learnt, report) = learn(
        &records,
        &tools(),
        &Learnt::default(),
        &LearnOptions::default(),
    );
    assert_eq!(learnt.requests_of("git/git_show").count(), 0);
    assert_eq!(learnt.tools["git/git_log"][0].principals, 2);
    assert_eq!(report.outvoted, 1);
}

#[test]
fn requests_that_are_only_particulars_teach_nothing() {
    let ok = UsageOutcome::Succeeded;
    let records = vec![
        rec("ann", "Tokyo?", "math/add", ok),
        rec("ann", "/etc/hosts", "math/add", ok),
        rec("ann", "add 2 and 3", "math/add", ok),
        rec("ann", "add 4 and 5", "math/add", ok),
    ];
    let (learnt, report) = learn(
        &records,
        &tools(),
        &Learnt::default(),
        &LearnOptions::default(),
    );
    assert_eq!(report.too_short, 2);
    let add = &learnt.tools["math/add"];
    assert_eq!(
        add.len(),
        1,
        "one request once the numbers are out: {add:?}"
    );
    assert_eq!(
        (add[0].request.as_str(), add[0].calls),
        ("add something and something", 2)
    );
}

#[test]
fn one_principal_cannot_fill_a_tool_past_its_cap() {
    let ok = UsageOutcome::Succeeded;
    let words = |i: u8| format!("{}{}", (b'a' + i / 26) as char, (b'a' + i % 26) as char);
    let mut records: Vec<UsageRecord> = (0..30)
        .map(|i| {
            rec(
                "mallory",
                &format!("add request {}", words(i)),
                "math/add",
                ok,
            )
        })
        .collect();
    records.push(rec("ann", "sum 2 and 2", "math/add", ok));
    let opts = LearnOptions::default();
    let (learnt, report) = learn(&records, &tools(), &Learnt::default(), &opts);
    let add = &learnt.tools["math/add"];
    assert_eq!(add.len(), opts.per_principal + 1, "{add:?}");
    assert!(add
        .iter()
        .any(|e| e.request == "sum something and something"));
    assert_eq!(report.capped, 30 - opts.per_principal);
}

#[test]
fn forget_and_reset_drop_what_came_before() {
    let ok = UsageOutcome::Succeeded;
    let past = Utc::now() - chrono::Duration::seconds(10);
    let records = vec![
        rec("ann", "sum 2 and 2", "math/add", ok).at(past),
        rec("ann", "show the last 5 commits", "git/git_log", ok).at(past),
    ];
    let mut previous = Learnt::default();
    previous.forget("math/add");
    let (learnt, _) = learn(&records, &tools(), &previous, &LearnOptions::default());
    assert_eq!(learnt.requests_of("math/add").count(), 0);
    assert_eq!(learnt.requests_of("git/git_log").count(), 1);
    assert!(
        learnt.forgotten.contains_key("math/add"),
        "the mark is kept"
    );

    // After the forget, new calls teach again.
    let mut later = records.clone();
    later.push(rec("ann", "sum 2 and 2", "math/add", ok));
    let (learnt, _) = learn(&later, &tools(), &previous, &LearnOptions::default());
    assert_eq!(learnt.requests_of("math/add").count(), 1);

    previous.reset();
    let (learnt, report) = learn(&records, &tools(), &previous, &LearnOptions::default());
    assert!(learnt.is_empty());
    assert_eq!(report.old_or_forgotten, 2);
}

#[test]
fn the_log_survives_a_torn_line_and_is_compacted_by_size_and_age() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(USAGE_FILE);
    let limits = UsageLimits {
        max_bytes: 4_000,
        max_age_days: 30.0,
    };
    let log = UsageLog::open(&path, limits).unwrap();
    let old = Utc::now() - chrono::Duration::days(31);
    log.append(&rec("ann", "an old request", "math/add", UsageOutcome::Succeeded).at(old))
        .unwrap();
    // A crash in the middle of a line.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"at\": \"2026-"))
        .unwrap();
    let log = UsageLog::open(&path, limits).unwrap();
    let (records, skipped) = read_usage(&path).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(skipped.len(), 1, "the torn line is one line: {skipped:?}");
    assert_eq!(skipped[0].line, 2);
    for i in 0..40 {
        let r = rec(
            "ann",
            &format!("request number {i}"),
            "math/add",
            UsageOutcome::Succeeded,
        );
        log.append(&r).unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= limits.max_bytes, "{size}");
    let (records, skipped) = read_usage(&path).unwrap();
    assert!(
        records.iter().all(|r| r.at > old),
        "the old record was dropped"
    );
    assert_eq!(records.last().unwrap().request, "request number 39");
    assert!(skipped.is_empty(), "the torn line went with the compaction");
}

#[test]
fn attach_gives_each_tool_its_learnt_requests() {
    let mut learnt = Learnt::default();
    let (l, _) = learn(
        &[rec(
            "ann",
            "show the last 5 commits",
            "git/git_log",
            UsageOutcome::Succeeded,
        )],
        &tools(),
        &Learnt::default(),
        &LearnOptions::default(),
    );
    learnt.tools = l.tools;
    let reg = attach(Registry::from_tools(tools()).unwrap(), &learnt).unwrap();
    let got: Vec<&str> = reg
        .get("git/git_log")
        .unwrap()
        .learnt
        .iter()
        .map(|l| l.request.as_str())
        .collect();
    assert_eq!(got, ["show the last something commits"]);
    learnt.forget("git/git_log");
    let reg = attach(reg, &learnt).unwrap();
    assert!(reg.get("git/git_log").unwrap().learnt.is_empty());
}

#[test]
fn a_log_compacted_by_another_process_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(USAGE_FILE);
    let limits = UsageLimits::new(2_000, 30.0);
    let one = UsageLog::open(&path, limits).unwrap();
    let two = UsageLog::open(&path, limits).unwrap();
    let ok = UsageOutcome::Succeeded;
    // `one` fills the log past its limit and compacts it: a new file.
    for i in 0..20 {
        let r = rec("ann", &format!("first log request {i}"), "math/add", ok);
        one.append(&r).unwrap();
    }
    let r = rec("bob", "a request after the compaction", "math/add", ok);
    two.append(&r).unwrap();
    let (records, _) = read_usage(&path).unwrap();
    assert_eq!(
        records.last().unwrap().request,
        "a request after the compaction",
        "the second writer follows the new file"
    );
}
