//! The plan gate: deterministic validation of Khipu plans, with repair feedback.
//!
//! A plan model proposes a route over the candidates toolrag offered. Before
//! anything acts on it, this gate (code, never a model) checks the plan and
//! either passes it or says exactly what is wrong, in words that can be fed
//! back to the model as a repair prompt.
//!
//! The checks run in order and every violation is reported, not only the first:
//!
//! 1. **schema**: JSON Schema 2020-12 validation against
//!    `khipu-plan.schema.json` ([`PLAN_SCHEMA`](toolrag_core::khipu::PLAN_SCHEMA));
//! 2. **groundedness**: every step and citation names one of the candidates;
//!    with an offered set, the plan's candidates are exactly the offered ones;
//! 3. **decision logic**: ABSTAIN has no steps, no citations and a reason;
//!    NAVIGATE has steps, citations and no reason; every citation is acted on;
//!    nothing is listed twice;
//! 4. **approval**: with a [`ToolResolver`], cited tools that are destructive,
//!    or open-world and not idempotent, are listed in
//!    [`Verdict::requires_approval`].
//!
//! Each violation has a stable [`Code`] and a JSON Pointer. The gate never
//! fails and never panics: any JSON value gets a verdict.
//!
//! ```
//! use serde_json::json;
//! use toolrag_gate::{self as gate, Code};
//! use toolrag_core::khipu::{Candidate, Label, NodeKind};
//!
//! let offered = vec![Candidate {
//!     node_id: "tool://git/git_status".into(),
//!     node_kind: NodeKind::Artifact,
//!     label: Label::Declared,
//!     note: "git [git, status]: Show the working tree status.".into(),
//! }];
//! let mut plan = json!({
//!     "planId": "plan-1",
//!     "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
//!     "provenance": "MODEL_PROPOSED",
//!     "query": "what did I change?",
//!     "contentAccess": "HANDLES_ONLY",
//!     "candidates": offered,
//!     "decision": "NAVIGATE",
//!     "steps": [{ "action": "CITE", "nodeId": "tool://git/git_diff", "rationale": "diff" }],
//!     "citedNodeIds": ["tool://git/git_diff"],
//!     "groundedOnly": true,
//!     "brainBinding": { "protocol": "khipu-retrieval", "status": "NOT_RESOLVED",
//!                       "note": "handles only" },
//!     "controllerBoundary": "the controller resolves handles",
//!     "abstainReason": null
//! });
//! let verdict = gate::check(&plan, Some(&offered));
//! assert!(!verdict.valid);
//! assert_eq!(verdict.codes(), [Code::NotOffered, Code::NotOffered]);
//! assert_eq!(verdict.violations[0].path, "/steps/0/nodeId");
//! assert!(gate::repair_feedback(&verdict)
//!     .contains("step 1 cites \"tool://git/git_diff\", which was not offered; \
//!                choose one of: \"tool://git/git_status\""));
//!
//! // Repaired, the plan passes.
//! plan["steps"][0]["nodeId"] = json!("tool://git/git_status");
//! plan["citedNodeIds"][0] = json!("tool://git/git_status");
//! assert!(gate::check(&plan, Some(&offered)).valid);
//! ```
//!
//! [`run_with_repair`] is the prompt-chain seam: it calls a proposer, gates
//! each proposal, and feeds [`repair_feedback`] back until a plan passes or
//! the retry budget is spent (see `examples/gate_repair.rs`).
#![warn(missing_docs)]

mod approval;
mod chain;
mod feedback;
mod grounded;
mod logic;
mod plan;
mod schema;
mod verdict;

use serde_json::Value;

pub use approval::{approval_reasons, ToolResolver};
pub use chain::{run_with_repair, Abort, Accepted, Attempt, Proposal, Rejection};
pub use feedback::{repair_feedback, MAX_FEEDBACK_ITEMS};
pub use verdict::{Approval, ApprovalReason, Code, Verdict, Violation};

use plan::PlanView;
use toolrag_core::error::{Error, Result};
use toolrag_core::khipu::Candidate;

/// What a plan is checked against. Both parts are optional: without an
/// offered set, steps and citations are checked against the plan's own
/// candidates; without a resolver, no approvals are computed.
#[derive(Clone, Copy, Default)]
pub struct Gate<'a> {
    /// The candidates that were offered to the plan model (the `candidates`
    /// of `toolrag query --format khipu`). The plan's candidates must be
    /// exactly these.
    pub offered: Option<&'a [Candidate]>,
    /// Resolves cited handles to tools, for the approval check.
    pub tools: Option<&'a dyn ToolResolver>,
}

impl std::fmt::Debug for Gate<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("offered", &self.offered.map(<[Candidate]>::len))
            .field("tools", &self.tools.is_some())
            .finish()
    }
}

impl Gate<'_> {
    /// Checks one plan. Never fails: anything that is wrong is a violation.
    pub fn check(&self, plan: &Value) -> Verdict {
        let mut violations = Vec::new();
        schema::check(plan, &mut violations);
        let view = PlanView::read(plan);
        grounded::check(&view, self.offered, &mut violations);
        logic::check(&view, &mut violations);
        let approvals = self
            .tools
            .map(|t| approval::check(&view, t))
            .unwrap_or_default();
        let verdict = Verdict::new(violations, approvals);
        tracing::debug!(
            valid = verdict.valid,
            violations = verdict.violations.len(),
            approvals = verdict.requires_approval.len(),
            "plan checked"
        );
        verdict
    }

    /// Checks a plan given as text, such as a model's raw output. Text that is
    /// not JSON gets a verdict with one [`Code::InvalidJson`] violation.
    pub fn check_str(&self, text: &str) -> Verdict {
        match serde_json::from_str::<Value>(text) {
            Ok(plan) => self.check(&plan),
            Err(e) => not_json(&e),
        }
    }
}

/// The verdict on text that does not parse as JSON.
fn not_json(e: &serde_json::Error) -> Verdict {
    Verdict::new(
        vec![Violation::new(
            Code::InvalidJson,
            "",
            format!(
                "the plan is not JSON ({e}); send one JSON object and nothing else, with no code fence or commentary"
            ),
        )],
        Vec::new(),
    )
}

/// Checks `plan` against the offered candidates (when given), with no
/// approval check. See [`Gate`] to add a [`ToolResolver`].
pub fn check(plan: &Value, offered: Option<&[Candidate]>) -> Verdict {
    Gate {
        offered,
        tools: None,
    }
    .check(plan)
}

/// Reads an offered candidate set: the output of `toolrag query --format
/// khipu` (an object with `candidates`), or a bare array of candidates. Each
/// candidate must have exactly the four contract fields.
pub fn parse_offered(value: &Value) -> Result<Vec<Candidate>> {
    let candidates = match value {
        Value::Array(_) => value,
        Value::Object(o) => o.get("candidates").ok_or_else(|| {
            Error::InvalidInput(
                "the offered candidate set has no \"candidates\" field (expected the output of `toolrag query --format khipu`)".into(),
            )
        })?,
        _ => {
            return Err(Error::InvalidInput(
                "the offered candidate set must be an object with \"candidates\" or an array of candidates".into(),
            ))
        }
    };
    serde_path_to_error::deserialize(candidates)
        .map_err(|e| Error::InvalidInput(format!("offered candidates: {e}")))
}
