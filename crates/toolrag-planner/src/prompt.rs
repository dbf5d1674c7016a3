//! What the plan model reads: a system prompt that states the contract in
//! words, then the request and the offered candidates.

use serde_json::{json, Value};
use toolrag_core::khipu::Candidate;

/// The default system prompt. `--prompt FILE` (or
/// [`PlannerOptions::prompt`](crate::PlannerOptions::prompt)) replaces it;
/// the request and the candidates always follow in the user message.
pub const DEFAULT_PROMPT: &str = "\
You route a user's request to tools. You are offered a few candidate tools, each
named by a handle such as tool://git/git_status, with a short note on what it does.
You never see the tools' content and you never run them: you only propose a plan.

Answer with one JSON object and nothing else: no code fence, no commentary.
Its fields:
- \"decision\": \"NAVIGATE\" when at least one offered tool does what the request asks,
  \"ABSTAIN\" when none does.
- \"steps\": the tools to use, in order, each {\"action\": \"RETRIEVE\" | \"EXPAND\" | \"CITE\",
  \"nodeId\": an offered handle, \"rationale\": a few words on why}. Use CITE for the
  tool that answers the request. Empty when abstaining.
- \"citedNodeIds\": the handles of the steps, each once. Empty when abstaining.
- \"abstainReason\": null when navigating; when abstaining, one sentence on why no
  offered tool fits.

Rules:
- Cite only handles from the offered list, copied exactly. Never invent one.
- Prefer the single tool that fits best; add another only when the request needs both.
- If no offered tool supports the request, ABSTAIN with a reason rather than guess.";

/// One chat message of the OpenAI-compatible API.
pub(crate) fn message(role: &str, content: &str) -> Value {
    json!({ "role": role, "content": content })
}

/// The user message: the request, then one line per offered candidate.
pub(crate) fn user_message(query: &str, offered: &[Candidate]) -> String {
    let mut text = format!("Request: {query}\n\nOffered tools:\n");
    for c in offered {
        text.push_str(&format!("- {}: {}\n", c.node_id, c.note));
    }
    text.push_str("\nAnswer with the JSON object only.");
    text
}

/// The first two messages of a plan's conversation.
pub(crate) fn opening(system: &str, query: &str, offered: &[Candidate]) -> Vec<Value> {
    vec![
        message("system", system),
        message("user", &user_message(query, offered)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag_core::khipu::{Label, NodeKind};

    #[test]
    fn the_user_message_lists_every_handle_with_its_note() {
        let offered = vec![Candidate {
            node_id: "tool://git/git_status".into(),
            node_kind: NodeKind::Artifact,
            label: Label::Declared,
            note: "git: Show the working tree status.".into(),
        }];
        let m = opening(DEFAULT_PROMPT, "what did I change?", &offered);
        assert_eq!(m[0]["role"], "system");
        let user = m[1]["content"].as_str().unwrap();
        assert!(user.starts_with("Request: what did I change?"));
        assert!(user.contains("- tool://git/git_status: git: Show the working tree status."));
    }
}
