//! Deprecation, read at load time from what a tool says of itself: its text
//! ("DEPRECATED: Use read_text_file instead.", "This tool is deprecated",
//! "Read File (Deprecated)") or an explicit MCP flag (`annotations.deprecated`,
//! `_meta.deprecated`), with the replacement it names when it names one.
//!
//! The text rules are deliberately narrow: the word has to be a marker (a
//! sentence or line that opens with it, a bracketed `(Deprecated)`, an
//! all-caps `DEPRECATED` followed by punctuation, or "this tool is
//! deprecated"), so a tool that merely talks about deprecated things
//! ("Lists deprecated packages") is not deprecated itself.

use std::sync::LazyLock;

use regex::Regex;

use super::model::Deprecation;

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid regex")
}

/// The markers that make a text say that its tool is deprecated.
static MARKERS: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    [
        // A sentence, clause or line that opens with the word, followed by
        // punctuation, the end, or a phrase that only a deprecation uses.
        regex(
            r"(?im)(?:^|[.!?;]\s+)[\s*_#>\[(-]*deprecated(?:\s*(?:[:.!\])\-–—,;*_]|$)|\s+(?:since|as\s+of|in\s+favou?r\s+of|and\s+(?:will|may|is\s+scheduled)))",
        ),
        // An all-caps marker anywhere, followed by punctuation or the end.
        regex(r"(?m)(?:^|[^A-Za-z0-9_])DEPRECATED\s*(?:[:.!\])\-–—,;*]|$)"),
        // `(Deprecated)`, `[deprecated]`.
        regex(r"(?i)[\[(]\s*deprecated\s*[\])]"),
        // "This tool is deprecated", "This is deprecated".
        regex(
            r"(?im)\bthis\s+(?:tool|function|command|endpoint|method|operation|api|action|call)\s+(?:is|has\s+been|was)\s+(?:now\s+|being\s+|officially\s+)?deprecated\b|(?:^|[.!?;]\s+)this\s+is\s+(?:now\s+)?deprecated\b",
        ),
    ]
});

/// A name as a deprecation notice writes it: a bare name, an id or a handle,
/// optionally quoted or in backticks.
const NAME: &str = r#"[`"'“‘]?((?:tool://)?[A-Za-z0-9_][A-Za-z0-9_./:\-]*)"#;

/// The phrases that name a replacement; group 1 is the name.
static REPLACEMENTS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    [
        regex(&format!(
            r#"(?i)\buse\s+(?:the\s+)?{NAME}[`"'”’]?(?:\s+tool)?\s+instead\b"#
        )),
        regex(&format!(
            r"(?i)\binstead,?\s+(?:please\s+)?use\s+(?:the\s+)?{NAME}"
        )),
        regex(&format!(
            r"(?i)\b(?:superseded|replaced)\s+by\s+(?:the\s+)?{NAME}"
        )),
        regex(&format!(
            r"(?i)\b(?:in\s+favou?r\s+of|migrate\s+to|switch\s+to)\s+(?:the\s+)?{NAME}"
        )),
        regex(&format!(
            r"(?i)\bdeprecated\b[\s:.;,)\]*\-–—]*(?:please\s+)?use\s+(?:the\s+)?{NAME}"
        )),
    ]
});

/// Words that the replacement phrases can catch but that name no tool.
const NOT_A_NAME: [&str; 14] = [
    "a", "an", "another", "instead", "it", "new", "newer", "one", "other", "that", "the", "them",
    "these", "this",
];

/// The deprecation of a tool, from its texts (description first, then
/// summary and title) and an explicit flag: `Some("")` for
/// `deprecated: true`, `Some(text)` for a flag that is a string (read for
/// the replacement too), `None` when there is no flag. `None` when nothing
/// says that the tool is deprecated.
pub(crate) fn detect(texts: &[&str], flag: Option<&str>) -> Option<Deprecation> {
    let marker = texts
        .iter()
        .enumerate()
        .find_map(|(i, t)| marker_at(t).map(|at| (i, at)));
    if marker.is_none() && flag.is_none() {
        return None;
    }
    // The replacement named next to the marker wins over one named elsewhere
    // ("For images use read_media_file instead. DEPRECATED: use X instead.").
    let replacement = flag
        .and_then(replacement_in_flag)
        .or_else(|| marker.and_then(|(i, at)| replacement_in(&texts[i][at..])))
        .or_else(|| texts.iter().find_map(|t| replacement_in(t)));
    Some(Deprecation {
        replacement,
        replacement_id: None,
    })
}

/// Where the first deprecation marker of `text` starts, if it has one.
fn marker_at(text: &str) -> Option<usize> {
    MARKERS
        .iter()
        .filter_map(|re| re.find(text).map(|m| m.start()))
        .min()
}

/// The first replacement that `text` names, as written.
fn replacement_in(text: &str) -> Option<String> {
    let mut found: Vec<(usize, String)> = REPLACEMENTS
        .iter()
        .flat_map(|re| re.captures_iter(text))
        .filter_map(|c| {
            let m = c.get(1)?;
            Some((m.start(), tidy(m.as_str())?))
        })
        .collect();
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().next().map(|(_, name)| name)
}

/// A flag's text: a phrase naming the replacement, or the replacement alone.
fn replacement_in_flag(flag: &str) -> Option<String> {
    let flag = flag.trim();
    if flag.is_empty() {
        return None;
    }
    replacement_in(flag).or_else(|| {
        let bare = !flag.contains(char::is_whitespace);
        if bare {
            tidy(flag)
        } else {
            None
        }
    })
}

/// The name without trailing punctuation, unless it is no name at all.
fn tidy(name: &str) -> Option<String> {
    let name = name
        .trim_matches(|c| matches!(c, '`' | '"' | '\'' | '“' | '”' | '‘' | '’'))
        .trim_end_matches(['.', ',', ':', ';', '-', '/']);
    let name = name.strip_suffix("'s").unwrap_or(name);
    if name.is_empty() || NOT_A_NAME.contains(&name.to_ascii_lowercase().as_str()) {
        return None;
    }
    Some(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replacement_of(text: &str) -> Option<Option<String>> {
        detect(&[text], None).map(|d| d.replacement)
    }

    #[test]
    fn deprecation_notices_are_found_with_their_replacement() {
        let cases = [
            (
                "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
                Some("read_text_file"),
            ),
            ("Deprecated: use `git_log` instead.", Some("git_log")),
            (
                "Lists commits. This tool is deprecated; use the git_log tool instead.",
                Some("git_log"),
            ),
            (
                "[DEPRECATED] Fetches a page. Superseded by http/http_get.",
                Some("http/http_get"),
            ),
            (
                "Reads a file. Deprecated, replaced by tool://filesystem/read_text_file.",
                Some("tool://filesystem/read_text_file"),
            ),
            (
                "Deprecated since 2.0 in favour of read_many_files.",
                Some("read_many_files"),
            ),
            ("Searches issues.\nDEPRECATED", None),
            ("This function has been deprecated and will be removed.", None),
            ("Reads a file. This is deprecated. Please migrate to readFile.", Some("readFile")),
            ("Reads a file (deprecated).", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                replacement_of(text),
                Some(want.map(str::to_string)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn text_about_deprecated_things_is_not_a_deprecation() {
        for text in [
            "Lists deprecated packages in the lockfile.",
            "Returns whether a package version is deprecated.",
            "Deprecated packages are listed first.",
            "Finds deprecated API usages; use it before upgrading.",
            "Check if the endpoint is deprecated: returns true or false.",
            "Returns the DEPRECATED_FIELDS of a schema.",
            "Marks a package as deprecated. Use npm_undeprecate instead to undo it.",
            "Read a file. Use read_media_file instead for images.",
        ] {
            assert_eq!(detect(&[text], None), None, "{text:?}");
        }
    }

    #[test]
    fn the_replacement_named_next_to_the_marker_wins() {
        let text = "Reads a file. For images use read_media_file instead. \
                    DEPRECATED: use read_text_file instead.";
        assert_eq!(
            replacement_of(text),
            Some(Some("read_text_file".to_string()))
        );
        // A title marks it; the description names the replacement.
        let d = detect(
            &[
                "Read a file. Use read_text_file instead.",
                "Read File (Deprecated)",
            ],
            None,
        );
        assert_eq!(d.unwrap().replacement.as_deref(), Some("read_text_file"));
    }

    #[test]
    fn a_flag_deprecates_and_may_name_the_replacement() {
        let d = detect(&["Reads a file."], Some("")).unwrap();
        assert_eq!(d.replacement, None);
        let d = detect(&["Reads a file."], Some("read_text_file")).unwrap();
        assert_eq!(d.replacement.as_deref(), Some("read_text_file"));
        let d = detect(&["Reads a file."], Some("Use read_text_file instead")).unwrap();
        assert_eq!(d.replacement.as_deref(), Some("read_text_file"));
        // A flag's prose that names nothing falls back to the text.
        let d = detect(
            &["Reads a file. Use cat_file instead."],
            Some("no longer kept up"),
        )
        .unwrap();
        assert_eq!(d.replacement.as_deref(), Some("cat_file"));
    }

    #[test]
    fn words_that_are_no_names_are_not_replacements() {
        assert_eq!(replacement_of("DEPRECATED: use this instead."), Some(None));
        assert_eq!(
            replacement_of("DEPRECATED: use the new one instead."),
            Some(None)
        );
    }
}
