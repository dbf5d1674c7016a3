//! Small text measures shared by rules: the description a model sees, word and
//! token counts, and whether prose shows an example value.

use std::sync::LazyLock;

use regex::Regex;

use crate::embed::TokenCounter;
use crate::registry::ToolDef;

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
}
