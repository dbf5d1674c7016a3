//! What a rule is: its description ([`RuleInfo`]), its checks ([`Rule`]) and
//! where it puts its findings ([`Findings`]).

use serde::Serialize;

use super::thresholds::Thresholds;
use super::{Diagnostic, Level};
use toolrag_core::registry::{Registry, ToolDef};
use toolrag_embed::TokenCounter;

/// A rule's stable code, such as `TR001`: one of the codes of the rule
/// table, never an arbitrary string.
///
/// It serialises as the bare code (`"TR001"`), and deserialises only from a
/// code the table knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleCode(&'static str);

impl RuleCode {
    /// The code of the rule `info`.
    pub const fn of(info: &RuleInfo) -> RuleCode {
        RuleCode(info.code)
    }

    /// The code, as written: `TR001`.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for RuleCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.0)
    }
}

impl Serialize for RuleCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for RuleCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RuleCode, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        RuleCode::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown lint rule code `{s}`")))
    }
}

impl PartialEq<str> for RuleCode {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RuleCode {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<RuleCode> for String {
    fn eq(&self, other: &RuleCode) -> bool {
        self == other.0
    }
}

impl PartialEq<RuleCode> for &str {
    fn eq(&self, other: &RuleCode) -> bool {
        *self == other.0
    }
}

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

impl RuleInfo {
    /// The rule's documentation page, `docs/rules/<CODE>.md`: the summary, the
    /// default level and the doc comment. The SARIF log links each rule to its
    /// page (`helpUri`); a test keeps the pages equal to this.
    pub fn page(&self) -> String {
        format!(
            "<!-- Generated from the rule's doc comment (crates/toolrag-lint/src/rules/); a test keeps it in sync. -->\n\
             # {code}: {name}\n\n\
             {summary}\n\n\
             Default level: `{level}`. Explain it on the command line with `toolrag rule {code}`; \
             change its level with `{name} = \"error\"` in the `[lint]` table of toolrag.toml.\n\n\
             {doc}\n",
            code = self.code,
            name = self.name,
            summary = self.summary,
            level = self.default_level,
            doc = self.doc_text(),
        )
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
                code: RuleCode::of(info),
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
            pub(crate) const INFO: $crate::RuleInfo = $crate::RuleInfo {
                code: $code,
                name: $name,
                default_level: $crate::Level::$level,
                summary: $summary,
                doc: concat!($($doc, "\n"),*),
            };
        }

        impl $crate::rule::Described for $ty {
            fn info(&self) -> &'static $crate::RuleInfo {
                &Self::INFO
            }
        }
    };
}

pub(crate) use declare_rule;

#[cfg(test)]
mod code_tests {
    use super::RuleCode;

    #[test]
    fn codes_serialise_bare_and_parse_only_known_ones() {
        let code = RuleCode::parse("TR001").unwrap();
        assert_eq!(serde_json::to_string(&code).unwrap(), r#""TR001""#);
        assert_eq!(format!("{code:6}|"), "TR001 |");
        let back: RuleCode = serde_json::from_str(r#""TR001""#).unwrap();
        assert_eq!(back, code);
        assert!(RuleCode::parse("TR999").is_none());
        let e = serde_json::from_str::<RuleCode>(r#""TR999""#).unwrap_err();
        assert!(
            e.to_string().contains("unknown lint rule code `TR999`"),
            "{e}"
        );
    }
}
