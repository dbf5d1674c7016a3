//! Check 1: JSON Schema 2020-12 validation against the embedded contract.

use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::plan::cut;
use super::{Code, Violation};
use toolrag_core::khipu::PLAN_SCHEMA;

/// Violation messages quote the offending value; a huge value is cut to this
/// many characters so that a hostile plan cannot blow up the repair prompt.
const MAX_MESSAGE_CHARS: usize = 300;

/// The compiled contract. It is a constant of the build, compiled once; the
/// unit test below proves it compiles, so the `expect` cannot fire on any input.
static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value =
        serde_json::from_str(PLAN_SCHEMA).expect("the embedded plan schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the embedded plan schema compiles")
});

/// Every schema violation of `plan`, with jsonschema's instance path.
pub(super) fn check(plan: &Value, out: &mut Vec<Violation>) {
    for err in VALIDATOR.iter_errors(plan) {
        let path = err.instance_path().as_str();
        // A scalar is quoted as it is ("KHIPU" is not one of ...); an array or
        // an object is named by its type, since its text says nothing useful.
        let instance = plan.pointer(path);
        let message = match (err.kind(), instance) {
            // jsonschema shortens long enums to "or 3 other candidates"; a
            // repair prompt needs every allowed value.
            (ValidationErrorKind::Enum { options }, Some(v)) => {
                let allowed: Vec<String> = options
                    .as_array()
                    .map(|a| a.iter().map(Value::to_string).collect())
                    .unwrap_or_default();
                format!("{} is not one of {}", short(v), allowed.join(", "))
            }
            (_, Some(Value::Array(_))) => err.masked_with("an array").to_string(),
            (_, Some(Value::Object(_))) => err.masked_with("an object").to_string(),
            _ => err.to_string(),
        };
        out.push(Violation::new(
            Code::Schema,
            path,
            cut(&message, MAX_MESSAGE_CHARS),
        ));
    }
}

/// A value as it is quoted in a message: scalars as JSON, containers by type.
fn short(v: &Value) -> String {
    match v {
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_schema_compiles() {
        let mut out = Vec::new();
        check(&Value::Null, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].path, "");
        let mut out = Vec::new();
        check(&serde_json::json!([{ "a": 1 }]), &mut out);
        assert_eq!(out[0].message, r#"an array is not of type "object""#);
    }

    #[test]
    fn errors_carry_the_instance_path() {
        let plan = serde_json::json!({ "candidates": [{ "nodeId": "", "nodeKind": "X" }] });
        let mut out = Vec::new();
        check(&plan, &mut out);
        let paths: Vec<_> = out.iter().map(|v| v.path.as_str()).collect();
        assert!(paths.contains(&"/candidates/0/nodeId"), "{paths:?}");
        assert!(paths.contains(&"/candidates/0/nodeKind"), "{paths:?}");
        assert!(
            out.iter().any(|v| v.message
                == r#""X" is not one of "ARTIFACT", "CLAIM", "EDGE", "INDEX", "SUMMARY""#),
            "{out:?}"
        );
    }
}
