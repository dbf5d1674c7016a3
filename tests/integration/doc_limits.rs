//! The top-level documents stay short enough to be read, not searched:
//! README.md is the front door, BENCHMARKS.md today's figures, and
//! ARCHITECTURE.md a paragraph per module. History goes to research/LOG.md.

use crate::common::root;

#[test]
fn the_top_level_documents_stay_within_their_line_limits() {
    let mut over = Vec::new();
    for (file, limit) in [
        ("README.md", 150),
        ("BENCHMARKS.md", 400),
        ("ARCHITECTURE.md", 450),
    ] {
        let n = std::fs::read_to_string(root().join(file))
            .unwrap()
            .lines()
            .count();
        if n > limit {
            over.push(format!(
                "{file}: {n} lines, over its {limit}; move history to research/LOG.md"
            ));
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}
