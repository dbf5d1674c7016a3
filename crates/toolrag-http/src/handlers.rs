//! The route handlers, and the timeout middleware.

use crate::error::HttpError;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::body::{json_type, parse_value, GateBody, JsonBody, SearchBody};
use super::AppState;
use toolrag_engine::live::{generation_name, Answer};
use toolrag_serve::{ApiError, UserCode, MAX_BATCH};

/// The response header naming the index generation that answered.
pub const GENERATION_HEADER: HeaderName = HeaderName::from_static("x-toolrag-generation");

pub(crate) fn with_generation<T: serde::Serialize>(answer: Answer<T>) -> Response {
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
) -> Result<Response, HttpError> {
    let body = search_body(body)?;
    let live = app.live()?;
    check_pins(&body.pin, &live.snapshot())?;
    let req = body.into_request(&app.options().pinned)?;
    // A lexical search takes a fraction of a millisecond: handing it to the
    // blocking pool and back would cost more than the search (two thread
    // switches per request). Model-bound modes go to the pool.
    let answer = if req.mode == toolrag_engine::search::Mode::Lexical {
        live.search(&req)?
    } else {
        app.run_blocking(move || live.search(&req)).await??
    };
    app.0.metrics.searched(&answer.value);
    Ok(with_generation(answer))
}

/// `POST /v1/search/batch`: up to [`MAX_BATCH`] bodies, answered in order
/// from one index generation, each request taking its own turn in the
/// search pool.
pub async fn search_batch(
    State(app): State<AppState>,
    JsonBody(bodies): JsonBody<Vec<serde_json::Value>>,
) -> Result<Response, HttpError> {
    if bodies.len() > MAX_BATCH {
        return Err(HttpError::user(
            UserCode::BatchTooLarge,
            format!(
                "the batch has {} requests; the limit is {MAX_BATCH}",
                bodies.len()
            ),
        ));
    }
    let live = app.live()?;
    if let Some(i) = bodies.iter().position(|b| !b.is_object()) {
        return Err(at(i, not_an_object(&bodies[i])).into());
    }
    let bodies: Vec<SearchBody> = parse_value(serde_json::Value::Array(bodies))?;
    let snapshot = live.snapshot();
    let mut reqs = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.into_iter().enumerate() {
        check_pins(&body.pin, &snapshot).map_err(|e| at(i, e))?;
        reqs.push(
            body.into_request(&app.options().pinned)
                .map_err(|e| at(i, e))?,
        );
    }
    // One generation for the whole batch, but one search-pool turn per
    // request: a batch takes its turns in the queue with everyone else's
    // requests instead of holding a search thread from start to end (twelve
    // batches of 256 made single searches time out), and when the request
    // is dropped (it timed out, or the client left) the loop stops at the
    // next await instead of computing answers nobody will read.
    let mut out = Vec::with_capacity(reqs.len());
    for (i, req) in reqs.into_iter().enumerate() {
        let s = snapshot.clone();
        let result = app
            .run_blocking(move || s.search(&req))
            .await?
            .map_err(|e| at(i, e.into()))?;
        out.push(toolrag_engine::search::khipu::candidate_set(
            &result,
            |id| snapshot.tool(id),
        ));
    }
    // Counted once the whole batch is answered, as a batch that fails
    // part-way answers none of its requests.
    for set in &out {
        app.0.metrics.searched(set);
    }
    Ok(with_generation(Answer::new(
        generation_name(&snapshot),
        out,
    )))
}

/// A pin of the request that names no tool is 404 `tool_not_found`, as
/// `GET /v1/tools/{id}` answers it: the request is well formed, the tool is
/// not there.
pub(crate) fn check_pins(
    pins: &[String],
    s: &toolrag_engine::search::Searcher,
) -> Result<(), ApiError> {
    match pins.iter().find(|p| s.tool(p).is_none()) {
        None => Ok(()),
        Some(p) => Err(ApiError::user(
            UserCode::ToolNotFound,
            format!("pin: no tool `{p}` in the index"),
        )),
    }
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
) -> Result<Response, HttpError> {
    let GateBody { plan, offered } = GateBody::from_value(body)?;
    let offered = offered
        .map(|v| {
            // The reader's messages first (a wrong type, a missing field),
            // then what only the document's schema says (lengths, patterns).
            let parsed = toolrag_gate::parse_offered(&v);
            if parsed.is_ok() {
                check_offered(&v)?;
            }
            parsed.map_err(|e| match e {
                toolrag_core::Error::InvalidInput(m) => ApiError::user(UserCode::InvalidRequest, m),
                other => other.into(),
            })
        })
        .transpose()?;
    let live = app.live()?;
    let answer = app
        .run_blocking(move || {
            let s = live.snapshot();
            let gate = toolrag_gate::Gate {
                offered: offered.as_deref(),
                tools: Some(&*s as &dyn toolrag_gate::ToolResolver),
            };
            Answer::new(generation_name(&s), gate.check(&plan))
        })
        .await?;
    Ok(with_generation(answer))
}

/// The two forms of `offered` in the OpenAPI document (a candidate set, an
/// array of candidates), compiled once each. They are constants of the
/// build; a unit test proves they compile.
static OFFERED: std::sync::LazyLock<[jsonschema::Validator; 2]> = std::sync::LazyLock::new(|| {
    let doc = super::openapi::document();
    [0, 1].map(|branch| {
        let schema = json!({
            "$ref": format!("#/components/schemas/GateBody/properties/offered/oneOf/{branch}"),
            "components": doc["components"],
        });
        jsonschema::draft202012::new(&schema).expect("the offered schema compiles")
    })
});

/// Refuses an `offered` candidate set that the OpenAPI document does not
/// allow (a `note` over 200 characters, a `nodeId` that is no handle, an
/// unknown field), so that the server accepts exactly what it documents.
fn check_offered(offered: &serde_json::Value) -> Result<(), ApiError> {
    let validator = match offered {
        serde_json::Value::Null => return Ok(()),
        serde_json::Value::Array(_) => &OFFERED[1],
        _ => &OFFERED[0],
    };
    match validator.iter_errors(offered).next() {
        None => Ok(()),
        Some(e) => Err(ApiError::user(
            UserCode::InvalidRequest,
            format!(
                "offered{}: {}",
                e.instance_path().as_str().replace('/', "."),
                cut(&e.masked().to_string(), 300)
            ),
        )),
    }
}

/// `text` cut to `max` characters, with an ellipsis when it was longer.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `GET /v1/tools/{id}`: the full card of a tool, by id or `tool://` handle.
pub async fn tool(
    State(app): State<AppState>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Response, HttpError> {
    let Path(id) = id.map_err(|e| ApiError::user(UserCode::InvalidRequest, e.body_text()))?;
    let s = app.live()?.snapshot();
    match s.tool(&id) {
        Some(t) => Ok(with_generation(Answer::new(generation_name(&s), t))),
        None => Err(HttpError::user(
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
pub async fn readyz(State(app): State<AppState>) -> Result<Json<serde_json::Value>, HttpError> {
    let s = app.live()?.snapshot();
    Ok(Json(json!({
        "status": "ready",
        "generation": generation_name(&s),
        "tools": s.tools().len(),
        "dense": s.has_dense(),
    })))
}

/// Any other path.
pub async fn not_found(req: Request) -> HttpError {
    HttpError::user(
        UserCode::NotFound,
        format!("no route {} {}", req.method(), req.uri().path()),
    )
}

/// A known path with another method.
pub async fn method_not_allowed(req: Request) -> HttpError {
    HttpError::user(
        UserCode::MethodNotAllowed,
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

/// Answers 414 `uri_too_long` and 431 `headers_too_large` with the JSON
/// error body, below the limits of the connection's HTTP parser (64 KiB of
/// target; 256 KiB or 1,000 headers), where hyper itself answers with an
/// empty body; and 400 `invalid_request` to a request with two
/// `Authorization` or two `Host` headers ([`toolrag_serve::repeated_header`]).
pub async fn request_limits(req: Request, next: Next) -> Response {
    use toolrag_serve::{MAX_HEADERS, MAX_HEADER_BYTES, MAX_URI_BYTES};
    let target = req
        .uri()
        .path_and_query()
        .map_or(req.uri().path().len(), |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return HttpError::user(
            UserCode::UriTooLong,
            format!("the request target is {target} bytes; the limit is {MAX_URI_BYTES}"),
        )
        .into_response();
    }
    let headers = req.headers();
    if let Some(name) = toolrag_serve::repeated_header(headers, &toolrag_serve::SINGLE_HEADERS) {
        return HttpError::user(
            UserCode::InvalidRequest,
            toolrag_serve::repeated_message(name),
        )
        .into_response();
    }
    let bytes: usize = headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return HttpError::user(
            UserCode::HeadersTooLarge,
            format!(
                "the request has {} headers of {bytes} bytes; the limits are {MAX_HEADERS} and \
                 {MAX_HEADER_BYTES} bytes",
                headers.len()
            ),
        )
        .into_response();
    }
    next.run(req).await
}

/// Answers 503 `timeout` when a request takes longer than the configured
/// timeout (`POST /v1/plan`: its own, longer budget, `AppState::plan_budget`).
/// The request's future is dropped: a batch stops before its next search; a
/// search already running on the pool finishes on its own, and so does a plan.
pub async fn timeout(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let limit = if req.uri().path() == "/v1/plan" {
        app.plan_budget()
    } else {
        app.options().timeout
    };
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => HttpError(ApiError::timeout(format!(
            "the request took longer than {} ms",
            limit.as_millis()
        )))
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_sets_are_checked_against_the_documented_schema() {
        let candidate = |note: &str| json!({"nodeId": "tool://fs/read", "nodeKind": "ARTIFACT", "label": "DECLARED", "note": note});
        assert!(check_offered(&json!({"candidates": [candidate("reads")]})).is_ok());
        assert!(check_offered(&json!([candidate("reads")])).is_ok());
        assert!(check_offered(&serde_json::Value::Null).is_ok());
        let long = "x".repeat(201);
        let e = check_offered(&json!({"candidates": [candidate(&long)]})).unwrap_err();
        assert_eq!(e.code().as_str(), "invalid_request");
        assert!(
            e.message().starts_with("offered.candidates.0.note: "),
            "{}",
            e.message()
        );
        assert!(e.message().chars().count() < 400, "{}", e.message());
        let mut bad = candidate("x");
        bad["nodeId"] = json!("fs/read");
        assert!(check_offered(&json!([bad])).is_err());
    }
}
