//! Hot reload: rebuilds under concurrent requests never fail a request nor mix two indexes; a broken generation is refused while the old one keeps serving.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::harness::{build_index, copy_dir, index_copy, Server};

#[test]
fn hot_reload_under_load_never_fails_nor_mixes_indexes() {
    // Two registries that answer one request differently: without the `time`
    // namespace (variant A) and with it (B, the template).
    let index = index_copy();
    let without_time = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for e in std::fs::read_dir(crate::common::shipped_tools()).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() && e.file_name() != "time" {
            copy_dir(&e.path(), &without_time.path().join(e.file_name()));
        }
    }
    let s = Arc::new(Server::start(index.path(), &[]));
    let first = s.generation();

    let stop = Arc::new(AtomicBool::new(false));
    let seen: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let failures = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (s, stop, seen, failures) = (s.clone(), stop.clone(), seen.clone(), failures.clone());
            std::thread::spawn(move || {
                let mode = ["hybrid", "lexical"][i % 2];
                let body = json!({"query": "what time is it in Tokyo", "namespaces": ["time"], "mode": mode}).to_string();
                while !stop.load(Ordering::Relaxed) {
                    let r = s.post_json("/v1/search", &body);
                    if r.status != 200 {
                        failures.fetch_add(1, Ordering::Relaxed);
                        eprintln!("failed: {} {}", r.status, r.body);
                        continue;
                    }
                    let gen = r.header("x-toolrag-generation").unwrap().to_string();
                    let n = r.json()["candidates"].as_array().unwrap().len();
                    seen.lock().unwrap().push((gen, n));
                }
            })
        })
        .collect();

    let mut without = vec![];
    for registry in [
        without_time.path(),
        &crate::common::shipped_tools(),
        without_time.path(),
    ] {
        std::thread::sleep(Duration::from_millis(300));
        build_index(registry, index.path());
        let gen = std::fs::read_to_string(index.path().join("CURRENT"))
            .unwrap()
            .trim()
            .to_string();
        s.wait_generation(&gen);
        if registry == without_time.path() {
            without.push(gen);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }

    assert_eq!(failures.load(Ordering::Relaxed), 0, "{}", s.stderr());
    let seen = seen.lock().unwrap();
    let gens: std::collections::BTreeSet<&str> = seen.iter().map(|(g, _)| g.as_str()).collect();
    assert!(gens.len() >= 3, "requests saw generations {gens:?}");
    for (gen, n) in seen.iter() {
        // Each answer comes whole from the generation its header names.
        if without.contains(gen) {
            assert_eq!(*n, 0, "{gen} has no time tools, yet answered {n}");
        } else {
            assert!(*n > 0, "{gen} has time tools, yet answered none");
        }
    }
    let m = s.get("/metrics").body;
    let last = s.generation();
    assert_ne!(last, first);
    let number: u64 = last.trim_start_matches("gen-").parse().unwrap();
    assert!(
        m.contains(&format!("toolrag_index_generation {number}\n")),
        "{m}"
    );
    assert!(
        m.contains(r#"toolrag_index_reloads_total{outcome="ok"} 3"#),
        "{m}"
    );
}

#[test]
fn a_broken_index_is_refused_and_the_old_one_keeps_serving() {
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let good = s.generation();
    let current = index.path().join("CURRENT");

    // A generation with a damaged manifest, then a CURRENT naming a missing one.
    let bad = index.path().join("gen-000099");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("manifest.json"), "{not json").unwrap();
    for (refused, name) in [(1, "gen-000099"), (2, "gen-000123")] {
        std::fs::write(index.path().join("CURRENT.tmp"), format!("{name}\n")).unwrap();
        std::fs::rename(index.path().join("CURRENT.tmp"), &current).unwrap();
        let counted = format!("toolrag_index_reloads_total{{outcome=\"error\"}} {refused}\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !s.get("/metrics").body.contains(&counted) {
            assert!(std::time::Instant::now() < deadline, "{name} never refused");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(s.generation(), good);
        let r = s.post_json("/v1/search", r#"{"query": "read a file"}"#);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.header("x-toolrag-generation"), Some(good.as_str()));
    }
    let log = s.stderr();
    assert!(log.contains("refusing the new index generation"), "{log}");
    assert!(log.contains("gen-000099"), "{log}");
    assert!(s
        .get("/metrics")
        .body
        .contains(r#"toolrag_index_reloads_total{outcome="error"} 2"#));

    // A good rebuild is picked up again.
    std::fs::write(&current, format!("{good}\n")).unwrap();
    build_index(&crate::common::shipped_tools(), index.path());
    s.wait_generation("gen-000100");
}

#[test]
fn a_complete_generation_with_a_damaged_file_is_refused_while_the_old_one_serves() {
    // Copies of the served generation, whole but for one damaged file each: a
    // truncated tools.json, then one flipped byte in each binary file the
    // searcher reads. Every reload must be refused, counted, logged with the
    // file's name, and the old generation must keep answering as before.
    let index = index_copy();
    let s = Server::start(index.path(), &[]);
    let good = s.generation();
    let before = s
        .post_json("/v1/search", r#"{"query": "read a file", "k": 3}"#)
        .json();
    let flip = |path: &std::path::Path| {
        let mut bytes = std::fs::read(path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x5a;
        std::fs::write(path, bytes).unwrap();
    };
    let truncate = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    };
    type Damage<'a> = (&'a str, &'a dyn Fn(&std::path::Path));
    let damages: [Damage; 3] = [
        ("tools.json", &truncate),
        ("vectors.bin", &flip),
        ("impacts.bin", &flip),
    ];
    for (n, (file, damage)) in damages.iter().enumerate() {
        let name = format!("gen-0000{}", 77 + n);
        let bad = index.path().join(&name);
        copy_dir(&index.path().join(&good), &bad);
        damage(&bad.join(file));
        std::fs::write(index.path().join("CURRENT.tmp"), format!("{name}\n")).unwrap();
        std::fs::rename(
            index.path().join("CURRENT.tmp"),
            index.path().join("CURRENT"),
        )
        .unwrap();

        let counted = format!(
            "toolrag_index_reloads_total{{outcome=\"error\"}} {}\n",
            n + 1
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !s.get("/metrics").body.contains(&counted) {
            assert!(
                std::time::Instant::now() < deadline,
                "{file}: never refused: {}",
                s.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = s.post_json("/v1/search", r#"{"query": "read a file", "k": 3}"#);
        assert_eq!(r.status, 200, "{file}: {}", r.body);
        assert_eq!(r.header("x-toolrag-generation"), Some(good.as_str()));
        assert_eq!(
            r.json(),
            before,
            "{file}: the old generation answers as before"
        );
        assert_eq!(s.get("/readyz").json()["generation"], good.as_str());
        let m = s.get("/metrics").body;
        assert!(
            m.contains(r#"toolrag_index_reloads_total{outcome="ok"} 0"#),
            "{file}: {m}"
        );
        let log = s.stderr();
        assert!(log.contains("refusing the new index generation"), "{log}");
        assert!(
            log.contains(&format!("{name}/{file}")),
            "the refusal names the file {file}: {log}"
        );
    }
    super::no_server_errors(&s);
}
