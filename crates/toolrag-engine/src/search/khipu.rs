//! The Khipu candidate handle set of a search result (the contract's types
//! are [`toolrag_core::khipu`]).

pub use toolrag_core::khipu::*;

use super::SearchResult;
use toolrag_core::registry::ToolDef;

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
            retrievers: h
                .retrievers
                .iter()
                .map(|(r, e)| (r.to_string(), e.rank))
                .collect(),
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
        content_access: ContentAccess::HandlesOnly,
        candidates,
        retrieval: Retrieval {
            mode: result.mode,
            scores,
            ranks,
            decision,
            abstain_reason,
            confidence: result.confidence,
        },
    }
}
