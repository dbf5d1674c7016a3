//! The normalised tool model, whatever format a tool came from.
//!
//! Persisted inside the index (as JSON): change these types compatibly, or bump
//! `index::FORMAT_VERSION`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Location;

/// The URI scheme of tool handles given to the plan model.
pub const HANDLE_SCHEME: &str = "tool://";

/// One tool, normalised from any source format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    /// Stable, registry-unique id. `<namespace>/<name>` unless the source gives one.
    pub id: String,
    /// The name the tool is called by.
    pub name: String,
    /// The group the tool belongs to (a folder, a server, a file stem).
    pub namespace: String,
    /// An optional human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// One line saying what the tool does.
    pub summary: String,
    /// The prose of the docstring, without the sections parsed into
    /// `examples`, `edge_cases`, `not_for` and parameter descriptions.
    pub description: String,
    /// The input as JSON Schema (an object schema; `{"type":"object"}` when absent).
    pub input_schema: Value,
    /// The structured result as JSON Schema (MCP `outputSchema`), when the
    /// tool declares one. Kept for the tool's card; not searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Free tags for filtering and routing.
    #[serde(default)]
    pub tags: Vec<String>,
    /// MCP side-effect annotations.
    #[serde(default)]
    pub annotations: Annotations,
    /// Example requests, each with the arguments it should produce.
    #[serde(default)]
    pub examples: Vec<Example>,
    /// Edge cases and how the tool behaves on them.
    #[serde(default)]
    pub edge_cases: Vec<EdgeCase>,
    /// Boundaries with neighbouring tools: when to use another tool instead.
    #[serde(default)]
    pub not_for: Vec<Boundary>,
    /// Set when the tool says it is deprecated (its text, or MCP
    /// `annotations.deprecated` / `_meta.deprecated`). Absent in indexes
    /// built before it existed, which read as "not deprecated".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<Deprecation>,
    /// MCP's free metadata (`_meta`), as the server sent it. Kept for the
    /// tool's card; only `deprecated` is read from it.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Requests learnt from use (`toolrag learn`): requests after which an
    /// agent called this tool and the call succeeded. Not part of any source
    /// format: the build attaches them from the index folder's `learnt.json`,
    /// and they are searched like `examples`, as dense points of their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learnt: Vec<LearntRequest>,
    /// Where the tool was defined.
    pub source: Source,
}

impl ToolDef {
    /// The handle the plan model sees: `tool://<id>`.
    pub fn handle(&self) -> String {
        format!("{HANDLE_SCHEME}{}", self.id)
    }

    /// The input properties, in schema order (empty when the schema has none).
    pub fn properties(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.iter())
    }

    /// What a search hit or a candidate note says of a deprecated tool:
    /// `deprecated: use tool://<id> instead` when its replacement is known,
    /// `deprecated` when it is not; `None` for a tool that is not deprecated.
    pub fn deprecation_note(&self) -> Option<String> {
        let d = self.deprecated.as_ref()?;
        Some(match &d.replacement_id {
            Some(id) => format!("deprecated: use {HANDLE_SCHEME}{id} instead"),
            None => "deprecated".to_string(),
        })
    }

    /// The texts that can say the tool is deprecated, in the order they are
    /// read: description, summary, title.
    pub(crate) fn deprecation_texts(&self) -> [&str; 3] {
        [
            &self.description,
            &self.summary,
            self.title.as_deref().unwrap_or(""),
        ]
    }

    /// Whether `name` is listed in the schema's `required` array.
    pub fn is_required(&self, name: &str) -> bool {
        self.input_schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(name)))
    }

    /// The most precise known location of `pointer` (a JSON-pointer-like path such
    /// as `/examples/0/arguments`), falling back to its parents and finally to the
    /// tool itself.
    pub fn location_of(&self, pointer: &str) -> Location {
        let mut p = pointer;
        loop {
            if let Some(loc) = self.source.spans.get(p) {
                return loc.clone();
            }
            match p.rfind('/') {
                Some(i) if i > 0 => p = &p[..i],
                _ => return self.source.location.clone(),
            }
        }
    }
}

/// MCP tool annotations (hints about side effects). `None` means not stated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool twice with the same arguments has no extra effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// Whether the tool is annotated read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint == Some(true)
    }

    /// Whether the tool is annotated destructive. Per MCP, a tool that is not
    /// read-only and says nothing is assumed destructive; we only count explicit hints
    /// here and leave the conservative reading to callers.
    pub fn is_destructive(&self) -> bool {
        self.destructive_hint == Some(true)
    }
}

/// A tool's deprecation, and the tool to use instead when it names one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deprecation {
    /// The replacement as the tool's text names it (`read_text_file` in "Use
    /// read_text_file instead"), when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// The id of the tool `replacement` resolves to (a tool of the same
    /// namespace first, then one unique in the registry). Set by
    /// [`crate::registry::Registry`] when it is built; `None` when the
    /// replacement names no tool of the registry, or the tool itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_id: Option<String>,
}

/// An example request in words, plus the arguments it should produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// What a user would type.
    pub request: String,
    /// The tool arguments, as a JSON object, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// A request learnt from use: after it, an agent called the tool, and the
/// call succeeded, `calls` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearntRequest {
    /// The request, its particulars taken out.
    pub request: String,
    /// How many successful calls taught it.
    pub calls: u32,
}

/// An edge case and the tool's behaviour on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeCase {
    /// The situation.
    pub case: String,
    /// What the tool does then.
    pub behaviour: String,
}

/// A boundary with a neighbouring tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// The other tool: a name, or a full id.
    pub tool: String,
    /// When to use that tool instead of this one.
    pub when: String,
}

/// The format a tool was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceFormat {
    /// Native TOML, one tool per file.
    Toml,
    /// An MCP `tools/list` result.
    Mcp,
    /// An OpenAI tools or functions array.
    Openai,
    /// JSON Lines, one tool per line.
    Jsonl,
}

/// Where a tool came from, down to the location of each of its items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The format it was read from.
    pub format: SourceFormat,
    /// Where the tool's definition starts.
    pub location: Location,
    /// Locations of items, keyed by JSON-pointer-like paths into the normalised
    /// tool (`/name`, `/examples/0`, `/inputSchema/properties/path`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spans: BTreeMap<String, Location>,
    /// The full original docstring, for free-text formats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_description: Option<String>,
}

/// A bare tool `<namespace>/<name>`, for tests (here and in the crates above).
#[doc(hidden)]
pub fn test_tool(namespace: &str, name: &str) -> ToolDef {
    ToolDef {
        id: format!("{namespace}/{name}"),
        name: name.to_string(),
        namespace: namespace.to_string(),
        title: None,
        summary: String::new(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
        output_schema: None,
        tags: vec![],
        annotations: Annotations::default(),
        examples: vec![],
        edge_cases: vec![],
        not_for: vec![],
        deprecated: None,
        meta: None,
        learnt: vec![],
        source: Source {
            format: SourceFormat::Jsonl,
            location: Location::file_start("test.jsonl"),
            spans: BTreeMap::new(),
            raw_description: None,
        },
    }
}

/// Whether a tool is, or may be, destructive: per MCP, a tool that is not
/// read-only is assumed destructive unless it says otherwise.
pub fn may_be_destructive(t: &ToolDef) -> bool {
    match (t.annotations.read_only_hint, t.annotations.destructive_hint) {
        (_, Some(true)) => true,
        (Some(true), _) => false,
        (_, Some(false)) => false,
        _ => true,
    }
}
