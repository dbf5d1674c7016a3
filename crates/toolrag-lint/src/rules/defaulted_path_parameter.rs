use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema;
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Finds path parameters (the same ones `relative-path-parameter` looks
    /// at) that are optional or have a `default`.
    ///
    /// ## Why is this bad?
    /// It is the `read_file(path="./current")` trap. When the path can be left
    /// out, the tool falls back on a place the model did not choose (the
    /// current directory, a default file), and the call "works" on the wrong
    /// target. That is worst for tools that write or delete. Make the model
    /// name the target every time.
    ///
    /// ## Example
    /// ```toml
    /// [input_schema]
    /// type = "object"
    /// required = []
    ///
    /// [input_schema.properties.path]
    /// type = "string"
    /// format = "absolute-path"
    /// default = "."
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [input_schema]
    /// type = "object"
    /// required = ["path"]
    ///
    /// [input_schema.properties.path]
    /// type = "string"
    /// format = "absolute-path"
    /// description = "Absolute path of the directory to list."
    /// ```
    pub(crate) struct DefaultedPathParameter {
        code: "TR006",
        name: "defaulted-path-parameter",
        level: Warn,
        summary: "A path parameter is optional or has a default.",
    }
}

impl Rule for DefaultedPathParameter {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        for p in schema::path_properties(tool) {
            if let Some(d) = p.schema.get("default") {
                out.push(
                    tool,
                    p.pointer.clone(),
                    format!(
                        "path parameter `{}` has a default ({d}); require it instead",
                        p.name
                    ),
                );
            } else if !p.required {
                out.push(
                    tool,
                    p.pointer.clone(),
                    format!(
                        "path parameter `{}` is optional; list it in `required`",
                        p.name
                    ),
                );
            }
        }
    }
}
