//! Text views of a tool, shared by the index (BM25 fields, dense documents) and
//! lint (similarity), so that every part of toolrag reads a tool the same way.

use serde_json::Value;

use super::model::ToolDef;

/// Splits an identifier into lowercase words: `snake_case`, `camelCase`,
/// `HTTPServer`, `dotted.names`, `kebab-case`, `a/b`, and letter/digit changes
/// (`utf8` → `utf 8`).
///
/// ```
/// assert_eq!(toolrag_core::registry::split_identifier("getHTTPCode_v2.list"), ["get", "http", "code", "v", "2", "list"]);
/// ```
pub fn split_identifier(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    identifier_parts(s, |from, to| words.push(s[from..to].to_lowercase()));
    words
}

/// The identifier parts of `s`, as byte ranges `from..to`, in order: the
/// runs of letters and digits, each cut where the case or the kind of
/// character changes (see [`split_identifier`]), and where a run of CJK
/// characters ([`is_cjk`]) meets other letters or digits (`读取README文件`
/// → `读取`, `README`, `文件`). A CJK run is one part here; the BM25 analyser
/// cuts it further ([`term_parts`]). The one splitter of toolrag: the BM25
/// tokenizer reads the same parts.
pub(crate) fn identifier_parts(s: &str, mut part: impl FnMut(usize, usize)) {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_alphanumeric() {
            i += 1;
            continue;
        }
        let mut start = i;
        let mut j = i + 1;
        while j < chars.len() && chars[j].1.is_alphanumeric() {
            let (p, c) = (chars[j - 1].1, chars[j].1);
            // A lowercase character is alphanumeric, so looking past the
            // end of the run finds none.
            let next_lower = chars.get(j + 1).is_some_and(|n| n.1.is_lowercase());
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next_lower)
                || (p.is_alphabetic() && c.is_numeric())
                || (p.is_numeric() && c.is_alphabetic())
                || is_cjk(p) != is_cjk(c);
            if boundary {
                part(chars[start].0, chars[j].0);
                start = j;
            }
            j += 1;
        }
        part(chars[start].0, chars.get(j).map_or(s.len(), |c| c.0));
        i = j;
    }
}

/// The parts the BM25 analyser indexes, as byte ranges `from..to`, in order:
/// the identifier parts of `s` (`identifier_parts`), with every run of CJK
/// characters cut into overlapping character bigrams (`查询天气` → `查询`, `询天`, `天气`); a
/// lone CJK character is one part. Chinese and Japanese put no spaces between
/// words, so a run is a whole phrase or sentence, and as one term it would
/// match only the identical run.
///
/// Bigrams are what Elasticsearch's `cjk` analyser and Lucene's
/// `CJKBigramFilter` index: no dictionary, the same rule for Chinese,
/// Japanese and Korean, and a request matches a tool when they share a
/// two-character word or a part of a longer one. Dictionary segmenters were
/// considered first and not taken. `tantivy-jieba` 0.21 and `cang-jie` 0.22
/// fit tantivy 0.27's tokenizer API, but jieba segments Han text only (kana
/// and Hangul are outside its word classes, so Japanese and Korean would
/// still need a rule of their own) and brings a 5 MB word list, compressed
/// into the binary and loaded into a trie by every process that analyses
/// text. `lindera-tantivy` 5 is built on tantivy 0.26, and its dictionaries
/// (one per language, tens of megabytes) are downloaded by their build
/// scripts. Bigrams cost a few more terms per run, and they match a word
/// inside a longer one, where a segmenter can cut the tool's text and the
/// request differently.
pub fn term_parts(s: &str, mut part: impl FnMut(usize, usize)) {
    identifier_parts(s, |from, to| {
        let run = &s[from..to];
        if !run.chars().next().is_some_and(is_cjk) {
            part(from, to);
            return;
        }
        let mut starts = run.char_indices().map(|(i, _)| from + i);
        let (Some(mut a), Some(mut b)) = (starts.next(), starts.next()) else {
            // A lone character is a unigram.
            part(from, to);
            return;
        };
        loop {
            let c = starts.next();
            part(a, c.unwrap_or(to));
            match c {
                Some(c) => (a, b) = (b, c),
                None => break,
            }
        }
    });
}

/// Whether `c` is a letter of a script written without spaces between words,
/// whose runs the BM25 analyser cuts into bigrams ([`term_parts`]): Han
/// ideographs (the unified block, extensions A to I, compatibility
/// ideographs and their supplement, `々〆〇` and the Hangzhou numerals),
/// Hiragana, Katakana (with its phonetic extensions, the kana supplements
/// and the halfwidth forms) and Hangul (syllables, jamo, compatibility and
/// halfwidth jamo). Only letters count: CJK punctuation (`，。、「」・`) and
/// symbols separate words like any other punctuation.
pub fn is_cjk(c: char) -> bool {
    !c.is_ascii()
        && c.is_alphanumeric()
        && matches!(
            c,
            '\u{1100}'..='\u{11FF}'     // Hangul jamo
                | '\u{3005}'..='\u{3007}'   // 々 〆 〇
                | '\u{3021}'..='\u{3029}'   // Hangzhou numerals
                | '\u{3038}'..='\u{303C}'   // Hangzhou numerals, 〻 〼
                | '\u{3040}'..='\u{30FF}'   // Hiragana, Katakana
                | '\u{3130}'..='\u{318F}'   // Hangul compatibility jamo
                | '\u{31F0}'..='\u{31FF}'   // Katakana phonetic extensions
                | '\u{3400}'..='\u{4DBF}'   // CJK extension A
                | '\u{4E00}'..='\u{9FFF}'   // CJK unified ideographs
                | '\u{A960}'..='\u{A97F}'   // Hangul jamo extended A
                | '\u{AC00}'..='\u{D7FF}'   // Hangul syllables, jamo extended B
                | '\u{F900}'..='\u{FAFF}'   // CJK compatibility ideographs
                | '\u{FF66}'..='\u{FFDC}'   // halfwidth Katakana and Hangul
                | '\u{1AFF0}'..='\u{1B16F}' // Kana extensions and supplements
                | '\u{20000}'..='\u{2FA1F}' // extensions B to F and I, compatibility supplement
                | '\u{30000}'..='\u{323AF}' // extensions G and H
        )
}

/// Parameter names and descriptions, depth-first in schema order through
/// `properties`, array `items` and nested objects: `(name, description)`.
pub fn parameter_texts(tool: &ToolDef) -> Vec<(String, String)> {
    fn walk(schema: &Value, out: &mut Vec<(String, String)>, depth: usize) {
        if depth > 8 {
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
                out.push((name.clone(), desc.to_string()));
                walk(p, out, depth + 1);
            }
        }
        if let Some(items) = schema.get("items") {
            walk(items, out, depth + 1);
        }
    }
    let mut out = Vec::new();
    walk(&tool.input_schema, &mut out, 0);
    out
}

/// The text embedded as the tool's main dense vector: name (and its words),
/// summary, description and parameters. Examples get vectors of their own.
pub fn document_text(tool: &ToolDef) -> String {
    let words = split_identifier(&tool.name).join(" ");
    let mut s = String::with_capacity(256);
    s.push_str(&tool.name);
    if words != tool.name {
        s.push(' ');
        s.push('(');
        s.push_str(&words);
        s.push(')');
    }
    s.push_str(": ");
    // The summary is usually the description's first sentence: embed it once.
    let flat: String = tool
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let summary = tool.summary.trim_end_matches('…');
    if flat.is_empty() || !flat.starts_with(summary) {
        s.push_str(&tool.summary);
        if !flat.is_empty() {
            s.push(' ');
        }
    }
    s.push_str(&flat);
    let params = parameter_texts(tool);
    if !params.is_empty() {
        s.push_str(" Parameters: ");
        let parts: Vec<String> = params
            .iter()
            .map(|(n, d)| {
                let w = split_identifier(n).join(" ");
                if d.is_empty() {
                    w
                } else {
                    format!("{w}: {d}")
                }
            })
            .collect();
        s.push_str(&parts.join("; "));
    }
    s
}

/// The first `max` characters of `text` (not bytes: never splits a character).
pub fn cut_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
