//! JSON-RPC answers on the streamable-HTTP endpoint where rmcp's
//! [`StreamableHttpService`](rmcp::transport::streamable_http_server::StreamableHttpService)
//! answers in plain text, or not as MCP clients expect. A middleware in front
//! of it (after authentication), that rewrites only what it must:
//!
//! - a POST body that is not JSON gets `400` with `-32700` *Parse error*, and
//!   JSON that is not a JSON-RPC message (`[]`, `{"x":1}`, no
//!   `"jsonrpc":"2.0"`) gets `400` with `-32600` *Invalid Request* (rmcp:
//!   a plain-text `415`); the screening is the stdio transport's
//!   ([`crate::jsonrpc::screen`]), so both transports answer alike, with
//!   `id: null` when the request's id cannot be read;
//! - rmcp's other plain-text refusals of a POST (`406`, `413`, `415`, `500`)
//!   keep their status and get a JSON-RPC error body, with the request's id;
//! - when the shutdown grace ends a call in flight, its client gets `503`
//!   with `Retry-After` and a JSON-RPC error for that request id saying the
//!   gateway is stopping ([`STOPPING_MESSAGE`]), not rmcp's plain-text `500`;
//! - a DELETE that ends a session answers `204 No Content` (rmcp: `202`,
//!   which the Python SDK 2.3.0 logs as a failed termination: it expects
//!   200 or 204);
//! - `-32601` *Method not found* says which method, on which protocol
//!   version (rmcp's message is the method's name alone), with both in
//!   `data`.
//!
//! Why a middleware and not rmcp: rmcp 3.11 has no hook for any of these
//! answers (its body parsing, its DELETE and its cancellation answers are
//! private to the service). Streams (`text/event-stream`) pass untouched and
//! are never buffered; only JSON answers to POST requests are read, and they
//! are whole in memory in rmcp already.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::model::ErrorCode;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{error_message, screen, Screened};

/// The JSON-RPC code of the error a call gets when the shutdown grace ends
/// it: *Internal error*, which every client knows.
pub const STOPPING_CODE: i32 = ErrorCode::INTERNAL_ERROR.0;

/// The message of that error.
pub const STOPPING_MESSAGE: &str = "the gateway is stopping; retry on another replica";

/// How long a client told the gateway is stopping should wait before it
/// retries (`Retry-After`, seconds): another replica is up already.
const RETRY_AFTER_SECS: u32 = 1;

/// The protocol version rmcp assumes for a request that names none (no
/// `MCP-Protocol-Version` header and no per-request version).
const DEFAULT_VERSION: &str = "2025-03-26";

/// The middleware's state.
#[derive(Debug, Clone)]
pub struct Conformance {
    /// Cancelled when the shutdown grace ends and calls in flight are cut.
    pub stopped: CancellationToken,
    /// The largest request body read, bytes (rmcp's own limit).
    pub max_body_bytes: usize,
}

/// What the middleware keeps of a POST's JSON-RPC message.
#[derive(Debug, Default)]
struct Incoming {
    /// The request's id (`None` for a notification or a response).
    id: Option<Value>,
    /// The request's method.
    method: Option<String>,
    /// The protocol version the request is on.
    version: String,
}

/// The middleware (see the module documentation).
pub async fn layer(State(c): State<Conformance>, req: Request, next: Next) -> Response {
    if req.method() == Method::POST {
        post(&c, req, next).await
    } else if req.method() == Method::DELETE {
        deleted(next.run(req).await)
    } else {
        next.run(req).await
    }
}

/// A POST: screened when its body is JSON, answered by rmcp, and rmcp's
/// answer rewritten where it must be.
async fn post(c: &Conformance, req: Request, next: Next) -> Response {
    if !is_json(req.headers()) {
        // rmcp refuses it (415, or 406 first); that answer gets a JSON-RPC body.
        let res = next.run(req).await;
        return plain_to_jsonrpc(res, &Incoming::default(), false).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, c.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => {
            // Over the limit, mostly (or the client went away).
            tracing::debug!("cannot read a request body: {e}");
            let message = format!(
                "Invalid Request: the body is over {} bytes, or could not be read whole",
                c.max_body_bytes
            );
            let status = StatusCode::PAYLOAD_TOO_LARGE;
            return error_response(status, None, ErrorCode::INVALID_REQUEST.0, &message, None);
        }
    };
    let incoming = match screened(&bytes, &parts.headers) {
        Ok(incoming) => incoming,
        Err(res) => return *res,
    };
    let req = Request::from_parts(parts, Body::from(bytes));
    let res = tokio::select! {
        biased;
        res = next.run(req) => res,
        () = c.stopped.cancelled() => return stopping(incoming.id.as_ref()),
    };
    if c.stopped.is_cancelled() && res.status() == StatusCode::INTERNAL_SERVER_ERROR {
        return stopping(incoming.id.as_ref());
    }
    if is_json(res.headers()) {
        return with_method_named(res, &incoming).await;
    }
    if is_event_stream(res.headers()) {
        return stream_with_method_named(res, &incoming);
    }
    plain_to_jsonrpc(res, &incoming, c.stopped.is_cancelled()).await
}

/// The message of a POST body, or the answer to a body that is not one.
fn screened(bytes: &Bytes, headers: &HeaderMap) -> Result<Incoming, Box<Response>> {
    let bad = StatusCode::BAD_REQUEST;
    match screen(bytes) {
        Screened::Reply(reply) => {
            let code = reply["error"]["code"].as_i64().unwrap_or_default();
            // Params that do not fit a method the server has: an in-band
            // error, as rmcp answers its own (200).
            let status = if code == i64::from(ErrorCode::INVALID_PARAMS.0) {
                StatusCode::OK
            } else {
                bad
            };
            Err(Box::new(json_response(status, &reply)))
        }
        Screened::Ignore if bytes.iter().all(u8::is_ascii_whitespace) => {
            Err(Box::new(error_response(
                bad,
                None,
                ErrorCode::PARSE_ERROR.0,
                "Parse error: the body is empty",
                None,
            )))
        }
        // A notification that does not parse: over HTTP the client waits
        // for a status, so it is told.
        Screened::Ignore => Err(Box::new(error_response(
            bad,
            None,
            ErrorCode::INVALID_REQUEST.0,
            "Invalid Request: not a JSON-RPC notification this server reads",
            None,
        ))),
        Screened::Message(_) => {
            // `screen` accepted it, so it is a JSON object.
            let value: Value = serde_json::from_slice(bytes).unwrap_or_default();
            Ok(incoming_of(&value, headers))
        }
    }
}

/// The id, method and protocol version of a JSON-RPC message.
fn incoming_of(value: &Value, headers: &HeaderMap) -> Incoming {
    let method = value["method"].as_str().map(str::to_string);
    let id = value
        .get("id")
        .filter(|id| method.is_some() && !id.is_null())
        .cloned();
    let version = value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .or_else(|| {
            headers
                .get("mcp-protocol-version")
                .and_then(|v| v.to_str().ok())
        })
        .unwrap_or(DEFAULT_VERSION)
        .to_string();
    Incoming {
        id,
        method,
        version,
    }
}

/// Whether a message's `Content-Type` is JSON.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether a message's `Content-Type` is an event stream (SSE).
fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// rmcp's `202 Accepted` to a DELETE as `204 No Content`.
fn deleted(res: Response) -> Response {
    if res.status() != StatusCode::ACCEPTED {
        return res;
    }
    let mut out = StatusCode::NO_CONTENT.into_response();
    for (name, value) in res.headers() {
        if name != header::CONTENT_LENGTH && name != header::CONTENT_TYPE {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

/// The answer to a call the shutdown grace ended.
fn stopping(id: Option<&Value>) -> Response {
    tracing::info!("a call in flight was ended: the shutdown grace is over");
    let mut res = error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        STOPPING_CODE,
        STOPPING_MESSAGE,
        Some(json!({"reason": "shutdown"})),
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    res
}

/// rmcp's plain-text refusal of a POST, with a JSON-RPC error body and the
/// same status; other answers unchanged. A `404` (unknown session) and a
/// `405` keep rmcp's answer: clients read their status alone.
async fn plain_to_jsonrpc(res: Response, incoming: &Incoming, stopped: bool) -> Response {
    let status = res.status();
    let rewritten = matches!(
        status,
        StatusCode::BAD_REQUEST
            | StatusCode::NOT_ACCEPTABLE
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNSUPPORTED_MEDIA_TYPE
            | StatusCode::INTERNAL_SERVER_ERROR
    );
    if !rewritten || is_event_stream(res.headers()) || is_json(res.headers()) {
        return res;
    }
    if stopped && status == StatusCode::INTERNAL_SERVER_ERROR {
        return stopping(incoming.id.as_ref());
    }
    // rmcp's plain-text reasons are a line; more is not read.
    let text = axum::body::to_bytes(res.into_body(), 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let code = if status == StatusCode::INTERNAL_SERVER_ERROR {
        ErrorCode::INTERNAL_ERROR.0
    } else {
        ErrorCode::INVALID_REQUEST.0
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    error_response(status, incoming.id.as_ref(), code, &message, None)
}

/// Who asked what, for naming an unknown method: the request's id, its
/// method and its protocol version.
#[derive(Debug, Clone)]
struct Asked {
    id: Value,
    method: String,
    version: String,
}

impl Asked {
    fn of(incoming: &Incoming) -> Option<Asked> {
        Some(Asked {
            id: incoming.id.clone()?,
            method: incoming.method.clone()?,
            version: incoming.version.clone(),
        })
    }

    /// Names the method and the version in `message`, if it is this
    /// request's `-32601`; whether it was.
    fn name_unknown_method(&self, message: &mut Value) -> bool {
        let code = i64::from(ErrorCode::METHOD_NOT_FOUND.0);
        if message["error"]["code"].as_i64() != Some(code) || message["id"] != self.id {
            return false;
        }
        message["error"]["message"] = json!(unknown_method_message(&self.method, &self.version));
        message["error"]["data"] = json!({"method": self.method, "protocolVersion": self.version});
        true
    }
}

/// A JSON answer to a request, with a `-32601` error's message saying which
/// method is unknown on which protocol version.
async fn with_method_named(res: Response, incoming: &Incoming) -> Response {
    let Some(asked) = Asked::of(incoming) else {
        return res;
    };
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        tracing::warn!("cannot read rmcp's JSON answer");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let value = serde_json::from_slice::<Value>(&bytes).ok();
    let Some(mut value) = value.filter(|v| v.get("error").is_some()) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if !asked.name_unknown_method(&mut value) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(value.to_string()))
}

/// An SSE answer to a request (rmcp answers on a 2025-11-25 session so),
/// with the request's `-32601` named as in [`with_method_named`]. Event by
/// event as they come: the stream is never held back for more than the
/// event being read.
fn stream_with_method_named(res: Response, incoming: &Incoming) -> Response {
    let Some(asked) = Asked::of(incoming) else {
        return res;
    };
    let (parts, body) = res.into_parts();
    let pending = Arc::new(Mutex::new(Vec::<u8>::new()));
    let tail = pending.clone();
    let events = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        let mut buf = pending.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(&chunk);
        // Whole events only; the rest waits for the next chunk.
        let Some(end) = events_end(&buf) else {
            return Ok(Bytes::new());
        };
        let whole: Vec<u8> = buf.drain(..end).collect();
        Ok::<_, axum::Error>(Bytes::from(rename_in_events(&whole, &asked)))
    });
    let rest = futures::stream::once(async move {
        let rest = std::mem::take(&mut *tail.lock().unwrap_or_else(|e| e.into_inner()));
        Ok::<_, axum::Error>(Bytes::from(rest))
    });
    Response::from_parts(parts, Body::from_stream(events.chain(rest)))
}

/// Where the last whole SSE event of `buf` ends (after its blank line, LF
/// or CRLF).
fn events_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).rposition(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buf
        .windows(4)
        .rposition(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    lf.max(crlf)
}

/// SSE events with each `data:` line that is the request's `-32601`
/// rewritten.
fn rename_in_events(events: &[u8], asked: &Asked) -> Vec<u8> {
    let text = String::from_utf8_lossy(events);
    let mut out = String::with_capacity(text.len() + 128);
    for line in text.split_inclusive('\n') {
        let data = line.strip_prefix("data:").map(str::trim);
        let newline = if line.ends_with("\r\n") { "\r\n" } else { "\n" };
        let renamed = data
            .filter(|d| d.contains("-32601"))
            .and_then(|d| serde_json::from_str::<Value>(d).ok())
            .and_then(|mut v| asked.name_unknown_method(&mut v).then_some(v));
        match renamed {
            Some(v) => {
                out.push_str("data: ");
                out.push_str(&v.to_string());
                out.push_str(newline);
            }
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// The message of `-32601`: what is unknown, and on which version.
pub fn unknown_method_message(method: &str, version: &str) -> String {
    format!("method '{method}' is not part of MCP {version} as served by this server")
}

/// A JSON-RPC error answer.
fn error_response(
    status: StatusCode,
    id: Option<&Value>,
    code: i32,
    message: &str,
    data: Option<Value>,
) -> Response {
    json_response(status, &error_message(id, code, message, data))
}

/// `body` as a JSON answer with `status`.
fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(res: Response) -> Value {
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn bodies_that_are_not_json_rpc_are_400_with_their_codes() {
        let headers = HeaderMap::new();
        for (body, code) in [
            ("{not json", -32700),
            ("", -32700),
            ("[]", -32600),
            (r#"{"x":1}"#, -32600),
            (r#"{"id":1,"method":"ping"}"#, -32600),
        ] {
            let res = *screened(&Bytes::from(body), &headers).expect_err(body);
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{body}");
            let v = body_of(res).await;
            assert_eq!(v["error"]["code"], code, "{body}: {v}");
            assert_eq!(v["jsonrpc"], "2.0");
        }
    }

    #[test]
    fn the_version_is_the_request_s_own_then_the_header_s() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        let v = json!({"jsonrpc": "2.0", "id": 3, "method": "foo/bar"});
        let i = incoming_of(&v, &headers);
        assert_eq!((i.id, i.version.as_str()), (Some(json!(3)), "2025-11-25"));
        let v = json!({"jsonrpc": "2.0", "id": 3, "method": "foo/bar", "params": {"_meta":
            {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert_eq!(incoming_of(&v, &headers).version, "2026-07-28");
        assert_eq!(
            incoming_of(&v, &HeaderMap::new()).method.as_deref(),
            Some("foo/bar")
        );
    }

    #[test]
    fn an_sse_answer_s_method_not_found_is_named() {
        let asked = Asked {
            id: json!(4),
            method: "subscriptions/listen".into(),
            version: "2025-11-25".into(),
        };
        let events = b"id: 0\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32601,\"message\":\"subscriptions/listen\"}}\n\n";
        let out = String::from_utf8(rename_in_events(events, &asked)).unwrap();
        assert!(out.starts_with("id: 0\ndata: {"), "{out}");
        assert!(out.ends_with("}\n\n"), "{out}");
        assert!(out.contains("is not part of MCP 2025-11-25"), "{out}");
        // Another request's error stays as it is.
        let other = b"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,\"message\":\"x\"}}\n\n";
        assert_eq!(rename_in_events(other, &asked), other.to_vec());
        assert_eq!(events_end(b"data: 1\n\ndata: 2"), Some(9));
        assert_eq!(events_end(b"data: 1\r\n\r\nda"), Some(11));
        assert_eq!(events_end(b"data: 1\n"), None);
    }

    #[tokio::test]
    async fn a_delete_s_202_is_204() {
        let res = deleted(StatusCode::ACCEPTED.into_response());
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        let res = deleted(StatusCode::NOT_FOUND.into_response());
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn stopping_names_the_request() {
        let res = stopping(Some(&json!(9)));
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(res.headers().contains_key(header::RETRY_AFTER));
        let v = body_of(res).await;
        assert_eq!(v["id"], 9);
        assert_eq!(v["error"]["message"], STOPPING_MESSAGE);
    }
}
