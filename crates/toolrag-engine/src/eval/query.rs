//! Reading labelled queries: JSON Lines, one request per line (`id`, `query`,
//! `relevant`, optional `groups`, `kind`, `subset`), as in
//! `tests/golden/tools-queries.jsonl`.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use toolrag_core::error::{Error, Result};

/// The `kind` of an out-of-scope request: no tool in the registry fits it.
pub const KIND_NONE: &str = "none";

/// One labelled request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalQuery {
    /// The query id, unique in its file.
    pub id: String,
    /// The request, in words.
    pub query: String,
    /// The needs: one list of acceptable tool ids per tool the request needs
    /// (the labelled tool first, then its alternatives). Empty for `none`.
    pub groups: Vec<Vec<String>>,
    /// `single`, `multi`, `none` or any other label of the file.
    pub kind: String,
    /// An optional slice name, for per-subset means.
    pub subset: Option<String>,
    /// The 1-based line of the query in its file (0 when not read from a file).
    pub line: usize,
}

impl EvalQuery {
    /// Whether this is an out-of-scope (`none`) request, which should abstain.
    pub fn is_none(&self) -> bool {
        self.kind == KIND_NONE || self.groups.is_empty()
    }
}

// Unknown fields are ignored, as score.py ignores them; a misspelt
// `relevant` still fails, as a query that lists no tool and is not `none`.
#[derive(Deserialize)]
struct Raw {
    id: RawId,
    query: String,
    #[serde(default)]
    relevant: Vec<String>,
    #[serde(default)]
    groups: Option<Vec<Vec<String>>>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    subset: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawId {
    Text(String),
    Number(serde_json::Number),
}

/// Parses a JSONL file of queries; `file` names it in error messages.
///
/// Each non-blank line is `{"id", "query", "relevant"?, "groups"?, "kind"?,
/// "subset"?}`. Without `groups`, each relevant id is a need of its own; with
/// both, `groups[i]` must begin with `relevant[i]`. A query that lists no tool
/// must say `"kind": "none"`; without `kind`, a query is `single` with one need
/// and `multi` with more. Unknown fields are ignored. Every error names
/// `file:line`.
pub fn parse_queries(text: &str, file: &Path) -> Result<Vec<EvalQuery>> {
    let mut out: Vec<EvalQuery> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at = |msg: String| Error::InvalidInput(format!("{}:{lineno}: {msg}", file.display()));
        let raw: Raw = serde_json::from_str(line).map_err(|e| at(format!("invalid query: {e}")))?;
        let id = match raw.id {
            RawId::Text(s) => s,
            RawId::Number(n) => n.to_string(),
        };
        if let Some(first) = seen.insert(id.clone(), lineno) {
            return Err(at(format!(
                "duplicate query id {id} (first on line {first})"
            )));
        }
        if raw.query.trim().is_empty() {
            return Err(at(format!("query {id} has an empty \"query\"")));
        }
        let groups = match raw.groups {
            None => raw.relevant.iter().map(|r| vec![r.clone()]).collect(),
            Some(groups) => {
                if let Some(gi) = groups.iter().position(Vec::is_empty) {
                    return Err(at(format!("query {id}: group {} is empty", gi + 1)));
                }
                let firsts: Vec<&String> = groups.iter().map(|g| &g[0]).collect();
                if !raw.relevant.is_empty() && firsts != raw.relevant.iter().collect::<Vec<_>>() {
                    return Err(at(format!(
                        "query {id}: each group must begin with its relevant id, in order \
                         (relevant {:?}, groups begin with {firsts:?})",
                        raw.relevant
                    )));
                }
                groups
            }
        };
        let kind = match raw.kind {
            Some(k) if k == KIND_NONE && !groups.is_empty() => {
                return Err(at(format!(
                    "query {id} is of kind \"none\" but lists relevant tools"
                )))
            }
            Some(k) if k == KIND_NONE || !groups.is_empty() => k,
            _ if groups.is_empty() => {
                return Err(at(format!(
                    "query {id} lists no relevant tool; mark out-of-scope requests \
                     with \"kind\": \"none\""
                )))
            }
            Some(k) => k,
            None if groups.len() == 1 => "single".to_string(),
            None => "multi".to_string(),
        };
        out.push(EvalQuery {
            id,
            query: raw.query,
            groups,
            kind,
            subset: raw.subset,
            line: lineno,
        });
    }
    if out.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{}: no queries in the file",
            file.display()
        )));
    }
    Ok(out)
}

/// Reads and parses a JSONL file of queries (see [`parse_queries`]).
pub fn load_queries(path: &Path) -> Result<Vec<EvalQuery>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_queries(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<EvalQuery>> {
        parse_queries(text, Path::new("q.jsonl"))
    }

    #[test]
    fn defaults_groups_and_kind() {
        let q = parse(
            r#"{"id": 1, "query": "read a file", "relevant": ["fs/read"]}

{"id": "b", "query": "two things", "relevant": ["a", "b"], "groups": [["a", "a2"], ["b"]]}
{"id": "c", "query": "order a pizza", "kind": "none", "extra": 1}"#,
        )
        .unwrap();
        assert_eq!(q[0].id, "1");
        assert_eq!(q[0].kind, "single");
        assert_eq!(q[0].groups, vec![vec!["fs/read".to_string()]]);
        assert_eq!((q[1].kind.as_str(), q[1].line), ("multi", 3));
        assert!(q[2].is_none() && q[2].groups.is_empty());
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            (
                "{\"id\": \"a\", \"query\": \"x\", \"kind\": \"none\"}\n{not json",
                "q.jsonl:2: invalid query",
            ),
            ("{\"id\": \"a\"}", "q.jsonl:1: invalid query"),
            (
                "{\"id\": \"a\", \"query\": \" \", \"relevant\": [\"t\"]}",
                "empty \"query\"",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"relevant\": [\"t\"]}\n{\"id\": \"a\", \"query\": \"y\"}",
                "q.jsonl:2: duplicate query id a (first on line 1)",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"relevant\": [\"t\"], \"groups\": [[\"u\"]]}",
                "must begin with its relevant id",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"groups\": [[]]}",
                "group 1 is empty",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"kind\": \"single\"}",
                "lists no relevant tool",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"kind\": \"none\", \"relevant\": [\"t\"]}",
                "lists relevant tools",
            ),
            (
                "{\"id\": \"a\", \"query\": \"x\", \"relevnt\": [\"t\"]}",
                "q.jsonl:1: query a lists no relevant tool",
            ),
            ("\n\n", "no queries"),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
