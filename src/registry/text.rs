//! Text views of a tool, shared by the index (BM25 fields, dense documents) and
//! lint (similarity), so that every part of toolrag reads a tool the same way.

use serde_json::Value;

use super::model::ToolDef;

/// Splits an identifier into lowercase words: `snake_case`, `camelCase`,
/// `HTTPServer`, `dotted.names`, `kebab-case`, `a/b`, and letter/digit changes
/// (`utf8` → `utf 8`).
///
/// ```
/// assert_eq!(toolrag::registry::split_identifier("getHTTPCode_v2.list"), ["get", "http", "code", "v", "2", "list"]);
/// ```
pub fn split_identifier(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    identifier_parts(s, |from, to| words.push(s[from..to].to_lowercase()));
    words
}

/// The identifier parts of `s`, as byte ranges `from..to`, in order: the
/// runs of letters and digits, each cut where the case or the kind of
/// character changes (see [`split_identifier`]). The one splitter of toolrag:
/// the BM25 tokenizer reads the same parts.
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
                || (p.is_numeric() && c.is_alphabetic());
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
pub(crate) fn cut_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
