//! The tool registry: loading tools from files in any supported format and
//! normalising them into [`ToolDef`]s.
//!
//! A registry path is a file or a folder (read recursively). Formats:
//! native TOML (`<namespace>/<name>.toml`), an MCP `tools/list` result (`.json`),
//! an OpenAI tools/functions array (`.json`), and JSON Lines (`.jsonl`).
//! Loading never panics and never drops a tool silently: every problem becomes a
//! [`LoadError`] with a file, line and column, and all of them are reported.

mod deprecation;
mod docstring;
mod json;
mod limits;
mod model;
mod native;
mod resolve;
mod text;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use crate::error::{LoadError, LoadErrors, Location};
pub use docstring::{parse as parse_docstring, DocParts};
pub use limits::{LoadLimits, LIMIT_NAMES};
pub use model::{
    may_be_destructive, Annotations, Boundary, Deprecation, EdgeCase, Example, LearntRequest,
    Source, SourceFormat, ToolDef, HANDLE_SCHEME,
};
pub use resolve::ToolResolver;

#[doc(hidden)]
pub use model::test_tool;

pub use text::{cut_chars, is_cjk, term_parts};
pub use text::{document_text, parameter_texts, split_identifier};

use crate::error::{Error, Result};

/// Options for loading a registry.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Namespace for MCP, OpenAI and JSONL files, instead of the file stem.
    pub namespace: Option<String>,
    /// What one file may hold (description and schema sizes, tools per
    /// file); over a limit is a `file:line` error.
    pub limits: LoadLimits,
}

/// A loaded set of tools with unique ids, in a stable order (file path, then
/// position in the file).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<ToolDef>,
    by_id: HashMap<String, usize>,
    by_name: HashMap<String, Vec<usize>>,
}

/// The file extensions read when walking a folder.
const EXTENSIONS: [&str; 3] = ["toml", "json", "jsonl"];

impl Registry {
    /// Loads every tool under `paths`. Fails with [`Error::Load`] listing every
    /// problem when any file is bad.
    pub fn load(paths: &[PathBuf], opts: &LoadOptions) -> Result<Registry> {
        let (registry, errors) = Registry::load_lenient(paths, opts);
        if errors.is_empty() {
            Ok(registry)
        } else {
            Err(Error::Load(LoadErrors(errors)))
        }
    }

    /// Loads what can be loaded and returns the problems beside it, so that a
    /// caller can report everything in one run.
    pub fn load_lenient(paths: &[PathBuf], opts: &LoadOptions) -> (Registry, Vec<LoadError>) {
        let mut errors = Vec::new();
        let mut files = Vec::new();
        for p in paths {
            match collect_files(p) {
                Ok(f) => files.extend(f),
                Err(e) => errors.push(e),
            }
        }
        files.sort();
        files.dedup();
        let per_file: Vec<(Vec<ToolDef>, Vec<LoadError>)> =
            files.par_iter().map(|f| load_file(f, opts)).collect();
        let mut tools = Vec::new();
        for (t, e) in per_file {
            tools.extend(t);
            errors.extend(e);
        }
        let (registry, dup_errors) = Registry::from_tools_checked(tools);
        errors.extend(dup_errors);
        (registry, errors)
    }

    /// Builds a registry from tool definitions a program holds as JSON values
    /// rather than in a file: OpenAI functions (bare or wrapped in
    /// `{"type": "function", "function": ...}`), MCP `Tool`s (`inputSchema`),
    /// Anthropic tools (`input_schema`) or native JSONL lines, mixed freely.
    /// A tool without an `id` or `namespace` gets `namespace`. Item `i` is
    /// located at `<origin>[i]` (no line), so an error names the item, the
    /// tool and the field; every bad item is reported, not only the first.
    ///
    /// ```
    /// use toolrag_core::registry::{LoadOptions, Registry};
    /// let tools = vec![serde_json::json!({
    ///     "name": "get_weather",
    ///     "description": "Current weather for a city.",
    ///     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    /// })];
    /// let registry = Registry::from_values(tools, "tools", "tools", &LoadOptions::default())?;
    /// assert!(registry.get("tools/get_weather").is_some());
    /// let err = Registry::from_values(vec![serde_json::json!({"name": 3})], "tools", "tools",
    ///                                 &LoadOptions::default()).unwrap_err();
    /// assert!(err.to_string().contains("tools[0]"), "{err}");
    /// # Ok::<(), toolrag_core::Error>(())
    /// ```
    pub fn from_values(
        values: Vec<serde_json::Value>,
        namespace: &str,
        origin: &str,
        opts: &LoadOptions,
    ) -> Result<Registry> {
        let namespace = opts.namespace.as_deref().unwrap_or(namespace);
        let (tools, mut errors) = json::load_values(namespace, values, origin, &opts.limits);
        let (registry, dup_errors) = Registry::from_tools_checked(tools);
        errors.extend(dup_errors);
        if errors.is_empty() {
            Ok(registry)
        } else {
            Err(Error::Load(LoadErrors(errors)))
        }
    }

    /// Builds a registry from already-normalised tools. Duplicate ids are errors.
    pub fn from_tools(tools: Vec<ToolDef>) -> Result<Registry> {
        let (registry, errors) = Registry::from_tools_checked(tools);
        if errors.is_empty() {
            Ok(registry)
        } else {
            Err(Error::Load(LoadErrors(errors)))
        }
    }

    fn from_tools_checked(tools: Vec<ToolDef>) -> (Registry, Vec<LoadError>) {
        let mut errors = Vec::new();
        let mut kept = Vec::with_capacity(tools.len());
        let mut by_id: HashMap<String, usize> = HashMap::with_capacity(tools.len());
        for t in tools {
            if let Some(&first) = by_id.get(&t.id) {
                let first: &ToolDef = &kept[first];
                errors.push(LoadError {
                    location: t.source.location.clone(),
                    message: format!(
                        "duplicate tool id `{}` (first defined at {})",
                        t.id, first.source.location
                    ),
                    limit: None,
                });
                continue;
            }
            by_id.insert(t.id.clone(), kept.len());
            kept.push(t);
        }
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, t) in kept.iter().enumerate() {
            by_name.entry(t.name.clone()).or_default().push(i);
        }
        let mut registry = Registry {
            tools: kept,
            by_id,
            by_name,
        };
        registry.resolve_replacements();
        (registry, errors)
    }

    /// Sets each deprecated tool's `replacement_id` to the tool its
    /// replacement resolves to ([`Registry::resolve_ref`]), unless that is
    /// the tool itself.
    fn resolve_replacements(&mut self) {
        let resolved: Vec<(usize, Option<String>)> = self
            .tools
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let written = t.deprecated.as_ref()?.replacement.as_deref()?;
                let target = self
                    .resolve_ref(t, written)
                    .filter(|r| r.id != t.id)
                    .map(|r| r.id.clone());
                Some((i, target))
            })
            .collect();
        for (i, target) in resolved {
            if let Some(d) = self.tools[i].deprecated.as_mut() {
                d.replacement_id = target;
            }
        }
    }

    /// The tools, in load order, giving the registry up (to add more tools
    /// and build a registry again with [`Registry::from_tools`]).
    pub fn into_tools(self) -> Vec<ToolDef> {
        self.tools
    }

    /// All tools, in load order.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool with this id, if any. A `tool://` prefix is accepted.
    pub fn get(&self, id: &str) -> Option<&ToolDef> {
        let id = id.strip_prefix(HANDLE_SCHEME).unwrap_or(id);
        self.by_id.get(id).map(|&i| &self.tools[i])
    }

    /// Resolves a reference written in `from`'s docstring (a `not_for` target):
    /// an exact id, then a name in `from`'s namespace, then a name unique in the
    /// registry.
    pub fn resolve_ref(&self, from: &ToolDef, reference: &str) -> Option<&ToolDef> {
        if let Some(t) = self.get(reference) {
            return Some(t);
        }
        let candidates = self.by_name.get(reference)?;
        if let Some(&i) = candidates
            .iter()
            .find(|&&i| self.tools[i].namespace == from.namespace)
        {
            return Some(&self.tools[i]);
        }
        match candidates.as_slice() {
            [only] => Some(&self.tools[*only]),
            _ => None,
        }
    }

    /// The tools named `name`, in load order (several when namespaces share
    /// a name).
    pub fn named(&self, name: &str) -> impl Iterator<Item = &ToolDef> {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.tools[i])
    }

    /// The distinct namespaces, sorted.
    pub fn namespaces(&self) -> Vec<&str> {
        let mut ns: Vec<&str> = self.tools.iter().map(|t| t.namespace.as_str()).collect();
        ns.sort_unstable();
        ns.dedup();
        ns
    }
}

/// Normalises the tools of one live MCP server, `server`, as its
/// `tools/list` result (`tools`, every page joined) would load from a file
/// `<server>.json`: ids `<server>/<tool>`, the same docstring parsing,
/// annotations, `outputSchema` and `_meta`. Each tool is located at
/// `location` (where the server is configured). Returns the tools that
/// normalise and a [`LoadError`] for each one that does not.
pub fn load_mcp_server(
    server: &str,
    tools: Vec<serde_json::Value>,
    location: &Location,
) -> (Vec<ToolDef>, Vec<LoadError>) {
    json::load_mcp_tools(server, tools, location)
}

fn collect_files(path: &Path) -> std::result::Result<Vec<PathBuf>, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| LoadError {
        location: Location::file_start(path),
        message: format!("cannot read: {e}"),
        limit: None,
    })?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(path)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = entry.map_err(|e| LoadError {
            location: Location::file_start(e.path().unwrap_or(path)),
            message: format!("cannot read: {e}"),
            limit: None,
        })?;
        if entry.file_type().is_file()
            && entry
                .path()
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            out.push(entry.into_path());
        }
    }
    if out.is_empty() {
        return Err(LoadError {
            location: Location::file_start(path),
            message: "no tool files (.toml, .json, .jsonl) found in this folder".into(),
            limit: None,
        });
    }
    Ok(out)
}

/// The UTF-8 byte order mark, skipped at the start of a registry file.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Loads one file. Returns the tools it could read and the problems it found.
fn load_file(path: &Path, opts: &LoadOptions) -> (Vec<ToolDef>, Vec<LoadError>) {
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.len() > opts.limits.file_bytes {
            let e = LoadLimits::over(
                &Location::file_start(path),
                "the file",
                format!("{} bytes", meta.len()),
                "file-bytes",
                opts.limits.file_bytes,
            );
            return (vec![], vec![e]);
        }
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return (
                vec![],
                vec![LoadError {
                    location: Location::file_start(path),
                    message: format!("cannot read: {e}"),
                    limit: None,
                }],
            )
        }
    };
    // A UTF-8 byte order mark (some Windows editors write one) is not part
    // of the content: JSON and TOML parsers would call it an unexpected value.
    let bytes = match bytes.strip_prefix(UTF8_BOM) {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
            return (
                vec![],
                vec![LoadError {
                    location: Location::from_offset(path, &text, valid),
                    message: format!("invalid UTF-8 at byte {valid}"),
                    limit: None,
                }],
            );
        }
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "toml" => match native::load(path, &text, &opts.limits) {
            Ok(t) => (vec![t], vec![]),
            Err(e) => (vec![], vec![e]),
        },
        "json" => json::load_json(path, &text, opts),
        "jsonl" => json::load_jsonl(path, &text, opts),
        _ => (
            vec![],
            vec![LoadError {
                location: Location::file_start(path),
                message: "unknown format: expected a .toml, .json or .jsonl file".into(),
                limit: None,
            }],
        ),
    }
}

/// The first sentence of `prose`, at most 160 characters, as a one-line summary.
pub(crate) fn first_sentence(prose: &str) -> String {
    let flat: String = prose.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.find(". ").map_or(flat.len(), |i| i + 1);
    let s = &flat[..end];
    if s.chars().count() <= 160 {
        return s.to_string();
    }
    let cut: String = s.chars().take(159).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{cut}…")
}

/// Merges parsed docstring sections into a tool: sections add to the structured
/// lists, and `Args:` fills parameter descriptions that the schema lacks.
pub(crate) fn merge_docstring(tool: &mut ToolDef, parts: DocParts) {
    tool.description = parts.prose;
    tool.examples.extend(parts.examples);
    tool.edge_cases.extend(parts.edge_cases);
    tool.not_for.extend(parts.not_for);
    if let Some(props) = tool
        .input_schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, desc) in parts.args {
            if let Some(p) = props.get_mut(&name).and_then(|p| p.as_object_mut()) {
                let missing = p
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_none_or(|d| d.trim().is_empty());
                if missing && !desc.is_empty() {
                    p.insert("description".into(), serde_json::Value::String(desc));
                }
            }
        }
    }
}
