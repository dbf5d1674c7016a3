//! `POST /v1/plan`: the plan model in the loop, over HTTP. The request's
//! candidates are retrieved as `POST /v1/search` retrieves them; the server's
//! plan model ([`ServeOptions::planner`](crate::ServeOptions::planner)) is
//! asked for a Khipu plan over them, and every proposal goes through the gate,
//! with repairs, exactly as `toolrag plan` does.
//!
//! - The retrieval takes its turn in the search pool like any search. The
//!   plan itself (mostly waiting on the plan model) runs on a blocking thread
//!   of its own, under the plans' own semaphore: slow plans never hold a
//!   search thread.
//! - The request gets its own time budget (`AppState::plan_budget`), not the search
//!   timeout: (1 + the server's `max_retry`) planner timeouts, plus the
//!   request timeout for the retrieval and the queue.
//! - A retrieval that offers no tool is 404 `no_candidates`, without asking
//!   the plan model: a plan over no handle cannot pass the gate.
//! - A spent budget is 422 `plan_aborted`, whose body adds the attempts and
//!   their verdicts to the error; a planner that cannot be asked is 502
//!   `planner_unavailable` or 504 `planner_timeout` (the log names its URL,
//!   the answer does not); no planner is 501 `planner_not_configured`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use toolrag_engine::live::{generation_name, Answer};
use toolrag_engine::search::khipu;
use toolrag_planner::{Aborted, PlanFailure, PlannerError};
use toolrag_serve::{ApiError, InternalCode, UserCode};

use crate::body::{json_integer, json_type, parse_value, JsonBody, SearchBody};
use crate::error::HttpError;
use crate::handlers::{check_pins, with_generation};
use crate::AppState;

/// The most repairs a request may ask for (`maxRetry`); the server's own
/// `--max-retry` lowers it further.
pub const MAX_RETRY_ASKED: usize = 10;

/// How many tools a plan is offered when the request does not say.
const DEFAULT_PLAN_K: i64 = 5;

/// The body of `POST /v1/plan`: a search body ([`SearchBody`], with `k`
/// defaulting to 5) and `maxRetry`. Unknown fields are refused.
///
/// The search fields are the search body's own, read by its reader, so the
/// two routes cannot drift apart; `maxRetry` is taken out first.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanBody {
    /// The retrieval's request.
    pub search: SearchBody,
    /// Repairs after the first proposal, 0..=[`MAX_RETRY_ASKED`]; `None`:
    /// the server's. More than the server's is lowered to it.
    pub max_retry: Option<i64>,
}

/// `maxRetry`, read on its own with the search body's integer rule.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Repairs {
    #[serde(default, deserialize_with = "json_integer")]
    max_retry: Option<i64>,
}

impl PlanBody {
    /// Reads a plan body: an object, with a precise message otherwise.
    pub fn from_value(v: serde_json::Value) -> Result<PlanBody, ApiError> {
        let serde_json::Value::Object(mut fields) = v else {
            return Err(ApiError::user(
                UserCode::InvalidRequest,
                format!(
                    "a plan request must be a JSON object with a `query`, not {}",
                    json_type(&v)
                ),
            ));
        };
        let max_retry = match fields.remove("maxRetry") {
            None => None,
            Some(n) => parse_value::<Repairs>(serde_json::json!({ "maxRetry": n }))?.max_retry,
        };
        let search = parse_value(serde_json::Value::Object(fields))?;
        Ok(PlanBody { search, max_retry })
    }

    /// The search body of its retrieval and the repairs it asks for.
    pub fn split(self) -> Result<(SearchBody, Option<usize>), ApiError> {
        let max_retry = match self.max_retry {
            None => None,
            Some(n) => match usize::try_from(n) {
                Ok(n) if n <= MAX_RETRY_ASKED => Some(n),
                _ => {
                    return Err(ApiError::user(
                        UserCode::InvalidRequest,
                        format!("maxRetry must be between 0 and {MAX_RETRY_ASKED}, got {n}"),
                    ))
                }
            },
        };
        let mut search = self.search;
        search.k.get_or_insert(DEFAULT_PLAN_K);
        Ok((search, max_retry))
    }
}

/// `POST /v1/plan`.
pub async fn plan(
    axum::extract::State(app): axum::extract::State<AppState>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Response, HttpError> {
    let (search, asked) = PlanBody::from_value(body)?.split()?;
    // The request's own mistakes first, then the server's state.
    let pins = search.pin.clone();
    let req = search.into_request(&app.options().pinned)?;
    let Some(planner) = app.options().planner.clone() else {
        return Err(ApiError::server(
            InternalCode::PlannerNotConfigured,
            "this server has no plan model: start it with `toolrag serve --planner URL` \
             (an OpenAI-compatible chat server, such as http://127.0.0.1:8080/v1)",
        )
        .into());
    };
    let live = app.live()?;
    let snapshot = live.snapshot();
    check_pins(&pins, &snapshot)?;
    let max_retry = asked.map_or(planner.max_retry(), |n| n.min(planner.max_retry()));
    // Held by the plan's thread until it ends, even when the request is
    // dropped (timed out, or the client left): the threads the plans hold
    // never outnumber the permits.
    let permit = app
        .0
        .plan_permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the plan pool is closed"))?;
    let s = snapshot.clone();
    let set = app
        .run_blocking(move || {
            s.search(&req)
                .map(|result| khipu::candidate_set(&result, |id| s.tool(id)))
        })
        .await??;
    app.0.metrics.searched(&set);
    if set.candidates.is_empty() {
        // A plan over no handle cannot pass the gate: no call would help.
        return Err(HttpError::user(
            UserCode::NoCandidates,
            "the retrieval offers no tool for this request (the filters leave none, or nothing \
             matches it), so there is nothing to plan over",
        ));
    }
    let generation = generation_name(&snapshot);
    let query = set.query.clone();
    let offered = set.candidates;
    let outcome = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let tools = Some(&*snapshot as &dyn toolrag_gate::ToolResolver);
        planner.plan_with_retry(&query, &offered, tools, max_retry)
    })
    .await
    .map_err(|e| {
        tracing::error!(target: "server", "a plan task failed: {e}");
        ApiError::internal("the plan failed unexpectedly")
    })?;
    match outcome {
        Ok(planned) => {
            app.0.metrics.planned("passed");
            Ok(with_generation(Answer::new(generation, planned)))
        }
        Err(PlanFailure::Aborted(aborted)) => {
            app.0.metrics.planned("aborted");
            Ok(aborted_response(&aborted))
        }
        Err(PlanFailure::Planner(e)) => {
            app.0.metrics.planned("failed");
            Err(planner_error(&e).into())
        }
    }
}

/// 422 `plan_aborted`: the error, and the attempts with their verdicts (what
/// `toolrag plan --format json` prints when it exits 1).
fn aborted_response(aborted: &Aborted) -> Response {
    let error = ApiError::user(
        UserCode::PlanAborted,
        format!(
            "no plan passed the gate in {} attempt(s); the last had {} violation(s)",
            aborted.attempts,
            aborted.verdict.violations.len()
        ),
    );
    let mut body = error.body();
    if let (Some(obj), Ok(serde_json::Value::Object(rest))) =
        (body.as_object_mut(), serde_json::to_value(aborted))
    {
        obj.extend(rest);
    }
    (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
}

/// The answer to a planner that could not be asked: 504 on a timeout, 502
/// otherwise. The log has the whole error (its URL; never the key); the
/// client gets what happened without the server's internal addresses.
fn planner_error(e: &PlannerError) -> ApiError {
    tracing::warn!(target: "server", "a plan failed: {e}");
    let (code, message) = match e {
        PlannerError::Timeout { secs, .. } => (
            InternalCode::PlannerTimeout,
            format!("the plan model did not answer within {secs} s"),
        ),
        PlannerError::Http { status, .. } => (
            InternalCode::PlannerUnavailable,
            format!("the plan model answered HTTP {status}; the server log has its answer"),
        ),
        PlannerError::BadResponse { .. } => (
            InternalCode::PlannerUnavailable,
            "the plan model answered something that is not a chat completion; the server log \
             has the details"
                .to_string(),
        ),
        _ => (
            InternalCode::PlannerUnavailable,
            "the plan model cannot be reached; the server log has the details".to_string(),
        ),
    };
    ApiError::server(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn plan_bodies() {
        let (search, asked) = PlanBody::from_value(json!({"query": "x"}))
            .unwrap()
            .split()
            .unwrap();
        assert_eq!((search.k, asked), (Some(5), None));
        let (search, asked) =
            PlanBody::from_value(json!({"query": "x", "k": 3, "maxRetry": 1.0, "readOnly": true}))
                .unwrap()
                .split()
                .unwrap();
        assert_eq!(
            (search.k, asked, search.read_only),
            (Some(3), Some(1), true)
        );
        let msg = |v| match PlanBody::from_value(v).and_then(PlanBody::split) {
            Err(e) => e.message().to_string(),
            Ok(_) => String::new(),
        };
        assert_eq!(
            msg(json!(["x"])),
            "a plan request must be a JSON object with a `query`, not an array"
        );
        assert_eq!(
            msg(json!({"query": "x", "maxRetry": 11})),
            "maxRetry must be between 0 and 10, got 11"
        );
        assert!(msg(json!({"query": "x", "maxRetry": -1})).contains("got -1"));
        assert!(msg(json!({"query": "x", "planner": "http://evil"})).contains("unknown field"));
    }

    #[test]
    fn planner_errors_keep_the_url_out_of_the_answer() {
        let url = "http://10.0.0.7:8080/v1/chat/completions".to_string();
        let e = planner_error(&PlannerError::Timeout {
            url: url.clone(),
            secs: 2.0,
        });
        assert_eq!((e.status(), e.code().as_str()), (504, "planner_timeout"));
        let e = planner_error(&PlannerError::Http {
            url: url.clone(),
            status: 401,
            body: "bad key".into(),
        });
        assert_eq!(
            (e.status(), e.code().as_str()),
            (502, "planner_unavailable")
        );
        assert!(e.message().contains("HTTP 401"));
        let e = planner_error(&PlannerError::Unreachable {
            url: url.clone(),
            reason: "refused".into(),
        });
        assert_eq!(e.status(), 502);
        assert!(!e.message().contains("10.0.0.7"));
    }

    #[test]
    fn the_budget_covers_every_call() {
        let mut o = crate::ServeOptions::default();
        assert_eq!(AppState::new(o.clone()).plan_budget(), o.timeout);
        let mut opts = toolrag_planner::PlannerOptions::new("http://127.0.0.1:9/v1");
        opts.max_retry = 2;
        o.planner = Some(std::sync::Arc::new(toolrag_planner::Planner::new(opts)));
        o.planner_timeout = Duration::from_secs(30);
        assert_eq!(
            AppState::new(o.clone()).plan_budget(),
            Duration::from_secs(90) + o.timeout
        );
    }
}
