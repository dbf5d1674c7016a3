//! The table of rules: one file per rule, one row per rule, in code order.

mod confusable_tools;
mod defaulted_path_parameter;
mod deprecated_without_replacement;
mod duplicate_tool_name;
mod hidden_instructions;
mod invalid_example_arguments;
mod invalid_input_schema;
mod invalid_tool_name;
mod missing_edge_cases;
mod missing_examples;
mod missing_input_format;
mod missing_side_effect_annotations;
mod oversized_description;
mod relative_path_parameter;
mod undocumented_parameter;
mod unknown_boundary_target;
mod vague_description;

use super::rule::{Rule, RuleInfo};

pub(crate) use hidden_instructions::scan_untrusted;
pub use invalid_tool_name::tool_name_error;

/// Every rule, in code order. Codes are stable: a retired rule keeps its code.
pub(crate) static RULES: &[&dyn Rule] = &[
    &missing_examples::MissingExamples,
    &missing_edge_cases::MissingEdgeCases,
    &undocumented_parameter::UndocumentedParameter,
    &missing_input_format::MissingInputFormat,
    &relative_path_parameter::RelativePathParameter,
    &defaulted_path_parameter::DefaultedPathParameter,
    &invalid_example_arguments::InvalidExampleArguments,
    &unknown_boundary_target::UnknownBoundaryTarget,
    &confusable_tools::ConfusableTools,
    &hidden_instructions::HiddenInstructions,
    &missing_side_effect_annotations::MissingSideEffectAnnotations,
    &duplicate_tool_name::DuplicateToolName,
    &invalid_tool_name::InvalidToolName,
    &vague_description::VagueDescription,
    &oversized_description::OversizedDescription,
    &invalid_input_schema::InvalidInputSchema,
    &deprecated_without_replacement::DeprecatedWithoutReplacement,
];

/// Every rule's code, name, default level and documentation, in code order.
pub fn rules() -> impl Iterator<Item = &'static RuleInfo> {
    RULES.iter().map(|r| r.info())
}

/// The rule with this code (`TR005`, case-insensitive) or name
/// (`relative-path-parameter`).
pub fn find_rule(code_or_name: &str) -> Option<&'static RuleInfo> {
    let key = code_or_name.trim();
    rules().find(|r| r.code.eq_ignore_ascii_case(key) || r.name == key)
}

use crate::rule::RuleCode;

impl RuleCode {
    /// The code of a known rule, by its exact code.
    pub fn parse(code: &str) -> Option<RuleCode> {
        rules().find(|r| r.code == code).map(RuleCode::of)
    }
}

/// The index of the rule pages, `docs/rules/README.md`: one row per rule.
pub fn rules_index_page() -> String {
    let mut out = String::from(
        "<!-- Generated from the rule table (crates/toolrag-lint/src/rules/); a test keeps it in sync. -->\n\
         # toolrag lint rules\n\n\
         `toolrag rule` lists them and `toolrag rule <CODE>` explains one. Levels are set in the \
         `[lint]` table of toolrag.toml; `toolrag lint --profile consumer` keeps only the findings \
         a consumer of a server can act on.\n\n\
         | code | name | default level | what it finds |\n|---|---|---|---|\n",
    );
    for r in rules() {
        out.push_str(&format!(
            "| [{code}]({code}.md) | `{name}` | {level} | {summary} |\n",
            code = r.code,
            name = r.name,
            level = r.default_level,
            summary = r.summary.replace('|', "\\|"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_docs_follow_the_template() {
        let all: Vec<_> = rules().collect();
        for (i, r) in all.iter().enumerate() {
            assert_eq!(r.code, format!("TR{:03}", i + 1), "codes are in order");
            assert!(all[..i].iter().all(|o| o.name != r.name), "{}", r.name);
            for section in [
                "## What it does",
                "## Why is this bad?",
                "## Example",
                "Use instead:",
            ] {
                assert!(r.doc.contains(section), "{} lacks `{section}`", r.name);
            }
        }
        assert_eq!(find_rule("tr005").unwrap().name, "relative-path-parameter");
        assert_eq!(find_rule("missing-examples").unwrap().code, "TR001");
    }
}
