use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Checks that a tool has example requests (at least `min-examples`, default
    /// 1), and that every example gives the arguments the request should produce.
    ///
    /// ## Why is this bad?
    /// A model learns how to call a tool from examples far more reliably than
    /// from prose. An example request without arguments shows *when* to call the
    /// tool but not *how*: the argument format is left to guesswork. Examples are
    /// also what retrieval matches user requests against.
    ///
    /// A tool without parameters needs no arguments in its examples.
    ///
    /// ## Example
    /// ```toml
    /// name = "read_text_file"
    /// description = "Reads a text file."
    ///
    /// [[examples]]
    /// request = "show me /etc/hosts"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [[examples]]
    /// request = "show me /etc/hosts"
    /// arguments = { path = "/etc/hosts" }
    /// ```
    ///
    /// In free-text docstrings: `Examples:` then `- "show me /etc/hosts" -> {"path": "/etc/hosts"}`.
    ///
    /// A description with no structured examples still passes when its prose
    /// shows one the way MCP servers write them (MCP has no field for
    /// examples): `Example:`, `e.g.`, "for example", a quoted value after
    /// "like", an argument in use ("pass `force=true`") or a quoted call.
    pub(crate) struct MissingExamples {
        code: "TR001",
        name: "missing-examples",
        level: Warn,
        summary: "The tool has no example request, or an example has no arguments.",
    }
}

impl Rule for MissingExamples {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let min = cx.thresholds.min_examples;
        let n = tool.examples.len();
        // MCP has no field for examples: real servers write them in prose.
        let in_prose =
            n == 0 && crate::text::prose_shows_example(&crate::text::visible_description(tool));
        if n < min && !in_prose {
            let msg = if n == 0 {
                "the tool has no example requests".to_string()
            } else {
                format!(
                    "the tool has {}; at least {min} are required",
                    crate::text::plural(n, "example", "examples")
                )
            };
            let pointer = if n == 0 { "/description" } else { "/examples" };
            out.push(tool, pointer, msg);
        }
        let has_params = tool.properties().next().is_some();
        for (i, ex) in tool.examples.iter().enumerate() {
            if has_params && ex.arguments.is_none() {
                out.push(
                    tool,
                    format!("/examples/{i}"),
                    format!(
                        "example {} (\"{}\") has no arguments",
                        i + 1,
                        crate::text::clip(&ex.request, 60)
                    ),
                );
            }
        }
    }
}
