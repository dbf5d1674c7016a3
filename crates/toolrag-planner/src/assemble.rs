//! The whole plan from the model's judgment: toolrag fills every field it
//! already knows (ids, profile, provenance, query, content access, the
//! offered candidates, the constants) and takes from the model only
//! `decision`, `steps`, `citedNodeIds` and `abstainReason`.
//!
//! An answer that carries a whole plan is read the same way, by its judgment
//! fields: a model that rewrote the candidates cannot smuggle a handle in.
//! A judgment field the model left out stays out, so the gate reports it.

use serde_json::{json, Map, Value};
use toolrag_core::khipu::Candidate;
use toolrag_gate::Proposal;

/// The fields the model is asked for.
pub const JUDGMENT_FIELDS: [&str; 4] = ["decision", "steps", "citedNodeIds", "abstainReason"];

const PROFILE: &str = "SZL-Khipu-1.5B-BrainNavigator";
const BINDING_NOTE: &str =
    "The plan names handles only; the controller resolves them outside the model.";
const BOUNDARY: &str = "toolrag's gate validated this plan against the offered handles; the \
controller resolves handles and runs tools outside the model, and irreversible acts wait for a \
person's approval.";

/// The proposal for the gate made of one model answer.
///
/// Text that is not JSON stays text (the gate reports `invalid-json`); JSON
/// that is not an object goes to the gate as it is (a schema violation).
pub fn proposal(answer: &str, plan_id: &str, query: &str, offered: &[Candidate]) -> Proposal {
    match serde_json::from_str::<Value>(answer.trim()) {
        Ok(Value::Object(judgment)) => Proposal::Json(plan(&judgment, plan_id, query, offered)),
        Ok(other) => Proposal::Json(other),
        Err(_) => Proposal::Text(answer.to_string()),
    }
}

/// The contract's plan with the judgment fields of `judgment`.
pub fn plan(
    judgment: &Map<String, Value>,
    plan_id: &str,
    query: &str,
    offered: &[Candidate],
) -> Value {
    let mut plan = json!({
        "planId": plan_id,
        "capabilityProfile": PROFILE,
        "provenance": "MODEL_PROPOSED",
        "query": query,
        "contentAccess": "HANDLES_ONLY",
        "candidates": offered,
    });
    let obj = plan.as_object_mut().expect("a literal object");
    for key in JUDGMENT_FIELDS {
        if let Some(v) = judgment.get(key) {
            obj.insert(key.to_string(), v.clone());
        }
    }
    obj.insert("groundedOnly".into(), Value::Bool(true));
    obj.insert(
        "brainBinding".into(),
        json!({ "protocol": "khipu-retrieval", "status": "NOT_RESOLVED", "note": BINDING_NOTE }),
    );
    obj.insert("controllerBoundary".into(), Value::String(BOUNDARY.into()));
    plan
}

/// A fresh plan id: `plan-` and 16 random hex digits.
pub fn plan_id() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness the id is still unique enough for a log line.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (nanos as u64).to_le_bytes();
    }
    format!("plan-{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag_core::khipu::{Label, NodeKind};

    fn offered() -> Vec<Candidate> {
        vec![Candidate {
            node_id: "tool://git/git_status".into(),
            node_kind: NodeKind::Artifact,
            label: Label::Declared,
            note: "git: Show the working tree status.".into(),
        }]
    }

    #[test]
    fn a_judgment_becomes_a_plan_the_gate_passes() {
        let answer = r#"{"decision":"NAVIGATE","steps":[{"action":"CITE","nodeId":"tool://git/git_status","rationale":"status"}],"citedNodeIds":["tool://git/git_status"],"abstainReason":null}"#;
        let Proposal::Json(plan) = proposal(answer, "plan-1", "what changed?", &offered()) else {
            panic!("JSON expected")
        };
        let verdict = toolrag_gate::check(&plan, Some(&offered()));
        assert!(verdict.valid, "{:?}", verdict.violations);
        assert_eq!(plan["provenance"], "MODEL_PROPOSED");
    }

    #[test]
    fn a_whole_plan_is_read_by_its_judgment_fields_only() {
        let answer = json!({
            "candidates": [{"nodeId": "tool://evil/x", "nodeKind": "ARTIFACT", "label": "DECLARED", "note": ""}],
            "provenance": "SYNTHETIC",
            "decision": "ABSTAIN", "steps": [], "citedNodeIds": [], "abstainReason": "nothing fits"
        })
        .to_string();
        let Proposal::Json(plan) = proposal(&answer, "plan-1", "q", &offered()) else {
            panic!("JSON expected")
        };
        assert_eq!(plan["candidates"][0]["nodeId"], "tool://git/git_status");
        assert_eq!(plan["provenance"], "MODEL_PROPOSED");
        assert!(toolrag_gate::check(&plan, Some(&offered())).valid);
    }

    #[test]
    fn text_stays_text_and_a_missing_field_stays_missing() {
        assert!(matches!(
            proposal("Sure! Here is the plan", "p", "q", &offered()),
            Proposal::Text(_)
        ));
        let Proposal::Json(plan) = proposal(r#"{"decision":"ABSTAIN"}"#, "p", "q", &offered())
        else {
            panic!("JSON expected")
        };
        assert!(plan.get("steps").is_none());
        assert!(!toolrag_gate::check(&plan, Some(&offered())).valid);
    }
}
