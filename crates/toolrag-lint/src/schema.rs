//! Reading input schemas the way the rules need: every property with its
//! pointer, whether it is required, and what kind of value it holds.

use serde_json::Value;

use toolrag_core::registry::{split_identifier, ToolDef};

/// One step from the arguments object down to a property's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// An object key.
    Key(String),
    /// Any element of an array.
    Item,
}

/// One input property, at any depth.
#[derive(Debug)]
pub(crate) struct Property<'a> {
    /// The property name.
    pub name: &'a str,
    /// The pointer of the property in the normalised tool, such as
    /// `/inputSchema/properties/path`.
    pub pointer: String,
    /// The property's schema.
    pub schema: &'a Value,
    /// Whether its parent object lists it in `required`.
    pub required: bool,
    /// How to reach its values inside an example's arguments.
    pub steps: Vec<Step>,
}

impl<'a> Property<'a> {
    /// The property's description, trimmed; empty when missing.
    pub fn description(&self) -> &'a str {
        self.schema
            .get("description")
            .and_then(Value::as_str)
            .map_or("", str::trim)
    }

    /// The schema that describes its string values: the property itself for a
    /// string (or an untyped property), its `items` for an array of strings.
    pub fn string_schema(&self) -> Option<&'a Value> {
        if accepts(self.schema, "string") || type_of(self.schema).is_none() {
            return Some(self.schema);
        }
        if accepts(self.schema, "array") {
            let items = self.schema.get("items")?;
            if accepts(items, "string") {
                return Some(items);
            }
        }
        None
    }

    /// The string values examples give for this property.
    pub fn example_values<'t>(&self, tool: &'t ToolDef) -> Vec<&'t str> {
        let mut out = Vec::new();
        for ex in &tool.examples {
            if let Some(args) = &ex.arguments {
                collect_values(args, &self.steps, &mut out);
            }
        }
        out
    }
}

fn collect_values<'v>(v: &'v Value, steps: &[Step], out: &mut Vec<&'v str>) {
    match steps.split_first() {
        None => match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => out.extend(a.iter().filter_map(Value::as_str)),
            _ => {}
        },
        Some((Step::Key(k), rest)) => {
            if let Some(x) = v.get(k) {
                collect_values(x, rest, out);
            }
        }
        Some((Step::Item, rest)) => {
            for x in v.as_array().into_iter().flatten() {
                collect_values(x, rest, out);
            }
        }
    }
}

/// The `type` keyword, when present.
pub(crate) fn type_of(schema: &Value) -> Option<&Value> {
    schema.get("type")
}

/// Whether the schema's `type` is `ty` or a list containing it.
pub(crate) fn accepts(schema: &Value, ty: &str) -> bool {
    match type_of(schema) {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(ty)),
        _ => false,
    }
}

/// Every property of the tool's input schema, depth-first in schema order,
/// through nested `properties` and array `items` (at most 8 levels).
pub(crate) fn properties(tool: &ToolDef) -> Vec<Property<'_>> {
    fn walk<'a>(
        schema: &'a Value,
        pointer: &str,
        steps: &[Step],
        out: &mut Vec<Property<'a>>,
        depth: usize,
    ) {
        if depth > 8 {
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, p) in props {
                let ptr = format!("{pointer}/properties/{}", escape(name));
                let mut st = steps.to_vec();
                st.push(Step::Key(name.clone()));
                out.push(Property {
                    name,
                    pointer: ptr.clone(),
                    schema: p,
                    required: required.contains(&name.as_str()),
                    steps: st.clone(),
                });
                walk(p, &ptr, &st, out, depth + 1);
            }
        }
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            let mut st = steps.to_vec();
            st.push(Step::Item);
            walk(items, &format!("{pointer}/items"), &st, out, depth + 1);
        }
    }
    let mut out = Vec::new();
    walk(&tool.input_schema, "/inputSchema", &[], &mut out, 0);
    out
}

/// Escapes a key for a JSON pointer (`~` and `/`).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Last words of a parameter name that make it something other than a path,
/// even when an earlier word says `file` or `path` (`file_name`, `path_glob`).
const NOT_PATH_TAIL: &[&str] = &[
    "name",
    "names",
    "id",
    "ids",
    "url",
    "urls",
    "uri",
    "glob",
    "globs",
    "pattern",
    "patterns",
    "size",
    "count",
    "type",
    "types",
    "ext",
    "extension",
    "mode",
    "format",
    "content",
    "contents",
    "data",
    "hash",
    "limit",
];

/// Name words that make a parameter a path.
const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "filepath",
    "filepaths",
    "pathname",
    "dirpath",
    "cwd",
    "workdir",
];

/// Last words that make a parameter a path (`source_file`, `output_dir`).
const PATH_TAIL: &[&str] = &[
    "file",
    "files",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "folders",
];

static PATH_DESCRIPTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(file|directory|folder|dir)\s+paths?\b|\bpaths?\s+(to|of)\s+(the\s+|a\s+|an\s+|each\s+)?(\w+\s+)?(file|directory|folder|dir)|\b(absolute|relative|local|full|filesystem|file system)\s+paths?\b",
    )
    .expect("valid regex")
});

static NOT_FILESYSTEM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(url|urls|uri|endpoint|route|https?|json ?path|jsonpath|xpath|api|s3|bucket|css|dot[- ]separated|key path|direction|ascending|descending|sort order)\b",
    )
    .expect("valid regex")
});

/// Whether a property holds a filesystem path, judged by its name (`path`,
/// `output_dir`, `source_file`) or its description ("the file path of").
pub(crate) fn is_path_property(p: &Property<'_>) -> bool {
    if p.string_schema().is_none() {
        return false;
    }
    let desc = p.description();
    if NOT_FILESYSTEM.is_match(desc) {
        return false;
    }
    let words = split_identifier(p.name);
    let Some(last) = words.last() else {
        return false;
    };
    if NOT_PATH_TAIL.contains(&last.as_str()) {
        return false;
    }
    words.iter().any(|w| PATH_WORDS.contains(&w.as_str()))
        || PATH_TAIL.contains(&last.as_str())
        || PATH_DESCRIPTION.is_match(desc)
}

/// One-word parameter names that hold a path when the tool works on files
/// (`move_file.source`, `copy_file.destination`), and something else
/// elsewhere (`git_diff.target`, a relation's `from`).
const ENDPOINT_NAMES: &[&str] = &[
    "source",
    "destination",
    "src",
    "dest",
    "dst",
    "target",
    "from",
    "to",
    "origin",
    "input",
    "output",
];

/// Words of a tool name that say it works on files: the path tails, and
/// `path` itself.
fn is_file_tool_word(w: &str) -> bool {
    PATH_TAIL.contains(&w) || w == "path" || w == "paths"
}

/// Whether the tool works on files, judged by its name (`move_file`,
/// `copy_directory`).
fn is_file_tool(tool: &ToolDef) -> bool {
    split_identifier(&tool.name)
        .iter()
        .any(|w| is_file_tool_word(w.as_str()))
}

/// Whether a property holds a path because of the tool it belongs to: a
/// one-word endpoint name (`source`, `destination`) on a tool whose name says
/// it works on files, with no description that says otherwise.
fn is_endpoint_path(tool: &ToolDef, p: &Property<'_>) -> bool {
    p.string_schema().is_some()
        && ENDPOINT_NAMES.contains(&p.name.to_ascii_lowercase().as_str())
        && !NOT_FILESYSTEM.is_match(p.description())
        && is_file_tool(tool)
}

/// The properties that hold filesystem paths (see [`is_path_property`]),
/// with the endpoints of file tools (`move_file.source`).
pub(crate) fn path_properties(tool: &ToolDef) -> impl Iterator<Item = Property<'_>> {
    properties(tool)
        .into_iter()
        .filter(move |p| is_path_property(p) || is_endpoint_path(tool, p))
}

/// Name words of a path parameter that make it a base other paths are
/// relative to (`repo_path`, `root_dir`, `working_directory`).
const BASE_WORDS: &[&str] = &[
    "repo",
    "repository",
    "root",
    "base",
    "cwd",
    "workdir",
    "workspace",
    "working",
    "project",
];

/// The path parameter beside `p` (same parent object) that `p`'s paths are
/// relative to, such as `repo_path` beside `git_add.files`; `None` when there
/// is none or `p` is that base itself.
pub(crate) fn base_beside<'a>(
    all: &'a [Property<'a>],
    p: &Property<'_>,
) -> Option<&'a Property<'a>> {
    let parent = |q: &Property<'_>| {
        q.pointer
            .rsplit_once("/properties/")
            .map(|(a, _)| a.to_string())
    };
    let here = parent(p)?;
    let is_base = |q: &Property<'_>| {
        split_identifier(q.name)
            .iter()
            .any(|w| BASE_WORDS.contains(&w.as_str()))
    };
    if is_base(p) {
        return None;
    }
    all.iter().find(|q| {
        q.pointer != p.pointer
            && parent(q).as_deref() == Some(here.as_str())
            && is_path_property(q)
            && is_base(q)
    })
}

/// Whether a string schema only accepts absolute paths: `format:
/// absolute-path`, a `pattern` anchored at `/` (or a drive letter), or an
/// `enum`/`const` of absolute paths only.
pub(crate) fn is_absolute_only(schema: &Value) -> bool {
    if schema.get("format").and_then(Value::as_str) == Some("absolute-path") {
        return true;
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
        let body = p.strip_prefix('^').unwrap_or("");
        let body = body
            .strip_prefix("(?:")
            .or_else(|| body.strip_prefix('('))
            .unwrap_or(body);
        if body.starts_with('/')
            || body.starts_with("\\/")
            || body.starts_with("[A-Za-z]:")
            || body.starts_with("[a-zA-Z]:")
        {
            return true;
        }
    }
    let values: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(vs)), _) => vs.iter().collect(),
        (_, Some(c)) => vec![c],
        _ => return false,
    };
    !values.is_empty()
        && values
            .iter()
            .all(|v| v.as_str().is_some_and(|s| s.starts_with('/')))
}

/// Compiles a tool's input schema with format validation on and toolrag's
/// `absolute-path` format registered (a string starting with `/`). Without a
/// `$schema`, the draft is 2020-12.
pub(crate) fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .with_format("absolute-path", |s: &str| s.starts_with('/'))
        .build(schema)
        .map_err(|e| match e.instance_path().as_str() {
            "" => e.to_string(),
            at => format!("{e} (at `{at}`)"),
        })
}
