use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Checks that every `not_for` entry (`Not for:` / `See also:` in free-text
    /// docstrings) names a tool that is in the registry: a full id, a name in
    /// the same namespace, or a name that is unique in the registry.
    ///
    /// ## Why is this bad?
    /// A boundary tells the model "for this, use that tool instead". When that
    /// tool does not exist (a typo, a rename, a tool from another server), the
    /// model is sent to a dead end, and the real neighbour is left without a
    /// boundary.
    ///
    /// ## Example
    /// ```toml
    /// [[not_for]]
    /// tool = "read_binary"
    /// when = "the file is an image"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [[not_for]]
    /// tool = "read_binary_file"   # or "filesystem/read_binary_file"
    /// when = "the file is an image"
    /// ```
    pub(crate) struct UnknownBoundaryTarget {
        code: "TR008",
        name: "unknown-boundary-target",
        level: Error,
        summary: "A not_for or see-also entry names a tool that is not in the registry.",
    }
}

impl Rule for UnknownBoundaryTarget {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        for (i, b) in tool.not_for.iter().enumerate() {
            let target = b.tool.trim();
            if target.is_empty() {
                out.push(
                    tool,
                    format!("/notFor/{i}"),
                    "a not_for entry names no tool".into(),
                );
            } else if cx.registry.resolve_ref(tool, target).is_none() {
                out.push(
                    tool,
                    format!("/notFor/{i}"),
                    format!("not_for names `{target}`, which is not in the registry"),
                );
            }
        }
    }
}
