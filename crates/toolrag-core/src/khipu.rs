//! The Khipu candidate handle set: the shape the plan model consumes.
//!
//! Each candidate has exactly the four fields of the contract
//! (`spec/khipu-plan.schema.json`): `nodeId`, `nodeKind`, `label`, `note`.
//! Scores and ranks never go inside a candidate; they travel in `retrieval`.

use serde::{Deserialize, Serialize};

use crate::registry::ToolDef;
use crate::retrieval::Mode;

/// The Khipu plan contract, embedded so the product validates at run time.
pub const PLAN_SCHEMA: &str = include_str!("../../../spec/khipu-plan.schema.json");

/// The longest a candidate note may be, in characters.
pub const MAX_NOTE_CHARS: usize = 200;

/// Declares a string enum of the contract: serde names, `as_str`, `Display`
/// and `FromStr` all use the contract's spelling.
macro_rules! contract_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in the contract's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The contract's spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::error::Error;
            fn from_str(s: &str) -> crate::error::Result<$name> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        crate::error::Error::InvalidInput(format!(
                            "`{s}` is not a {} of the Khipu contract",
                            stringify!($name)
                        ))
                    })
            }
        }
    };
}

contract_enum! {
    /// The metadata shape of a candidate's node (`nodeKind`).
    NodeKind {
        /// A thing that can be used: every tool.
        Artifact = "ARTIFACT",
        /// A claim.
        Claim = "CLAIM",
        /// An edge between nodes.
        Edge = "EDGE",
        /// An index node.
        Index = "INDEX",
        /// A summary node.
        Summary = "SUMMARY",
    }
}

contract_enum! {
    /// A handle's honesty tier (`label`).
    Label {
        /// Measured.
        Measured = "MEASURED",
        /// Reported by someone else.
        Reported = "REPORTED",
        /// Declared by its author: every registry tool.
        Declared = "DECLARED",
        /// Simulated.
        Simulated = "SIMULATED",
        /// Unknown.
        Unknown = "UNKNOWN",
        /// Unavailable.
        Unavailable = "UNAVAILABLE",
    }
}

contract_enum! {
    /// What the plan model may see (`contentAccess`).
    ContentAccess {
        /// Handles and routing metadata only, never node content.
        HandlesOnly = "HANDLES_ONLY",
    }
}

/// One offered handle, exactly as the contract defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    /// `tool://<id>`.
    pub node_id: String,
    /// Always `ARTIFACT` for a tool.
    pub node_kind: NodeKind,
    /// `DECLARED` for registry tools: the tool's card is what its author declared.
    pub label: Label,
    /// Short routing metadata: namespace, tags, the one-line summary.
    pub note: String,
}

/// Scores, ranks and the suggested decision, kept apart from the candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retrieval {
    /// The mode used.
    pub mode: Mode,
    /// Final scores, parallel to the candidates.
    pub scores: Vec<f32>,
    /// Per candidate: its rank in each retriever (`null` when absent).
    pub ranks: Vec<Ranks>,
    /// The suggested decision.
    pub decision: Decision,
    /// Why ABSTAIN; `null` when navigating.
    pub abstain_reason: Option<String>,
    /// How sure the retrieval is that a listed tool fits, from 0 to 1: the
    /// share of the registry's unrelated calibration requests whose best
    /// score is below this request's. It means the same on every registry.
    pub confidence: f32,
}

/// A candidate's rank in each retriever that found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranks {
    /// Rank (1-based) by retriever id (`dense`, `lexical`, ...), sorted by
    /// id; a retriever that did not find the tool is absent.
    pub retrievers: std::collections::BTreeMap<String, u32>,
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
    pub content_access: ContentAccess,
    /// The offered handles, best first.
    pub candidates: Vec<Candidate>,
    /// How they were found.
    pub retrieval: Retrieval,
}

/// The routing note of a tool: `namespace [tags]: summary`, cut to
/// [`MAX_NOTE_CHARS`] at a word boundary. Never the full docstring. A
/// deprecated tool says so before its summary, where the cut cannot reach:
/// `filesystem: (deprecated: use tool://filesystem/read_text_file instead)
/// Read the complete contents of a file as text.` The contract's `note` is
/// routing metadata, and a deprecation is that; the candidate has no other
/// field for it (`additionalProperties: false`).
pub fn note(tool: &ToolDef) -> String {
    let mut s = tool.namespace.clone();
    if !tool.tags.is_empty() {
        s.push_str(" [");
        s.push_str(&tool.tags.join(", "));
        s.push(']');
    }
    s.push_str(": ");
    if let Some(deprecated) = tool.deprecation_note() {
        s.push('(');
        s.push_str(&deprecated);
        s.push_str(") ");
    }
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
        node_kind: NodeKind::Artifact,
        label: Label::Declared,
        note: note(tool),
    }
}

/// The suggested decision for the plan model: the contract's two, so a
/// match on it is exhaustive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    /// At least one tool is supported by enough evidence.
    Navigate,
    /// No tool is; the reason names the nearest misses.
    Abstain,
}
