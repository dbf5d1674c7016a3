//! The route handlers, and the timeout middleware.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::body::{json_type, parse_value, GateBody, JsonBody, SearchBody};
use super::AppState;
use crate::serve::{generation_name, Answer, ApiError, UserCode, MAX_BATCH};

/// The response header naming the index generation that answered.
pub const GENERATION_HEADER: HeaderName = HeaderName::from_static("x-toolrag-generation");

fn with_generation<T: serde::Serialize>(answer: Answer<T>) -> Response {
    let mut r = Json(answer.value).into_response();
    if let Ok(v) = HeaderValue::from_str(&answer.generation) {
        r.headers_mut().insert(GENERATION_HEADER, v);
    }
    r
}

/// `POST /v1/search`.
pub async fn search(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    let body = search_body(body)?;
    let live = app.live()?;
    let req = body.into_request(&app.options().pinned)?;
    // A lexical search takes a fraction of a millisecond: handing it to the
    // blocking pool and back would cost more than the search (two thread
    // switches per request). Model-bound modes go to the pool.
    if req.mode == crate::search::Mode::Lexical {
        return Ok(with_generation(live.search(&req)?));
    }
    let answer = app.run_blocking(move || live.search(&req)).await??;
    Ok(with_generation(answer))
}

/// `POST /v1/search/batch`: up to [`MAX_BATCH`] bodies, answered in order
/// from one index generation.
pub async fn search_batch(
    State(app): State<AppState>,
    JsonBody(bodies): JsonBody<Vec<serde_json::Value>>,
) -> Result<Response, ApiError> {
    if bodies.len() > MAX_BATCH {
        return Err(ApiError::user(
            UserCode::BatchTooLarge,
            format!(
                "the batch has {} requests; the limit is {MAX_BATCH}",
                bodies.len()
            ),
        ));
    }
    let live = app.live()?;
    if let Some(i) = bodies.iter().position(|b| !b.is_object()) {
        return Err(at(i, not_an_object(&bodies[i])));
    }
    let bodies: Vec<SearchBody> = parse_value(serde_json::Value::Array(bodies))?;
    let mut reqs = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.into_iter().enumerate() {
        reqs.push(
            body.into_request(&app.options().pinned)
                .map_err(|e| at(i, e))?,
        );
    }
    let answer = app
        .run_blocking(move || live.search_many(&reqs))
        .await?
        .map_err(|(i, e)| at(i, e.into()))?;
    Ok(with_generation(answer))
}

/// A search body must be an object: serde would also take a struct from an
/// array (`["read a file"]`), which is never what a client meant.
fn search_body(v: serde_json::Value) -> Result<SearchBody, ApiError> {
    if !v.is_object() {
        return Err(not_an_object(&v));
    }
    parse_value(v)
}

fn not_an_object(v: &serde_json::Value) -> ApiError {
    ApiError::user(
        UserCode::InvalidRequest,
        format!(
            "a search request must be a JSON object with a `query`, not {}",
            json_type(v)
        ),
    )
}

/// Names the failing request of a batch: `[3]: k must be …`.
fn at(i: usize, e: ApiError) -> ApiError {
    e.prefixed(&format!("[{i}]: "))
}

/// `POST /v1/gate`: the plan gate's verdict on one plan, the same JSON as
/// `toolrag gate --format json --index`. Cited tools are resolved in the
/// generation being served, so the destructive ones are listed in
/// `requiresApproval`. A verdict is 200 whether the plan is valid or not; only
/// a body that is not a gate request is a 4xx.
pub async fn gate(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    let GateBody { plan, offered } = GateBody::from_value(body)?;
    let offered = offered
        .map(|v| crate::gate::parse_offered(&v))
        .transpose()
        .map_err(|e| match e {
            crate::Error::InvalidInput(m) => ApiError::user(UserCode::InvalidRequest, m),
            other => other.into(),
        })?;
    let live = app.live()?;
    let answer = app
        .run_blocking(move || {
            let s = live.snapshot();
            let gate = crate::gate::Gate {
                offered: offered.as_deref(),
                tools: Some(&*s as &dyn crate::gate::ToolResolver),
            };
            Answer {
                generation: generation_name(&s),
                value: gate.check(&plan),
            }
        })
        .await?;
    Ok(with_generation(answer))
}

/// `GET /v1/tools/{id}`: the full card of a tool, by id or `tool://` handle.
pub async fn tool(
    State(app): State<AppState>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(|e| ApiError::user(UserCode::InvalidRequest, e.body_text()))?;
    let s = app.live()?.snapshot();
    match s.tool(&id) {
        Some(t) => Ok(with_generation(Answer {
            generation: generation_name(&s),
            value: t,
        })),
        None => Err(ApiError::user(
            UserCode::ToolNotFound,
            format!("no tool `{id}` in the index"),
        )),
    }
}

/// `GET /healthz`: the process is up.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: 200 once the index is loaded, 503 before.
pub async fn readyz(State(app): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let s = app.live()?.snapshot();
    Ok(Json(json!({
        "status": "ready",
        "generation": generation_name(&s),
        "tools": s.tools().len(),
        "dense": s.has_dense(),
    })))
}

/// Any other path.
pub async fn not_found(req: Request) -> ApiError {
    ApiError::user(
        UserCode::NotFound,
        format!("no route {} {}", req.method(), req.uri().path()),
    )
}

/// A known path with another method.
pub async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::user(
        UserCode::MethodNotAllowed,
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

/// Answers 503 `timeout` when a request takes longer than the configured
/// timeout. The search thread finishes on its own; only the answer is dropped.
pub async fn timeout(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let limit = app.options().timeout;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::timeout(format!(
            "the request took longer than {} ms",
            limit.as_millis()
        ))
        .into_response(),
    }
}
