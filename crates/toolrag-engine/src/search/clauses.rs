//! Splitting a request into clauses, so that a request with several needs
//! ("find the invoice, then email it to Ana") can match each need's tool.
//!
//! One vector for the whole request averages its needs together and matches
//! none of them well. The dense side therefore also searches with one vector per
//! clause, pooled from the same model pass (see `Embedder::embed_query_parts`),
//! so it costs no extra model time. Measured in BENCHMARKS.md.

use std::sync::OnceLock;

use regex::Regex;

/// Clauses shorter than this many words are not searched on their own.
const MIN_CLAUSE_WORDS: usize = 3;
/// At most this many clauses per request.
const MAX_CLAUSES: usize = 8;

fn splitter() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)[.!?;]\s+|,\s*(?:and\s+)?(?:then\s+)?|\s+(?:and then|and also|after that|then|and|also)\s+")
            .expect("a valid regex")
    })
}

/// Byte spans of the clauses of `text`, or nothing when it has fewer than two
/// clauses worth searching on their own.
pub fn clause_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut pos = 0;
    for m in splitter().find_iter(text) {
        spans.push((pos, m.start()));
        pos = m.end();
    }
    spans.push((pos, text.len()));
    spans.retain(|&(a, b)| text[a..b].split_whitespace().count() >= MIN_CLAUSE_WORDS);
    if spans.len() < 2 {
        return vec![];
    }
    spans.truncate(MAX_CLAUSES);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clauses(t: &str) -> Vec<&str> {
        clause_spans(t).into_iter().map(|(a, b)| &t[a..b]).collect()
    }

    #[test]
    fn splits_on_sentences_commas_and_conjunctions() {
        assert_eq!(
            clauses(
                "Find the invoice from March, then email it to Ana. Also post a note in #billing"
            ),
            [
                "Find the invoice from March",
                "email it to Ana",
                "Also post a note in #billing"
            ]
        );
        assert_eq!(
            clauses("read the file /etc/hosts and count the lines in it"),
            ["read the file /etc/hosts", "count the lines in it"]
        );
    }

    #[test]
    fn one_clause_is_no_split() {
        assert!(clauses("read the file /etc/hosts").is_empty());
        assert!(clauses("tea, coffee and milk").is_empty());
    }
}
