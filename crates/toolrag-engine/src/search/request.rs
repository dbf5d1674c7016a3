//! The plain, serialisable request and result types of a search.

use serde::{Deserialize, Serialize};

pub use toolrag_core::khipu::Decision;
pub use toolrag_core::retrieval::{Mode, RetrieverId, UnknownMode};

/// The number of tools a request asks for unless it says otherwise.
pub const DEFAULT_K: usize = 10;

/// One search.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchRequest {
    /// The request in words. Plain text: no query syntax is interpreted.
    pub query: String,
    /// How many tools to return (capped at the index size); [`DEFAULT_K`].
    pub k: usize,
    /// Which retrievers to use.
    pub mode: Mode,
    /// Only these namespaces (empty: all).
    pub namespaces: Vec<String>,
    /// Only tools with one of these tags (empty: all).
    pub tags: Vec<String>,
    /// Only tools annotated read-only.
    pub read_only: bool,
    /// Leave out tools that are, or may be, destructive.
    pub exclude_destructive: bool,
    /// Tools always included, whatever their score.
    pub pin: Vec<String>,
    /// Only the tools with these ids (what a caller's policy lets them see);
    /// `None`: every tool. Pinned tools outside it are left out too. Set by
    /// a front end, never read from a request body.
    #[serde(skip)]
    pub visible: Option<std::sync::Arc<std::collections::HashSet<String>>>,
}

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest {
            query: String::new(),
            k: DEFAULT_K,
            mode: Mode::default(),
            namespaces: vec![],
            tags: vec![],
            read_only: false,
            exclude_destructive: false,
            pin: vec![],
            visible: None,
        }
    }
}

impl SearchRequest {
    /// A hybrid search for the top [`DEFAULT_K`] tools for `query`, unfiltered.
    pub fn new(query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        }
    }

    /// Whether the request restricts the tools (namespaces, tags, annotations).
    pub fn is_filtered(&self) -> bool {
        !self.namespaces.is_empty()
            || !self.tags.is_empty()
            || self.read_only
            || self.exclude_destructive
            || self.visible.is_some()
    }
}

/// One retriever's evidence for a hit: the hit's rank in that retriever's
/// list and its raw score there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Evidence {
    /// Rank in the retriever's list, 1-based.
    pub rank: u32,
    /// The retriever's own score (BM25, cosine, ...).
    pub score: f32,
}

impl Evidence {
    /// Evidence at `rank` (1-based) with `score`.
    pub fn new(rank: u32, score: f32) -> Evidence {
        Evidence { rank, score }
    }
}

/// The evidence of each retriever that found a hit, keyed by retriever id, in
/// the order the retrievers ran. Serialised as a JSON object
/// (`{"lexical": {"rank": 1, "score": 7.2}, "dense": {...}}`); a retriever
/// that did not find the tool is absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetrieverEvidence(Vec<(RetrieverId, Evidence)>);

impl RetrieverEvidence {
    /// The evidence of retriever `id`, if it found the tool.
    pub fn get(&self, id: &RetrieverId) -> Option<&Evidence> {
        self.0.iter().find(|(r, _)| r == id).map(|(_, e)| e)
    }

    /// The rank in retriever `id`'s list, 1-based, if it found the tool.
    pub fn rank(&self, id: &RetrieverId) -> Option<u32> {
        self.get(id).map(|e| e.rank)
    }

    /// The score in retriever `id`'s list, if it found the tool.
    pub fn score(&self, id: &RetrieverId) -> Option<f32> {
        self.get(id).map(|e| e.score)
    }

    /// Adds (or replaces) retriever `id`'s evidence.
    pub fn insert(&mut self, id: RetrieverId, evidence: Evidence) {
        match self.0.iter_mut().find(|(r, _)| *r == id) {
            Some(slot) => slot.1 = evidence,
            None => self.0.push((id, evidence)),
        }
    }

    /// `(retriever id, evidence)`, in the order the retrievers ran.
    pub fn iter(&self) -> impl Iterator<Item = (&RetrieverId, &Evidence)> {
        self.0.iter().map(|(r, e)| (r, e))
    }

    /// How many retrievers found the tool.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no retriever found the tool (a pinned tool, for one).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for RetrieverEvidence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(r, e)| (r, e)))
    }
}

impl<'de> Deserialize<'de> for RetrieverEvidence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RetrieverEvidence;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map from retriever id to {rank, score}")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RetrieverEvidence, A::Error> {
                let mut out = RetrieverEvidence::default();
                while let Some((id, e)) = map.next_entry::<RetrieverId, Evidence>()? {
                    out.insert(id, e);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Visitor)
    }
}

/// One retrieved tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Hit {
    /// The tool id.
    pub id: String,
    /// The final score (fused in hybrid mode); higher is better.
    pub score: f32,
    /// Each retriever's rank and score for the tool, for those that found it.
    pub retrievers: RetrieverEvidence,
    /// Whether the tool is here because it was pinned.
    pub pinned: bool,
    /// The tool's one-line summary.
    pub summary: String,
    /// Why the hit is where it is when its score does not say it, or what to
    /// know before using it: `named in the request`, `deprecated: use
    /// tool://filesystem/read_text_file instead`, `replaces deprecated
    /// tool://filesystem/read_file` (parts joined by `; `).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to one search.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SearchResult {
    /// The query as received.
    pub query: String,
    /// The mode actually used (hybrid falls back to lexical without a model).
    pub mode: Mode,
    /// The tools, best first.
    pub hits: Vec<Hit>,
    /// The suggested decision.
    pub decision: Decision,
    /// Why ABSTAIN, naming the nearest misses; `None` when navigating.
    pub abstain_reason: Option<String>,
    /// The evidence the decision was taken on (the calibrated confidence, 0..1).
    pub confidence: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_their_names() {
        for m in Mode::ALL {
            assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
        }
        assert_eq!(Mode::NAMES.map(|n| n.parse::<Mode>().unwrap()), Mode::ALL);
        let err = "bm25".parse::<Mode>().unwrap_err().to_string();
        assert!(err.contains("unknown mode `bm25`"), "{err}");
    }

    #[test]
    fn a_request_asks_for_ten_tools_unless_told() {
        assert_eq!(SearchRequest::default().k, 10);
        let r = SearchRequest::new("read a file");
        assert_eq!(
            (r.query.as_str(), r.k, r.mode),
            ("read a file", 10, Mode::Hybrid)
        );
        let r: SearchRequest = serde_json::from_str(r#"{"query": "x"}"#).unwrap();
        assert_eq!(r.k, 10);
    }

    #[test]
    fn evidence_is_a_map_in_retriever_order() {
        let mut e = RetrieverEvidence::default();
        e.insert(RetrieverId::LEXICAL, Evidence::new(1, 7.25));
        e.insert(RetrieverId::DENSE, Evidence::new(3, 0.5));
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"lexical":{"rank":1,"score":7.25},"dense":{"rank":3,"score":0.5}}"#
        );
        let back: RetrieverEvidence = serde_json::from_str(&json).unwrap();
        assert_eq!(back, e);
        assert_eq!(
            (e.rank(&RetrieverId::DENSE), e.score(&RetrieverId::LEXICAL)),
            (Some(3), Some(7.25))
        );
        assert_eq!(e.get(&RetrieverId::new("name")), None);
    }
}
