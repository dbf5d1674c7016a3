use super::*;

#[test]
fn a_write_failure_is_a_failed_build_not_a_damaged_index() {
    let out = Path::new("/srv/index");
    let full = Error::io(
        "/srv/index/.staging-1/vectors.bin",
        std::io::Error::from_raw_os_error(28),
    );
    let e = build_failed(out, full);
    assert!(
        matches!(
            e,
            Error::BuildFailed {
                disk_full: true,
                ..
            }
        ),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(m.contains("the index build failed"), "{m}");
    assert!(m.contains("The disk is full"), "{m}");
    assert!(m.contains("vectors.bin"), "{m}");
    assert!(
        m.contains("live generation") && m.contains("untouched"),
        "{m}"
    );
    assert!(!m.contains("damaged"), "{m}");

    // tantivy's I/O error of a full disk, by its kind, not its text.
    let enospc = std::io::Error::from_raw_os_error(28);
    let e = build_failed(
        out,
        crate::index::lexical::terr(tantivy::TantivyError::from(enospc)),
    );
    assert!(e.to_string().contains("The disk is full"), "{e}");
    // A damaged index that happens to mention it is not a full disk.
    let e = build_failed(out, Error::Index("No space left on device".into()));
    assert!(!e.to_string().contains("The disk is full"), "{e}");

    // Other errors keep their own words.
    let e = build_failed(out, Error::Embed("the model failed".into()));
    assert!(matches!(e, Error::Embed(_)));
    let e = build_failed(out, Error::io("/x", std::io::Error::other("boom")));
    let m = e.to_string();
    assert!(m.contains("boom") && !m.contains("disk is full"), "{m}");
}

/// An embedder that needs no model: every text is the same unit vector.
struct Flat;

impl Embedder for Flat {
    fn model_id(&self) -> &str {
        "flat"
    }
    fn dimension(&self) -> usize {
        4
    }
    fn fingerprint(&self) -> &str {
        "flat"
    }
    fn embed_query(&self, _text: &str) -> Result<Vec<f32>> {
        Ok(vec![0.5; 4])
    }
    fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(vec![vec![0.5; 4]; texts.len()])
    }
}

fn registry_of(n: usize) -> Registry {
    let tools = (0..n)
        .map(|i| {
            let mut t = toolrag_core::registry::test_tool("t", &format!("tool_{i}"));
            t.description = format!("Does thing number {i}.");
            t
        })
        .collect();
    Registry::from_tools(tools).unwrap()
}

#[test]
fn a_cancelled_build_publishes_nothing_and_leaves_nothing_staged() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ix");
    let mut opts = BuildOptions::new(&out);
    let first = build(
        registry_of(3),
        Some(BuildModel::Loaded(&Flat)),
        &opts,
        &|_| {},
    )
    .unwrap();
    let live = std::fs::read_to_string(out.join("CURRENT")).unwrap();

    // Cancelled while embedding: the first chunk done sets the flag.
    let cancel = Arc::new(AtomicBool::new(false));
    opts.cancel = Some(Arc::clone(&cancel));
    let on_progress = |p: BuildProgress| {
        if matches!(p, BuildProgress::Embedded { .. }) {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let chunks = 4 * toolrag_embed::EMBED_CHUNK;
    let e = build(
        registry_of(chunks),
        Some(BuildModel::Loaded(&Flat)),
        &opts,
        &on_progress,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Cancelled { .. }), "{e:?}");
    assert!(e.to_string().contains("nothing was published"), "{e}");
    assert_eq!(std::fs::read_to_string(out.join("CURRENT")).unwrap(), live);
    let dirs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(dirs, vec![first.generation.file_name().unwrap().to_owned()]);

    // Cancelled before it starts (lexical-only too).
    let e = build(registry_of(3), None, &opts, &|_| {}).unwrap_err();
    assert!(matches!(e, Error::Cancelled { .. }), "{e:?}");
}

#[test]
fn a_file_as_the_index_folder_is_refused_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.json");
    std::fs::write(&file, "{}").unwrap();
    let e = build(registry_of(1), None, &BuildOptions::new(&file), &|_| {}).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("is a file: an index is a folder"), "{m}");
    assert!(!m.contains("live generation"), "{m}");
    let e = current_generation(&file).unwrap_err();
    assert!(e.to_string().contains("is a file"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}
