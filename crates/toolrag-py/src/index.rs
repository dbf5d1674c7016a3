//! `toolrag._native.Index` and `Hit`: build, open, search and update an
//! index, with the GIL released for all of it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use toolrag::app::{self, ModelRequest};
use toolrag::config::Config;
use toolrag::embed::{Embedder, ModelDir};
use toolrag::index::{BuildModel, BuildReport};
use toolrag::registry::{LoadError, LoadErrors, LoadLimits, Location};
use toolrag::search::{khipu, Mode, SearchRequest};
use toolrag::{LoadOptions, Registry, Searcher};

use crate::errors::to_py;
use crate::hit::Hit;
use crate::model;

/// What an index is open on. Replaced whole by `update`.
struct State {
    searcher: Arc<Searcher>,
}

/// How the index was made, kept for `update`.
struct Setup {
    path: PathBuf,
    /// The temporary folder of an index built with `path=None`, removed
    /// when the index is dropped.
    _temp: Option<tempfile::TempDir>,
    config: Config,
    /// The model folder (`None`: lexical only): the chosen one for a built
    /// index, the one it was built with for an opened one.
    model: Option<ModelDir>,
}

/// Where the tools come from: tool objects (converted from the Python
/// dicts, under the GIL) or registry paths.
pub enum Tools {
    Values(Vec<serde_json::Value>),
    Paths(Vec<PathBuf>),
}

impl Tools {
    /// The tools of `tools` (a list of tool dicts) or `paths`. A value that
    /// is not JSON (a set, NaN) is an `InvalidRegistry` naming `tools[i]`.
    pub fn from_args(
        tools: Option<Bound<'_, PyList>>,
        paths: Option<Vec<PathBuf>>,
    ) -> PyResult<Tools> {
        match (tools, paths) {
            (Some(list), None) => {
                let mut values = Vec::with_capacity(list.len());
                for (i, item) in list.iter().enumerate() {
                    let value = crate::convert::to_value(&item)
                        .map_err(|why| to_py(not_json(i, &item, why)))?;
                    values.push(value);
                }
                Ok(Tools::Values(values))
            }
            (None, Some(p)) => Ok(Tools::Paths(p)),
            _ => Err(PyValueError::new_err("give tools as a list or as paths")),
        }
    }

    /// The registry of these tools, within `limits`, as the lint reads it.
    pub fn registry(self, namespace: &str, limits: LoadLimits) -> toolrag::Result<Registry> {
        let opts = LoadOptions {
            limits,
            ..LoadOptions::default()
        };
        match self {
            Tools::Paths(paths) => Registry::load(&paths, &opts),
            Tools::Values(values) => Registry::from_values(values, namespace, "tools", &opts),
        }
    }

    /// The registry to build: [`Tools::registry`], and a tool name that lint
    /// calls an error (`""`, spaces, over 64 characters) is refused, as every
    /// bad tool is: with its position and field.
    pub fn load(self, namespace: &str, limits: LoadLimits) -> toolrag::Result<Registry> {
        let registry = self.registry(namespace, limits)?;
        check_names(&registry)?;
        Ok(registry)
    }
}

/// The error for the `i`-th tool, which is not JSON.
fn not_json(i: usize, item: &Bound<'_, PyAny>, why: String) -> toolrag::Error {
    let name = item
        .get_item("name")
        .ok()
        .and_then(|n| n.extract::<String>().ok());
    let what = name.map_or_else(String::new, |n| format!("tool `{n}`: "));
    toolrag::Error::Load(LoadErrors(vec![LoadError {
        location: Location {
            file: format!("tools[{i}]").into(),
            line: 0,
            column: 0,
        },
        message: format!("{what}not JSON: {why}"),
        limit: None,
    }]))
}

/// Refuses the tool names that `toolrag lint` reports as errors
/// (invalid-tool-name, TR013): `""` would otherwise become the id `tools/`.
fn check_names(registry: &Registry) -> toolrag::Result<()> {
    let errors: Vec<LoadError> = registry
        .tools()
        .iter()
        .filter_map(|t| {
            toolrag::lint::tool_name_error(&t.name).map(|message| LoadError {
                location: t.source.location.clone(),
                message,
                limit: None,
            })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(toolrag::Error::Load(LoadErrors(errors)))
    }
}

/// The load limits from `limits` (`(name, value)` pairs, named as the CLI's
/// `--limit` names them), over the defaults.
pub fn load_limits(limits: &[(String, u64)]) -> toolrag::Result<LoadLimits> {
    let mut l = LoadLimits::default();
    for (name, value) in limits {
        l.set(name, *value)
            .map_err(|e| toolrag::Error::InvalidInput(format!("limits: {e}")))?;
    }
    Ok(l)
}

/// The build report as a dict with snake_case keys (the field names).
fn report_dict<'py>(py: Python<'py>, r: &BuildReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("tools", r.tools)?;
    d.set_item("new", r.new)?;
    d.set_item("changed", r.changed)?;
    d.set_item("removed", r.removed)?;
    d.set_item("reused", r.reused)?;
    d.set_item("embedded_texts", r.embedded_texts)?;
    d.set_item("reused_texts", r.reused_texts)?;
    d.set_item("lexical_only", r.lexical_only)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("embed_seconds", r.embed_seconds)?;
    d.set_item("graph", r.graph)?;
    d.set_item("generation", r.generation.display().to_string())?;
    Ok(d)
}

/// An index of tools, open for search.
#[pyclass(frozen, module = "toolrag._native", name = "Index")]
pub struct Index {
    state: RwLock<State>,
    /// How the index was made; never changes, so reading it takes no lock.
    setup: Setup,
    /// Held by `update` for its whole build: one rebuild at a time, while
    /// searches (and `path`) go on without waiting for it.
    updating: std::sync::Mutex<()>,
}

/// The configuration in `config` (the defaults without one). A file that
/// is not there is `toolrag.FileMissing`, a `FileNotFoundError`.
pub fn load_config(config: Option<PathBuf>) -> toolrag::Result<Config> {
    match config {
        Some(p) if !p.exists() => Err(toolrag::Error::io(
            p,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such configuration file (config=)",
            ),
        )),
        Some(p) => Config::load(Some(&p)),
        None => Ok(Config::default()),
    }
}

/// The model folder of a build: `None` when lexical only; otherwise the
/// library's model choice ([`ModelRequest`]), and no model found is an error.
fn build_model(
    lexical_only: bool,
    model: Option<String>,
    config: &Config,
) -> toolrag::Result<Option<ModelDir>> {
    if lexical_only {
        return Ok(None);
    }
    ModelRequest::new(model, None, config).select().map(Some)
}

/// Builds `registry` into `setup.path` and opens the result.
fn build_and_open(
    registry: Registry,
    setup: &Setup,
    progress: bool,
    cancel: Arc<AtomicBool>,
) -> toolrag::Result<(Arc<Searcher>, BuildReport)> {
    let embedder = setup.model.as_ref().map(model::embedder).transpose()?;
    let mut opts = app::build_options(setup.path.clone(), &setup.config);
    opts.cancel = Some(cancel);
    let build_model = embedder
        .as_deref()
        .map(|e| BuildModel::Loaded(e as &dyn Embedder));
    let progress = toolrag_cli::progress::TerminalProgress::new(progress);
    let report = app::build(registry, build_model, &opts, &progress)?;
    let searcher = open_searcher(&setup.path, embedder, &setup.config)?;
    Ok((searcher, report))
}

fn open_searcher(
    path: &Path,
    embedder: Option<Arc<toolrag::embed::FastEmbedder>>,
    config: &Config,
) -> toolrag::Result<Arc<Searcher>> {
    let embedder = embedder.map(|e| e as Arc<dyn Embedder>);
    Ok(Arc::new(app::open(path, embedder, config)?))
}

#[pymethods]
impl Index {
    /// Builds an index of `tools` (a list of tool dicts) or of
    /// the registry files and folders `paths`, into `path` (a temporary
    /// folder when `None`), and opens it. Returns the index and the build
    /// report. Ctrl-C stops the build (nothing is published).
    #[staticmethod]
    #[pyo3(signature = (tools, paths, path, config, model, namespace, progress, lexical_only, limits))]
    #[allow(clippy::too_many_arguments)]
    fn build<'py>(
        py: Python<'py>,
        tools: Option<Bound<'py, PyList>>,
        paths: Option<Vec<PathBuf>>,
        path: Option<PathBuf>,
        config: Option<PathBuf>,
        model: Option<String>,
        namespace: String,
        progress: bool,
        lexical_only: bool,
        limits: Vec<(String, u64)>,
    ) -> PyResult<(Index, Bound<'py, PyDict>)> {
        let tools = Tools::from_args(tools, paths)?;
        let (index, report) = crate::cancel::run(py, |cancel| {
            let config = load_config(config)?;
            let registry = tools.load(&namespace, load_limits(&limits)?)?;
            let (path, temp) = match path {
                Some(p) => (p, None),
                None => {
                    let t = tempfile::Builder::new()
                        .prefix("toolrag-index-")
                        .tempdir()
                        .map_err(|e| toolrag::Error::io(std::env::temp_dir(), e))?;
                    (t.path().to_path_buf(), Some(t))
                }
            };
            let model = build_model(lexical_only, model, &config)?;
            let setup = Setup {
                path,
                _temp: temp,
                config,
                model,
            };
            let (searcher, report) = build_and_open(registry, &setup, progress, cancel)?;
            Ok((
                Index {
                    state: RwLock::new(State { searcher }),
                    setup,
                    updating: std::sync::Mutex::new(()),
                },
                report,
            ))
        })?;
        Ok((index, report_dict(py, &report)?))
    }

    /// Opens the index in `path`, with the model it needs (none for a
    /// lexical-only index).
    #[staticmethod]
    #[pyo3(signature = (path, config, model))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        config: Option<PathBuf>,
        model: Option<String>,
    ) -> PyResult<Index> {
        py.detach(|| {
            let config = load_config(config)?;
            // The model the index was built with (none for a lexical-only one).
            let model = ModelRequest::new(model, None, &config).for_index(&path)?;
            let embedder = model.as_ref().map(model::embedder).transpose()?;
            let searcher = open_searcher(&path, embedder, &config)?;
            Ok(Index {
                state: RwLock::new(State { searcher }),
                setup: Setup {
                    path,
                    _temp: None,
                    config,
                    model,
                },
                updating: std::sync::Mutex::new(()),
            })
        })
        .map_err(to_py)
    }

    /// The top `k` tools for `request`.
    #[pyo3(signature = (request, k, mode, namespaces))]
    fn search(
        &self,
        py: Python<'_>,
        request: String,
        k: usize,
        mode: &str,
        namespaces: Vec<String>,
    ) -> PyResult<Vec<Hit>> {
        let (searcher, req) = self.request(request, k, mode, namespaces)?;
        let result = py.detach(|| searcher.search(&req)).map_err(to_py)?;
        Ok(result
            .hits
            .into_iter()
            .enumerate()
            .map(|(i, h)| Hit {
                id: h.id,
                score: f64::from(h.score),
                rank: i + 1,
                summary: h.summary,
                pinned: h.pinned,
                searcher: Arc::clone(&searcher),
            })
            .collect())
    }

    /// The Khipu candidate handle set for `request`, as a dict: exactly what
    /// `toolrag query --format khipu` prints.
    #[pyo3(signature = (request, k, mode, namespaces))]
    fn khipu<'py>(
        &self,
        py: Python<'py>,
        request: String,
        k: usize,
        mode: &str,
        namespaces: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (searcher, req) = self.request(request, k, mode, namespaces)?;
        let value = py
            .detach(|| {
                let result = searcher.search(&req)?;
                let set = khipu::candidate_set(&result, |id| searcher.tool(id));
                // Through text, so that an f32 score is the number the CLI
                // prints (0.84937537), not its f64 widening.
                crate::convert::through_text(serde_json::to_string(&set))
            })
            .map_err(to_py)?;
        crate::convert::to_py(py, &value)
    }

    /// Asks the plan model at `url` for a Khipu plan over the candidates of
    /// `request`, gates it and repairs it, as `toolrag plan` does. Returns
    /// `{"plan", "attempts", "verdict", "history"}` as JSON; raises
    /// `PlanAborted` when the budget is spent and `PlannerUnavailable` when
    /// the plan model cannot be asked.
    #[pyo3(signature = (request, k, mode, namespaces, url, model, api_key, max_retry, timeout, prompt, constrain))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        request: String,
        k: usize,
        mode: &str,
        namespaces: Vec<String>,
        url: String,
        model: Option<String>,
        api_key: Option<String>,
        max_retry: usize,
        timeout: f64,
        prompt: Option<String>,
        constrain: bool,
    ) -> PyResult<String> {
        let (searcher, req) = self.request(request, k, mode, namespaces)?;
        let ask = crate::plan::Ask {
            url,
            model,
            api_key,
            max_retry,
            timeout,
            prompt,
            constrain,
        };
        crate::plan::run(py, &searcher, &req, ask)
    }

    /// Rebuilds the index in place from new tools, embedding only new and
    /// changed texts, and switches to it. Returns the build report. Ctrl-C
    /// stops the rebuild (the index stays as it was).
    #[pyo3(signature = (tools, paths, namespace, progress, limits))]
    fn update<'py>(
        &self,
        py: Python<'py>,
        tools: Option<Bound<'py, PyList>>,
        paths: Option<Vec<PathBuf>>,
        namespace: String,
        progress: bool,
        limits: Vec<(String, u64)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tools = Tools::from_args(tools, paths)?;
        let report = crate::cancel::run(py, |cancel| {
            let _one_at_a_time = self.updating.lock().unwrap_or_else(|p| p.into_inner());
            let registry = tools.load(&namespace, load_limits(&limits)?)?;
            let (searcher, report) = build_and_open(registry, &self.setup, progress, cancel)?;
            self.state
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .searcher = searcher;
            Ok(report)
        })?;
        report_dict(py, &report)
    }

    /// The number of tools.
    fn __len__(&self) -> usize {
        self.searcher().tools().len()
    }

    /// Every tool's definition, as a JSON list, in index order. Whole
    /// definitions stay JSON text for `json.loads`: building them as objects
    /// here measured slower (scripts/bench-python-boundary: 17 ms against
    /// 11 ms of CPU for 1,000 definitions), as json.loads is C and shares its
    /// keys.
    fn tools_json(&self, py: Python<'_>) -> String {
        let searcher = self.searcher();
        py.detach(|| serde_json::to_string(searcher.tools()).unwrap_or_default())
    }

    /// The definition of the tool `id` (or its handle), as JSON; `None`
    /// when there is no such tool.
    fn tool_json(&self, id: &str) -> Option<String> {
        let searcher = self.searcher();
        searcher
            .tool(id)
            .map(|t| serde_json::to_string(t).unwrap_or_default())
    }

    /// Whether there is a tool `id` (or a tool of that handle).
    fn has(&self, id: &str) -> bool {
        self.searcher().tool(id).is_some()
    }

    /// The index folder.
    #[getter]
    fn path(&self) -> PathBuf {
        self.setup.path.clone()
    }

    /// Whether the index has no dense side (built without the model).
    #[getter]
    fn lexical_only(&self) -> bool {
        self.searcher().manifest().lexical_only
    }

    /// The model recorded in the index (`None` when lexical only).
    #[getter]
    fn model_id(&self) -> Option<String> {
        self.searcher()
            .manifest()
            .model
            .as_ref()
            .map(|m| m.id.clone())
    }
}

impl Index {
    /// The searcher the index is open on now.
    pub fn searcher(&self) -> Arc<Searcher> {
        Arc::clone(
            &self
                .state
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .searcher,
        )
    }

    fn request(
        &self,
        query: String,
        k: usize,
        mode: &str,
        namespaces: Vec<String>,
    ) -> PyResult<(Arc<Searcher>, SearchRequest)> {
        if k == 0 {
            return Err(crate::errors::message_error(
                "InvalidInput",
                "k must be at least 1".into(),
            ));
        }
        let mode: Mode = mode.parse().map_err(|e: toolrag::search::UnknownMode| {
            crate::errors::message_error("InvalidInput", e.to_string())
        })?;
        let pin = self.setup.config.pinned.clone();
        let mut req = SearchRequest::new(query);
        req.k = k;
        req.mode = mode;
        req.namespaces = namespaces;
        req.pin = pin;
        Ok((self.searcher(), req))
    }
}
