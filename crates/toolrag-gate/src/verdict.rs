//! What the gate answers: a [`Verdict`] made of [`Violation`]s, each with a
//! stable [`Code`], plus the cited tools that need a person's approval.
//!
//! These types are the gate's wire format (the CLI's `--format json` and the
//! HTTP body): change them compatibly. A code, once published, keeps its name.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a plan was rejected. The names are stable; each one reads naturally
/// after "the plan has" or "the plan is".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// The proposal is not JSON at all. Only [`Gate::check_str`](super::Gate::check_str)
    /// and the repair chain report it: the CLI treats unreadable input as an
    /// error (exit 2), not as a verdict.
    InvalidJson,
    /// Check 1: the plan breaks `khipu-plan.schema.json` (a const, an enum, a
    /// required field, `additionalProperties: false`, `minItems`, a type). The
    /// path is the instance path jsonschema reports.
    Schema,
    /// Check 2: a step or a citation names a handle that is not one of the
    /// plan's candidates (or, with an offered set, not one of the offered
    /// candidates): a hallucinated handle.
    NotOffered,
    /// Check 2, with an offered set: the plan lists a candidate that was never
    /// offered.
    CandidateAdded,
    /// Check 2, with an offered set: an offered candidate's `nodeKind`, `label`
    /// or `note` was changed. The path names the changed field.
    CandidateAltered,
    /// Check 2, with an offered set: an offered candidate is missing from the
    /// plan's candidates.
    CandidateMissing,
    /// Check 3: `decision` is `ABSTAIN` but `steps` is not empty.
    AbstainWithSteps,
    /// Check 3: `decision` is `ABSTAIN` but `citedNodeIds` is not empty.
    AbstainWithCitations,
    /// Check 3: `decision` is `ABSTAIN` but `abstainReason` is null or blank.
    AbstainWithoutReason,
    /// Check 3: `decision` is `NAVIGATE` but `abstainReason` is not null.
    NavigateWithReason,
    /// Check 3: `decision` is `NAVIGATE` but `steps` is empty.
    NavigateWithoutSteps,
    /// Check 3: `decision` is `NAVIGATE` but `citedNodeIds` is empty.
    NavigateWithoutCitations,
    /// Check 3: a cited handle is not the `nodeId` of any step. Not reported
    /// for an `ABSTAIN` plan, where the fix is to drop the citations
    /// ([`Code::AbstainWithCitations`]), not to add steps.
    CitedNotActedOn,
    /// Check 3: two candidates have the same `nodeId`.
    DuplicateCandidate,
    /// Check 3: the same handle is cited twice.
    DuplicateCitation,
}

impl Code {
    /// Every code, in the order the checks run.
    pub const ALL: [Code; 15] = [
        Code::InvalidJson,
        Code::Schema,
        Code::NotOffered,
        Code::CandidateAdded,
        Code::CandidateAltered,
        Code::CandidateMissing,
        Code::AbstainWithSteps,
        Code::AbstainWithCitations,
        Code::AbstainWithoutReason,
        Code::NavigateWithReason,
        Code::NavigateWithoutSteps,
        Code::NavigateWithoutCitations,
        Code::CitedNotActedOn,
        Code::DuplicateCandidate,
        Code::DuplicateCitation,
    ];

    /// The code as it is written in verdicts: `not-offered`, `schema`...
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidJson => "invalid-json",
            Code::Schema => "schema",
            Code::NotOffered => "not-offered",
            Code::CandidateAdded => "candidate-added",
            Code::CandidateAltered => "candidate-altered",
            Code::CandidateMissing => "candidate-missing",
            Code::AbstainWithSteps => "abstain-with-steps",
            Code::AbstainWithCitations => "abstain-with-citations",
            Code::AbstainWithoutReason => "abstain-without-reason",
            Code::NavigateWithReason => "navigate-with-reason",
            Code::NavigateWithoutSteps => "navigate-without-steps",
            Code::NavigateWithoutCitations => "navigate-without-citations",
            Code::CitedNotActedOn => "cited-not-acted-on",
            Code::DuplicateCandidate => "duplicate-candidate",
            Code::DuplicateCitation => "duplicate-citation",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// What kind of problem it is.
    pub code: Code,
    /// Where: a JSON Pointer (RFC 6901) into the plan, such as
    /// `/steps/1/nodeId`; empty for the whole plan.
    pub path: String,
    /// What is wrong and how to fix it, in one sentence meant for a person
    /// and for a repair prompt alike.
    pub message: String,
}

impl Violation {
    pub(crate) fn new(code: Code, path: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.code, self.message)
        } else {
            write!(f, "{} at {}: {}", self.code, self.path, self.message)
        }
    }
}

/// Why a cited tool must be approved by a person before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalReason {
    /// The tool is annotated `destructiveHint: true`.
    Destructive,
    /// The tool is not annotated read-only and does not deny being destructive
    /// (`destructiveHint` missing); MCP says to assume it is.
    MayBeDestructive,
    /// The tool is not read-only, reaches an open world of external entities
    /// (`openWorldHint` true or missing) and is not idempotent
    /// (`idempotentHint` false or missing): a message sent cannot be unsent.
    OpenWorldNotIdempotent,
}

impl ApprovalReason {
    /// The reason in words.
    pub fn describe(self) -> &'static str {
        match self {
            ApprovalReason::Destructive => "destructive",
            ApprovalReason::MayBeDestructive => "may be destructive (not annotated)",
            ApprovalReason::OpenWorldNotIdempotent => "open world and not idempotent",
        }
    }
}

/// A cited tool that needs a person's approval before it runs: approval sits
/// between the plan (reversible) and the act (irreversible).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The cited handle, such as `tool://git/git_reset`.
    pub node_id: String,
    /// Why, at least one reason.
    pub reasons: Vec<ApprovalReason>,
}

/// The gate's answer about one plan.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// `true` exactly when there are no violations.
    pub valid: bool,
    /// Everything wrong with the plan, in check order: schema, groundedness,
    /// decision logic. All of them, not only the first.
    pub violations: Vec<Violation>,
    /// Cited tools (resolved in an index) that need approval before running.
    /// It does not make a plan invalid.
    pub requires_approval: Vec<Approval>,
}

impl Verdict {
    /// A verdict from its violations and approvals.
    pub fn new(violations: Vec<Violation>, requires_approval: Vec<Approval>) -> Self {
        Verdict {
            valid: violations.is_empty(),
            violations,
            requires_approval,
        }
    }

    /// The codes of the violations, in order, repeats included.
    pub fn codes(&self) -> Vec<Code> {
        self.violations.iter().map(|v| v.code).collect()
    }

    /// Whether some violation has this code.
    pub fn has(&self, code: Code) -> bool {
        self.violations.iter().any(|v| v.code == code)
    }
}
