//! Parses docstring sections out of free-text descriptions, the way Python
//! docstrings are read, so that MCP, OpenAI and JSONL tools end up with the same
//! structure as native TOML tools.
//!
//! Recognised section headers (case-insensitive, on a line of their own, ending
//! with `:`; Markdown `#`/`**` decoration is tolerated):
//! - `Examples:` — `"request" -> {"arg": 1}` per line (the arrow part is optional);
//! - `Edge cases:` — `case: behaviour` per line;
//! - `Not for:` / `See also:` — `other_tool: when to use it instead` per line;
//! - `Args:` / `Arguments:` / `Parameters:` / `Params:` — `name (type): description`.
//!
//! Items may be bulleted (`-`, `*`, `•`, `1.`); a line indented deeper than its
//! item continues it. Anything else stays in the prose.
//!
//! Markdown is read as Markdown where real servers write it: a fenced code
//! block (```` ``` ```` or `~~~`) is code, so its lines start no section and are
//! items only when they look like one (a quoted request under `Examples:`),
//! and the text after the colon of a heading (`### Example: a swimlane
//! container`) is the heading's title, not an item.

use serde_json::Value;

use super::model::{Boundary, EdgeCase, Example};

/// The parts of a free-text docstring.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DocParts {
    /// The description with the recognised sections removed.
    pub prose: String,
    /// Parsed `Examples:` items.
    pub examples: Vec<Example>,
    /// Parsed `Edge cases:` items.
    pub edge_cases: Vec<EdgeCase>,
    /// Parsed `Not for:` / `See also:` items.
    pub not_for: Vec<Boundary>,
    /// Parsed `Args:` items: parameter name and description.
    pub args: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Examples,
    EdgeCases,
    NotFor,
    Args,
    /// A section we do not parse (`Returns:`, `Raises:`): it ends the previous one
    /// and stays in the prose.
    Other,
}

/// The section a header line opens, and the item written after its colon.
/// After a Markdown heading's colon comes the heading's title, never an item.
fn header(line: &str) -> Option<(Section, &str)> {
    let heading = line.trim_start().starts_with('#');
    let t = line.trim().trim_start_matches('#').trim();
    let t = t.trim_start_matches("**").trim_start_matches("__");
    let colon = t.find(':')?;
    let word = t[..colon]
        .trim()
        .trim_end_matches("**")
        .trim_end_matches("__");
    let rest = t[colon + 1..]
        .trim_start_matches("**")
        .trim_start_matches("__")
        .trim();
    let section = match word.to_ascii_lowercase().as_str() {
        "example" | "examples" | "example requests" | "usage examples" => Section::Examples,
        "edge case" | "edge cases" | "edge-cases" | "edgecases" => Section::EdgeCases,
        "not for" | "see also" | "not-for" | "use instead" => Section::NotFor,
        "args" | "arguments" | "parameters" | "params" | "inputs" => Section::Args,
        "returns" | "return" | "raises" | "errors" | "notes" | "note" => Section::Other,
        _ => return None,
    };
    Some((section, if heading { "" } else { rest }))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Strips a list marker, returning the item text and whether there was one.
fn strip_bullet(s: &str) -> (&str, bool) {
    let t = s.trim_start();
    for b in ["- ", "* ", "• ", "+ "] {
        if let Some(r) = t.strip_prefix(b) {
            return (r.trim(), true);
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let r = &t[digits..];
        if let Some(r) = r.strip_prefix(". ").or_else(|| r.strip_prefix(") ")) {
            return (r.trim(), true);
        }
    }
    (t.trim(), false)
}

/// Parses a free-text description into prose and structured sections.
pub fn parse(text: &str) -> DocParts {
    let mut parts = DocParts::default();
    let mut prose: Vec<&str> = Vec::new();
    let mut section: Option<Section> = None;
    // Items of the current section: (text, indent of the item's first line).
    let mut items: Vec<(String, usize)> = Vec::new();
    let mut saw_blank = false;

    let mut in_fence = false;
    let lines: Vec<&str> = text.lines().collect();
    for line in lines {
        let fence = is_fence(line);
        if fence {
            in_fence = !in_fence;
        }
        if fence || in_fence {
            // Code: an example request written in a fence still counts; the
            // rest (the fence markers, XML, shell) is prose.
            match (section, strip_bullet(line)) {
                (Some(Section::Examples), (body, _))
                    if !fence && looks_like_item(Section::Examples, body) =>
                {
                    items.push((body.to_string(), usize::MAX));
                }
                _ => prose.push(line),
            }
            continue;
        }
        if let Some((s, rest)) = header(line) {
            flush(section, &mut items, &mut parts);
            saw_blank = false;
            if s == Section::Other {
                section = None;
                prose.push(line);
            } else {
                section = Some(s);
                if !rest.is_empty() {
                    items.push((rest.to_string(), usize::MAX));
                }
            }
            continue;
        }
        let Some(cur) = section else {
            prose.push(line);
            continue;
        };
        if line.trim().is_empty() {
            saw_blank = true;
            continue;
        }
        let indent = indent_of(line);
        let (body, bulleted) = strip_bullet(line);
        let continues = !bulleted
            && !saw_blank
            && items
                .last()
                .is_some_and(|(_, first)| *first != usize::MAX && indent > *first);
        if continues {
            let last = items.last_mut().expect("checked above");
            last.0.push(' ');
            last.0.push_str(body);
            continue;
        }
        if saw_blank && indent == 0 && !bulleted && !looks_like_item(cur, body) {
            // The section is over; this is prose again.
            flush(section, &mut items, &mut parts);
            section = None;
            prose.push("");
            prose.push(line);
            saw_blank = false;
            continue;
        }
        saw_blank = false;
        items.push((body.to_string(), indent));
    }
    flush(section, &mut items, &mut parts);
    parts.prose = tidy_prose(&prose);
    parts
}

/// Whether the line opens or closes a Markdown fenced code block.
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

fn looks_like_item(section: Section, body: &str) -> bool {
    match section {
        Section::Examples => body.starts_with(['"', '\'', '“', '`']),
        _ => body.split_once(':').is_some_and(|(head, _)| {
            !head.trim().is_empty() && head.split_whitespace().count() <= 6
        }),
    }
}

fn tidy_prose(lines: &[&str]) -> String {
    let joined = lines.join("\n");
    // Collapse runs of blank lines left by removed sections.
    let mut out = String::with_capacity(joined.len());
    let mut blank_run = 0;
    for l in joined.lines() {
        if l.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

fn flush(section: Option<Section>, items: &mut Vec<(String, usize)>, parts: &mut DocParts) {
    for (item, _) in items.drain(..) {
        match section {
            Some(Section::Examples) => parts.examples.push(parse_example(&item)),
            Some(Section::EdgeCases) => {
                let (case, behaviour) = split_colon(&item);
                parts.edge_cases.push(EdgeCase {
                    case: case.to_string(),
                    behaviour: behaviour.to_string(),
                });
            }
            Some(Section::NotFor) => {
                let (tool, when) = split_colon(&item);
                parts.not_for.push(Boundary {
                    tool: strip_code(tool).to_string(),
                    when: when.to_string(),
                });
            }
            Some(Section::Args) => {
                let (head, desc) = split_colon(&item);
                let name = head.split(['(', ' ']).next().unwrap_or(head);
                let name = strip_code(name);
                if !name.is_empty() {
                    parts.args.push((name.to_string(), desc.to_string()));
                }
            }
            Some(Section::Other) | None => {}
        }
    }
}

fn strip_code(s: &str) -> &str {
    s.trim().trim_matches('`').trim()
}

/// Splits `head: rest` at the first colon followed by whitespace or the end.
fn split_colon(s: &str) -> (&str, &str) {
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        if c == ':' && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) {
            return (s[..i].trim(), s[i + 1..].trim());
        }
    }
    (s.trim(), "")
}

/// Parses `"request" -> {json}`; tolerant of quote styles and arrow spellings.
fn parse_example(item: &str) -> Example {
    let item = item.trim();
    let (request, rest) = match quoted_prefix(item) {
        Some((q, rest)) => (q.to_string(), rest.trim()),
        None => {
            // No quotes: split at the arrow if there is one.
            match find_arrow(item) {
                Some((i, len)) => (
                    item[..i].trim().to_string(),
                    item[i..].trim_start()[len..].trim(),
                ),
                None => (item.to_string(), ""),
            }
        }
    };
    let rest = rest
        .strip_prefix("->")
        .or_else(|| rest.strip_prefix("=>"))
        .or_else(|| rest.strip_prefix('→'))
        .unwrap_or(rest)
        .trim();
    let arguments = if rest.is_empty() {
        None
    } else {
        let raw = rest.trim_matches('`');
        // Keep unparsable arguments as a string, so lint can point at them.
        Some(serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string())))
    };
    Example { request, arguments }
}

fn find_arrow(s: &str) -> Option<(usize, usize)> {
    ["->", "=>", "→"]
        .iter()
        .filter_map(|a| s.find(a).map(|i| (i, a.len())))
        .min()
}

fn quoted_prefix(s: &str) -> Option<(&str, &str)> {
    let (open, close) = match s.chars().next()? {
        '"' => ('"', '"'),
        '\'' => ('\'', '\''),
        '“' => ('“', '”'),
        '`' => ('`', '`'),
        _ => return None,
    };
    let body = &s[open.len_utf8()..];
    let end = body.find(close)?;
    Some((&body[..end], &body[end + close.len_utf8()..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sections_are_parsed_and_removed_from_prose() {
        let text = "Read a file.\n\nExamples:\n  - \"how big is /var/log/syslog?\" -> {\"path\": \"/var/log/syslog\"}\n  - \"show /etc/hosts\"\n\nEdge cases:\n  missing file: returns an error\n  huge file: truncated at\n    1 MiB\n\nNot for:\n  - `read_binary_file`: images and archives\n\nArgs:\n  path (str): Absolute path.\n\nReturns the text.";
        let p = parse(text);
        assert_eq!(p.prose, "Read a file.\n\nReturns the text.");
        assert_eq!(p.examples.len(), 2);
        assert_eq!(p.examples[0].request, "how big is /var/log/syslog?");
        assert_eq!(
            p.examples[0].arguments,
            Some(json!({"path": "/var/log/syslog"}))
        );
        assert_eq!(p.examples[1].arguments, None);
        assert_eq!(p.edge_cases[1].behaviour, "truncated at 1 MiB");
        assert_eq!(p.not_for[0].tool, "read_binary_file");
        assert_eq!(p.args, vec![("path".into(), "Absolute path.".into())]);
    }

    #[test]
    fn bad_example_json_is_kept_as_a_string() {
        let p = parse("Examples:\n\"x\" -> {not json}");
        assert_eq!(
            p.examples[0].arguments,
            Some(Value::String("{not json}".into()))
        );
    }

    #[test]
    fn a_markdown_example_heading_over_a_code_block_is_prose_not_requests() {
        // As @drawio/mcp writes its reference: a titled example and XML in a fence.
        let text = "Opens draw.io with a diagram.\n\n### Example: Invisible group container\n\n```xml\n<mxCell id=\"grp1\" value=\"\" style=\"group;\"/>\n# Note: not a header\n```\n\nKeep ids unique.";
        let p = parse(text);
        assert!(p.examples.is_empty(), "{:?}", p.examples);
        assert!(p.prose.contains("<mxCell id=\"grp1\""), "{}", p.prose);
        assert!(p.prose.contains("# Note: not a header"), "{}", p.prose);
        assert!(p.prose.ends_with("Keep ids unique."), "{}", p.prose);
    }

    #[test]
    fn example_requests_inside_a_fence_still_count() {
        let text = "Read a file.\n\nExamples:\n```\n\"show /etc/hosts\" -> {\"path\": \"/etc/hosts\"}\n```\n";
        let p = parse(text);
        assert_eq!(p.examples.len(), 1);
        assert_eq!(p.examples[0].request, "show /etc/hosts");
        assert_eq!(p.examples[0].arguments, Some(json!({"path": "/etc/hosts"})));
    }

    #[test]
    fn an_example_on_the_header_line_still_counts_without_a_heading_mark() {
        let p = parse("Examples: \"show /etc/hosts\"");
        assert_eq!(p.examples.len(), 1);
        assert_eq!(p.examples[0].request, "show /etc/hosts");
    }

    #[test]
    fn text_without_sections_is_all_prose() {
        let p = parse("Get the weather. Note that: it rains.");
        assert_eq!(p.prose, "Get the weather. Note that: it rains.");
        assert!(p.examples.is_empty());
    }
}
