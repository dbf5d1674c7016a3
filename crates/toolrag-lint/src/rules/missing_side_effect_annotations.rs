use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::{split_identifier, ToolDef};

/// Verbs in a tool name that mean it destroys or overwrites something.
const DESTRUCTIVE_VERBS: &[&str] = &[
    "delete",
    "del",
    "remove",
    "rm",
    "rmdir",
    "unlink",
    "drop",
    "destroy",
    "erase",
    "purge",
    "wipe",
    "truncate",
    "kill",
    "terminate",
    "overwrite",
    "reset",
    "revoke",
    "uninstall",
    "shred",
    "clear",
];

declare_rule! {
    /// ## What it does
    /// Checks the MCP side-effect annotations:
    /// - the tool states `readOnlyHint`, or at least `destructiveHint`;
    /// - a tool that is not read-only states `destructiveHint`;
    /// - a tool whose name says it destroys something (`delete`, `remove`,
    ///   `drop`, `kill`, `reset`, `overwrite`, `purge`, ...) has
    ///   `destructiveHint = true`;
    /// - a tool is not both read-only and destructive.
    ///
    /// ## Why is this bad?
    /// The controller that runs a plan decides from these hints whether it may
    /// call a tool on its own or must first ask a person for approval. A
    /// destructive tool that does not say so is run without asking. Per MCP,
    /// a missing hint means "may be destructive", which makes harmless tools
    /// ask for approval every time: say it either way.
    ///
    /// ## Example
    /// ```toml
    /// name = "delete_file"
    /// # no [annotations]
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// name = "delete_file"
    ///
    /// [annotations]
    /// readOnlyHint = false
    /// destructiveHint = true
    /// ```
    pub(crate) struct MissingSideEffectAnnotations {
        code: "TR011",
        name: "missing-side-effect-annotations",
        level: Error,
        summary: "The tool does not say whether it is read-only or destructive.",
    }
}

impl Rule for MissingSideEffectAnnotations {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let a = &tool.annotations;
        let verb = split_identifier(&tool.name)
            .into_iter()
            .find(|w| DESTRUCTIVE_VERBS.contains(&w.as_str()));
        let message = match (a.read_only_hint, a.destructive_hint) {
            (None, None) => Some(match &verb {
                Some(v) => format!(
                    "no side-effect annotations, and `{v}` in the name says it is destructive; set readOnlyHint = false and destructiveHint = true"
                ),
                None => "no side-effect annotations; set readOnlyHint, and destructiveHint when it is not read-only".to_string(),
            }),
            (Some(true), Some(true)) => {
                Some("readOnlyHint and destructiveHint are both true; a read-only tool destroys nothing".to_string())
            }
            (Some(false), None) => Some(
                "readOnlyHint is false but destructiveHint is not set; say whether it may delete or overwrite data"
                    .to_string(),
            ),
            (_, d) if d != Some(true) => verb.map(|v| {
                format!("the word `{v}` in the name says this tool is destructive, but destructiveHint is not true")
            }),
            _ => None,
        };
        if let Some(m) = message {
            out.push(tool, "/annotations", m);
        }
    }
}
