//! Poka-yoke for the model: the JSON Schema of the answer, made for one
//! request, so that a server that enforces schemas cannot let the model cite a
//! handle that was not offered, nor write an inconsistent plan.
//!
//! Only the fields that need judgment are asked for (`decision`, `steps`,
//! `citedNodeIds`, `abstainReason`); toolrag fills the rest of the plan from
//! what it offered. There are two branches: NAVIGATE, with at least one step
//! and one citation and a null reason; ABSTAIN, with no steps, no citations
//! and a reason.

use serde_json::{json, Value};
use toolrag_core::khipu::Candidate;

/// A rationale or a reason longer than this is cut by the grammar: a small
/// model otherwise spends its token budget on prose.
const MAX_TEXT_CHARS: usize = 300;

/// The schema of the model's answer for this offered set.
pub fn answer_schema(offered: &[Candidate]) -> Value {
    let handles: Vec<&str> = offered.iter().map(|c| c.node_id.as_str()).collect();
    let n = handles.len().max(1);
    let handle = json!({ "type": "string", "enum": handles });
    let step = json!({
        "type": "object",
        "properties": {
            "action": { "type": "string", "enum": ["RETRIEVE", "EXPAND", "CITE"] },
            "nodeId": handle,
            "rationale": { "type": "string", "maxLength": MAX_TEXT_CHARS },
        },
        "required": ["action", "nodeId", "rationale"],
        "additionalProperties": false,
    });
    let navigate = json!({
        "type": "object",
        "properties": {
            "decision": { "type": "string", "enum": ["NAVIGATE"] },
            "steps": { "type": "array", "items": step, "minItems": 1, "maxItems": 3 * n },
            "citedNodeIds": { "type": "array", "items": handle, "minItems": 1, "maxItems": n },
            "abstainReason": { "type": "null" },
        },
        "required": ["decision", "steps", "citedNodeIds", "abstainReason"],
        "additionalProperties": false,
    });
    let abstain = json!({
        "type": "object",
        "properties": {
            "decision": { "type": "string", "enum": ["ABSTAIN"] },
            // `items` with `maxItems: 0`, not `maxItems` alone: llama.cpp's
            // schema-to-grammar converters ignore the bound of an array
            // without `items`, and a small model then abstains with steps.
            "steps": { "type": "array", "items": step, "maxItems": 0 },
            "citedNodeIds": { "type": "array", "items": handle, "maxItems": 0 },
            "abstainReason": { "type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS },
        },
        "required": ["decision", "steps", "citedNodeIds", "abstainReason"],
        "additionalProperties": false,
    });
    json!({ "anyOf": [navigate, abstain] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag_core::khipu::{Label, NodeKind};

    fn offered(ids: &[&str]) -> Vec<Candidate> {
        ids.iter()
            .map(|id| Candidate {
                node_id: (*id).into(),
                node_kind: NodeKind::Artifact,
                label: Label::Declared,
                note: String::new(),
            })
            .collect()
    }

    #[test]
    fn every_handle_field_is_an_enum_of_the_offered_handles() {
        let s = answer_schema(&offered(&["tool://a/x", "tool://b/y"]));
        let nav = &s["anyOf"][0]["properties"];
        let want = json!(["tool://a/x", "tool://b/y"]);
        assert_eq!(nav["steps"]["items"]["properties"]["nodeId"]["enum"], want);
        assert_eq!(nav["citedNodeIds"]["items"]["enum"], want);
        assert_eq!(nav["abstainReason"]["type"], "null");
        let abs = &s["anyOf"][1]["properties"];
        assert_eq!(abs["steps"]["maxItems"], 0);
        assert_eq!(abs["abstainReason"]["minLength"], 1);
    }
}
