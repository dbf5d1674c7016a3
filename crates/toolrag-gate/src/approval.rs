//! Check 4: which cited tools need a person's approval before they run.

use super::plan::PlanView;
use super::{Approval, ApprovalReason};
pub use toolrag_core::registry::ToolResolver;
use toolrag_core::registry::{may_be_destructive, ToolDef};

/// Why `tool` needs approval; empty when it does not.
///
/// Read-only tools never do: per MCP, the destructive and idempotent hints
/// only mean something for a tool that modifies its environment. Missing hints
/// take MCP's conservative defaults (destructive, not idempotent, open world).
pub fn approval_reasons(tool: &ToolDef) -> Vec<ApprovalReason> {
    let a = &tool.annotations;
    let mut reasons = Vec::new();
    if a.is_read_only() {
        return reasons;
    }
    if a.is_destructive() {
        reasons.push(ApprovalReason::Destructive);
    } else if may_be_destructive(tool) {
        reasons.push(ApprovalReason::MayBeDestructive);
    }
    if a.idempotent_hint != Some(true) && a.open_world_hint != Some(false) {
        reasons.push(ApprovalReason::OpenWorldNotIdempotent);
    }
    reasons
}

/// The cited tools that need approval, in citation order, each once.
pub(super) fn check(plan: &PlanView<'_>, tools: &dyn ToolResolver) -> Vec<Approval> {
    plan.cited_ids()
        .into_iter()
        .filter_map(|id| {
            let reasons = approval_reasons(tools.resolve(id)?);
            (!reasons.is_empty()).then(|| Approval {
                node_id: id.to_string(),
                reasons,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag_core::registry::Registry;
    use toolrag_core::registry::{Annotations, LoadOptions};

    fn tool_with(annotations: Annotations) -> ToolDef {
        let tools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools");
        let registry = Registry::load(&[tools], &LoadOptions::default()).unwrap();
        let mut tool = registry.get("git/git_status").unwrap().clone();
        tool.annotations = annotations;
        tool
    }

    #[test]
    fn missing_hints_take_the_conservative_mcp_defaults() {
        use ApprovalReason::*;
        let reasons = |a| approval_reasons(&tool_with(a));
        assert_eq!(
            reasons(Annotations::default()),
            [MayBeDestructive, OpenWorldNotIdempotent]
        );
        let read_only = Annotations {
            read_only_hint: Some(true),
            ..Annotations::default()
        };
        assert_eq!(reasons(read_only), []);
        let safe_local = Annotations {
            read_only_hint: Some(false),
            destructive_hint: Some(false),
            open_world_hint: Some(false),
            ..Annotations::default()
        };
        assert_eq!(reasons(safe_local), []);
        let idempotent_delete = Annotations {
            destructive_hint: Some(true),
            idempotent_hint: Some(true),
            ..Annotations::default()
        };
        assert_eq!(reasons(idempotent_delete), [Destructive]);
    }
}
