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
