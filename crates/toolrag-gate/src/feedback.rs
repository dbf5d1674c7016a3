//! Turning a verdict into the text of a repair prompt.

use super::Verdict;

/// A repair prompt lists at most this many violations; more would drown the
/// model, and fixing the first ones often fixes the rest.
pub const MAX_FEEDBACK_ITEMS: usize = 20;

/// Renders the violations of `verdict` as a short, exact instruction for a
/// repair prompt: one numbered line per violation, each with its JSON Pointer
/// and what to change. Returns an empty string for a valid verdict.
///
/// Approvals are not part of it: needing approval is not a defect of the plan.
///
/// ```
/// use serde_json::json;
/// use toolrag_gate as gate;
///
/// let plan = json!({ "decision": "ABSTAIN", "steps": [], "citedNodeIds": [],
///                    "abstainReason": null });
/// let text = gate::repair_feedback(&gate::check(&plan, None));
/// assert!(text.starts_with("The plan gate rejected the plan"));
/// assert!(text.contains("/abstainReason: decision is ABSTAIN but abstainReason is null"));
/// ```
pub fn repair_feedback(verdict: &Verdict) -> String {
    let n = verdict.violations.len();
    if n == 0 {
        return String::new();
    }
    let mut text = format!(
        "The plan gate rejected the plan: {n} problem{}. Fix {} and send the whole corrected plan again, as JSON only.\n",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "every one" }
    );
    for (i, v) in verdict
        .violations
        .iter()
        .take(MAX_FEEDBACK_ITEMS)
        .enumerate()
    {
        let at = if v.path.is_empty() {
            "(the plan)"
        } else {
            &v.path
        };
        text.push_str(&format!("{}. {at}: {}\n", i + 1, v.message));
    }
    if n > MAX_FEEDBACK_ITEMS {
        text.push_str(&format!(
            "... and {} more of the same kinds.\n",
            n - MAX_FEEDBACK_ITEMS
        ));
    }
    text
}
