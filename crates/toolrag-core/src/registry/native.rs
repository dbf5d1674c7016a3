//! The native TOML format: one tool per file, `tools/<namespace>/<name>.toml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::model::{Annotations, Boundary, EdgeCase, Example, Source, SourceFormat, ToolDef};
use crate::error::{LoadError, Location};

/// The file as written. Unknown keys are errors, so typos do not vanish.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeTool {
    name: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    annotations: NativeAnnotations,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    examples: Vec<NativeExample>,
    #[serde(default)]
    edge_cases: Vec<NativeEdgeCase>,
    #[serde(default)]
    not_for: Vec<NativeBoundary>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeAnnotations {
    #[serde(default, alias = "readOnlyHint", alias = "read_only")]
    read_only_hint: Option<bool>,
    #[serde(default, alias = "destructiveHint", alias = "destructive")]
    destructive_hint: Option<bool>,
    #[serde(default, alias = "idempotentHint", alias = "idempotent")]
    idempotent_hint: Option<bool>,
    #[serde(default, alias = "openWorldHint", alias = "open_world")]
    open_world_hint: Option<bool>,
    /// The tool is deprecated (MCP servers' `annotations.deprecated`).
    #[serde(default)]
    deprecated: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeExample {
    request: String,
    #[serde(default, alias = "args")]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeEdgeCase {
    case: String,
    #[serde(default, alias = "behavior")]
    behaviour: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeBoundary {
    tool: String,
    #[serde(default)]
    when: String,
}

impl From<NativeExample> for Example {
    fn from(e: NativeExample) -> Example {
        Example {
            request: e.request,
            arguments: e.arguments,
        }
    }
}

impl From<NativeEdgeCase> for EdgeCase {
    fn from(e: NativeEdgeCase) -> EdgeCase {
        EdgeCase {
            case: e.case,
            behaviour: e.behaviour,
        }
    }
}

impl From<NativeBoundary> for Boundary {
    fn from(b: NativeBoundary) -> Boundary {
        Boundary {
            tool: b.tool,
            when: b.when,
        }
    }
}

/// Maps a TOML key path to the normalised tool's pointer (`input_schema` →
/// `inputSchema`, and so on), for source locations.
fn pointer_segment(depth: usize, key: &str) -> String {
    if depth > 0 {
        return key.to_string();
    }
    match key {
        "input_schema" => "inputSchema".into(),
        "edge_cases" => "edgeCases".into(),
        "not_for" => "notFor".into(),
        other => other.to_string(),
    }
}

fn collect_spans(
    value: &toml::de::DeValue<'_>,
    pointer: &str,
    depth: usize,
    file: &Path,
    text: &str,
    out: &mut BTreeMap<String, Location>,
) {
    use toml::de::DeValue;
    match value {
        DeValue::Table(t) => {
            for (k, v) in t.iter() {
                let p = format!("{pointer}/{}", pointer_segment(depth, k.get_ref()));
                out.entry(p.clone())
                    .or_insert_with(|| Location::from_offset(file, text, k.span().start));
                collect_spans(v.get_ref(), &p, depth + 1, file, text, out);
            }
        }
        DeValue::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                let p = format!("{pointer}/{i}");
                out.entry(p.clone())
                    .or_insert_with(|| Location::from_offset(file, text, v.span().start));
                collect_spans(v.get_ref(), &p, depth + 1, file, text, out);
            }
        }
        _ => {}
    }
}

fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// Turns a serde path such as `examples[0].arguments` into a pointer.
fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for (depth, seg) in path.iter().enumerate() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => out.push_str(&format!("/{}", pointer_segment(depth, key))),
            Segment::Enum { variant } => out.push_str(&format!("/{variant}")),
            Segment::Unknown => {}
        }
    }
    out
}

/// Loads one native TOML tool file.
pub(super) fn load(
    path: &Path,
    text: &str,
    limits: &super::LoadLimits,
) -> Result<ToolDef, LoadError> {
    let (native, spans) = parse(path, text)?;
    into_tool(native, spans, path, limits)
}

/// Reads the file as a [`NativeTool`], with the location of every value
/// (JSON pointer → line and column) for errors and lint.
fn parse(path: &Path, text: &str) -> Result<(NativeTool, BTreeMap<String, Location>), LoadError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| LoadError {
        location: e.span().map_or_else(
            || Location::file_start(path),
            |s| Location::from_offset(path, text, s.start),
        ),
        message: format!("invalid TOML: {}", e.message().trim()),
        limit: None,
    })?;
    let mut spans = BTreeMap::new();
    if let Ok(doc) = toml::de::DeTable::parse(text) {
        collect_spans(
            &toml::de::DeValue::Table(doc.into_inner()),
            "",
            0,
            path,
            text,
            &mut spans,
        );
    }
    let json = toml_to_json(toml::Value::Table(table));
    let native: NativeTool = serde_path_to_error::deserialize(json).map_err(
        |e: serde_path_to_error::Error<serde_json::Error>| {
            let pointer = path_to_pointer(e.path());
            let location = locate(&spans, &pointer).unwrap_or_else(|| Location::file_start(path));
            let at = e.path().to_string();
            let at = if at == "." {
                String::new()
            } else {
                format!(" at `{at}`")
            };
            LoadError {
                location,
                message: format!("invalid tool definition{at}: {}", e.inner()),
                limit: None,
            }
        },
    )?;
    Ok((native, spans))
}

/// The tool a parsed file defines, within `limits`.
fn into_tool(
    native: NativeTool,
    spans: BTreeMap<String, Location>,
    path: &Path,
    limits: &super::LoadLimits,
) -> Result<ToolDef, LoadError> {
    let namespace = native.namespace.clone().unwrap_or_else(|| {
        path.parent().and_then(|p| p.file_name()).map_or_else(
            || "default".to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    });
    let id = native
        .id
        .clone()
        .unwrap_or_else(|| format!("{namespace}/{}", native.name));
    let location = spans
        .get("/name")
        .cloned()
        .unwrap_or_else(|| Location::file_start(path));
    limits.check_tool(
        &location,
        &native.name,
        &native.description,
        &[("input schema", native.input_schema.as_ref())],
    )?;
    let input_schema = native
        .input_schema
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    if !input_schema.is_object() {
        return Err(LoadError {
            location: locate(&spans, "/inputSchema").unwrap_or(location),
            message: "input_schema must be a table (a JSON Schema object)".into(),
            limit: None,
        });
    }
    let mut tool = ToolDef {
        id,
        name: native.name,
        namespace,
        title: native.title,
        summary: String::new(),
        description: String::new(),
        input_schema,
        output_schema: None,
        tags: native.tags,
        annotations: Annotations {
            read_only_hint: native.annotations.read_only_hint,
            destructive_hint: native.annotations.destructive_hint,
            idempotent_hint: native.annotations.idempotent_hint,
            open_world_hint: native.annotations.open_world_hint,
        },
        examples: native.examples.into_iter().map(Example::from).collect(),
        edge_cases: native.edge_cases.into_iter().map(EdgeCase::from).collect(),
        not_for: native.not_for.into_iter().map(Boundary::from).collect(),
        deprecated: None,
        meta: None,
        learnt: vec![],
        source: Source {
            format: SourceFormat::Toml,
            location,
            spans,
            raw_description: None,
        },
    };
    // A native description may still carry free-text sections; read them too.
    super::merge_docstring(&mut tool, super::parse_docstring(&native.description));
    tool.summary = match native.summary {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => super::first_sentence(&tool.description),
    };
    let flag = (native.annotations.deprecated == Some(true)).then_some("");
    tool.deprecated = super::deprecation::detect(&tool.deprecation_texts(), flag);
    Ok(tool)
}

fn locate(spans: &BTreeMap<String, Location>, pointer: &str) -> Option<Location> {
    let mut p = pointer;
    loop {
        if let Some(l) = spans.get(p) {
            return Some(l.clone());
        }
        p = &p[..p.rfind('/')?];
        if p.is_empty() {
            return None;
        }
    }
}
