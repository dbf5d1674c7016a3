//! Check 3: the decision's logic. ABSTAIN means no steps, no citations and a
//! reason; NAVIGATE means no reason, some steps and some citations; every
//! citation is acted on; nothing is listed twice.

use std::collections::{HashMap, HashSet};

use super::plan::{quote, PlanView, Reason};
use super::{Code, Violation};
use toolrag_core::khipu::Decision;

/// Adds the decision-logic violations of `plan`.
pub(super) fn check(plan: &PlanView<'_>, out: &mut Vec<Violation>) {
    match plan.decision {
        Some(Decision::Abstain) => abstain(plan, out),
        Some(Decision::Navigate) => navigate(plan, out),
        // Missing or not one of the two: the schema said so already.
        None => {}
    }
    if plan.decision != Some(Decision::Abstain) {
        cited_not_acted_on(plan, out);
    }
    duplicates(plan, out);
}

fn abstain(plan: &PlanView<'_>, out: &mut Vec<Violation>) {
    if let Some(steps) = plan.steps.as_ref().filter(|s| !s.is_empty()) {
        out.push(Violation::new(
            Code::AbstainWithSteps,
            "/steps",
            format!(
                "decision is ABSTAIN but there {}; an abstaining plan has none: set \"steps\" to [], or NAVIGATE",
                count(steps.len(), "is 1 step", "steps")
            ),
        ));
    }
    if let Some(cited) = plan.cited.as_ref().filter(|c| !c.is_empty()) {
        out.push(Violation::new(
            Code::AbstainWithCitations,
            "/citedNodeIds",
            format!(
                "decision is ABSTAIN but there {}; an abstaining plan cites nothing: set \"citedNodeIds\" to [], or NAVIGATE",
                count(cited.len(), "is 1 citation", "citations")
            ),
        ));
    }
    let blank = match plan.reason {
        Reason::Null => Some("null"),
        Reason::Text(s) if s.trim().is_empty() => Some("blank"),
        _ => None,
    };
    if let Some(what) = blank {
        out.push(Violation::new(
            Code::AbstainWithoutReason,
            "/abstainReason",
            format!(
                "decision is ABSTAIN but abstainReason is {what}; say in a sentence why no offered candidate supports the query"
            ),
        ));
    }
}

fn navigate(plan: &PlanView<'_>, out: &mut Vec<Violation>) {
    if let Reason::Text(reason) = plan.reason {
        out.push(Violation::new(
            Code::NavigateWithReason,
            "/abstainReason",
            format!(
                "decision is NAVIGATE but abstainReason is {}; set it to null, or ABSTAIN",
                quote(reason)
            ),
        ));
    }
    if plan.steps.as_ref().is_some_and(Vec::is_empty) {
        out.push(Violation::new(
            Code::NavigateWithoutSteps,
            "/steps",
            "decision is NAVIGATE but there are no steps; add at least one step over an offered candidate, or ABSTAIN",
        ));
    }
    if plan.cited.as_ref().is_some_and(Vec::is_empty) {
        out.push(Violation::new(
            Code::NavigateWithoutCitations,
            "/citedNodeIds",
            "decision is NAVIGATE but nothing is cited; cite the offered candidates the route relies on, or ABSTAIN",
        ));
    }
}

fn cited_not_acted_on(plan: &PlanView<'_>, out: &mut Vec<Violation>) {
    let Some(steps) = &plan.steps else {
        // Missing or not an array: the schema said so already.
        return;
    };
    let acted: HashSet<&str> = steps.iter().filter_map(|s| s.node_id).collect();
    for (index, id) in plan.cited_strings() {
        if !acted.contains(id) {
            out.push(Violation::new(
                Code::CitedNotActedOn,
                format!("/citedNodeIds/{index}"),
                format!(
                    "{} is cited but no step acts on it; add a step over it, or do not cite it",
                    quote(id)
                ),
            ));
        }
    }
}

fn duplicates(plan: &PlanView<'_>, out: &mut Vec<Violation>) {
    let candidates = plan
        .candidates
        .iter()
        .flatten()
        .filter_map(|c| Some((c.index, c.node_id?)));
    for (index, first, id) in repeats(candidates) {
        out.push(Violation::new(
            Code::DuplicateCandidate,
            format!("/candidates/{index}"),
            format!(
                "candidate {} is listed again (first at /candidates/{first}); list each candidate once",
                quote(id)
            ),
        ));
    }
    for (index, first, id) in repeats(plan.cited_strings()) {
        out.push(Violation::new(
            Code::DuplicateCitation,
            format!("/citedNodeIds/{index}"),
            format!(
                "{} is cited again (first at /citedNodeIds/{first}); cite each handle once",
                quote(id)
            ),
        ));
    }
}

/// Every repeated id: (its index, the index of its first occurrence, the id).
fn repeats<'a>(items: impl Iterator<Item = (usize, &'a str)>) -> Vec<(usize, usize, &'a str)> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (index, id) in items {
        match first.get(id) {
            None => {
                first.insert(id, index);
            }
            Some(&at) => out.push((index, at, id)),
        }
    }
    out
}

/// "is 1 step" or "are 3 steps".
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        one.to_string()
    } else {
        format!("are {n} {many}")
    }
}
