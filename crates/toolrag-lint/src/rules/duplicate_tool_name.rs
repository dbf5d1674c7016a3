use std::collections::HashMap;

use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Finds tools that share a name with an earlier tool in the registry,
    /// even when their ids (namespaces) differ. Every tool after the first is
    /// reported, naming the first.
    ///
    /// ## Why is this bad?
    /// The model calls tools by name. Two tools named `search` are one name
    /// for two behaviours: the client drops one, renames one, or routes the
    /// call to whichever registered last. Near-identical copies also split
    /// retrieval between them.
    ///
    /// ## Example
    /// ```toml
    /// # tools/web/search.toml
    /// name = "search"
    /// # tools/files/search.toml
    /// name = "search"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// # tools/web/web_search.toml
    /// name = "web_search"
    /// # tools/files/search_files.toml
    /// name = "search_files"
    /// ```
    pub(crate) struct DuplicateToolName {
        code: "TR012",
        name: "duplicate-tool-name",
        level: Error,
        summary: "Two tools in the registry have the same name.",
    }
}

impl Rule for DuplicateToolName {
    fn check_registry<'t>(&self, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let mut first: HashMap<&str, &ToolDef> = HashMap::new();
        for tool in cx.registry.tools() {
            match first.get(tool.name.as_str()) {
                Some(orig) => out.push(
                    tool,
                    "/name",
                    format!(
                        "tool name `{}` is already used by `{}` ({})",
                        tool.name, orig.id, orig.source.location
                    ),
                ),
                None => {
                    first.insert(&tool.name, tool);
                }
            }
        }
    }
}
