use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Finds deprecated tools that do not say what to use instead, or that
    /// name a replacement the registry does not have. A tool is deprecated
    /// when its text says so ("DEPRECATED: ...", "Deprecated:", "This tool
    /// is deprecated", a `(Deprecated)` title) or MCP marks it
    /// (`annotations.deprecated` or `_meta.deprecated`); the replacement is
    /// read from "use X instead", "superseded by X", "replaced by X" or "in
    /// favour of X", and resolved like a `not_for` target: a full id, a name
    /// in the same namespace, or a name unique in the registry.
    ///
    /// ## Why is this bad?
    /// Search ranks a deprecated tool below its replacement and tells the
    /// model which tool to use instead. Without a replacement it can do
    /// neither: the model keeps calling a tool that is on its way out, or
    /// looks for a tool that does not exist.
    ///
    /// ## Example
    /// ```json
    /// {"name": "read_file",
    ///  "description": "Read a file as text. DEPRECATED: use read_txt instead."}
    /// ```
    ///
    /// Use instead:
    /// ```json
    /// {"name": "read_file",
    ///  "description": "Read a file as text. DEPRECATED: use read_text_file instead."}
    /// ```
    pub(crate) struct DeprecatedWithoutReplacement {
        code: "TR017",
        name: "deprecated-without-replacement",
        level: Warn,
        summary: "A deprecated tool names no replacement, or one that is not in the registry.",
    }
}

impl Rule for DeprecatedWithoutReplacement {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let Some(d) = &tool.deprecated else {
            return;
        };
        let pointer = if tool.source.spans.contains_key("/annotations/deprecated") {
            "/annotations/deprecated"
        } else {
            "/description"
        };
        let Some(written) = d.replacement.as_deref() else {
            out.push(
                tool,
                pointer,
                "the tool is deprecated but names no replacement (say \"use <tool> instead\")"
                    .into(),
            );
            return;
        };
        if d.replacement_id.is_some() {
            return;
        }
        let message = match cx.registry.resolve_ref(tool, written) {
            Some(t) if t.id == tool.id => {
                format!("the tool is deprecated and names itself, `{written}`, as its replacement")
            }
            _ => {
                let bare = written
                    .strip_prefix(toolrag_core::registry::HANDLE_SCHEME)
                    .unwrap_or(written);
                let shared: Vec<&str> = cx.registry.named(bare).map(|t| t.id.as_str()).collect();
                if shared.len() > 1 {
                    format!(
                        "the tool is deprecated in favour of `{written}`, which names {} tools \
                         in other namespaces ({}); write the replacement's id",
                        shared.len(),
                        shared.join(", ")
                    )
                } else {
                    format!(
                        "the tool is deprecated in favour of `{written}`, which is not in the registry"
                    )
                }
            }
        };
        out.push(tool, pointer, message);
    }
}
