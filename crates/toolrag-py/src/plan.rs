//! `Index.plan`: the plan model in the loop, as `toolrag plan` runs it, with
//! the GIL released for the whole of it (the retrieval and every call to the
//! plan model).
//!
//! A spent budget raises `toolrag.PlanAborted` with every attempt's verdict;
//! a planner that cannot be asked raises `toolrag.PlannerUnavailable`.

use std::time::Duration;

use pyo3::prelude::*;
use serde_json::{json, Value};
use toolrag::gate::ToolResolver;
use toolrag::planner::{PlanFailure, Planner, PlannerError, PlannerOptions};
use toolrag::search::{khipu, SearchRequest};
use toolrag::Searcher;

use crate::errors::{message_error, to_py};

/// How to ask the plan model, as `Index.plan` was given it.
pub struct Ask {
    /// The OpenAI-compatible base URL.
    pub url: String,
    /// The `model` field of each request.
    pub model: Option<String>,
    /// The bearer token.
    pub api_key: Option<String>,
    /// Repairs after the first proposal.
    pub max_retry: usize,
    /// Seconds one call may take.
    pub timeout: f64,
    /// The system prompt, replacing the default.
    pub prompt: Option<String>,
    /// Whether to send the answer's schema as `response_format`.
    pub constrain: bool,
}

impl Ask {
    /// The planner's options, after the checks `toolrag plan` makes.
    fn options(self) -> PyResult<PlannerOptions> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(message_error(
                "InvalidInput",
                format!(
                    "planner must be an http:// or https:// URL, such as http://127.0.0.1:8080/v1, not {:?}",
                    self.url
                ),
            ));
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(message_error(
                "InvalidInput",
                format!(
                    "timeout must be a positive number of seconds, not {}",
                    self.timeout
                ),
            ));
        }
        if self.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(message_error(
                "InvalidInput",
                "prompt is empty: give the system prompt's text, or None for the default".into(),
            ));
        }
        let mut opts = PlannerOptions::new(self.url);
        opts.model = self.model;
        opts.api_key = self.api_key.filter(|k| !k.is_empty());
        opts.max_retry = self.max_retry;
        opts.timeout = Duration::from_secs_f64(self.timeout);
        opts.prompt = self.prompt;
        opts.constrain = self.constrain;
        Ok(opts)
    }
}

/// Retrieves the candidates of `req` from `searcher`, asks for a plan over
/// them and gates it. Returns `{"plan", "attempts", "verdict", "history"}`
/// as JSON.
pub fn run(py: Python<'_>, searcher: &Searcher, req: &SearchRequest, ask: Ask) -> PyResult<String> {
    let opts = ask.options()?;
    let outcome = py
        .detach(|| -> toolrag::Result<_> {
            let result = searcher.search(req)?;
            let offered = khipu::candidate_set(&result, |id| searcher.tool(id)).candidates;
            if offered.is_empty() {
                // A plan must cite an offered tool: asking would only spend the budget.
                return Ok(None);
            }
            let planner = Planner::new(opts);
            Ok(Some(planner.plan(
                &req.query,
                &offered,
                Some(searcher as &dyn ToolResolver),
            )))
        })
        .map_err(to_py)?;
    let Some(outcome) = outcome else {
        return Err(message_error(
            "NoCandidates",
            "the retrieval offers no tool for this request (the namespace filter leaves none, or \
             nothing matches it), so there is nothing to plan over; the plan model was not asked"
                .to_string(),
        ));
    };
    match outcome {
        Ok(planned) => Ok(json!({
            "plan": planned.plan,
            "attempts": planned.attempts,
            "verdict": planned.verdict,
            "history": planned.history,
        })
        .to_string()),
        Err(PlanFailure::Aborted(aborted)) => {
            let message = PlanFailure::Aborted(aborted.clone()).to_string();
            let verdicts: Vec<&toolrag::gate::Verdict> =
                aborted.history.iter().map(|a| &a.verdict).collect();
            let details = json!({
                "attempts": aborted.attempts,
                "verdict": aborted.verdict,
                "verdicts": verdicts,
                "history": aborted.history,
            });
            Err(raise(py, "PlanAborted", message, &details))
        }
        Err(PlanFailure::Planner(e)) => {
            let (url, reason, status) = match &e {
                PlannerError::Unreachable { url, .. } => (url, "unreachable", None),
                PlannerError::Timeout { url, .. } => (url, "timeout", None),
                PlannerError::Http { url, status, .. } => (url, "http", Some(*status)),
                PlannerError::BadResponse { url, .. } => (url, "bad_response", None),
                _ => return Err(message_error("PlannerUnavailable", e.to_string())),
            };
            let details = json!({ "url": url, "reason": reason, "status": status });
            Err(raise(py, "PlannerUnavailable", e.to_string(), &details))
        }
    }
}

/// The exception `class` of `toolrag._errors`, with `details` (an object)
/// as keyword arguments.
fn raise(py: Python<'_>, class: &str, message: String, details: &Value) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let kwargs = py
            .import("json")?
            .call_method1("loads", (details.to_string(),))?;
        let kwargs = kwargs.cast_into::<pyo3::types::PyDict>()?;
        let cls = py.import("toolrag._errors")?.getattr(class)?;
        Ok(PyErr::from_value(
            cls.call((message.clone(),), Some(&kwargs))?,
        ))
    })();
    made.unwrap_or_else(|e| e)
}
