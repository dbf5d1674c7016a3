//! JSON formats: an MCP `tools/list` result, an OpenAI tools/functions array,
//! and JSON Lines with one tool per line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::model::{Annotations, Source, SourceFormat, ToolDef};
use super::{LoadLimits, LoadOptions};
use crate::error::{LoadError, Location};

/// One tool as the JSON formats spell it. Every format is read into this shape.
#[derive(Debug, Deserialize)]
struct JsonTool {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, alias = "inputSchema", alias = "input_schema")]
    parameters: Option<Value>,
    #[serde(default, rename = "outputSchema", alias = "output_schema")]
    output_schema: Option<Value>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    annotations: Option<JsonAnnotations>,
    /// MCP's free metadata: kept whole; only `deprecated` is read.
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonAnnotations {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    read_only_hint: Option<bool>,
    #[serde(default)]
    destructive_hint: Option<bool>,
    #[serde(default)]
    idempotent_hint: Option<bool>,
    #[serde(default)]
    open_world_hint: Option<bool>,
    /// Not an MCP hint, but servers set it: `true`, or a string saying what
    /// to use instead. Any other value is ignored, never a load error.
    #[serde(default)]
    deprecated: Option<Value>,
}

/// An explicit deprecation flag: `true` is `Some("")`, a string is itself.
fn deprecation_flag(value: Option<&Value>) -> Option<&str> {
    match value? {
        Value::Bool(true) => Some(""),
        Value::String(s) if !s.trim().is_empty() => Some(s),
        _ => None,
    }
}

fn file_namespace(path: &Path, opts: &LoadOptions) -> String {
    opts.namespace.clone().unwrap_or_else(|| {
        path.file_stem()
            .map_or_else(|| "default".into(), |s| s.to_string_lossy().into_owned())
    })
}

fn json_error(path: &Path, text: &str, e: &serde_json::Error, line_offset: usize) -> LoadError {
    // serde_json reports 1-based lines and columns; 0 means unknown.
    let location = if e.line() == 0 {
        Location::file_start(path)
    } else {
        let _ = text;
        Location {
            file: path.to_path_buf(),
            line: (e.line() + line_offset) as u32,
            column: e.column().max(1) as u32,
        }
    };
    LoadError {
        location,
        // serde_json appends " at line L column C"; the location already says it.
        message: format!("invalid JSON: {}", strip_position(&e.to_string())),
        limit: None,
    }
}

fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

/// Normalises one JSON tool object found at `location`.
fn normalise(
    item: Value,
    format: SourceFormat,
    namespace: &str,
    location: Location,
    limits: &LoadLimits,
) -> Result<ToolDef, LoadError> {
    // OpenAI wraps the function: {"type": "function", "function": {...}}.
    let item = match item {
        Value::Object(mut m) if m.get("function").is_some_and(Value::is_object) => {
            let mut inner = m.remove("function").expect("checked");
            // An `id` or `namespace` beside the wrapper is the tool's own.
            if let Value::Object(f) = &mut inner {
                for key in ["id", "namespace"] {
                    if let Some(v) = m.remove(key) {
                        f.entry(key).or_insert(v);
                    }
                }
            }
            inner
        }
        other => other,
    };
    if !item.is_object() {
        return Err(LoadError {
            location,
            message: format!("a tool must be a JSON object, found {}", type_name(&item)),
            limit: None,
        });
    }
    let raw: JsonTool = serde_path_to_error::deserialize(item).map_err(
        |e: serde_path_to_error::Error<serde_json::Error>| {
            let at = e.path().to_string();
            let at = if at == "." {
                String::new()
            } else {
                format!(" at `{at}`")
            };
            LoadError {
                location: location.clone(),
                message: format!("invalid tool definition{at}: {}", e.inner()),
                limit: None,
            }
        },
    )?;
    // Before any text is parsed or copied: a huge description or schema
    // would be multiplied by the docstring parser and the index.
    limits.check_tool(
        &location,
        &raw.name,
        raw.description.as_deref().unwrap_or(""),
        &[
            ("input schema", raw.parameters.as_ref()),
            ("output schema", raw.output_schema.as_ref()),
        ],
    )?;
    let input_schema = match raw.parameters {
        None | Some(Value::Null) => serde_json::json!({"type": "object"}),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(LoadError {
                location,
                message: format!(
                "tool `{}`: the parameters / inputSchema must be a JSON Schema object, found {}",
                raw.name,
                type_name(&other)
            ),
                limit: None,
            })
        }
    };
    let namespace = raw.namespace.unwrap_or_else(|| namespace.to_string());
    let id = raw
        .id
        .unwrap_or_else(|| format!("{namespace}/{}", raw.name));
    let ann = raw.annotations.unwrap_or_default();
    let description = raw.description.unwrap_or_default();
    let mut spans = BTreeMap::new();
    spans.insert("/description".to_string(), location.clone());
    let mut tool = ToolDef {
        id,
        name: raw.name,
        namespace,
        title: raw.title.or(ann.title),
        summary: String::new(),
        description: String::new(),
        input_schema,
        output_schema: raw.output_schema.filter(|v| !v.is_null()),
        tags: raw.tags,
        annotations: Annotations {
            read_only_hint: ann.read_only_hint,
            destructive_hint: ann.destructive_hint,
            idempotent_hint: ann.idempotent_hint,
            open_world_hint: ann.open_world_hint,
        },
        examples: vec![],
        edge_cases: vec![],
        not_for: vec![],
        deprecated: None,
        meta: None,
        learnt: vec![],
        source: Source {
            format,
            location,
            spans,
            raw_description: Some(description.clone()),
        },
    };
    super::merge_docstring(&mut tool, super::parse_docstring(&description));
    tool.summary = super::first_sentence(&tool.description);
    let flag = deprecation_flag(ann.deprecated.as_ref())
        .or_else(|| deprecation_flag(raw.meta.as_ref().and_then(|m| m.get("deprecated"))));
    tool.deprecated = super::deprecation::detect(&tool.deprecation_texts(), flag);
    tool.meta = raw.meta.filter(|v| !v.is_null());
    Ok(tool)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a JSON registry that is neither an MCP result nor an OpenAI array
/// is told.
const UNKNOWN_OBJECT: &str = "unknown format: a JSON registry is an MCP tools/list result \
     ({\"tools\": [...]}) or an OpenAI tools array ([...])";

/// The tool array of a parsed `.json` registry, its format, and the key
/// it sits under (for locating items in the text): an OpenAI array, or an
/// MCP `tools/list` result, bare or inside a JSON-RPC envelope.
fn tool_array(
    value: Value,
    path: &Path,
) -> Result<(Vec<Value>, SourceFormat, Option<&'static str>), LoadError> {
    let unknown = |message: String| LoadError {
        location: Location::file_start(path),
        message,
        limit: None,
    };
    match value {
        Value::Array(items) => Ok((items, SourceFormat::Openai, None)),
        Value::Object(mut m) => {
            let tools = match m.remove("result") {
                Some(Value::Object(mut r)) => r.remove("tools"),
                _ => m.remove("tools"),
            };
            match tools {
                Some(Value::Array(items)) => Ok((items, SourceFormat::Mcp, Some("\"tools\""))),
                _ => Err(unknown(UNKNOWN_OBJECT.into())),
            }
        }
        other => Err(unknown(format!(
            "unknown format: expected a JSON object or array, found {}",
            type_name(&other)
        ))),
    }
}

/// Loads a `.json` file: an MCP `tools/list` result (optionally inside a
/// JSON-RPC envelope) or an OpenAI tools/functions array.
pub(super) fn load_json(
    path: &Path,
    text: &str,
    opts: &LoadOptions,
) -> (Vec<ToolDef>, Vec<LoadError>) {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return (vec![], vec![json_error(path, text, &e, 0)]),
    };
    let namespace = file_namespace(path, opts);
    let (items, format, array_key) = match tool_array(value, path) {
        Ok(found) => found,
        Err(e) => return (vec![], vec![e]),
    };
    if items.len() > opts.limits.tools_per_file {
        let e = LoadLimits::over(
            &Location::file_start(path),
            "the number of tools in the file",
            items.len().to_string(),
            "tools-per-file",
            opts.limits.tools_per_file,
        );
        return (vec![], vec![e]);
    }
    let offsets = array_item_offsets(text, array_key);
    let mut tools = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let location = offsets.get(i).map_or_else(
            || Location::file_start(path),
            |&o| Location::from_offset(path, text, o),
        );
        match normalise(item, format, &namespace, location, &opts.limits) {
            Ok(t) => tools.push(t),
            Err(e) => errors.push(e),
        }
    }
    (tools, errors)
}

/// Normalises the `tools` of one MCP server's `tools/list` (every page),
/// as [`load_json`] does a file `<namespace>.json` holding `{"tools": [...]}`,
/// except that every tool is located at `location`.
pub(super) fn load_mcp_tools(
    namespace: &str,
    tools: Vec<Value>,
    location: &Location,
) -> (Vec<ToolDef>, Vec<LoadError>) {
    let mut out = Vec::with_capacity(tools.len());
    let mut errors = Vec::new();
    for item in tools {
        match normalise(
            item,
            SourceFormat::Mcp,
            namespace,
            location.clone(),
            &LoadLimits::default(),
        ) {
            Ok(t) => out.push(t),
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

/// Normalises tool values held in memory; item `i` is located at
/// `<origin>[i]`, line 0 (no line: the value has no text).
pub(super) fn load_values(
    namespace: &str,
    values: Vec<Value>,
    origin: &str,
    limits: &LoadLimits,
) -> (Vec<ToolDef>, Vec<LoadError>) {
    let mut out = Vec::with_capacity(values.len());
    let mut errors = Vec::new();
    for (i, item) in values.into_iter().enumerate() {
        let location = Location {
            file: format!("{origin}[{i}]").into(),
            line: 0,
            column: 0,
        };
        match normalise(item, SourceFormat::Jsonl, namespace, location, limits) {
            Ok(t) => out.push(t),
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

/// Loads a `.jsonl` file, one tool per line. Bad lines are reported one by one;
/// good lines still load.
pub(super) fn load_jsonl(
    path: &Path,
    text: &str,
    opts: &LoadOptions,
) -> (Vec<ToolDef>, Vec<LoadError>) {
    let namespace = file_namespace(path, opts);
    let mut tools = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let location = Location {
            file: path.to_path_buf(),
            line: i as u32 + 1,
            column: 1,
        };
        if tools.len() + errors.len() >= opts.limits.tools_per_file {
            errors.push(LoadLimits::over(
                &location,
                "the number of tools in the file",
                format!("more than {}", opts.limits.tools_per_file),
                "tools-per-file",
                opts.limits.tools_per_file,
            ));
            break;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => match normalise(v, SourceFormat::Jsonl, &namespace, location, &opts.limits) {
                Ok(t) => tools.push(t),
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(json_error(path, line, &e, i)),
        }
    }
    if tools.is_empty() && errors.is_empty() {
        errors.push(LoadError {
            location: Location::file_start(path),
            message: "the file holds no tools".into(),
            limit: None,
        });
    }
    (tools, errors)
}

/// Byte offsets of the elements of the tool array: the top-level array, or the
/// array value of the first `key` (such as `"tools"`). A small scanner that
/// respects strings; used only to point errors and lint at the right line.
fn array_item_offsets(text: &str, key: Option<&str>) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut start = match key {
        None => match text.find('[') {
            Some(i) => i,
            None => return vec![],
        },
        Some(k) => {
            let Some(k) = find_key(text, k) else {
                return vec![];
            };
            match text[k..].find('[') {
                Some(i) => k + i,
                None => return vec![],
            }
        }
    };
    start += 1;
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let mut expect_item = true;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_str {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => break,
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => {
                expect_item = true;
                continue;
            }
            _ => {}
        }
        if expect_item && depth <= 1 {
            out.push(i);
            expect_item = false;
        }
    }
    out
}

/// The offset of `key` used as an object key at any depth (`"tools"` followed by `:`).
fn find_key(text: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(key) {
        let at = from + i;
        let after = text[at + key.len()..].trim_start();
        if after.starts_with(':') {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_offsets_skip_nested_values_and_strings() {
        let text =
            "{\"tools\": [\n  {\"name\": \"a]\", \"x\": [1, {\"y\": 2}]},\n  {\"name\": \"b\"}\n]}";
        let offs = array_item_offsets(text, Some("\"tools\""));
        assert_eq!(offs.len(), 2);
        assert_eq!(&text[offs[1]..offs[1] + 9], "{\"name\": ");
    }
}
