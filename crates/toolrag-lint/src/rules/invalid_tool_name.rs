use std::sync::LazyLock;

use regex::Regex;

use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use toolrag_core::registry::ToolDef;

static VALID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9_.-]{1,64}$").expect("valid regex"));

declare_rule! {
    /// ## What it does
    /// Checks that the tool name matches `^[A-Za-z0-9_.-]{1,64}$`: ASCII
    /// letters, digits, `_`, `.` and `-`, 1 to 64 characters.
    ///
    /// ## Why is this bad?
    /// This is the name rule shared by MCP clients and the function-calling
    /// APIs. A name with spaces, slashes, non-ASCII letters or more than 64
    /// characters is rejected by some clients and silently rewritten by
    /// others, and then the model calls a name that does not exist.
    ///
    /// ## Example
    /// ```toml
    /// name = "read file/v2"
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// name = "read_file_v2"
    /// ```
    pub(crate) struct InvalidToolName {
        code: "TR013",
        name: "invalid-tool-name",
        level: Error,
        summary: "The tool name does not match ^[A-Za-z0-9_.-]{1,64}$.",
    }
}

impl Rule for InvalidToolName {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        if let Some(message) = tool_name_error(&tool.name) {
            out.push(tool, "/name", message);
        }
    }
}

/// What is wrong with the tool name `name` by this rule (an error), or
/// `None` when it is valid. A build that takes tools from code (Python's
/// `Index.build`) refuses the same names.
pub fn tool_name_error(name: &str) -> Option<String> {
    if VALID.is_match(name) {
        return None;
    }
    let n = name.chars().count();
    let why = if n == 0 {
        "is empty".to_string()
    } else if n > 64 {
        format!("has {n} characters (at most 64)")
    } else {
        // Each disallowed character once, in order, quoted on its own:
        // `../../etc/passwd` contains "/", not "///".
        let mut bad: Vec<char> = Vec::new();
        for c in name.chars() {
            if !(c.is_ascii_alphanumeric() || "_.-".contains(c) || bad.contains(&c)) {
                bad.push(c);
            }
        }
        let listed: Vec<String> = bad
            .iter()
            .take(5)
            .map(|c| format!("{:?}", c.to_string()))
            .collect();
        let more = if bad.len() > 5 { ", …" } else { "" };
        format!("contains {}{more}", listed.join(", "))
    };
    Some(format!(
        "tool name `{name}` {why}; names must match ^[A-Za-z0-9_.-]{{1,64}}$"
    ))
}
