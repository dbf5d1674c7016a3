use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema;
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Checks that every input property, including nested properties of objects
    /// and of array items, has a non-empty `description`.
    ///
    /// ## Why is this bad?
    /// A parameter name is rarely enough: `limit` of what, `since` in which
    /// format, `path` absolute or relative? The model fills the gap with a
    /// guess, and a wrong guess is a wrong call. Descriptions from an `Args:`
    /// section of a free-text docstring count.
    ///
    /// ## Example
    /// ```toml
    /// [input_schema.properties.max_bytes]
    /// type = "integer"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [input_schema.properties.max_bytes]
    /// type = "integer"
    /// description = "Stop reading after this many bytes (1 to 10485760)."
    /// ```
    pub(crate) struct UndocumentedParameter {
        code: "TR003",
        name: "undocumented-parameter",
        level: Warn,
        summary: "An input property has no description.",
    }
}

impl Rule for UndocumentedParameter {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        for p in schema::properties(tool) {
            if p.description().is_empty() {
                out.push(
                    tool,
                    p.pointer.clone(),
                    format!("parameter `{}` has no description", p.name),
                );
            }
        }
    }
}
