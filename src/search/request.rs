//! The plain, serialisable request and result types of a search.

use serde::{Deserialize, Serialize};

/// Which retrievers to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 and dense, fused.
    #[default]
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Dense vectors only.
    Dense,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Hybrid => "hybrid",
            Mode::Lexical => "lexical",
            Mode::Dense => "dense",
        })
    }
}

/// The suggested decision for the plan model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    /// At least one tool is supported by enough evidence.
    Navigate,
    /// No tool is; the reason names the nearest misses.
    Abstain,
}

/// One search.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchRequest {
    /// The request in words. Plain text: no query syntax is interpreted.
    pub query: String,
    /// How many tools to return (capped at the index size).
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
}

/// One retrieved tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The tool id.
    pub id: String,
    /// The final score (fused in hybrid mode); higher is better.
    pub score: f32,
    /// Rank in the BM25 list (1-based), if the tool was in it.
    pub lexical_rank: Option<u32>,
    /// BM25 score, if the tool was in the BM25 list.
    pub lexical_score: Option<f32>,
    /// Rank in the dense list (1-based), if the tool was in it.
    pub dense_rank: Option<u32>,
    /// Best cosine similarity over the tool's vectors, if in the dense list.
    pub dense_score: Option<f32>,
    /// Whether the tool is here because it was pinned.
    pub pinned: bool,
    /// The tool's one-line summary.
    pub summary: String,
}

/// The answer to one search.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
