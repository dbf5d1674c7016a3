//! `toolrag.lint` and `toolrag.gate`: the docstring review and the plan check.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyList;
use toolrag::lint as rules;
use toolrag::lint::LintContext;

use crate::errors::to_py;
use crate::model;

/// Lints tools (`tools_json`, a JSON list of tool objects, or the registry
/// `paths`) and returns the diagnostics as JSON. With the model (unless
/// `lexical`), token counts are exact and confusable-tools compares
/// embeddings, as `toolrag lint` does.
#[pyfunction]
#[pyo3(signature = (tools, paths, config, namespace, lexical, limits))]
pub fn lint<'py>(
    py: Python<'py>,
    tools: Option<Bound<'py, PyList>>,
    paths: Option<Vec<PathBuf>>,
    config: Option<PathBuf>,
    namespace: String,
    lexical: bool,
    limits: Vec<(String, u64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let tools = crate::index::Tools::from_args(tools, paths)?;
    let value = py
        .detach(|| -> toolrag::Result<serde_json::Value> {
            let full = crate::index::load_config(config)?;
            let registry = tools.registry(&namespace, crate::index::load_limits(&limits)?)?;
            let mut cx = LintContext::new(full.lint.clone());
            // The model is a nicety here: without it the lint runs lexically.
            if let Ok(dir) = toolrag::app::ModelRequest::new(None, None, &full).select() {
                cx = cx.with_token_counter(toolrag::embed::TokenCounter::load(&dir)?);
                let confusable = rules::find_rule("confusable-tools");
                let wanted =
                    confusable.is_some_and(|r| cx.config.level_of(r) != rules::Level::Ignore);
                if !lexical && wanted && registry.len() >= 2 {
                    let embedder = model::embedder(&dir)?;
                    let vectors = rules::similarity::embed_tools(&registry, embedder.as_ref())?;
                    cx = cx.with_embeddings(vectors);
                }
            }
            let diagnostics = rules::lint(&registry, &cx);
            crate::convert::through_text(serde_json::to_string(&diagnostics))
        })
        .map_err(to_py)?;
    crate::convert::to_py(py, &value)
}

/// Checks a Khipu plan (JSON text) against the offered candidates (JSON: a
/// candidate set or a bare list; `None`: the plan's own), and returns the
/// verdict as JSON. Never fails on a bad plan: that is a violation.
#[pyfunction]
#[pyo3(signature = (plan_json, offered_json, index))]
pub fn gate(
    py: Python<'_>,
    plan_json: String,
    offered_json: Option<String>,
    index: Option<Bound<'_, crate::index::Index>>,
) -> PyResult<String> {
    // With an index, cited tools are resolved in it and the verdict lists
    // those that need a person's approval (destructive, open-world).
    let searcher = index.map(|i| i.get().searcher());
    py.detach(|| -> toolrag::Result<String> {
        let offered = match offered_json {
            Some(text) => {
                let value: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| toolrag::Error::InvalidInput(format!("candidates: {e}")))?;
                Some(toolrag::gate::parse_offered(&value)?)
            }
            None => None,
        };
        let gate = toolrag::Gate {
            offered: offered.as_deref(),
            tools: searcher
                .as_deref()
                .map(|s| s as &dyn toolrag::registry::ToolResolver),
        };
        let verdict = gate.check_str(&plan_json);
        Ok(serde_json::to_string(&verdict).unwrap_or_default())
    })
    .map_err(to_py)
}
