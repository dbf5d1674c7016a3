//! Request bodies: the search body, its limits, the gate body, and the JSON
//! extractor that turns every way a body can be wrong into a precise 4xx.

use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use toolrag_engine::search::{Mode, SearchRequest};
use toolrag_serve::{check_k, check_query, ApiError, UserCode, MAX_BODY_BYTES};

/// The body of `POST /v1/search` (and each item of a batch). Unknown fields
/// are refused, so a misspelt option is an error rather than ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchBody {
    /// The request in words, at most [`MAX_QUERY_CHARS`](toolrag_engine::search::MAX_QUERY_CHARS)
    /// characters (4096; characters, not bytes, as JSON Schema's `maxLength` counts).
    pub query: String,
    /// How many tools, 1..=100 (default 10).
    #[serde(default, deserialize_with = "json_integer")]
    pub k: Option<i64>,
    /// `hybrid` (default), `lexical` or `dense`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Only these namespaces.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Only tools with one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only tools annotated read-only.
    #[serde(default)]
    pub read_only: bool,
    /// Leave out tools that are, or may be, destructive.
    #[serde(default)]
    pub exclude_destructive: bool,
    /// Tools always included.
    #[serde(default)]
    pub pin: Vec<String>,
}

/// An integer as JSON Schema counts them: `48` and `48.0` alike (the
/// OpenAPI document says `"type": "integer"`, which admits both); `48.5` is
/// refused.
pub(crate) fn json_integer<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(i) = n.as_i64() {
        return Ok(Some(i));
    }
    match n.as_f64() {
        // Exactly representable, and within i64.
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
        _ => Err(D::Error::custom(format!(
            "invalid value: `{n}`, expected an integer"
        ))),
    }
}

impl SearchBody {
    /// Checks the limits and builds the library request; `pinned` (from the
    /// server's config) is added to the body's own pins.
    pub fn into_request(self, pinned: &[String]) -> Result<SearchRequest, ApiError> {
        let k = check_k(self.k)?;
        check_query(&self.query)?;
        let mut pin = pinned.to_vec();
        pin.extend(self.pin);
        Ok(SearchRequest {
            query: self.query,
            k,
            mode: self.mode.unwrap_or_default(),
            namespaces: self.namespaces,
            tags: self.tags,
            read_only: self.read_only,
            exclude_destructive: self.exclude_destructive,
            pin,
            visible: None,
        })
    }
}

/// The body of `POST /v1/gate`: `{"plan": <plan>, "offered"?: <candidate set>}`.
///
/// A bare plan is not accepted as the body: the envelope keeps room for
/// `offered`, and a body that is not an envelope is refused with a hint (see
/// [`GateBody::from_value`]) rather than gated as a plan with a dozen
/// "unknown field" violations.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateBody {
    /// The plan, as parsed JSON. Any value but `null` gets a verdict, exactly
    /// as `toolrag gate` would give it (a non-object is a `schema` violation).
    pub plan: serde_json::Value,
    /// The candidate set the plan model was offered: the response of
    /// `POST /v1/search` (an object with `candidates`) or a bare array of
    /// candidates. Absent or `null`: steps and citations are checked against
    /// the plan's own candidates.
    #[serde(default)]
    pub offered: Option<serde_json::Value>,
}

/// Top-level fields of a Khipu plan: a body with one of them and no `plan`
/// is a bare plan sent without its envelope.
const PLAN_FIELDS: &[&str] = &["planId", "decision", "candidates", "steps", "citedNodeIds"];

impl GateBody {
    /// Reads a gate body, with a precise message for every way it can be
    /// wrong: not an object, a bare plan, a missing or `null` plan, an
    /// unknown field.
    pub fn from_value(v: serde_json::Value) -> Result<GateBody, ApiError> {
        let serde_json::Value::Object(fields) = &v else {
            return Err(ApiError::user(
                UserCode::InvalidRequest,
                format!(
                    "a gate request must be a JSON object with a `plan`, not {}",
                    json_type(&v)
                ),
            ));
        };
        if !fields.contains_key("plan") && PLAN_FIELDS.iter().any(|f| fields.contains_key(*f)) {
            return Err(ApiError::user(
                UserCode::InvalidRequest,
                "missing field `plan`: the body looks like a bare plan; send \
                 {\"plan\": <the plan>, \"offered\": <the candidate set>} instead",
            ));
        }
        if fields.get("plan").is_some_and(serde_json::Value::is_null) {
            return Err(ApiError::user(
                UserCode::InvalidRequest,
                "plan: the plan is null; send the plan the model proposed",
            ));
        }
        parse_value(v)
    }
}

/// How a JSON value's type is named in messages: `an array`, `null`.
pub fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A JSON body: `application/json`, within the body limit, deserialised with
/// the path of the offending field in the message.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = crate::error::HttpError;

    async fn from_request(req: Request, state: &S) -> Result<Self, crate::error::HttpError> {
        if !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(crate::error::HttpError::user(
                UserCode::UnsupportedMediaType,
                "the body must be JSON in UTF-8, sent with `Content-Type: application/json` \
                 (no charset, or charset=utf-8)",
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::user(
                        UserCode::BodyTooLarge,
                        format!("the body is over the limit of {} bytes", MAX_BODY_BYTES),
                    )
                } else {
                    ApiError::user(UserCode::InvalidRequest, r.body_text())
                }
            })?;
        Ok(parse(&bytes).map(JsonBody)?)
    }
}

/// Deserialises `bytes`, naming the failing field (`k`, `namespaces[0]`).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(describe)
}

/// Deserialises an already parsed value, naming the failing field (`[3].k`).
pub fn parse_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

fn describe(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    use serde_json::error::Category;
    let path = e.path().to_string();
    let inner = e.into_inner();
    match inner.classify() {
        Category::Syntax | Category::Eof | Category::Io => ApiError::user(
            UserCode::MalformedJson,
            format!("the body is not valid JSON: {inner}"),
        ),
        Category::Data if path == "." => {
            ApiError::user(UserCode::InvalidRequest, inner.to_string())
        }
        Category::Data => ApiError::user(UserCode::InvalidRequest, format!("{path}: {inner}")),
    }
}

/// Whether the content type is JSON in UTF-8: `application/json` or
/// `application/*+json`, with no `charset` or a UTF-8 one (the body is read
/// as UTF-8; `charset=latin1` would be misread, so it is refused).
fn is_json(value: Option<&header::HeaderValue>) -> bool {
    let Some(v) = value.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut parts = v.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let utf8 = parts.all(|p| match p.split_once('=') {
        Some((name, value)) if name.trim().eq_ignore_ascii_case("charset") => {
            let value = value.trim().trim_matches('"');
            value.eq_ignore_ascii_case("utf-8") || value.eq_ignore_ascii_case("utf8")
        }
        _ => true,
    });
    utf8 && (mime == "application/json"
        || (mime.starts_with("application/") && mime.ends_with("+json")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field() {
        let e = parse::<SearchBody>(br#"{"query": "x", "k": "ten"}"#).unwrap_err();
        assert_eq!(e.code().as_str(), "invalid_request");
        assert!(
            e.message().starts_with("k: invalid type: string"),
            "{}",
            e.message()
        );
        let v = serde_json::json!([{"query": "x"}, {"query": 3}]);
        let e = parse_value::<Vec<SearchBody>>(v).unwrap_err();
        assert_eq!(
            e.message(),
            "[1].query: invalid type: integer `3`, expected a string"
        );
        let e = parse::<SearchBody>(br#"{"k": 3}"#).unwrap_err();
        assert_eq!(e.message(), "missing field `query` at line 1 column 8");
        let e = parse::<SearchBody>(br#"{"query": "x", "readonly": true}"#).unwrap_err();
        assert!(
            e.message().contains("unknown field `readonly`"),
            "{}",
            e.message()
        );
        let e = parse::<SearchBody>(br#"{"query": "#).unwrap_err();
        assert_eq!(e.code().as_str(), "malformed_json");
        // JSON Schema's integers: 48.0 is one, 48.5 is not.
        let b = parse::<SearchBody>(br#"{"query": "x", "k": 48.0}"#).unwrap();
        assert_eq!(b.k, Some(48));
        assert_eq!(
            parse::<SearchBody>(br#"{"query": "x", "k": null}"#)
                .unwrap()
                .k,
            None
        );
        let e = parse::<SearchBody>(br#"{"query": "x", "k": 48.5}"#).unwrap_err();
        assert!(
            e.message()
                .starts_with("k: invalid value: `48.5`, expected an integer"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn gate_bodies() {
        use serde_json::json;
        let ok = GateBody::from_value(json!({"plan": [1], "offered": null})).unwrap();
        assert_eq!((ok.plan, ok.offered), (json!([1]), None));
        let msg = |v| GateBody::from_value(v).unwrap_err().message().to_string();
        assert_eq!(
            msg(json!([])),
            "a gate request must be a JSON object with a `plan`, not an array"
        );
        assert_eq!(msg(json!({})), "missing field `plan`");
        assert!(msg(json!({"planId": "p", "decision": "ABSTAIN"})).contains("bare plan"));
        assert!(msg(json!({"plan": null})).starts_with("plan: the plan is null"));
        assert!(msg(json!({"plan": {}, "offred": []})).contains("unknown field `offred`"));
    }

    #[test]
    fn content_types() {
        let h = |s: &'static str| header::HeaderValue::from_static(s);
        assert!(is_json(Some(&h("application/json"))));
        assert!(is_json(Some(&h("Application/JSON; charset=utf-8"))));
        assert!(is_json(Some(&h("application/vnd.api+json"))));
        assert!(!is_json(Some(&h("text/plain"))));
        assert!(is_json(Some(&h("application/json; charset=\"UTF-8\""))));
        assert!(is_json(Some(&h("application/json;charset=utf8"))));
        assert!(!is_json(Some(&h("application/json; charset=latin1"))));
        assert!(!is_json(Some(&h("application/json; charset=iso-8859-1"))));
        assert!(!is_json(None));
    }
}
