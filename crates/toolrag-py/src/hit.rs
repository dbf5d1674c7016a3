//! `toolrag._native.Hit`: one tool found by a search.

use std::sync::Arc;

use pyo3::prelude::*;
use toolrag::Searcher;

/// One tool found by a search.
#[pyclass(frozen, freelist = 64, module = "toolrag._native", name = "Hit")]
pub struct Hit {
    /// The tool's id, `<namespace>/<name>` unless its definition gives one.
    #[pyo3(get)]
    pub(crate) id: String,
    /// The fused score (higher is better).
    #[pyo3(get)]
    pub(crate) score: f64,
    /// The rank, from 1.
    #[pyo3(get)]
    pub(crate) rank: usize,
    /// The first sentence of the description.
    #[pyo3(get)]
    pub(crate) summary: String,
    /// Whether the tool is in the result because it is pinned.
    #[pyo3(get)]
    pub(crate) pinned: bool,
    pub(crate) searcher: Arc<Searcher>,
}

// A search makes k of these: only what the search already holds is kept,
// and the rest is looked up in the index when it is read (a lexical query
// takes about 20 microseconds, and each copied field shows).
#[pymethods]
impl Hit {
    /// The name the tool is called by.
    #[getter]
    fn name(&self) -> &str {
        self.searcher.tool(&self.id).map_or("", |t| t.name.as_str())
    }

    /// The tool's namespace: its MCP server, its folder or file.
    #[getter]
    fn namespace(&self) -> &str {
        self.searcher
            .tool(&self.id)
            .map_or("", |t| t.namespace.as_str())
    }

    /// The MCP server (or registry namespace) the tool belongs to.
    #[getter]
    fn server(&self) -> &str {
        self.namespace()
    }

    /// Where the tool was read from: a file (with line), or `tools[i]`.
    #[getter]
    fn source(&self) -> Option<String> {
        self.searcher
            .tool(&self.id)
            .map(|t| t.source.location.to_string())
    }

    /// The tool's handle, `tool://<id>`.
    #[getter]
    fn handle(&self) -> String {
        format!("{}{}", toolrag::registry::HANDLE_SCHEME, self.id)
    }

    /// The tool's full definition, as a dict (normalised, as `toolrag
    /// tools show --format json` prints it).
    #[getter]
    fn tool<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.tool_json(),))
    }

    /// The tool's full definition, as JSON.
    fn tool_json(&self) -> String {
        self.searcher
            .tool(&self.id)
            .map(|t| serde_json::to_string(t).unwrap_or_default())
            .unwrap_or_else(|| "null".into())
    }

    fn __repr__(&self) -> String {
        format!(
            "Hit(rank={}, id={:?}, score={:.4})",
            self.rank, self.id, self.score
        )
    }
}
