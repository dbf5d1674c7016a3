//! The Khipu candidate handle set: the shape the plan model consumes.
//!
//! Each candidate has exactly the four fields of the contract
//! (`spec/khipu-plan.schema.json`): `nodeId`, `nodeKind`, `label`, `note`.
//! Scores and ranks never go inside a candidate; they travel in `retrieval`.

use serde::{Deserialize, Serialize};

use super::{Decision, SearchResult};
use crate::registry::ToolDef;

/// The Khipu plan contract, embedded so the product validates at run time.
pub const PLAN_SCHEMA: &str = include_str!("../../spec/khipu-plan.schema.json");

/// The longest a candidate note may be, in characters.
pub const MAX_NOTE_CHARS: usize = 200;

/// One offered handle, exactly as the contract defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    /// `tool://<id>`.
    pub node_id: String,
    /// Always `ARTIFACT` for a tool.
    pub node_kind: String,
    /// `DECLARED` for registry tools: the tool's card is what its author declared.
    pub label: String,
    /// Short routing metadata: namespace, tags, the one-line summary.
    pub note: String,
}

/// Scores, ranks and the suggested decision, kept apart from the candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retrieval {
    /// The mode used.
    pub mode: super::Mode,
    /// Final scores, parallel to the candidates.
    pub scores: Vec<f32>,
    /// Per candidate: its rank in each retriever (`null` when absent).
    pub ranks: Vec<Ranks>,
    /// The suggested decision.
    pub decision: Decision,
    /// Why ABSTAIN; `null` when navigating.
    pub abstain_reason: Option<String>,
}

/// A candidate's ranks in each retriever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranks {
    /// BM25 rank, 1-based.
    pub lexical: Option<u32>,
    /// Dense rank, 1-based.
    pub dense: Option<u32>,
    /// Whether the candidate was pinned.
    pub pinned: bool,
}

/// The `--format khipu` output and the HTTP search response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateSet {
    /// The request.
    pub query: String,
    /// Always `HANDLES_ONLY`: the model sees handles and metadata, never content.
    pub content_access: String,
    /// The offered handles, best first.
    pub candidates: Vec<Candidate>,
    /// How they were found.
    pub retrieval: Retrieval,
}

/// The routing note of a tool: `namespace · tags · summary`, cut to
/// [`MAX_NOTE_CHARS`] at a word boundary. Never the full docstring.
pub fn note(tool: &ToolDef) -> String {
    let mut s = tool.namespace.clone();
    if !tool.tags.is_empty() {
        s.push_str(" [");
        s.push_str(&tool.tags.join(", "));
        s.push(']');
    }
    s.push_str(": ");
    s.push_str(
        &tool
            .summary
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    );
    if s.chars().count() <= MAX_NOTE_CHARS {
        return s;
    }
    let cut: String = s.chars().take(MAX_NOTE_CHARS - 1).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{cut}…")
}

/// A candidate for one tool.
pub fn candidate(tool: &ToolDef) -> Candidate {
    Candidate {
        node_id: tool.handle(),
        node_kind: "ARTIFACT".into(),
        label: "DECLARED".into(),
        note: note(tool),
    }
}

/// Renders a search result as a candidate set; `tool` resolves hit ids.
pub fn candidate_set<'a>(
    result: &SearchResult,
    tool: impl Fn(&str) -> Option<&'a ToolDef>,
) -> CandidateSet {
    let mut candidates = Vec::with_capacity(result.hits.len());
    let mut scores = Vec::with_capacity(result.hits.len());
    let mut ranks = Vec::with_capacity(result.hits.len());
    for h in &result.hits {
        let Some(t) = tool(&h.id) else { continue };
        candidates.push(candidate(t));
        scores.push(h.score);
        ranks.push(Ranks {
            lexical: h.lexical_rank,
            dense: h.dense_rank,
            pinned: h.pinned,
        });
    }
    let (decision, abstain_reason) = if candidates.is_empty() {
        (
            Decision::Abstain,
            Some(
                result
                    .abstain_reason
                    .clone()
                    .unwrap_or_else(|| "no tool matched the request and filters".into()),
            ),
        )
    } else {
        (result.decision, result.abstain_reason.clone())
    };
    CandidateSet {
        query: result.query.clone(),
        content_access: "HANDLES_ONLY".into(),
        candidates,
        retrieval: Retrieval {
            mode: result.mode,
            scores,
            ranks,
            decision,
            abstain_reason,
        },
    }
}
