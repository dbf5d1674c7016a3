//! Small text measures shared by rules: the description a model sees, word and
//! token counts, and whether prose shows an example value.

use std::sync::LazyLock;

use regex::Regex;

use toolrag_core::registry::ToolDef;
use toolrag_embed::TokenCounter;

/// The description as a model reads it: the summary, then the description
/// when it adds to it. For free-text formats the raw docstring, sections
/// included, is what the model is shown.
pub(crate) fn visible_description(tool: &ToolDef) -> String {
    if let Some(raw) = &tool.source.raw_description {
        return raw.trim().to_string();
    }
    prose(tool)
}

/// Summary and description prose without docstring sections.
pub(crate) fn prose(tool: &ToolDef) -> String {
    let summary = tool.summary.trim();
    let description = tool.description.trim();
    if description.is_empty() || description == summary {
        summary.to_string()
    } else if summary.is_empty() || description.starts_with(summary) {
        description.to_string()
    } else {
        format!("{summary} {description}")
    }
}

/// The words of `text`: runs of letters and digits that hold a letter.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| w.chars().any(char::is_alphabetic))
}

/// Counts tokens with the model's tokenizer, or estimates them without it: one
/// token per punctuation mark and per started 4 characters of a word, which
/// is close to WordPiece on English prose and errs high on identifiers.
pub(crate) fn count_tokens(text: &str, counter: Option<&TokenCounter>) -> usize {
    if let Some(c) = counter {
        return c.count(text);
    }
    let mut n = 0;
    for chunk in text.split_whitespace() {
        let mut run = 0usize;
        for ch in chunk.chars() {
            if ch.is_alphanumeric() {
                run += 1;
            } else {
                n += run.div_ceil(4) + 1;
                run = 0;
            }
        }
        n += run.div_ceil(4);
    }
    n
}

static INLINE_EXAMPLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?ix)
        \b(e\.g\.|eg\.|i\.e\.|for\ example|for\ instance|such\ as|like|format|formatted)[\s:] # a worked example
        | \b(yyyy|mm/dd|dd/mm|hh:mm|iso[\ -]?8601|rfc[\ -]?3339|rfc[\ -]?5322|uuid|unix\ time|epoch)\b
        | '[^'\s][^']{0,60}' | "[^"\s][^"]{0,60}" | `[^`]+`     # a quoted value
        | https?://                                              # a literal URL
        | \(\s*\d[\w.:/-]*\s*\)                                  # a value in brackets, like (42)
        "#,
    )
    .expect("valid regex")
});

/// Whether prose shows what a value looks like: an example, a named standard
/// format, or a quoted value.
pub(crate) fn shows_example(text: &str) -> bool {
    INLINE_EXAMPLE.is_match(text)
}

static PROSE_EXAMPLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?imx)
        \be\.\ ?g\.                                    # e.g. / e. g.
        | \bfor\ (example|instance)\b
        | (^|[\s.:;(-])(examples?|usage)\s*:           # Example: / Examples: / Usage:
        | \blike\s+['"`][^'"`\s]                       # a quoted value after "like"
        | \b(call|pass|set|with)\s+(\w+\s+)?`?[a-z]\w*\s?=\s?[\w'"`\[{]  # an argument in use: pass force=true
        | \b[a-z]\w*\(\s*(['"`{\[]|[a-z]\w*\s*=)        # a quoted call: read_file("/etc/hosts")
        "#,
    )
    .expect("valid regex")
});

static PROSE_EDGE_CASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?imx)
        # a condition that names something missing, failing or out of range: if the file does not exist
        \b(if|when|unless)\s+[^.;:!?]{0,80}?\b(not|no|never|already|exists?|missing|unavailable|fails?|failed|empty|invalid|cannot|can't|doesn't|isn't|aren't|too\ (large|long|many|big)|exceeds?|truncated|blocked)\b
        # a failure with its condition: fails if, raises when, returns an error when
        | \b(fails?|raises|throws|errors?\ out)\s+([^.;:!?]{0,40}\s)?(if|when|unless|on)\b
        | \breturns?\s+(an?\s+|a\ clear\s+)?([\w-]+\s+){0,2}(error|empty|null|none|nothing|false)\b[^.;!?]{0,80}\b(if|when|unless|on)\b
        # a partial failure: failed reads for individual files won't stop the operation
        | \b(failed|failures?|errors?)\s+(\w+\s+){0,5}(won't|will\ not|do\ not|does\ not|don't|doesn't)\s+(stop|abort|fail|cancel)
        # what happens to an existing target: overwrites existing files; updates the existing watch
        | \b(overwrites?|overwritten)\s+(an?\s+|any\s+|the\s+)?existing\b
        | \b(updates?|replaces?|reuses?)\s+the\s+existing\b
        # an empty result stated
        | \b(may|can|might)\ be\ empty\b
        # limits that are handled: rate limits return status=rate_limited; 429s are retried
        | \b(rate[-\ ]limit(s|ed)?|timeouts?|[45]\d\d)\b[^.;!?]{0,60}\b(return(s|ed)?|retr(y|ies|ied)|fail(s|ed)?)\b
        # a docstring section for failures
        | (^|\n)\s*(raises|errors|throws|exceptions)\s*:
        "#,
    )
    .expect("valid regex")
});

/// Whether a description shows an example in prose: `Example:`, `e.g.`,
/// "for example", a quoted value after "like", an argument in use ("pass
/// `force=true`") or a quoted call (`read_file("/etc/hosts")`). MCP has no
/// field for examples, so this is where real servers put them.
pub(crate) fn prose_shows_example(text: &str) -> bool {
    PROSE_EXAMPLE.is_match(text)
}

/// Whether a description states an edge case with its behaviour in prose:
/// "If the file does not exist, …", "Returns an error when …", "Fails if …",
/// "will overwrite existing files", "Failed reads … won't stop the operation",
/// or a `Raises:` section.
pub(crate) fn prose_states_edge_case(text: &str) -> bool {
    PROSE_EDGE_CASE.is_match(text)
}

static PROSE_BOUNDARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:use\s+(?:the\s+)?([`'\x22]?[\w./:-]+[`'\x22]?)(?:\s+tool)?\s+instead|instead,?\s+use\s+([`'\x22]?[\w./:-]+)|prefer\s+([`'\x22]?[\w./:-]+)|unlike\s+([`'\x22]?[\w./:-]+)|see\s+(?:also:?\s+)?([`'\x22]?[\w./:-]+))",
    )
    .expect("valid regex")
});

/// The tool names prose points to as a boundary: "use X instead", "instead
/// use X", "prefer X", "unlike X", "see X" / "see also X". Each is a
/// candidate: the caller keeps those that name a tool of the registry.
pub(crate) fn prose_boundary_targets(text: &str) -> Vec<&str> {
    PROSE_BOUNDARY
        .captures_iter(text)
        .filter_map(|c| c.iter().skip(1).flatten().next())
        .map(|m| {
            m.as_str()
                .trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | '.' | ':' | ','))
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// `n` and the noun, singular for one: `1 example`, `2 examples`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Cuts `s` to at most `max` characters, marking the cut with `…`.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_estimate_is_in_the_right_range() {
        assert_eq!(count_tokens("Read a file.", None), 4);
        assert!(count_tokens("getHTTPResponseCode", None) >= 4);
    }

    #[test]
    fn inline_examples_are_seen() {
        assert!(shows_example("Date in YYYY-MM-DD"));
        assert!(shows_example("The city, e.g. Paris"));
        assert!(shows_example("the id 'C024BE91L'"));
        assert!(!shows_example("The date of the meeting."));
        assert!(!shows_example("The user's id."));
    }

    #[test]
    fn prose_recognisers_on_hand_labelled_descriptions() {
        // tests/fixtures/lint/recognisers/README.md says how these were labelled.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/lint/recognisers/labels.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        // (set, recogniser) -> [true positives, false positives, false negatives]
        let mut counts: std::collections::BTreeMap<(String, &str), [usize; 3]> = Default::default();
        for line in text.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let description = row["description"].as_str().unwrap();
            let set = row["set"].as_str().unwrap();
            let set = if set == "bfcl-held-out" { set } else { "mcp" };
            for (name, label, predicted) in [
                (
                    "example",
                    row["example"].as_bool().unwrap(),
                    prose_shows_example(description),
                ),
                (
                    "edgeCase",
                    row["edgeCase"].as_bool().unwrap(),
                    prose_states_edge_case(description),
                ),
            ] {
                let c = counts.entry((set.to_string(), name)).or_default();
                match (label, predicted) {
                    (true, true) => c[0] += 1,
                    (false, true) => c[1] += 1,
                    (true, false) => c[2] += 1,
                    (false, false) => {}
                }
            }
        }
        for ((set, name), [tp, fp, fn_]) in &counts {
            let precision = *tp as f64 / (tp + fp).max(1) as f64;
            let recall = *tp as f64 / (tp + fn_).max(1) as f64;
            println!(
                "{set:14} {name:9} labelled {:3} found {:3} precision {precision:.2} recall {recall:.2}",
                tp + fn_,
                tp + fp
            );
            assert!(precision >= 0.9, "{set} {name}: precision {precision:.2}");
            assert!(recall >= 0.5, "{set} {name}: recall {recall:.2}");
        }
        let mcp = |name| counts[&("mcp".to_string(), name)];
        assert!(
            mcp("example")[0] >= 11 && mcp("edgeCase")[0] >= 17,
            "{counts:?}"
        );
    }

    #[test]
    fn prose_boundaries_name_their_targets() {
        assert_eq!(
            prose_boundary_targets("Read a file. DEPRECATED: Use read_text_file instead."),
            ["read_text_file"]
        );
        assert_eq!(
            prose_boundary_targets("Prefer `grep_content` for text; unlike search_files, it reads files. See also: git_log."),
            ["grep_content", "search_files", "git_log"]
        );
        assert!(prose_boundary_targets("Use this tool when you need it.").is_empty());
    }

    #[test]
    fn prose_recognisers_read_the_forms_real_servers_use() {
        for yes in [
            "Example: get_weather(city=\"Paris\")",
            "The city, e.g. Paris.",
            "For example, 'attention mechanisms'.",
            "Use pattern like '*.ext' to match files.",
            "Call again with start=next_start to continue.",
        ] {
            assert!(prose_shows_example(yes), "{yes}");
        }
        for no in [
            "Read the complete contents of a file.",
            "Use the 'head' parameter to read only the first N lines.",
            "Get logs from resources like pods or jobs.",
        ] {
            assert!(!prose_shows_example(no), "{no}");
        }
        for yes in [
            "If the file does not exist, an empty string is returned.",
            "Returns an error when the path is a directory.",
            "Fails if the branch exists.",
            "If the destination exists, the operation will fail.",
            "Failed reads for individual files won't stop the entire operation.",
            "It will overwrite existing files without warning.",
        ] {
            assert!(prose_states_edge_case(yes), "{yes}");
        }
        for no in [
            "If provided, returns only the last N lines of the file.",
            "Update an existing issue.",
            "The file must exist.",
            "Only works within allowed directories.",
        ] {
            assert!(!prose_states_edge_case(no), "{no}");
        }
    }
}
