use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Checks that a tool documents edge cases (at least `min-edge-cases`,
    /// default 1), each with the tool's behaviour in that case.
    ///
    /// ## Why is this bad?
    /// Edge cases are where a model goes wrong: the file is a directory, the
    /// result is empty, the input is too large. Without the behaviour written
    /// down, the model cannot tell a failure from an empty answer, or pick a
    /// better tool ahead of time. A case listed without its behaviour says that
    /// something happens but not what.
    ///
    /// ## Example
    /// ```toml
    /// name = "read_text_file"
    ///
    /// [[edge_cases]]
    /// case = "the file is not valid UTF-8"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [[edge_cases]]
    /// case = "the file is not valid UTF-8"
    /// behaviour = "fails with the byte offset of the first bad sequence; use read_binary_file"
    /// ```
    ///
    /// In free-text docstrings: `Edge cases:` then `- the file is not valid UTF-8: fails with ...`.
    ///
    /// A description with no structured edge cases still passes when its prose
    /// states one with its behaviour the way MCP servers write them: "If the
    /// file does not exist, …", "Returns an error when …", "Fails if …", "will
    /// overwrite existing files", or a `Raises:` section.
    pub(crate) struct MissingEdgeCases {
        code: "TR002",
        name: "missing-edge-cases",
        level: Warn,
        summary: "The tool documents no edge case with its behaviour.",
    }
}

impl Rule for MissingEdgeCases {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let min = cx.thresholds.min_edge_cases;
        let mut complete = 0;
        for (i, e) in tool.edge_cases.iter().enumerate() {
            if e.behaviour.trim().is_empty() {
                out.push(
                    tool,
                    format!("/edgeCases/{i}"),
                    format!(
                        "edge case \"{}\" does not say what the tool does",
                        crate::text::clip(&e.case, 60)
                    ),
                );
            } else {
                complete += 1;
            }
        }
        // MCP has no field for edge cases: real servers write them in prose.
        let in_prose = tool.edge_cases.is_empty()
            && crate::text::prose_states_edge_case(&crate::text::visible_description(tool));
        // Cases without a behaviour were reported one by one above.
        if complete < min && complete == tool.edge_cases.len() && !in_prose {
            let msg = if tool.edge_cases.is_empty() {
                "the tool documents no edge cases".to_string()
            } else {
                format!(
                    "the tool documents {}; at least {min} are required",
                    crate::text::plural(complete, "edge case", "edge cases")
                )
            };
            let pointer = if tool.edge_cases.is_empty() {
                "/description"
            } else {
                "/edgeCases"
            };
            out.push(tool, pointer, msg);
        }
    }
}
