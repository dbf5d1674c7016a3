//! Taking the particulars out of a request before it is learnt.
//!
//! A request says what to do and to what: "switch to the develop branch of
//! /srv/repos/website", "add to what you know about Priya". Learnt as it is,
//! its particulars (a path, a name, a number) would draw every later request
//! that mentions them to this tool, whatever that request asks (measured:
//! research/LOG.md, "Learning from use"). So the values of the call's
//! arguments, and words that read as values (quoted text, anything with a
//! digit, a path, a file or domain name, an e-mail, an identifier, a name
//! written with a capital inside a sentence), become one placeholder each,
//! and what is learnt is what the request asks.

use std::sync::LazyLock;

use regex::Regex;

/// What a value is replaced with.
pub const PLACEHOLDER: &str = "something";

/// Quoted text, in any of the usual quotes.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""[^"]*"|“[^”]*”|‘[^’]*’|`[^`]*`|(^|\s)'[^']*'"#).expect("a valid pattern")
});

/// `request` with its particulars replaced by [`PLACEHOLDER`]: each of
/// `values` (the call's argument values, when known) where it appears as
/// whole words, then quoted text and words that read as values. Runs of
/// placeholders become one.
pub fn mask_request(request: &str, values: &[String]) -> String {
    let text = mask_values(request, values);
    let text = QUOTED.replace_all(&text, |c: &regex::Captures<'_>| {
        let lead = c.get(1).map_or("", |m| m.as_str());
        format!("{lead}{PLACEHOLDER}")
    });
    let mut out: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for word in text.split_whitespace() {
        let masked = word == PLACEHOLDER
            || (reads_as_value(word) && !sentence_start_name(word, sentence_start));
        let ends_sentence = word.ends_with(['.', '!', '?', ':']);
        if masked {
            let tail: String = word
                .chars()
                .rev()
                .take_while(|c| matches!(c, ',' | ';' | '.' | '!' | '?' | ':' | ')'))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if out.last().is_none_or(|w| !w.starts_with(PLACEHOLDER)) {
                out.push(format!("{PLACEHOLDER}{tail}"));
            } else if !tail.is_empty() {
                let last = out.last_mut().expect("checked");
                *last = format!("{PLACEHOLDER}{tail}");
            }
        } else {
            out.push(word.to_string());
        }
        sentence_start = ends_sentence;
    }
    out.join(" ")
}

/// `request` with each of `values` (a call's argument values) replaced by
/// [`PLACEHOLDER`] where it appears as whole words, case-insensitively;
/// values shorter than two characters are left alone.
pub fn mask_values(request: &str, values: &[String]) -> String {
    let mut text = request.to_string();
    let mut values: Vec<&str> = values
        .iter()
        .map(|v| v.trim())
        .filter(|v| v.chars().count() >= 2)
        .collect();
    // The longest first, so that a value inside another is not cut out of it.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    for v in values {
        text = replace_words(&text, v);
    }
    text
}

/// A capitalised word at the start of a sentence is just the start.
fn sentence_start_name(word: &str, sentence_start: bool) -> bool {
    sentence_start
        && !word
            .chars()
            .any(|c| c.is_ascii_digit() || "/\\@.:_-".contains(c))
}

/// Whether a word reads as a value rather than as words of the request.
fn reads_as_value(word: &str) -> bool {
    let core = word.trim_matches(|c: char| !c.is_alphanumeric() && !"/~.".contains(c));
    let core = core.trim_end_matches('.');
    if core.is_empty() {
        return false;
    }
    if core.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let inner = |c: char| {
        core.char_indices()
            .any(|(i, x)| x == c && i > 0 && i + c.len_utf8() < core.len())
    };
    if core.starts_with(['/', '~']) || core.contains(['/', '\\', '@']) || inner('.') || inner('_') {
        return true;
    }
    // A hyphenated word is English ("read-only") unless it also has a capital.
    if inner('-') && core.chars().any(char::is_uppercase) {
        return true;
    }
    // camelCase or a name: a capital that is not the only letter ("I").
    let mut chars = core.chars();
    let first = chars.next().expect("not empty");
    let rest: Vec<char> = chars.collect();
    let all_caps = rest.iter().all(|c| !c.is_lowercase());
    (first.is_uppercase() && !rest.is_empty() && !all_caps)
        || (first.is_lowercase() && rest.iter().any(|c| c.is_uppercase()))
}

/// `text` with every whole-word occurrence of `value` (case-insensitive)
/// replaced by the placeholder.
fn replace_words(text: &str, value: &str) -> String {
    let pattern = format!(r"(?i)(^|[^\w]){}($|[^\w])", regex::escape(value));
    let Ok(re) = Regex::new(&pattern) else {
        return text.to_string();
    };
    // Twice: a match consumes the separator the next one would start with.
    let mut out = text.to_string();
    for _ in 0..2 {
        out = re
            .replace_all(&out, |c: &regex::Captures<'_>| {
                format!("{}{PLACEHOLDER}{}", &c[1], &c[2])
            })
            .into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn particulars_are_taken_out() {
        let cases = [
            (
                "switch to the develop branch",
                &["develop"][..],
                "switch to the something branch",
            ),
            (
                "add to what you know about Priya: she moved to Berlin in 2025",
                &[],
                "add to what you know about something: she moved to something in something",
            ),
            (
                "what time is it in Tokyo",
                &[],
                "what time is it in something",
            ),
            (
                "What time is it in New York?",
                &[],
                "What time is it in something?",
            ),
            (
                "read /etc/hosts and notes.txt",
                &[],
                "read something and something",
            ),
            (
                "create a branch hotfix/login-timeout off release-2.3",
                &[],
                "create a branch something off something",
            ),
            (
                "post 'deploy done' to the team",
                &[],
                "post something to the team",
            ),
            ("make the file read-only", &[], "make the file read-only"),
            ("convert the PDF to text", &[], "convert the PDF to text"),
            (
                "email ana@example.com the getUserById docs",
                &[],
                "email something the something docs",
            ),
        ];
        for (request, values, want) in cases {
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            assert_eq!(mask_request(request, &values), want, "{request}");
        }
    }
}
