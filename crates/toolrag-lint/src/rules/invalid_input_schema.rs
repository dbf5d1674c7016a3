use serde_json::Value;

use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema;
use crate::text::clip;
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Compiles the tool's input schema as JSON Schema (draft 2020-12 unless
    /// `$schema` says otherwise) and checks that it describes an object, as
    /// MCP and function calling require.
    ///
    /// ## Why is this bad?
    /// A schema that does not compile (an unknown `type` such as `"dict"`, a
    /// `pattern` that is not a regular expression, an unresolvable `$ref`)
    /// cannot validate anything: clients reject the tool, or accept any
    /// arguments. Arguments are always an object of named parameters.
    ///
    /// ## Example
    /// ```json
    /// {"type": "dict", "properties": {"n": {"type": "int"}}}
    /// ```
    ///
    /// Use instead:
    /// ```json
    /// {"type": "object", "properties": {"n": {"type": "integer"}}}
    /// ```
    pub(crate) struct InvalidInputSchema {
        code: "TR016",
        name: "invalid-input-schema",
        level: Error,
        summary: "The input schema is not valid JSON Schema, or does not describe an object.",
    }
}

impl Rule for InvalidInputSchema {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        if let Err(e) = schema::compile(&tool.input_schema) {
            out.push(
                tool,
                "/inputSchema",
                format!(
                    "the input schema is not valid JSON Schema: {}",
                    clip(&e, 160)
                ),
            );
            return;
        }
        match schema::type_of(&tool.input_schema) {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => out.push(
                tool,
                "/inputSchema/type",
                format!("the input schema has type {other}; tool arguments are an \"object\""),
            ),
        }
    }
}
