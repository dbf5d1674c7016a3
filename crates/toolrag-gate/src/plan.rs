//! A lenient reading of a plan for the checks after the schema.
//!
//! The schema check has already reported every field that is missing or of the
//! wrong type. The later checks read only what is well-formed and skip the
//! rest, so one mistake is reported once (by the schema), not once per check.

use std::collections::HashSet;

use serde_json::{Map, Value};

use toolrag_core::khipu::Decision;

/// The parts of a plan the groundedness and logic checks look at.
pub(super) struct PlanView<'a> {
    /// `decision`, when it is one of the two allowed strings.
    pub decision: Option<Decision>,
    /// `candidates`, when it is an array.
    pub candidates: Option<Vec<CandidateView<'a>>>,
    /// `steps`, when it is an array.
    pub steps: Option<Vec<StepView<'a>>>,
    /// `citedNodeIds`, when it is an array: (index, the id when a string).
    pub cited: Option<Vec<(usize, Option<&'a str>)>>,
    /// `abstainReason`.
    pub reason: Reason<'a>,
}

/// One element of `candidates`.
pub(super) struct CandidateView<'a> {
    pub index: usize,
    /// `nodeId`, when the element is an object with a string `nodeId`.
    pub node_id: Option<&'a str>,
    /// The element, when it is an object.
    pub fields: Option<&'a Map<String, Value>>,
}

/// One element of `steps`.
pub(super) struct StepView<'a> {
    pub index: usize,
    /// `nodeId`, when a string.
    pub node_id: Option<&'a str>,
    /// `action`, when a string.
    pub action: Option<&'a str>,
}

/// What `abstainReason` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason<'a> {
    /// Missing, or of a type the schema rejects.
    Malformed,
    /// `null`.
    Null,
    /// A string, possibly blank.
    Text(&'a str),
}

impl<'a> PlanView<'a> {
    /// Reads `plan`; a plan that is not an object yields an empty view.
    pub fn read(plan: &'a Value) -> Self {
        let empty = PlanView {
            decision: None,
            candidates: None,
            steps: None,
            cited: None,
            reason: Reason::Malformed,
        };
        let Some(root) = plan.as_object() else {
            return empty;
        };
        let decision = match root.get("decision").and_then(Value::as_str) {
            Some("NAVIGATE") => Some(Decision::Navigate),
            Some("ABSTAIN") => Some(Decision::Abstain),
            _ => None,
        };
        let candidates = array(root, "candidates").map(|a| {
            a.iter()
                .enumerate()
                .map(|(index, c)| CandidateView {
                    index,
                    node_id: c.get("nodeId").and_then(Value::as_str),
                    fields: c.as_object(),
                })
                .collect()
        });
        let steps = array(root, "steps").map(|a| {
            a.iter()
                .enumerate()
                .map(|(index, s)| StepView {
                    index,
                    node_id: s.get("nodeId").and_then(Value::as_str),
                    action: s.get("action").and_then(Value::as_str),
                })
                .collect()
        });
        let cited =
            array(root, "citedNodeIds").map(|a| a.iter().map(Value::as_str).enumerate().collect());
        let reason = match root.get("abstainReason") {
            Some(Value::Null) => Reason::Null,
            Some(Value::String(s)) => Reason::Text(s),
            _ => Reason::Malformed,
        };
        PlanView {
            decision,
            candidates,
            steps,
            cited,
            reason,
        }
    }

    /// The string `nodeId`s of the candidates, first occurrence only, in order.
    pub fn candidate_ids(&self) -> Vec<&'a str> {
        first_occurrences(self.candidates.iter().flatten().filter_map(|c| c.node_id))
    }

    /// The cited ids that are strings, with their index, repeats included.
    pub fn cited_strings(&self) -> impl Iterator<Item = (usize, &'a str)> + '_ {
        self.cited
            .iter()
            .flatten()
            .filter_map(|&(index, id)| Some((index, id?)))
    }

    /// The string cited ids, first occurrence only, in order.
    pub fn cited_ids(&self) -> Vec<&'a str> {
        first_occurrences(self.cited_strings().map(|(_, id)| id))
    }
}

fn first_occurrences<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ids.filter(|id| seen.insert(*id)).collect()
}

fn array<'a>(root: &'a Map<String, Value>, key: &str) -> Option<&'a Vec<Value>> {
    root.get(key).and_then(Value::as_array)
}

/// Cuts `text` to at most `max` characters, marking the cut with `…`.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((i, _)) => format!("{}…", &text[..i]),
    }
}

/// Values quoted in messages are cut to this many characters, so that a
/// hostile plan cannot blow up a repair prompt.
const MAX_QUOTE_CHARS: usize = 120;

/// `text` as a JSON string literal, cut to [`MAX_QUOTE_CHARS`].
pub(super) fn quote(text: &str) -> String {
    Value::String(cut(text, MAX_QUOTE_CHARS)).to_string()
}
