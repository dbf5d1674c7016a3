//! What a rule is: its description ([`RuleInfo`]), its checks ([`Rule`]) and
//! where it puts its findings ([`Findings`]).

use serde::Serialize;

use super::config::Thresholds;
use super::{Diagnostic, Level};
use crate::embed::TokenCounter;
use crate::registry::{Registry, ToolDef};

/// A rule's identity and documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RuleInfo {
    /// The stable code, such as `TR001`.
    pub code: &'static str,
    /// The kebab-case name, read after "allow": `missing-examples`.
    pub name: &'static str,
    /// The level used when the config says nothing.
    pub default_level: Level,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// The full documentation in the ruff template (Markdown): what it does,
    /// why it is bad, an example and what to use instead.
    pub doc: &'static str,
}

impl RuleInfo {
    /// The documentation with the one-space indent of doc comments removed.
    pub fn doc_text(&self) -> String {
        let mut out = String::with_capacity(self.doc.len());
        for line in self.doc.lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out.trim_end().to_string()
    }
}

/// What rules can read while checking.
pub(crate) struct CheckContext<'a> {
    pub registry: &'a Registry,
    pub thresholds: &'a Thresholds,
    pub token_counter: Option<&'a TokenCounter>,
    /// Present only when there is exactly one vector per tool.
    pub embeddings: Option<&'a [Vec<f32>]>,
}

/// The findings of one rule: a tool, a pointer into it, and a message.
#[derive(Default)]
pub(crate) struct Findings<'t> {
    items: Vec<(&'t ToolDef, String, String)>,
}

impl<'t> Findings<'t> {
    /// Records a finding about `tool` at `pointer` (see [`ToolDef::location_of`]).
    pub fn push(&mut self, tool: &'t ToolDef, pointer: impl Into<String>, message: String) {
        self.items.push((tool, pointer.into(), message));
    }

    pub fn into_diagnostics(self, info: &RuleInfo, level: Level) -> Vec<Diagnostic> {
        self.items
            .into_iter()
            .map(|(tool, pointer, message)| Diagnostic {
                code: info.code.to_string(),
                name: info.name.to_string(),
                level,
                tool_id: tool.id.clone(),
                location: tool.location_of(&pointer),
                message,
                pointer,
            })
            .collect()
    }
}

/// What `declare_rule!` implements for every rule.
pub(crate) trait Described {
    /// The rule's code, name, level and documentation.
    fn info(&self) -> &'static RuleInfo;
}

/// A lint rule. Checks never fail; they only add findings.
pub(crate) trait Rule: Described + Sync {
    /// Checks one tool. Runs in parallel over the tools.
    fn check_tool<'t>(&self, _tool: &'t ToolDef, _cx: &CheckContext<'t>, _out: &mut Findings<'t>) {}

    /// Checks the registry as a whole (pairs of tools, duplicates). Runs once.
    fn check_registry<'t>(&self, _cx: &CheckContext<'t>, _out: &mut Findings<'t>) {}
}

/// Declares a rule: a unit struct whose doc comment (the ruff template) is also
/// kept as the text `toolrag rule` prints, plus its code, name and level.
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        pub(crate) struct $ty:ident {
            code: $code:literal,
            name: $name:literal,
            level: $level:ident,
            summary: $summary:literal $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $ty;

        impl $ty {
            pub(crate) const INFO: $crate::lint::RuleInfo = $crate::lint::RuleInfo {
                code: $code,
                name: $name,
                default_level: $crate::lint::Level::$level,
                summary: $summary,
                doc: concat!($($doc, "\n"),*),
            };
        }

        impl $crate::lint::rule::Described for $ty {
            fn info(&self) -> &'static $crate::lint::RuleInfo {
                &Self::INFO
            }
        }
    };
}

pub(crate) use declare_rule;
