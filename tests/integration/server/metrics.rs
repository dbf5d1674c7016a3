//! `/metrics` after real searches: the build, searches by mode, decisions,
//! the process metrics, and a scrape that Prometheus' own `promtool check
//! metrics` accepts without a complaint.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::root;

use super::harness::{index_copy, Server};

/// The promtool `make promtool` unpacks; `TOOLRAG_PROMTOOL` overrides it.
fn promtool() -> PathBuf {
    let p = std::env::var_os("TOOLRAG_PROMTOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/promtool/bin/promtool"));
    // `make test` unpacks it first; a missing tool fails, it never skips.
    assert!(
        p.exists(),
        "{} is missing: run `make promtool` (promtool from Debian's prometheus package)",
        p.display()
    );
    p
}

/// The value of the sample `name` (with its labels, as written), if any.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

#[test]
fn searches_decisions_build_and_process_are_counted_and_promtool_is_clean() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let m = s.get("/metrics").body;
    // Every mode and decision is there before the first search, at 0.
    for mode in ["hybrid", "lexical", "dense"] {
        let name = format!(r#"toolrag_searches_total{{mode="{mode}"}}"#);
        assert_eq!(sample(&m, &name), Some(0.0), "{m}");
    }
    for d in ["NAVIGATE", "ABSTAIN"] {
        let name = format!(r#"toolrag_search_decisions_total{{decision="{d}"}}"#);
        assert_eq!(sample(&m, &name), Some(0.0), "{m}");
    }

    let search = |body: &str| {
        let r = s.post_json("/v1/search", body);
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["retrieval"]["decision"].clone()
    };
    for mode in ["hybrid", "lexical", "dense"] {
        let body = format!(r#"{{"query": "read the file /etc/hosts", "mode": "{mode}"}}"#);
        assert_eq!(search(&body), "NAVIGATE");
    }
    assert_eq!(search(r#"{"query": "bake a chocolate cake"}"#), "ABSTAIN");
    let r = s.post_json(
        "/v1/search/batch",
        r#"[{"query": "list the files of a folder", "mode": "lexical"}, {"query": "show the git log", "mode": "lexical"}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A refused request is no search.
    assert_eq!(s.post_json("/v1/search", r#"{"query": " "}"#).status, 400);

    let m = crate::server::no_server_errors(&s);
    let count = |name: &str| sample(&m, name).unwrap_or_else(|| panic!("no {name} in\n{m}"));
    assert_eq!(count(r#"toolrag_searches_total{mode="hybrid"}"#), 2.0);
    assert_eq!(count(r#"toolrag_searches_total{mode="lexical"}"#), 3.0);
    assert_eq!(count(r#"toolrag_searches_total{mode="dense"}"#), 1.0);
    let navigate = count(r#"toolrag_search_decisions_total{decision="NAVIGATE"}"#);
    let abstain = count(r#"toolrag_search_decisions_total{decision="ABSTAIN"}"#);
    assert_eq!(navigate + abstain, 6.0);
    assert!(navigate >= 3.0 && abstain >= 1.0, "{m}");

    // The build: this version, the commit build.rs saw, the served model.
    let build = m
        .lines()
        .find(|l| l.starts_with("toolrag_build_info{"))
        .unwrap_or_else(|| panic!("no build info in\n{m}"));
    let model = s.get("/readyz");
    assert_eq!(model.json()["dense"], true);
    assert!(
        build.starts_with(&format!(
            r#"toolrag_build_info{{version="{}",commit="{}",model=""#,
            env!("CARGO_PKG_VERSION"),
            toolrag_http::COMMIT,
        )) && build.ends_with(" 1")
            && !build.contains(r#"model="none""#),
        "{build}"
    );

    // The process metrics, read from /proc.
    if cfg!(target_os = "linux") {
        assert!(count("process_resident_memory_bytes") > 1e6, "{m}");
        assert!(count("process_open_fds") >= 3.0, "{m}");
        assert!(count("process_cpu_seconds_total") > 0.0, "{m}");
        assert!(count("process_max_fds") >= count("process_open_fds"), "{m}");
        assert!(count("process_start_time_seconds") > 1.6e9, "{m}");
    }

    // Prometheus' linter over the real scrape: names, units, suffixes, help.
    let mut child = Command::new(promtool())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child.stdin.take().unwrap().write_all(m.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {:?}\n{said}\n{m}",
        out.status
    );
}
