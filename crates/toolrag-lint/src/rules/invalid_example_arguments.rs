use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema;
use crate::text::clip;
use toolrag_core::registry::ToolDef;

/// At most this many schema errors are reported per example.
const MAX_ERRORS_PER_EXAMPLE: usize = 5;

declare_rule! {
    /// ## What it does
    /// Validates the arguments of every example against the tool's input
    /// schema with a JSON Schema validator (the `jsonschema` crate, format
    /// validation on, `absolute-path` registered as "starts with `/`"):
    /// required properties, types, enums, patterns, formats, ranges and
    /// `additionalProperties`.
    ///
    /// ## Why is this bad?
    /// Examples are the strongest signal a model gets about how to call a
    /// tool; it copies them. An example that the schema rejects teaches a call
    /// that fails, and shows that the schema and the docs have drifted apart.
    ///
    /// ## Example
    /// ```toml
    /// [input_schema]
    /// type = "object"
    /// required = ["path"]
    /// additionalProperties = false
    ///
    /// [input_schema.properties.path]
    /// type = "string"
    /// format = "absolute-path"
    ///
    /// [[examples]]
    /// request = "read my notes"
    /// arguments = { file = "notes.txt" }
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [[examples]]
    /// request = "read my notes"
    /// arguments = { path = "/home/ana/notes.txt" }
    /// ```
    pub(crate) struct InvalidExampleArguments {
        code: "TR007",
        name: "invalid-example-arguments",
        level: Error,
        summary: "An example's arguments fail the tool's input schema.",
    }
}

impl Rule for InvalidExampleArguments {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        if tool.examples.iter().all(|e| e.arguments.is_none()) {
            return;
        }
        // A schema that does not compile is `invalid-input-schema`'s finding.
        let Ok(validator) = schema::compile(&tool.input_schema) else {
            return;
        };
        for (i, ex) in tool.examples.iter().enumerate() {
            let Some(args) = &ex.arguments else { continue };
            let pointer = format!("/examples/{i}/arguments");
            if !args.is_object() {
                out.push(
                    tool,
                    pointer,
                    format!(
                        "example {}: the arguments must be an object, found {args}",
                        i + 1
                    ),
                );
                continue;
            }
            for err in validator.iter_errors(args).take(MAX_ERRORS_PER_EXAMPLE) {
                let at = err.instance_path().as_str();
                let at = if at.is_empty() {
                    String::new()
                } else {
                    format!(" at `{at}`")
                };
                out.push(
                    tool,
                    pointer.clone(),
                    format!("example {}{at}: {}", i + 1, clip(&err.to_string(), 160)),
                );
            }
        }
    }
}
