//! # A prompt chain with a deterministic gate
//!
//! A plan model proposes a route over the tools toolrag offered. Between the
//! model and anything that acts, the plan gate (code, not a model) checks the
//! plan. When it fails, the gate's violations become a repair prompt and the
//! model tries again, up to a retry budget; then the chain aborts.
//!
//! The model stays outside the library: `run_with_repair` takes a closure.
//! Here that closure drives a fake model which, like real ones sometimes do,
//! first cites a tool it was never offered, then fixes its plan from the
//! gate's feedback.
//!
//! Run it with `cargo run --example gate_repair`.

use serde_json::{json, Value};
use toolrag::gate::{Abort, Attempt, Gate};
use toolrag::registry::LoadOptions;
use toolrag::search::khipu::{Candidate, Label, NodeKind};
use toolrag::Registry;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ## 1. The offered candidates
    //
    // In production these come from `toolrag query --format khipu` (or the
    // library's `search::khipu::candidate_set`). Three git tools will do.
    let offered = vec![
        candidate("git/git_reset", "git [git, reset, undo]: Move the current branch to a revision; mode hard also DISCARDS all uncommitted changes."),
        candidate("git/git_log", "git [git, log, history, commits]: List recent commits with hash, author, date and subject, newest first."),
        candidate("git/git_status", "git [git, status, vcs]: Show the working tree status: current branch, staged, unstaged and untracked changes."),
    ];

    // ## 2. The gate
    //
    // The plan's candidates must be exactly the offered ones. With a tool
    // resolver (here the shipped registry; an opened index works too), cited
    // tools that are destructive are flagged for a person's approval.
    let registry = Registry::load(
        &[std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools")],
        &LoadOptions::default(),
    )?;
    let gate = Gate {
        offered: Some(&offered),
        tools: Some(&registry),
    };

    // ## 3. The chain
    //
    // Each attempt turns into a prompt: the first one asks for a plan; each
    // repair adds the gate's feedback verbatim. The fake model answers it.
    let mut model = FakeModel::default();
    let result = gate.run_with_repair(
        |attempt: Attempt<'_>| {
            let prompt = prompt(&offered, &attempt);
            println!("--- prompt {} ---\n{prompt}", attempt.number);
            model.complete(&prompt, &offered)
        },
        2, // up to two repairs: at most three proposals
    );

    // ## 4. The outcome
    //
    // Either a valid plan (with the approvals it needs) or the last verdict.
    match result {
        Ok(accepted) => {
            println!(
                "--- accepted after {} attempt(s) ---\ncited: {}",
                accepted.attempts, accepted.plan["citedNodeIds"]
            );
            for a in &accepted.verdict.requires_approval {
                let why: Vec<_> = a.reasons.iter().map(|r| r.describe()).collect();
                println!(
                    "approval required before running {}: {}",
                    a.node_id,
                    why.join("; ")
                );
            }
            Ok(())
        }
        Err(Abort::Rejected(rejection)) => {
            println!("--- aborted after {} attempts ---", rejection.attempts);
            for v in &rejection.verdict.violations {
                println!("{v}");
            }
            Err("no valid plan".into())
        }
        Err(e @ Abort::Proposer { .. }) => Err(e.into()),
    }
}

/// A candidate handle for a registry tool.
fn candidate(id: &str, note: &str) -> Candidate {
    Candidate {
        node_id: format!("tool://{id}"),
        node_kind: NodeKind::Artifact,
        label: Label::Declared,
        note: note.into(),
    }
}

/// The text a real model would be sent.
fn prompt(offered: &[Candidate], attempt: &Attempt<'_>) -> String {
    let mut p = format!(
        "Route the request \"undo my last commit and discard local changes\" over these handles \
         and answer with one Khipu plan as JSON:\n{}\n",
        serde_json::to_string(offered).unwrap_or_default()
    );
    if let Some(feedback) = attempt.feedback {
        p.push_str("\nYour previous plan was rejected.\n");
        p.push_str(feedback);
    }
    p
}

/// Stands in for a model client: prompt in, text out. A real client's errors
/// (timeouts, quota) would stop the chain as `Abort::Proposer`.
#[derive(Default)]
struct FakeModel {
    calls: usize,
}

impl FakeModel {
    fn complete(&mut self, prompt: &str, offered: &[Candidate]) -> std::io::Result<String> {
        self.calls += 1;
        // First answer: `git revert` sounds right, but it was never offered.
        // Later answers take the first handle the gate says to choose from.
        let tool = match prompt.split("choose one of: \"").nth(1) {
            None => "tool://git/git_revert",
            Some(rest) => rest.split('"').next().unwrap_or_default(),
        };
        Ok(plan(offered, tool).to_string())
    }
}

/// A NAVIGATE plan that looks at the log, then cites `tool`.
fn plan(offered: &[Candidate], tool: &str) -> Value {
    json!({
        "planId": "plan-example",
        "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
        "provenance": "MODEL_PROPOSED",
        "query": "undo my last commit and discard local changes",
        "contentAccess": "HANDLES_ONLY",
        "candidates": offered,
        "decision": "NAVIGATE",
        "steps": [
            { "action": "RETRIEVE", "nodeId": "tool://git/git_log", "rationale": "find the last commit" },
            { "action": "CITE", "nodeId": tool, "rationale": "undo it" }
        ],
        "citedNodeIds": [tool],
        "groundedOnly": true,
        "brainBinding": { "protocol": "khipu-retrieval", "status": "NOT_RESOLVED",
                          "note": "handles only; the controller resolves content" },
        "controllerBoundary": "the controller validates, resolves and acts outside the weights",
        "abstainReason": null
    })
}
