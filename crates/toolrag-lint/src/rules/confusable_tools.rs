use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::similarity::{dense_pairs, document_texts, lexical_pairs};
use crate::text::{prose_boundary_targets, visible_description};
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Compares every tool with every other one and reports pairs that read
    /// alike when neither names the other in `not_for` (`Not for:` / `See
    /// also:`) or in prose: "use X instead", "prefer X", "unlike X", "see X"
    /// (how MCP servers, which have no `not_for` field, write a boundary). Similarity is the cosine of the embedding model's document
    /// vectors when the model is available (threshold `confusable-dense`,
    /// default 0.80), otherwise the TF-IDF cosine of their words
    /// (`confusable-lexical`, default 0.50). Each tool is reported once, naming
    /// its closest unbounded look-alike and how many others there are.
    ///
    /// The defaults are set so that the look-alike families of the shipped
    /// registry (`git_diff_staged` / `git_diff_unstaged` at 0.88 dense and 0.74
    /// lexical, `run_command` / `run_script`, `http_post` / `http_request`) are
    /// reported once their boundaries are removed, and nothing else is.
    ///
    /// ## Why is this bad?
    /// When two tools read alike, retrieval returns both and the model picks
    /// one by chance: `search_files` for a text search, `read_text_file` for a
    /// PNG. A boundary in one of them ("not for: file contents, use
    /// grep_content") is what lets the model choose, and it costs one line.
    ///
    /// ## Example
    /// ```toml
    /// # search_files.toml
    /// name = "search_files"
    /// description = "Search for files under a folder."
    /// # grep_content.toml
    /// name = "grep_content"
    /// description = "Search files under a folder for a pattern."
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// # search_files.toml
    /// [[not_for]]
    /// tool = "grep_content"
    /// when = "you are looking for text INSIDE files rather than for file names"
    /// ```
    pub(crate) struct ConfusableTools {
        code: "TR009",
        name: "confusable-tools",
        level: Warn,
        summary: "Two tools are near-duplicates and neither names the other in not_for.",
    }
}

/// Whether `from` names `to` in its boundaries: `not_for`, or prose such as
/// "use X instead", "prefer X", "unlike X" or "see X".
fn names(cx: &CheckContext<'_>, from: &ToolDef, to: &ToolDef) -> bool {
    let resolves_to_other = |name: &str| {
        cx.registry
            .resolve_ref(from, name)
            .is_some_and(|t| t.id == to.id)
    };
    from.not_for
        .iter()
        .any(|b| resolves_to_other(b.tool.trim()))
        || prose_boundary_targets(&visible_description(from))
            .into_iter()
            .any(resolves_to_other)
}

impl Rule for ConfusableTools {
    fn check_registry<'t>(&self, cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let tools = cx.registry.tools();
        if tools.len() < 2 {
            return;
        }
        let (pairs, measure) = match cx.embeddings {
            Some(vectors) => (
                dense_pairs(vectors, cx.thresholds.confusable_dense),
                "dense cosine",
            ),
            None => (
                lexical_pairs(
                    &document_texts(cx.registry),
                    cx.thresholds.confusable_lexical,
                ),
                "lexical cosine",
            ),
        };
        // Per tool: its most similar unbounded look-alike, and how many it has.
        let mut best: Vec<Option<(usize, f32)>> = vec![None; tools.len()];
        let mut count = vec![0usize; tools.len()];
        for p in pairs {
            let (a, b) = (&tools[p.a], &tools[p.b]);
            if names(cx, a, b) || names(cx, b, a) {
                continue;
            }
            for (me, other) in [(p.a, p.b), (p.b, p.a)] {
                count[me] += 1;
                if best[me].is_none_or(|(_, s)| p.score > s) {
                    best[me] = Some((other, p.score));
                }
            }
        }
        for (i, b) in best.into_iter().enumerate() {
            let Some((j, score)) = b else { continue };
            let (tool, other) = (&tools[i], &tools[j]);
            let more = match count[i] - 1 {
                0 => String::new(),
                1 => " (and 1 more look-alike)".to_string(),
                n => format!(" (and {n} more look-alikes)"),
            };
            let pointer = if tool.not_for.is_empty() {
                "/name"
            } else {
                "/notFor"
            };
            out.push(
                tool,
                pointer,
                format!(
                    "this tool and `{}` are confusable ({measure} {score:.2}) and neither names the other in not_for{more}",
                    other.id
                ),
            );
        }
    }
}
