//! Damaged generations: every file of a generation is checksummed at build
//! time and verified when it is opened, so a flipped or truncated byte in any
//! binary file is refused with an error naming the file — never a panic,
//! never an answer. Also: versioned headers, and the HNSW graph written only
//! when asked for (real model, the shipped `tools/` registry).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use toolrag::index::{build, current_generation, BuildModel, BuildOptions, Manifest};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{Mode, SearchConfig, SearchRequest, Searcher};

use crate::common::{embedder, shipped_tools, toolrag};

/// An index of tools/ built with the real model: `graph` forces the HNSW
/// graph (threshold 0), otherwise the default (no graph at this size).
fn build_index(graph: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::load(&[shipped_tools()], &LoadOptions::default()).unwrap();
    let mut opts = BuildOptions::new(dir.path());
    if graph {
        opts.graph_min_points = 0;
    }
    let report = build(reg, Some(BuildModel::Loaded(embedder())), &opts, &|_| {}).unwrap();
    assert_eq!(report.graph, graph);
    dir
}

fn plain_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| build_index(false)).path()
}

fn graph_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| build_index(true)).path()
}

/// A copy of the index folder `from`, to damage.
fn copy_index(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.path().join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
    to
}

/// The binary files of the live generation of `index` (relative paths).
fn binary_files(index: &Path) -> Vec<String> {
    let gen = current_generation(index).unwrap();
    let m = Manifest::read(&gen).unwrap();
    m.files
        .iter()
        .map(|f| f.path.clone())
        .filter(|p| p != "tools.json")
        .collect()
}

fn open(index: &Path) -> toolrag::Result<Searcher> {
    let e: Arc<dyn toolrag::embed::Embedder> = Arc::new(crate::common::fresh_embedder());
    Searcher::open(index, Some(e), SearchConfig::default())
}

/// `toolrag query` on a damaged index: exit 2, the file named, no panic, no
/// answer.
fn assert_refused(index: &Path, rel: &str, how: &str) {
    let o = toolrag()
        .args(["query", "read a text file", "--index"])
        .arg(index)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{rel} {how}: {stderr}");
    assert!(
        stderr.contains(rel) && stderr.contains("damaged"),
        "{rel} {how}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{rel} {how}: {stderr}");
    assert!(o.stdout.is_empty(), "{rel} {how}: an answer was printed");
}

/// Flips one byte in the middle of each file and truncates it, one copy each.
fn damage_each(index: &Path, files: &[String]) {
    assert!(!files.is_empty());
    for rel in files {
        for how in ["flipped", "truncated"] {
            let copy = copy_index(index);
            let gen = current_generation(copy.path()).unwrap();
            let path = gen.join(rel);
            let mut bytes = std::fs::read(&path).unwrap();
            if how == "flipped" {
                assert!(!bytes.is_empty(), "{rel} is empty");
                let at = bytes.len() / 2;
                bytes[at] ^= 0x5a;
            } else {
                bytes.truncate(bytes.len() / 2);
            }
            std::fs::write(&path, &bytes).unwrap();
            assert_refused(copy.path(), rel, how);
            if how == "flipped" {
                // The library refuses it too, as `Corrupt` naming the file.
                match open(copy.path()) {
                    Err(toolrag::Error::Corrupt { path: p, .. }) => assert_eq!(p, path),
                    Err(e) => panic!("{rel}: {e}"),
                    Ok(_) => panic!("{rel}: a damaged generation opened"),
                }
            }
        }
    }
}

#[test]
fn a_damaged_file_of_a_generation_is_refused_naming_it() {
    let files = binary_files(plain_index());
    for must in ["vectors.bin", "impacts.bin", "lexical/meta.json"] {
        assert!(files.iter().any(|f| f == must), "{must} in {files:?}");
    }
    assert!(files.iter().filter(|f| f.starts_with("lexical/")).count() > 3);
    damage_each(plain_index(), &files);
}

#[test]
fn a_damaged_graph_file_is_refused_naming_it() {
    let graph: Vec<String> = binary_files(graph_index())
        .into_iter()
        .filter(|f| f.starts_with("dense.hnsw."))
        .collect();
    assert_eq!(graph, ["dense.hnsw.data", "dense.hnsw.graph"]);
    damage_each(graph_index(), &graph);
}

#[test]
fn a_missing_file_is_refused_naming_it() {
    let copy = copy_index(plain_index());
    let gen = current_generation(copy.path()).unwrap();
    std::fs::remove_file(gen.join("impacts.bin")).unwrap();
    assert_refused(copy.path(), "impacts.bin", "removed");
    match open(copy.path()) {
        Err(toolrag::Error::Corrupt { path, reason }) => {
            assert_eq!(path, gen.join("impacts.bin"));
            assert!(reason.contains("missing"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Rewrites the manifest's entry of `rel` to the file as it now is, so that
/// only the file's own checks can catch it.
fn reseal(gen: &Path, rel: &str) {
    let path = gen.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let bytes = std::fs::read(gen.join(rel)).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["path"] == rel {
            f["size"] = bytes.len().into();
            f["crc32"] = crc32fast::hash(&bytes).into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
}

#[test]
fn a_vector_file_of_another_version_is_refused_as_incompatible() {
    let copy = copy_index(plain_index());
    let gen = current_generation(copy.path()).unwrap();
    let path = gen.join("vectors.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"TRVECTOR");
    bytes[8..12].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    reseal(&gen, "vectors.bin");
    let err = open(copy.path()).unwrap_err();
    assert!(
        matches!(err, toolrag::Error::IncompatibleIndex { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("vectors.bin format 7"), "{err}");

    // A payload length that disagrees with the file is damage.
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    bytes[16] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&gen, "vectors.bin");
    let err = open(copy.path()).unwrap_err();
    assert!(matches!(err, toolrag::Error::Corrupt { .. }), "{err}");
}

#[test]
fn the_manifest_lists_every_file_and_a_small_build_writes_no_graph() {
    let gen = current_generation(plain_index()).unwrap();
    let m = Manifest::read(&gen).unwrap();
    assert!(!m.graph);
    let mut on_disk: Vec<String> = walkdir::WalkDir::new(&gen)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel: PathBuf = e.path().strip_prefix(&gen).unwrap().into();
            rel.to_string_lossy().replace('\\', "/")
        })
        .filter(|p| p != "manifest.json" && !p.ends_with(".lock"))
        .collect();
    on_disk.sort();
    let listed: Vec<String> = m.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(listed, on_disk);
    assert!(
        !on_disk.iter().any(|p| p.starts_with("dense.hnsw")),
        "{on_disk:?}"
    );

    let gen = current_generation(graph_index()).unwrap();
    let m = Manifest::read(&gen).unwrap();
    assert!(m.graph);
    assert!(gen.join("dense.hnsw.graph").is_file() && gen.join("dense.hnsw.data").is_file());
}

/// The golden requests' queries, a spread of them.
fn golden_queries() -> Vec<String> {
    let text =
        std::fs::read_to_string(crate::common::root().join("tests/golden/tools-queries.jsonl"))
            .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .step_by(10)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["query"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn a_graph_forced_on_a_small_index_answers_as_the_exact_scan() {
    let exact = open(plain_index()).unwrap();
    let graph = open(graph_index()).unwrap();
    let queries = golden_queries();
    assert!(queries.len() >= 10);
    for q in &queries {
        for mode in [Mode::Dense, Mode::Hybrid] {
            let top5 = |s: &Searcher| -> Vec<(String, String)> {
                let req = SearchRequest {
                    query: q.clone(),
                    k: 5,
                    mode,
                    ..Default::default()
                };
                s.search(&req)
                    .unwrap()
                    .hits
                    .iter()
                    .map(|h| (h.id.clone(), format!("{:.4}", h.score)))
                    .collect()
            };
            assert_eq!(top5(&graph), top5(&exact), "{mode} {q}");
        }
    }
}

#[test]
fn a_damaged_previous_generation_lends_no_vectors() {
    let copy = copy_index(plain_index());
    let gen = current_generation(copy.path()).unwrap();
    let path = gen.join("vectors.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let build_again = || {
        let reg = Registry::load(&[shipped_tools()], &LoadOptions::default()).unwrap();
        let opts = BuildOptions::new(copy.path());
        build(reg, Some(BuildModel::Loaded(embedder())), &opts, &|_| {}).unwrap()
    };
    let report = build_again();
    assert_eq!(report.reused_texts, 0, "{report:?}");
    assert!(report.embedded_texts > 0);
    // The new generation verifies, and lends all its vectors to the next.
    let report = build_again();
    assert_eq!(report.embedded_texts, 0, "{report:?}");
    assert!(report.reused_texts > 0);
}

/// Under `toolrag serve`, every damaged graph generation is refused by the
/// reload thread, which lives on: the old generation keeps answering, every
/// refusal is counted, and the next good generation is picked up. Damage the
/// checksums see (a truncated or flipped file), and damage that matches a
/// rewritten manifest (`reseal`), which only the loader's own checks and
/// `catch_unwind` stand in front of: a truncated `dense.hnsw.data` made
/// hnsw_rs exit the process, a truncated `dense.hnsw.graph` made it panic.
#[test]
fn a_served_index_survives_every_damaged_graph_and_takes_the_next_good_one() {
    use crate::server::harness::{copy_dir, index_copy, Server};
    use std::time::{Duration, Instant};

    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let good = s.generation();
    let graph_gen = current_generation(graph_index()).unwrap();
    let swap_to = |name: &str| {
        std::fs::write(index.path().join("CURRENT.tmp"), format!("{name}\n")).unwrap();
        std::fs::rename(
            index.path().join("CURRENT.tmp"),
            index.path().join("CURRENT"),
        )
        .unwrap();
    };
    let wait_metric = |line: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !s.get("/metrics").body.contains(line) {
            assert!(
                Instant::now() < deadline,
                "never saw {line}: {}",
                s.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let cases: [(&str, &str, bool); 6] = [
        ("dense.hnsw.graph", "truncated", false),
        ("dense.hnsw.graph", "flipped", false),
        ("dense.hnsw.data", "truncated", false),
        ("dense.hnsw.data", "flipped", false),
        ("dense.hnsw.graph", "truncated", true),
        ("dense.hnsw.data", "truncated", true),
    ];
    for (n, (file, how, resealed)) in cases.iter().enumerate() {
        let name = format!("gen-0000{}", 60 + n);
        let gen = index.path().join(&name);
        copy_dir(&graph_gen, &gen);
        let path = gen.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        if *how == "flipped" {
            let at = bytes.len() / 2;
            bytes[at] ^= 0x5a;
        } else {
            bytes.truncate(bytes.len() / 2);
        }
        std::fs::write(&path, &bytes).unwrap();
        if *resealed {
            reseal(&gen, file);
        }
        swap_to(&name);
        wait_metric(&format!(
            "toolrag_index_reloads_total{{outcome=\"error\"}} {}\n",
            n + 1
        ));
        let r = s.post_json("/v1/search", r#"{"query": "read a file", "k": 3}"#);
        assert_eq!(r.status, 200, "{file} {how}: {}", r.body);
        assert_eq!(r.header("x-toolrag-generation"), Some(good.as_str()));
        let log = s.stderr();
        assert!(
            log.contains(&format!("{name}/{file}")),
            "{file} {how}: {log}"
        );
    }
    // The reload thread is alive: a good graph generation is served.
    copy_dir(&graph_gen, &index.path().join("gen-000090"));
    swap_to("gen-000090");
    s.wait_generation("gen-000090");
    wait_metric("toolrag_index_reloads_total{outcome=\"ok\"} 1\n");
    let r = s.post_json(
        "/v1/search",
        r#"{"query": "read a file", "k": 3, "mode": "dense"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("x-toolrag-generation"), Some("gen-000090"));
}
