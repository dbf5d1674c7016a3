//! The step after fusion: exact names and deprecation.
//!
//! A request that names a tool exactly gets it first. A name counts only
//! when the request writes it as an identifier: a token with `_`, `-`, `/`,
//! `.` or `::`, a camelCase token (`readFile`), a token in backticks, a
//! handle (`tool://git/git_log`), an id (`git/git_log`) or Claude Code's
//! `mcp__<server>__<tool>`. A plain word never names a tool, even when a tool
//! has that name (`fetch`, `echo`, `time`): "fetch the page" is a request,
//! not a name. Nor does a capitalised word with inner capitals (`GitHub`,
//! `YouTube`, `AlexNet`): prose writes brands and model names that way ("a
//! lighter model than AlexNet"), so PascalCase counts only in backticks or
//! as an id.
//!
//! A token may name several tools (`search` in three namespaces): all of
//! them are promoted, in fused order, when there are at most
//! [`MAX_NAMED_PER_TOKEN`]; past that the name says too little and none is.
//! Only tools that pass the request's filter count, before that cut.
//!
//! Before the promotion, deprecated tools go below their replacements
//! ([`super::deprecation`]), so a deprecated tool that is named still comes
//! first, with its note.

use std::collections::HashMap;

use super::deprecation::Replacements;
use super::request::Hit;
use super::retriever::Keep;
use toolrag_core::registry::{ToolDef, HANDLE_SCHEME};

/// A token that names more tools than this (after the filter) names none.
/// Three keeps a name shared by a few servers (`search` of files, web and
/// mail) while a name that dozens of tools repeat (bfcl's 62
/// `get_current_weather`) is left to the retrievers.
pub const MAX_NAMED_PER_TOKEN: usize = 3;

/// The note of a hit that the request named.
const NAMED_NOTE: &str = "named in the request";

/// The lookup tables of the step, built once per index generation.
#[derive(Debug, Default)]
pub(crate) struct Names {
    /// Tool ordinals by lowercased name.
    by_name: HashMap<String, Vec<u32>>,
    /// Tool ordinals by lowercased id.
    by_id: HashMap<String, Vec<u32>>,
    /// Tool ordinals by lowercased MCP-sanitised name, only for names that
    /// sanitising changes (`math.sqrt` is `math_sqrt` in `mcp__` form).
    by_mcp_name: HashMap<String, Vec<u32>>,
    /// The distinct namespaces, lowercased and MCP-sanitised.
    mcp_namespaces: Vec<String>,
    /// Each tool's index into `mcp_namespaces`, by ordinal.
    namespace_of: Vec<u32>,
    replacements: Replacements,
}

/// The ranked list after the step, and what the step did to it.
#[derive(Debug)]
pub(crate) struct Adjusted {
    /// The fused list, reordered: named tools first, deprecated tools
    /// below their replacements.
    pub ranked: Vec<(u32, f32)>,
    /// Whether the request names a tool that passes its filter: such a
    /// request is never ABSTAINed.
    pub named: bool,
    /// Notes of this request's hits, by ordinal (named tools, suggested
    /// replacements); a deprecated tool's own note comes from its card.
    notes: Vec<(u32, String)>,
}

impl Names {
    /// The tables of `tools` (in ordinal order).
    pub fn new(tools: &[ToolDef]) -> Names {
        let mut names = Names {
            replacements: Replacements::new(tools),
            ..Names::default()
        };
        let mut namespace_index: HashMap<&str, u32> = HashMap::new();
        for (ord, t) in tools.iter().enumerate() {
            let ord = ord as u32;
            let name = t.name.to_lowercase();
            let sanitised = mcp_sanitise(&name);
            if sanitised != name {
                names.by_mcp_name.entry(sanitised).or_default().push(ord);
            }
            names.by_name.entry(name).or_default().push(ord);
            names
                .by_id
                .entry(t.id.to_lowercase())
                .or_default()
                .push(ord);
            let ns = *namespace_index.entry(&t.namespace).or_insert_with(|| {
                names
                    .mcp_namespaces
                    .push(mcp_sanitise(&t.namespace.to_lowercase()));
                names.mcp_namespaces.len() as u32 - 1
            });
            names.namespace_of.push(ns);
        }
        names
    }

    /// The step: deprecated tools below their replacements, then the tools
    /// that `query` names first. `keep` is the request's filter.
    pub fn apply(
        &self,
        query: &str,
        mut ranked: Vec<(u32, f32)>,
        keep: Option<Keep<'_>>,
    ) -> Adjusted {
        let keeps = |o: u32| keep.is_none_or(|k| k(o));
        let mut notes = self.replacements.demote(&mut ranked, &keeps);
        let named = self.named(query, &keeps);
        if !named.is_empty() {
            tracing::debug!(target: "search::names", ?named, "the request names tools");
            promote(&mut ranked, &named);
            notes.extend(named.iter().map(|&o| (o, NAMED_NOTE.to_string())));
        }
        Adjusted {
            ranked,
            named: !named.is_empty(),
            notes,
        }
    }

    /// The ordinals of the tools that `query` names, each once, in no
    /// particular order; only those that `keeps` accepts.
    fn named(&self, query: &str, keeps: &dyn Fn(u32) -> bool) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for token in name_tokens(query) {
            let mut found: Vec<u32> = self
                .lookup(&token)
                .into_iter()
                .filter(|&o| keeps(o))
                .collect();
            found.sort_unstable();
            found.dedup();
            if found.len() <= MAX_NAMED_PER_TOKEN {
                found.retain(|o| !out.contains(o));
                out.extend(found);
            }
        }
        out
    }

    /// Every tool that `token` names exactly (case-insensitively).
    fn lookup(&self, token: &NameToken<'_>) -> Vec<u32> {
        let lower = token.text.to_lowercase();
        let get = |map: &HashMap<String, Vec<u32>>, key: &str| -> Vec<u32> {
            map.get(key).cloned().unwrap_or_default()
        };
        if let Some(id) = lower.strip_prefix(HANDLE_SCHEME) {
            return get(&self.by_id, id);
        }
        let mut found = get(&self.by_id, &lower);
        found.extend(get(&self.by_name, &lower));
        if let Some(rest) = lower.strip_prefix("mcp__") {
            found.extend(self.lookup_mcp(rest));
        }
        found
    }

    /// `<server>__<tool>` (after `mcp__`): the server may itself hold `__`,
    /// so every split is tried.
    fn lookup_mcp(&self, rest: &str) -> Vec<u32> {
        let mut found = Vec::new();
        for (at, _) in rest.match_indices("__") {
            let (server, tool) = (&rest[..at], &rest[at + 2..]);
            if server.is_empty() || tool.is_empty() {
                continue;
            }
            let candidates = self.by_name.get(tool).into_iter().flatten();
            let sanitised = self.by_mcp_name.get(tool).into_iter().flatten();
            found.extend(candidates.chain(sanitised).copied().filter(|&o| {
                self.mcp_namespaces[self.namespace_of[o as usize] as usize] == server
            }));
        }
        found
    }
}

impl Adjusted {
    /// Sets each hit's note: what the step did to it, and the deprecation
    /// its card states. `tool` resolves a hit id.
    pub fn annotate<'t>(
        &self,
        hits: &mut [Hit],
        tool: impl Fn(&str) -> Option<(u32, &'t ToolDef)>,
    ) {
        for hit in hits {
            let Some((ord, card)) = tool(&hit.id) else {
                continue;
            };
            let mut parts: Vec<String> = self
                .notes
                .iter()
                .filter(|(o, _)| *o == ord)
                .map(|(_, n)| n.clone())
                .collect();
            parts.extend(card.deprecation_note());
            if !parts.is_empty() {
                hit.note = Some(parts.join("; "));
            }
        }
    }
}

/// Named tools first: those in the list keep their fused order, those
/// missing come after them by ordinal, with score 0.
fn promote(ranked: &mut Vec<(u32, f32)>, named: &[u32]) {
    let (mut first, rest): (Vec<_>, Vec<_>) =
        ranked.iter().copied().partition(|(o, _)| named.contains(o));
    let mut missing: Vec<u32> = named
        .iter()
        .copied()
        .filter(|o| !first.iter().any(|(f, _)| f == o))
        .collect();
    missing.sort_unstable();
    first.extend(missing.into_iter().map(|o| (o, 0.0)));
    first.extend(rest);
    *ranked = first;
}

/// A token of a request that is written as an identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameToken<'q> {
    /// The token without surrounding quotes and sentence punctuation.
    pub text: &'q str,
}

/// The tokens of `query` that are written as identifiers (see the module
/// docs); plain words are left out. In query order.
pub(crate) fn name_tokens(query: &str) -> Vec<NameToken<'_>> {
    let mut out = Vec::new();
    // A code span is a name however it is spelt: `fetch`.
    let mut rest = query;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else {
            break;
        };
        let span = tidy(&after[..close]);
        if !span.is_empty() && !span.contains(char::is_whitespace) {
            out.push(NameToken { text: span });
        }
        rest = &after[close + 1..];
    }
    for raw in query.split(is_separator) {
        let text = tidy(raw);
        if is_identifier(text) && !out.iter().any(|t| t.text == text) {
            out.push(NameToken { text });
        }
    }
    out
}

/// What separates tokens: spaces, quotes, brackets and list punctuation.
/// `.`, `:`, `/`, `-` and `_` are inside identifiers, ids and handles.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ',' | ';'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
                | '"'
                | '\''
                | '`'
                | '|'
                | '“'
                | '”'
                | '‘'
                | '’'
                | '!'
                | '?'
        )
}

/// A token without the sentence punctuation around it (`git_log.`,
/// `git_log:`).
fn tidy(token: &str) -> &str {
    token
        .trim()
        .trim_end_matches(['.', ':', ','])
        .trim_start_matches(['.', ':'])
}

/// Whether `token` is written as an identifier rather than as a word.
fn is_identifier(token: &str) -> bool {
    if !token.chars().any(char::is_alphanumeric) {
        return false;
    }
    if token.contains(['_', '-', '/', '.']) || token.contains("::") {
        return true;
    }
    // camelCase: it starts lowercase, and a lowercase letter is directly
    // followed by an uppercase one somewhere.
    let chars: Vec<char> = token.chars().collect();
    chars[0].is_lowercase()
        && chars
            .windows(2)
            .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
}

/// Claude Code's spelling of a server or tool name inside `mcp__…__…`:
/// every character outside `[A-Za-z0-9_-]` becomes `_`.
fn mcp_sanitise(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
