use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::text::{count_tokens, visible_description};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Counts the tokens of the description as the model is shown it (for
    /// free-text formats the whole docstring, sections included) and reports
    /// descriptions longer than `max-description-tokens` (default 400).
    /// Tokens are counted with the embedding model's tokenizer when the model
    /// is available, and estimated otherwise.
    ///
    /// ## Why is this bad?
    /// Every candidate tool's description goes into the planner's prompt. A
    /// tool that spends a thousand tokens on its description crowds out the
    /// other candidates, costs on every request, and buries the one sentence
    /// that matters. Long descriptions also get cut when they are embedded,
    /// so their end is invisible to retrieval.
    ///
    /// ## Example
    /// ```toml
    /// description = """
    /// (two pages of background, changelog, and a full API reference)
    /// """
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// description = """
    /// What it returns, the input format and its limits, in 2 to 6 sentences.
    /// Move worked cases into [[examples]] and [[edge_cases]].
    /// """
    /// ```
    pub(crate) struct OversizedDescription {
        code: "TR015",
        name: "oversized-description",
        level: Warn,
        summary: "The description is too long for a prompt budget.",
    }
}

impl Rule for OversizedDescription {
    fn check_tool<'t>(&self, tool: &'t ToolDef, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let max = cx.thresholds.max_description_tokens;
        let text = visible_description(tool);
        // Cheap bound first: a tokenizer makes at most one token per byte, plus
        // [CLS] and [SEP], so short texts skip tokenising.
        if text.len() + 2 <= max {
            return;
        }
        let n = count_tokens(&text, cx.token_counter);
        if n > max {
            let how = if cx.token_counter.is_some() {
                ""
            } else {
                "about "
            };
            out.push(
                tool,
                "/description",
                format!("the description is {how}{n} tokens long (at most {max})"),
            );
        }
    }
}
