//! `GET /openapi.json`: the OpenAPI 3.1 description of the API.
//!
//! The document is hand-written ([`toolrag_serve::OPENAPI`]: it is kept in the
//! serving core because the MCP tools' output schemas are two of its
//! components) and checked against the code by tests: its paths are exactly
//! [`ROUTES`](super::ROUTES), its error codes are exactly
//! [`ApiCode::ALL`](toolrag_serve::ApiCode::ALL), its gate
//! violation codes are exactly [`Code::ALL`](toolrag_gate::Code::ALL), and the
//! integration tests validate real responses against its schemas.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The OpenAPI document, as served.
pub const DOCUMENT: &str = toolrag_serve::OPENAPI;

/// The document, parsed.
pub fn document() -> serde_json::Value {
    serde_json::from_str(DOCUMENT).expect("openapi.json is valid JSON")
}

/// A standalone JSON Schema (2020-12) for one of the document's component
/// schemas, with its `$ref`s resolvable; for validating responses.
pub fn component_schema(name: &str) -> serde_json::Value {
    let doc = document();
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": doc["components"],
    })
}

/// `GET /openapi.json`.
pub async fn serve() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_routes() {
        let doc = document();
        let mut documented: Vec<(String, String)> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, ops)| {
                ops.as_object()
                    .unwrap()
                    .keys()
                    .map(move |m| (m.clone(), path.clone()))
            })
            .collect();
        let mut routes: Vec<(String, String)> = super::super::ROUTES
            .iter()
            .map(|(m, p)| (m.to_string(), p.to_string()))
            .collect();
        documented.sort();
        routes.sort();
        assert_eq!(documented, routes);
    }

    #[test]
    fn error_codes_and_version_match() {
        let doc = document();
        let codes: Vec<&str> = doc["components"]["schemas"]["Error"]["properties"]["error"]
            ["properties"]["code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = toolrag_serve::ApiCode::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(codes, ours);
        assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn every_api_code_has_a_status_the_document_names() {
        let doc = document();
        let text = DOCUMENT;
        let mut statuses = std::collections::BTreeSet::new();
        for ops in doc["paths"].as_object().unwrap().values() {
            for op in ops.as_object().unwrap().values() {
                statuses.extend(op["responses"].as_object().unwrap().keys().cloned());
            }
        }
        for code in toolrag_serve::ApiCode::ALL {
            let status = code.status();
            assert!((400..600).contains(&status), "{code}: {status}");
            assert!(
                text.contains(&format!("\"{code}\"")),
                "{code} is not in openapi.json"
            );
            // 405 can answer any route and 500 none by design; every other
            // status is documented on at least one route.
            if ![405, 500].contains(&status) {
                assert!(
                    statuses.contains(&status.to_string()),
                    "{code}: no route documents {status}"
                );
            }
        }
    }

    #[test]
    fn gate_codes_match() {
        use toolrag_gate::{ApprovalReason, Code};
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let codes: Vec<Code> =
            serde_json::from_value(schemas["Violation"]["properties"]["code"]["enum"].clone())
                .unwrap();
        assert_eq!(codes, Code::ALL);
        let reasons: Vec<ApprovalReason> = serde_json::from_value(
            schemas["Approval"]["properties"]["reasons"]["items"]["enum"].clone(),
        )
        .unwrap();
        use ApprovalReason::*;
        assert_eq!(
            reasons,
            [Destructive, MayBeDestructive, OpenWorldNotIdempotent]
        );
    }

    /// Every enum of the document, with its JSON path.
    fn enums(v: &serde_json::Value, path: &str, out: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(e) = m.get("enum") {
                    out.push((path.to_string(), e.clone()));
                }
                for (k, v) in m {
                    enums(v, &format!("{path}/{k}"), out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    enums(v, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// A nullable enum (`"type": ["string", "null"]` with `null` among the
    /// values) makes openapi-python-client generate one identical enum class
    /// per branch; the search mode is one `Mode` schema, shared by the
    /// request and the response, and a null mode is a separate branch.
    #[test]
    fn enums_are_not_nullable_and_the_mode_is_one_schema() {
        let doc = document();
        let mut all = Vec::new();
        enums(&doc, "", &mut all);
        assert!(all.len() >= 5);
        for (path, values) in &all {
            assert!(
                !values
                    .as_array()
                    .unwrap()
                    .contains(&serde_json::Value::Null),
                "{path}: a nullable enum"
            );
        }
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["Mode"]["enum"],
            serde_json::json!(toolrag_engine::search::Mode::NAMES)
        );
        let mode = "#/components/schemas/Mode";
        assert_eq!(schemas["Retrieval"]["properties"]["mode"]["$ref"], mode);
        let body = &schemas["SearchBody"]["properties"]["mode"];
        assert_eq!(body["anyOf"][0]["$ref"], mode);
        assert_eq!(body["anyOf"][1]["type"], "null");
        let mode_enums = all
            .iter()
            .filter(|(_, v)| v.as_array().unwrap().contains(&"lexical".into()))
            .count();
        assert_eq!(mode_enums, 1, "the modes are listed once");
    }

    #[test]
    fn limits_match() {
        let doc = document();
        let body = &doc["components"]["schemas"]["SearchBody"]["properties"];
        use toolrag_serve::{DEFAULT_K, MAX_BATCH, MAX_K, MAX_QUERY_CHARS};
        assert_eq!(body["k"]["maximum"], MAX_K);
        assert_eq!(body["k"]["default"], DEFAULT_K);
        // JSON Schema's maxLength counts characters, as check_query does.
        assert_eq!(body["query"]["maxLength"], MAX_QUERY_CHARS);
        let text = body["query"]["description"].as_str().unwrap();
        assert!(
            text.contains(&format!("{MAX_QUERY_CHARS} characters")),
            "{text}"
        );
        // The candidate's note, in characters too.
        let note = &doc["components"]["schemas"]["Candidate"]["properties"]["note"];
        assert_eq!(
            note["maxLength"],
            toolrag_engine::search::khipu::MAX_NOTE_CHARS
        );
        let text = note["description"].as_str().unwrap();
        assert!(
            text.contains(&format!(
                "{} characters",
                toolrag_engine::search::khipu::MAX_NOTE_CHARS
            )),
            "{text}"
        );
        let batch = &doc["paths"]["/v1/search/batch"]["post"]["requestBody"]["content"]
            ["application/json"]["schema"];
        assert_eq!(batch["maxItems"], MAX_BATCH);
    }
}
