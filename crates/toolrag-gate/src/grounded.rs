//! Check 2: groundedness. Steps and citations name only offered handles, and
//! with an offered set the plan's candidates are exactly that set, unchanged.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::plan::{quote, PlanView};
use super::{Code, Violation};
use toolrag_core::khipu::Candidate;

/// At most this many handles are listed after "choose one of:".
const MAX_CHOICES: usize = 20;

/// Adds the groundedness violations of `plan`.
pub(super) fn check(plan: &PlanView<'_>, offered: Option<&[Candidate]>, out: &mut Vec<Violation>) {
    if let Some(offered) = offered {
        compare_candidates(plan, offered, out);
    }
    // With an offered set it is the truth; without one, the plan's own
    // candidates are all there is to check against.
    let allowed: Vec<&str> = match offered {
        Some(o) => {
            let mut seen = HashSet::new();
            o.iter()
                .map(|c| c.node_id.as_str())
                .filter(|id| seen.insert(*id))
                .collect()
        }
        None => plan.candidate_ids(),
    };
    let allowed_set: HashSet<&str> = allowed.iter().copied().collect();
    let choices = choices(&allowed);
    for step in plan.steps.iter().flatten() {
        let Some(id) = step.node_id else { continue };
        if !allowed_set.contains(id) {
            let verb = match step.action {
                Some("RETRIEVE") => "retrieves",
                Some("EXPAND") => "expands",
                Some("CITE") => "cites",
                _ => "acts on",
            };
            out.push(Violation::new(
                Code::NotOffered,
                format!("/steps/{}/nodeId", step.index),
                format!(
                    "step {} {verb} {}, which was not offered; {choices}",
                    step.index + 1,
                    quote(id)
                ),
            ));
        }
    }
    for (index, id) in plan.cited_strings() {
        if !allowed_set.contains(id) {
            out.push(Violation::new(
                Code::NotOffered,
                format!("/citedNodeIds/{index}"),
                format!(
                    "citation {} is {}, which was not offered; {choices}",
                    index + 1,
                    quote(id)
                ),
            ));
        }
    }
}

/// The plan's candidates against the offered set: added, altered, missing.
fn compare_candidates(plan: &PlanView<'_>, offered: &[Candidate], out: &mut Vec<Violation>) {
    let mut by_id: HashMap<&str, &Candidate> = HashMap::new();
    for c in offered {
        by_id.entry(c.node_id.as_str()).or_insert(c);
    }
    let Some(candidates) = &plan.candidates else {
        // Missing or not an array: the schema said so already.
        return;
    };
    for c in candidates {
        let (Some(id), Some(fields)) = (c.node_id, c.fields) else {
            continue;
        };
        let Some(o) = by_id.get(id) else {
            out.push(Violation::new(
                Code::CandidateAdded,
                format!("/candidates/{}", c.index),
                format!(
                    "candidate {} was not offered; remove it (the candidates must be exactly the offered set)",
                    quote(id)
                ),
            ));
            continue;
        };
        for (field, offered_value) in [
            ("nodeKind", o.node_kind.as_str()),
            ("label", o.label.as_str()),
            ("note", o.note.as_str()),
        ] {
            // A missing or non-string field is a schema violation already.
            let Some(Value::String(value)) = fields.get(field) else {
                continue;
            };
            if value != offered_value {
                out.push(Violation::new(
                    Code::CandidateAltered,
                    format!("/candidates/{}/{field}", c.index),
                    format!(
                        "candidate {} has {field} {}, but it was offered with {}; copy offered candidates unchanged",
                        quote(id),
                        quote(value),
                        quote(offered_value)
                    ),
                ));
            }
        }
    }
    let present: HashSet<&str> = candidates.iter().filter_map(|c| c.node_id).collect();
    let mut reported = HashSet::new();
    for o in offered {
        let id = o.node_id.as_str();
        if !present.contains(id) && reported.insert(id) {
            out.push(Violation::new(
                Code::CandidateMissing,
                "/candidates",
                format!(
                    "offered candidate {} is missing from the candidates; copy every offered candidate unchanged",
                    quote(id)
                ),
            ));
        }
    }
}

/// "choose one of: a, b, c", or what to do when nothing was offered.
fn choices(allowed: &[&str]) -> String {
    if allowed.is_empty() {
        return "no candidate was offered, so nothing can be acted on or cited: ABSTAIN".into();
    }
    let mut s = String::from("choose one of: ");
    let listed: Vec<String> = allowed
        .iter()
        .take(MAX_CHOICES)
        .map(|id| quote(id))
        .collect();
    s.push_str(&listed.join(", "));
    if allowed.len() > MAX_CHOICES {
        s.push_str(&format!(" (and {} more)", allowed.len() - MAX_CHOICES));
    }
    s
}
