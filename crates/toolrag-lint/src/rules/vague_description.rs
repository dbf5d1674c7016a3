use std::collections::HashSet;

use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::text::{prose, words};
use toolrag_core::registry::{split_identifier, ToolDef};

/// Words that carry no meaning of their own for routing.
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "this",
    "that",
    "tool",
    "to",
    "of",
    "for",
    "and",
    "or",
    "in",
    "on",
    "with",
    "it",
    "is",
    "are",
    "be",
    "by",
    "from",
    "use",
    "used",
    "call",
    "calls",
    "returns",
    "return",
    "gets",
    "get",
    "given",
    "some",
    "data",
    "info",
    "information",
];

declare_rule! {
    /// ## What it does
    /// Checks that the description (summary and description prose, without
    /// docstring sections) has at least `min-description-words` words
    /// (default 6), and that it says more than the tool's name does.
    ///
    /// ## Why is this bad?
    /// Retrieval and the model both route on the description. "Gets weather."
    /// matches every weather request equally, cannot be told apart from the
    /// three other weather tools, and says nothing of what comes back. A
    /// description that only restates the name adds nothing to it.
    ///
    /// ## Example
    /// ```toml
    /// name = "get_weather"
    /// description = "Gets the weather."
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// name = "get_weather"
    /// description = """
    /// Current conditions for a city: temperature in Celsius, wind, humidity
    /// and a one-line summary. For forecasts use get_forecast.
    /// """
    /// ```
    pub(crate) struct VagueDescription {
        code: "TR014",
        name: "vague-description",
        level: Warn,
        summary: "The description is too short to route on, or only restates the name.",
    }
}

impl Rule for VagueDescription {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let text = prose(tool);
        let all: Vec<String> = words(&text).map(str::to_lowercase).collect();
        let min = cx.thresholds.min_description_words;
        if all.is_empty() {
            out.push(
                tool,
                "/description",
                "the tool has no description".to_string(),
            );
            return;
        }
        if all.len() < min {
            out.push(
                tool,
                "/description",
                format!(
                    "the description has {} word(s), too few to route on (at least {min})",
                    all.len()
                ),
            );
            return;
        }
        let name: HashSet<String> = split_identifier(&tool.name).into_iter().collect();
        let adds = all.iter().any(|w| {
            !FILLER.contains(&w.as_str())
                && !name.contains(w)
                && !name.contains(w.trim_end_matches('s'))
        });
        if !adds {
            out.push(
                tool,
                "/description",
                format!("the description only restates the name `{}`", tool.name),
            );
        }
    }
}
