//! `toolrag index`: build and reopen, incremental reuse, killed builds, the
//! build lock, incompatible indexes and lexical-only mode (real model).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use predicates::prelude::*;
use toolrag::index::{BuildLock, Manifest};
use toolrag::search::{Mode, SearchConfig, SearchRequest, Searcher};

use crate::common::{embedder, shipped_tools, toolrag};

/// The namespaces of the small registry.
const SMALL_NAMESPACES: [&str; 3] = ["filesystem", "email", "time"];

/// Copies the small registry's namespace folders from `from` into `to`.
fn copy_namespaces(from: &Path, to: &Path) {
    for ns in SMALL_NAMESPACES {
        std::fs::create_dir(to.join(ns)).unwrap();
        for e in std::fs::read_dir(from.join(ns)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(ns).join(e.file_name())).unwrap();
        }
    }
}

/// A small registry: a copy of three namespaces of tools/, so a test may edit it.
fn small_registry() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_namespaces(&shipped_tools(), dir.path());
    dir
}

fn index(reg: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let o = toolrag()
        .arg("index")
        .arg(reg)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn open(out: &Path) -> Searcher {
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(crate::common::fresh_embedder());
    Searcher::open(out, Some(e), SearchConfig::default()).unwrap()
}

fn top(s: &Searcher, q: &str) -> String {
    let r = s
        .search(&SearchRequest {
            query: q.into(),
            k: 3,
            ..Default::default()
        })
        .unwrap();
    r.hits[0].id.clone()
}

#[test]
fn build_then_reopen_and_search() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let report = index(reg.path(), out.path(), &[]);
    assert_eq!(report["new"], report["tools"]);
    assert_eq!(report["lexicalOnly"], false);
    let s = open(out.path());
    assert!(s.has_dense());
    assert_eq!(s.tools().len(), report["tools"].as_u64().unwrap() as usize);
    assert!(s.manifest().model.as_ref().unwrap().dimension == 384);
    assert_eq!(
        top(&s, "show me what is inside /etc/hosts"),
        "filesystem/read_text_file"
    );
}

#[test]
fn rebuild_embeds_only_changed_tools() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let first = index(reg.path(), out.path(), &[]);
    let n = first["tools"].as_u64().unwrap();
    let again = index(reg.path(), out.path(), &[]);
    assert_eq!(
        (again["reused"].as_u64(), again["embeddedTexts"].as_u64()),
        (Some(n), Some(0))
    );

    // Change one tool's summary: only its document text is embedded again.
    let f = reg.path().join("time/get_current_time.toml");
    let text = std::fs::read_to_string(&f).unwrap();
    let changed = text.replacen("summary = \"", "summary = \"Tell the wall-clock time. ", 1);
    assert_ne!(text, changed);
    std::fs::write(&f, changed).unwrap();
    // Remove one tool and add a new one.
    std::fs::remove_file(reg.path().join("email/delete_email.toml")).unwrap();
    std::fs::write(
        reg.path().join("time/moon_phase.toml"),
        "name = \"moon_phase\"\nsummary = \"Give the phase of the moon on a date.\"\ndescription = \"Returns the lunar phase.\"\n",
    )
    .unwrap();
    let third = index(reg.path(), out.path(), &[]);
    assert_eq!(third["new"], 1);
    assert_eq!(third["changed"], 1);
    assert_eq!(third["removed"], 1);
    assert_eq!(third["reused"].as_u64(), Some(n - 2));
    // The changed tool's document and the new tool's document.
    assert_eq!(third["embeddedTexts"], 2);
    let s = open(out.path());
    assert!(s.tool("time/moon_phase").is_some());
    assert!(s.tool("email/delete_email").is_none());
}

#[test]
fn an_index_of_an_older_format_still_lends_its_vectors() {
    // Upgrading toolrag (a format bump) must not force re-embedding a registry.
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let first = index(reg.path(), out.path(), &[]);
    let gen = toolrag::index::current_generation(out.path()).unwrap();
    let path = gen.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["formatVersion"] = (toolrag::index::FORMAT_VERSION - 1).into();
    std::fs::write(&path, m.to_string()).unwrap();
    let again = index(reg.path(), out.path(), &[]);
    assert_eq!(again["embeddedTexts"], 0, "{again}");
    assert!(first["embeddedTexts"].as_u64().unwrap() > 0);
    // A damaged vectors file lends nothing: everything is embedded again.
    let gen = toolrag::index::current_generation(out.path()).unwrap();
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gen.join("manifest.json")).unwrap()).unwrap();
    m["formatVersion"] = (toolrag::index::FORMAT_VERSION - 1).into();
    std::fs::write(gen.join("manifest.json"), m.to_string()).unwrap();
    let vectors = gen.join("vectors.bin");
    let mut bytes = std::fs::read(&vectors).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&vectors, bytes).unwrap();
    let third = index(reg.path(), out.path(), &[]);
    assert_eq!(third["embeddedTexts"], first["embeddedTexts"], "{third}");
}

#[test]
fn the_same_registry_by_another_path_is_unchanged() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let first = index(reg.path(), out.path(), &[]);
    let n = first["tools"].as_u64().unwrap();
    // The same files in another folder (as when a checkout moves, or the
    // registry is given by an absolute instead of a relative path).
    let moved = tempfile::tempdir().unwrap();
    copy_namespaces(reg.path(), moved.path());
    let again = index(moved.path(), out.path(), &[]);
    assert_eq!(again["changed"], 0, "{again}");
    assert_eq!(again["reused"].as_u64(), Some(n));
    assert_eq!(again["embeddedTexts"], 0);
    // The index records where the tools are now.
    let s = open(out.path());
    let t = s.tool("time/get_current_time").unwrap();
    assert!(t.source.location.file.starts_with(moved.path()));
}

#[test]
fn summary_line_names_the_counts() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    toolrag()
        .arg("index")
        .arg(reg.path())
        .arg("--out")
        .arg(out.path())
        .assert()
        .success()
        .stderr(
            predicate::str::is_match(
                r"indexed \d+ tools: \d+ new, 0 changed, 0 removed, 0 reused in \d+\.\d s",
            )
            .unwrap(),
        );
}

fn current(out: &Path) -> String {
    std::fs::read_to_string(out.join("CURRENT")).unwrap()
}

#[test]
fn a_build_killed_before_publishing_leaves_the_old_index_intact() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    index(reg.path(), out.path(), &["--lexical-only"]);
    let before = current(out.path());
    std::fs::remove_file(reg.path().join("time/get_current_time.toml")).unwrap();
    let o = toolrag()
        .env("TOOLRAG_FAIL_AT", "before-publish")
        .arg("index")
        .arg(reg.path())
        .arg("--out")
        .arg(out.path())
        .arg("--lexical-only")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(current(out.path()), before);
    let s = Searcher::open(out.path(), None, SearchConfig::default()).unwrap();
    assert!(
        s.tool("time/get_current_time").is_some(),
        "the old generation is still live"
    );
    // The next build cleans the staging folder up and publishes.
    index(reg.path(), out.path(), &["--lexical-only"]);
    let stale: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".staging")
        })
        .collect();
    assert!(stale.is_empty(), "{stale:?}");
    assert_ne!(current(out.path()), before);
}

#[test]
fn a_build_killed_at_random_moments_never_breaks_the_live_index() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    index(reg.path(), out.path(), &["--lexical-only"]);
    // Kill real builds (with the model) at spread-out moments, SIGKILL.
    for delay_ms in [50u64, 300, 900, 1500] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("toolrag"))
            .current_dir(crate::common::root())
            .arg("index")
            .arg(reg.path())
            .arg("--out")
            .arg(out.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let s = Searcher::open(out.path(), None, SearchConfig::default())
            .unwrap_or_else(|e| panic!("after a kill at {delay_ms} ms: {e}"));
        let r = s
            .search(&SearchRequest {
                query: "read a file".into(),
                k: 3,
                mode: Mode::Lexical,
                ..Default::default()
            })
            .unwrap();
        assert!(!r.hits.is_empty());
    }
}

#[test]
fn a_second_concurrent_build_is_refused() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let _held = BuildLock::acquire(out.path()).unwrap();
    toolrag()
        .arg("index")
        .arg(reg.path())
        .arg("--out")
        .arg(out.path())
        .arg("--lexical-only")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("another build is writing into"));
}

#[test]
fn an_index_of_another_format_or_model_is_refused() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    index(reg.path(), out.path(), &[]);
    let gen = toolrag::index::current_generation(out.path()).unwrap();
    let path = gen.join("manifest.json");
    let original = std::fs::read_to_string(&path).unwrap();

    let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
    m["model"]["sha256"] = "0".repeat(64).into();
    std::fs::write(&path, m.to_string()).unwrap();
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(crate::common::fresh_embedder());
    let err = Searcher::open(out.path(), Some(e), SearchConfig::default()).unwrap_err();
    assert!(
        matches!(err, toolrag::Error::IncompatibleIndex { .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("sha256 000000000000") && msg.contains(&embedder().fingerprint()[..12]),
        "{msg}"
    );

    m["formatVersion"] = 999.into();
    std::fs::write(&path, m.to_string()).unwrap();
    let err = Manifest::read(&gen).unwrap_err().to_string();
    assert!(
        err.contains("index format 999")
            && err.contains(&format!("index format {}", toolrag::index::FORMAT_VERSION)),
        "{err}"
    );
    toolrag()
        .args(["query", "read a file", "--index"])
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("incompatible index"));
}

#[test]
fn lexical_only_index_works_and_says_so() {
    let reg = small_registry();
    let out = tempfile::tempdir().unwrap();
    let report = index(reg.path(), out.path(), &["--lexical-only"]);
    assert_eq!(report["lexicalOnly"], true);
    let gen = toolrag::index::current_generation(out.path()).unwrap();
    let m = Manifest::read(&gen).unwrap();
    assert!(m.lexical_only && m.model.is_none());
    assert!(!gen.join("vectors.bin").exists());
    toolrag()
        .args([
            "query",
            "read the text file /etc/hosts",
            "-k",
            "3",
            "--index",
        ])
        .arg(out.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("filesystem/read_text_file"))
        .stderr(predicate::str::contains("lexical-only").count(1));
}

use toolrag::embed::Embedder as _;

/// The fail points a build passed, in order (the hook is a plain `fn`).
static PASSED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn record_fail_point(name: &str) {
    PASSED.lock().unwrap().push(name.to_string());
}

#[test]
fn the_build_calls_the_callers_hooks_and_never_exits() {
    let reg = toolrag::registry::Registry::load(
        &[small_registry().path().to_path_buf()],
        &Default::default(),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut opts = toolrag::index::BuildOptions::new(out.path());
    opts.fail_point = Some(record_fail_point);
    let freed = std::sync::atomic::AtomicUsize::new(0);
    let progress = |p: toolrag::index::BuildProgress| {
        if let toolrag::index::BuildProgress::MemoryFreed = p {
            freed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let model = toolrag::index::BuildModel::Loaded(embedder());
    let report = toolrag::index::build(reg, Some(model), &opts, &progress).unwrap();
    assert!(report.generation.is_dir() && !report.graph);
    assert_eq!(
        *PASSED.lock().unwrap(),
        ["after-lexical", "after-vectors", "before-publish"]
    );
    assert_eq!(freed.load(std::sync::atomic::Ordering::Relaxed), 3);
}
