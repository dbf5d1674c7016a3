//! The one configuration file, `toolrag.toml`, read and checked in one place.
//!
//! Every command reads the same file through [`Config::load`]: the file given
//! with `--config`, else `./toolrag.toml` when there is one, else the
//! defaults. Every key is kebab-case and optional:
//!
//! ```toml
//! pinned = ["memory/search_nodes"]     # tools always offered
//!
//! [search]                             # query-time retrieval and abstaining
//! depth = 50
//! fusion = { kind = "calibrated", dense-weight = 0.7 } # or "weighted", or { kind = "rrf", k = 60.0 }
//! clause-vectors = true
//! clause-penalty = 0.0
//! clause-depth = 10
//! query-cache = 1024
//! abstain-below = 0.80                # a share of the calibration requests
//! min-dense = -1.0                     # off
//! min-lexical = 0.0
//! pinned = []                          # added to the top-level `pinned`
//!
//! [index]                              # build settings, recorded in the index
//! boosts = { name = 0.5, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }
//!
//! [model]                              # see [`crate::embed::ModelConfig`]
//! name = "minilm"                      # or dir = "path/to/folder"
//! query-prefix = ""
//!
//! [lint]                               # see [`crate::lint::LintConfig`]
//! "missing-edge-cases" = "error"
//!
//! [gateway]                            # `toolrag mcp --upstream`: see [`GatewayConfig`]
//! allow = ["memory", "filesystem/write_file"] # act without asking a person
//! output-guard = "mark"                # or "block", or "off"
//! relist-seconds = 300.0               # 0: only on list_changed
//! call-timeout-seconds = 120.0
//! lock-file = "index.lock.json"        # default: beside the index folder
//! audit-log = "index.audit.jsonl"      # default: beside the index folder
//! ```
//!
//! The file is refused, with an [`Error::Config`] naming the file, the key
//! (as a dotted path such as `search.fusion.k`) and its line, when:
//! - a key is unknown (a misspelt setting would otherwise be silently
//!   ignored); an old camelCase or snake_case spelling gets the kebab-case
//!   one suggested;
//! - a key names an engine internal that used to be a setting
//!   (`unionMaxDocs`, `exactMaxPoints`, `scanMaxPoints`, `hnswEf`);
//! - a value has the wrong type, or a number is out of its range
//!   ([`Config::validate`]; TOML's `nan` and `inf` are always refused).
//!
//! ```
//! use toolrag::config::Config;
//!
//! let config = Config::parse("[search]\nmin-dense = 0.4\nfusion = { kind = \"rrf\", k = 60 }\n")?;
//! assert_eq!(config.search.min_dense, 0.4);
//!
//! let err = Config::parse("[search]\nminDense = 0.4\n").unwrap_err();
//! assert!(err.to_string().contains("did you mean `min-dense`?"));
//!
//! let err = Config::parse("[search]\nfusion = { kind = \"rrf\", k = -1 }\n").unwrap_err();
//! assert!(err.to_string().contains("search.fusion.k"));
//! # Ok::<(), toolrag::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::embed::ModelConfig;
use crate::error::{Error, Result};
use crate::index::lexical::FieldBoosts;
use crate::lint::{LintConfig, Thresholds};
use crate::search::{Fusion, SearchConfig};

/// The config file looked for in the current directory.
pub const FILE: &str = "toolrag.toml";

/// What is wrong with a configuration: where (file, line, key) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, when the configuration was read from one.
    pub file: Option<PathBuf>,
    /// The line of the key (1-based), where the file shows it.
    pub line: Option<u32>,
    /// The key as a dotted path (`search.fusion.k`, `lint.ignore[0].path`);
    /// `None` for a file that is not TOML at all.
    pub key: Option<String>,
    /// What is wrong, naming the key.
    pub message: String,
}

impl ConfigError {
    /// A problem with `key` (a dotted path), not yet placed in a file.
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            file: None,
            line: None,
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

/// Build settings: the `[index]` table, read by `toolrag index`. What the
/// build used is recorded in the index's manifest, so queries score with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct IndexConfig {
    /// BM25 field boosts (`[index] boosts = { name = 0.5, ... }`); `None`
    /// builds with [`FieldBoosts::default`]. Each boost is finite and at
    /// least 0, and at least one is above 0. Changing them needs a rebuild.
    pub boosts: Option<FieldBoosts>,
}

/// What the gateway does with a tool result that addresses the model
/// (instructions to it, invisible Unicode, URLs to send data to).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OutputGuard {
    /// Pass it on with a mark that tells the model the content is data, not
    /// instructions (the default).
    #[default]
    Mark,
    /// Withhold it: the model gets an error naming the findings instead.
    Block,
    /// Pass results on unscanned.
    Off,
}

/// The gateway's settings: the `[gateway]` table, read by
/// `toolrag mcp --upstream`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct GatewayConfig {
    /// Tools (`server/tool`) and whole servers (`server`) that may act
    /// without asking a person, even when their annotations say they need
    /// approval. Every such call is still written to the audit log.
    pub allow: Vec<String>,
    /// What to do with a tool result that addresses the model.
    pub output_guard: OutputGuard,
    /// Every upstream server is listed again this often, in seconds, for
    /// servers that do not send `notifications/tools/list_changed`; 0 never.
    pub relist_seconds: f64,
    /// How long a forwarded `tools/call` may take, in seconds.
    pub call_timeout_seconds: f64,
    /// The lock file of pinned tool definitions (default: `<index>.lock.json`
    /// beside the index folder); relative to the configuration file's folder.
    pub lock_file: Option<PathBuf>,
    /// The audit log, JSON Lines (default: `<index>.audit.jsonl` beside the
    /// index folder); relative to the configuration file's folder.
    pub audit_log: Option<PathBuf>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            allow: Vec::new(),
            output_guard: OutputGuard::Mark,
            relist_seconds: 300.0,
            call_timeout_seconds: 120.0,
            lock_file: None,
            audit_log: None,
        }
    }
}

impl GatewayConfig {
    /// Checks the numbers: both durations finite, `relist-seconds` at least
    /// 0 and `call-timeout-seconds` above 0, each at most a day.
    pub fn validate(&self) -> Result<()> {
        let day = 86_400.0;
        if !(self.relist_seconds.is_finite() && (0.0..=day).contains(&self.relist_seconds)) {
            return Err(invalid(
                "gateway.relist-seconds",
                format!(
                    "`gateway.relist-seconds` must be 0 (never) to 86400, not {}",
                    self.relist_seconds
                ),
            ));
        }
        if !(self.call_timeout_seconds.is_finite()
            && self.call_timeout_seconds > 0.0
            && self.call_timeout_seconds <= day)
        {
            return Err(invalid(
                "gateway.call-timeout-seconds",
                format!(
                    "`gateway.call-timeout-seconds` must be above 0 and at most 86400, not {}",
                    self.call_timeout_seconds
                ),
            ));
        }
        Ok(())
    }

    /// The `allow` entry that lets `tool_id` (`server/tool`) act without
    /// asking: the tool itself or its server; `None` when none does.
    pub fn allow_entry(&self, tool_id: &str) -> Option<&str> {
        let server = tool_id.split_once('/').map_or(tool_id, |(s, _)| s);
        self.allow
            .iter()
            .map(String::as_str)
            .find(|a| *a == tool_id || *a == server)
    }
}

/// A whole `toolrag.toml`: `pinned`, `[search]`, `[index]`, `[model]`,
/// `[lint]` and `[gateway]`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {
    /// Tools always included in query results: the top-level `pinned`
    /// followed by `[search] pinned`.
    pub pinned: Vec<String>,
    /// Query-time retrieval and abstaining (the `[search]` table).
    pub search: SearchConfig,
    /// Build settings (the `[index]` table).
    pub index: IndexConfig,
    /// The embedding model (the `[model]` table); a relative `dir` is made
    /// relative to the file's folder when read from a file.
    pub model: ModelConfig,
    /// Lint levels, selection, ignores and thresholds (the `[lint]` table).
    pub lint: LintConfig,
    /// The MCP gateway's settings (the `[gateway]` table).
    pub gateway: GatewayConfig,
    /// The file this configuration was read from; `None` for the defaults or
    /// text parsed with [`Config::parse`].
    pub file: Option<PathBuf>,
}

impl Config {
    /// Reads `path`, or `./toolrag.toml` when it exists, or gives the
    /// defaults. The file is checked whole: see the [module docs](self).
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let default = Path::new(FILE);
        match path {
            Some(p) => Config::from_file(p),
            None if default.is_file() => Config::from_file(default),
            None => Ok(Config::default()),
        }
    }

    /// Reads and checks the file at `path`.
    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut config = parse_text(&text).map_err(|mut e| {
            e.file = Some(path.to_path_buf());
            Error::Config(e)
        })?;
        if let Some(base) = path.parent() {
            for p in [
                &mut config.model.dir,
                &mut config.gateway.lock_file,
                &mut config.gateway.audit_log,
            ]
            .into_iter()
            .flatten()
            {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
        }
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parses and checks the text of a `toolrag.toml`; errors give the line
    /// but no file.
    pub fn parse(text: &str) -> Result<Config> {
        parse_text(text).map_err(Error::Config)
    }

    /// Checks every number against its range: `[search]`
    /// ([`SearchConfig::validate`]), `[index]` ([`IndexConfig::validate`])
    /// and `[lint.thresholds]` ([`Thresholds::validate`]). [`Config::load`]
    /// and [`Config::parse`] call it; call it after changing a `Config` in
    /// code.
    pub fn validate(&self) -> Result<()> {
        self.search
            .validate()
            .and_then(|()| self.index.validate())
            .and_then(|()| self.lint.thresholds.validate())
            .and_then(|()| self.gateway.validate())
            .map_err(|e| match e {
                Error::Config(mut c) => {
                    c.file.clone_from(&self.file);
                    Error::Config(c)
                }
                other => other,
            })
    }
}

// ---------------------------------------------------------------------------
// Parsing

/// The keys of each table. Tests check them against the types' own fields.
const TOP_KEYS: &[&str] = &["pinned", "search", "index", "model", "lint", "gateway"];
const GATEWAY_KEYS: &[&str] = &[
    "allow",
    "output-guard",
    "relist-seconds",
    "call-timeout-seconds",
    "lock-file",
    "audit-log",
];
const MODEL_KEYS: &[&str] = &["name", "dir", "pooling", "query-prefix", "document-prefix"];
const SEARCH_KEYS: &[&str] = &[
    "depth",
    "fusion",
    "clause-vectors",
    "clause-penalty",
    "clause-depth",
    "query-cache",
    "abstain-below",
    "min-dense",
    "min-lexical",
    "pinned",
];
const RRF_KEYS: &[&str] = &["kind", "k"];
const WEIGHTED_KEYS: &[&str] = &["kind", "dense-weight"];
const INDEX_KEYS: &[&str] = &["boosts"];
const BOOST_KEYS: &[&str] = &[
    "name",
    "summary",
    "description",
    "params",
    "examples",
    "tags",
    "namespace",
    "all",
];
pub(crate) const LINT_KEYS: &[&str] = &["select", "ignore", "thresholds"];
const THRESHOLD_KEYS: &[&str] = &[
    "min-examples",
    "min-edge-cases",
    "min-description-words",
    "max-description-tokens",
    "confusable-dense",
    "confusable-lexical",
    "base64-min-length",
];
const IGNORE_KEYS: &[&str] = &["path", "tool", "rules"];

/// Former `[search]` settings that are engine internals now, in kebab-case.
const ENGINE_INTERNALS: &[&str] = &[
    "union-max-docs",
    "exact-max-points",
    "scan-max-points",
    "hnsw-ef",
];

fn parse_text(text: &str) -> std::result::Result<Config, ConfigError> {
    let spans = key_lines(text)?;
    let place = |mut e: ConfigError| {
        e.line = e.key.as_deref().and_then(|k| locate(&spans, k));
        e
    };
    // The text parsed above, so this only fails where the span walk did.
    let mut top: toml::Table = toml::from_str(text).map_err(|e| ConfigError {
        file: None,
        line: None,
        key: None,
        message: format!("invalid TOML: {}", e.message().trim()),
    })?;
    check_keys(&top).map_err(place)?;

    let mut config = Config::default();
    if let Some(v) = top.remove("pinned") {
        config.pinned = typed(v, "pinned").map_err(place)?;
    }
    if let Some(v) = top.remove("search") {
        let mut table = table_of(v, "search").map_err(place)?;
        if let Some(p) = table.remove("pinned") {
            let more: Vec<String> = typed(p, "search.pinned").map_err(place)?;
            config.pinned.extend(more);
        }
        config.search = typed(toml::Value::Table(table), "search").map_err(place)?;
    }
    if let Some(v) = top.remove("index") {
        config.index = typed(v, "index").map_err(place)?;
    }
    if let Some(v) = top.remove("model") {
        config.model = typed(v, "model").map_err(place)?;
        if config.model.name.is_some() && config.model.dir.is_some() {
            return Err(place(ConfigError::at(
                "model.dir",
                "[model] has both `name` and `dir`: give one (a shipped model's name, or a folder)",
            )));
        }
    }
    if let Some(v) = top.remove("gateway") {
        config.gateway = typed(v, "gateway").map_err(place)?;
    }
    if let Some(v) = top.remove("lint") {
        let table = table_of(v, "lint").map_err(place)?;
        config.lint = LintConfig::from_table(table).map_err(place)?;
    }
    config.validate().map_err(|e| match e {
        Error::Config(c) => place(c),
        other => ConfigError {
            file: None,
            line: None,
            key: None,
            message: other.to_string(),
        },
    })?;
    Ok(config)
}

/// The line of every key, by dotted path (`search.fusion.k`,
/// `lint.ignore[0].path`). A file that is not TOML fails here, with the line
/// of the first problem.
fn key_lines(text: &str) -> std::result::Result<BTreeMap<String, u32>, ConfigError> {
    use toml::de::{DeTable, DeValue};
    fn walk(value: &DeValue<'_>, path: &str, text: &str, out: &mut BTreeMap<String, u32>) {
        match value {
            DeValue::Table(t) => {
                for (k, v) in t.iter() {
                    let p = join(path, k.get_ref());
                    out.entry(p.clone())
                        .or_insert_with(|| line_of(text, k.span().start));
                    walk(v.get_ref(), &p, text, out);
                }
            }
            DeValue::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    out.entry(p.clone())
                        .or_insert_with(|| line_of(text, v.span().start));
                    walk(v.get_ref(), &p, text, out);
                }
            }
            _ => {}
        }
    }
    let doc = DeTable::parse(text).map_err(|e| ConfigError {
        file: None,
        line: e.span().map(|s| line_of(text, s.start)),
        key: None,
        message: format!("invalid TOML: {}", e.message().trim()),
    })?;
    let mut out = BTreeMap::new();
    walk(&DeValue::Table(doc.into_inner()), "", text, &mut out);
    Ok(out)
}

fn line_of(text: &str, offset: usize) -> u32 {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count() as u32
        + 1
}

/// The line of `key`, or of the nearest enclosing key the file shows.
fn locate(lines: &BTreeMap<String, u32>, key: &str) -> Option<u32> {
    let mut k = key;
    loop {
        if let Some(l) = lines.get(k) {
            return Some(*l);
        }
        k = &k[..k.rfind(['.', '['])?];
    }
}

/// `path.key`, or `key` at the top.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Deserialises `value`, the value of `key`; an error names the exact key
/// inside it.
pub(crate) fn typed<T: DeserializeOwned>(
    value: toml::Value,
    key: &str,
) -> std::result::Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." {
            key.to_string()
        } else if inner.starts_with('[') {
            format!("{key}{inner}")
        } else {
            join(key, &inner)
        };
        let message = format!("`{at}`: {}", e.inner().message().trim());
        ConfigError::at(at, message)
    })
}

fn table_of(value: toml::Value, key: &str) -> std::result::Result<toml::Table, ConfigError> {
    match value {
        toml::Value::Table(t) => Ok(t),
        other => Err(ConfigError::at(
            key,
            format!("`{key}` must be a table, not a {}", other.type_str()),
        )),
    }
}

/// Refuses unknown keys in every table whose keys are fixed (the `[lint]`
/// table's rule names are checked when its levels are read).
fn check_keys(top: &toml::Table) -> std::result::Result<(), ConfigError> {
    for key in top.keys() {
        // A [search] setting written above every table.
        let hint = did_you_mean(key, SEARCH_KEYS.iter().copied().filter(|k| *k != "pinned"));
        if !TOP_KEYS.contains(&key.as_str()) && !hint.is_empty() {
            return Err(ConfigError::at(
                key.as_str(),
                format!(
                    "unknown key `{key}` at the top level{} in [search]?",
                    hint.trim_end_matches('?')
                ),
            ));
        }
    }
    known(top, "", TOP_KEYS)?;
    if let Some(toml::Value::Table(search)) = top.get("search") {
        for key in search.keys() {
            if ENGINE_INTERNALS.contains(&kebab(key).as_str()) {
                return Err(ConfigError::at(
                    join("search", key),
                    format!(
                        "`{key}` in [search] is an engine internal and no longer a setting; \
                         remove it (toolrag picks it from the index size)"
                    ),
                ));
            }
            if key == "boosts" {
                return Err(ConfigError::at(
                    "search.boosts",
                    "`boosts` in [search] is no longer a query setting: BM25 field boosts \
                     are a build setting; move them to [index] and rebuild the index \
                     with `toolrag index`",
                ));
            }
        }
        known(search, "search", SEARCH_KEYS)?;
        if let Some(toml::Value::Table(fusion)) = search.get("fusion") {
            match fusion.get("kind").and_then(toml::Value::as_str) {
                Some("rrf") => known(fusion, "search.fusion", RRF_KEYS)?,
                Some("weighted") | Some("calibrated") => {
                    known(fusion, "search.fusion", WEIGHTED_KEYS)?
                }
                // A missing or unknown kind is refused when the table is read.
                _ => {}
            }
        }
    }
    if let Some(toml::Value::Table(index)) = top.get("index") {
        known(index, "index", INDEX_KEYS)?;
        if let Some(toml::Value::Table(b)) = index.get("boosts") {
            known(b, "index.boosts", BOOST_KEYS)?;
        }
    }
    if let Some(toml::Value::Table(model)) = top.get("model") {
        known(model, "model", MODEL_KEYS)?;
    }
    if let Some(toml::Value::Table(gateway)) = top.get("gateway") {
        known(gateway, "gateway", GATEWAY_KEYS)?;
    }
    if let Some(toml::Value::Table(lint)) = top.get("lint") {
        if let Some(toml::Value::Table(t)) = lint.get("thresholds") {
            known(t, "lint.thresholds", THRESHOLD_KEYS)?;
        }
        if let Some(toml::Value::Array(ignores)) = lint.get("ignore") {
            for (i, entry) in ignores.iter().enumerate() {
                if let toml::Value::Table(t) = entry {
                    known(t, &format!("lint.ignore[{i}]"), IGNORE_KEYS)?;
                }
            }
        }
    }
    Ok(())
}

fn known(table: &toml::Table, path: &str, keys: &[&str]) -> std::result::Result<(), ConfigError> {
    for key in table.keys() {
        if keys.contains(&key.as_str()) {
            continue;
        }
        let place = if path.is_empty() {
            "at the top level".to_string()
        } else if let Some(i) = path.find('[') {
            format!("in [[{}]]", &path[..i])
        } else {
            format!("in [{path}]")
        };
        return Err(ConfigError::at(
            join(path, key),
            format!(
                "unknown key `{key}` {place}{}",
                did_you_mean(key, keys.iter().copied())
            ),
        ));
    }
    Ok(())
}

/// `; did you mean `x`?` for the known key nearest `key`: its kebab-case
/// spelling, or one a typo or two away. Empty when none is close.
pub(crate) fn did_you_mean<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let k = kebab(key);
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        let d = if candidate == k {
            0
        } else {
            strsim::damerau_levenshtein(&k, candidate)
        };
        if d <= 2 && d < k.len().max(2) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, candidate));
        }
    }
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

/// `minDense`, `min_dense` and `MinDense` → `min-dense`.
fn kebab(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (i, c) in key.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('-') {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '_' {
            out.push('-');
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Validation

/// The largest `depth` and `clause-depth`: a retriever's list is allocated
/// that deep.
pub const MAX_DEPTH: usize = 100_000;
/// The largest `query-cache`: the cache's table is allocated that large.
pub const MAX_QUERY_CACHE: usize = 1_000_000;

fn invalid(key: &str, message: String) -> Error {
    Error::Config(ConfigError::at(key, message))
}

/// `value` is finite and passes `ok`; else an error saying it must be `want`.
fn check_float(key: &str, value: f32, ok: impl Fn(f32) -> bool, want: &str) -> Result<()> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(invalid(key, format!("`{key}` must be {want}, not {value}")))
    }
}

fn check_int(key: &str, value: usize, range: std::ops::RangeInclusive<usize>) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!(
                "`{key}` must be from {} to {}, not {value}",
                range.start(),
                range.end()
            ),
        ))
    }
}

impl SearchConfig {
    /// Checks every number: `depth` from 1 to [`MAX_DEPTH`], `clause-depth`
    /// up to [`MAX_DEPTH`], `query-cache` up to [`MAX_QUERY_CACHE`], RRF `k`
    /// finite and above 0, `dense-weight` finite in [0, 1], `abstain-below`
    /// finite in [0, 1], `min-dense`
    /// finite in [-1, 1], `min-lexical` finite and at least 0,
    /// `clause-penalty` finite. The error ([`Error::Config`]) names the key.
    pub fn validate(&self) -> Result<()> {
        check_int("search.depth", self.depth, 1..=MAX_DEPTH)?;
        check_int("search.clause-depth", self.clause_depth, 0..=MAX_DEPTH)?;
        check_int("search.query-cache", self.query_cache, 0..=MAX_QUERY_CACHE)?;
        match self.fusion {
            Fusion::Rrf { k } => {
                check_float("search.fusion.k", k, |k| k > 0.0, "a finite number above 0")?
            }
            Fusion::Weighted { dense_weight } | Fusion::Calibrated { dense_weight } => check_float(
                "search.fusion.dense-weight",
                dense_weight,
                |w| (0.0..=1.0).contains(&w),
                "a finite number from 0 to 1",
            )?,
        }
        check_float(
            "search.clause-penalty",
            self.clause_penalty,
            |_| true,
            "a finite number",
        )?;
        check_float(
            "search.abstain-below",
            self.abstain_below,
            |v| (0.0..=1.0).contains(&v),
            "a finite number from 0 to 1 (a share of the calibration requests)",
        )?;
        check_float(
            "search.min-dense",
            self.min_dense,
            |v| (-1.0..=1.0).contains(&v),
            "a finite number from -1 to 1 (a cosine)",
        )?;
        check_float(
            "search.min-lexical",
            self.min_lexical,
            |v| v >= 0.0,
            "a finite number of at least 0",
        )
    }
}

impl IndexConfig {
    /// Checks the boosts: each finite and at least 0, and at least one above
    /// 0 (with none, BM25 would search no field).
    pub fn validate(&self) -> Result<()> {
        let Some(b) = &self.boosts else {
            return Ok(());
        };
        let all = [
            ("name", b.name),
            ("summary", b.summary),
            ("description", b.description),
            ("params", b.params),
            ("examples", b.examples),
            ("tags", b.tags),
            ("namespace", b.namespace),
            ("all", b.all),
        ];
        for (field, v) in all {
            let key = format!("index.boosts.{field}");
            check_float(&key, v, |v| v >= 0.0, "a finite number of at least 0")?;
        }
        if all.iter().all(|(_, v)| *v == 0.0) {
            return Err(invalid(
                "index.boosts",
                "`index.boosts`: at least one boost must be above 0".into(),
            ));
        }
        Ok(())
    }
}

/// The most `min-examples` and `min-edge-cases`.
const MAX_MIN_COUNT: usize = 100;
/// The most `min-description-words`.
const MAX_MIN_WORDS: usize = 1_000;
/// The range of `max-description-tokens`.
const DESCRIPTION_TOKENS: std::ops::RangeInclusive<usize> = 1..=100_000;
/// The range of `base64-min-length`: shorter runs are ordinary words.
const BASE64_LENGTH: std::ops::RangeInclusive<usize> = 8..=100_000;

impl Thresholds {
    /// Checks every threshold: `min-examples` and `min-edge-cases` up to 100,
    /// `min-description-words` up to 1,000, `max-description-tokens` from 1
    /// to 100,000, `base64-min-length` from 8 to 100,000, and
    /// `confusable-dense` and `confusable-lexical` finite in [0, 1] (cosines).
    pub fn validate(&self) -> Result<()> {
        let t = "lint.thresholds";
        check_int(
            &format!("{t}.min-examples"),
            self.min_examples,
            0..=MAX_MIN_COUNT,
        )?;
        check_int(
            &format!("{t}.min-edge-cases"),
            self.min_edge_cases,
            0..=MAX_MIN_COUNT,
        )?;
        check_int(
            &format!("{t}.min-description-words"),
            self.min_description_words,
            0..=MAX_MIN_WORDS,
        )?;
        check_int(
            &format!("{t}.max-description-tokens"),
            self.max_description_tokens,
            DESCRIPTION_TOKENS,
        )?;
        check_int(
            &format!("{t}.base64-min-length"),
            self.base64_min_length,
            BASE64_LENGTH,
        )?;
        for (key, v) in [
            ("confusable-dense", self.confusable_dense),
            ("confusable-lexical", self.confusable_lexical),
        ] {
            check_float(
                &format!("{t}.{key}"),
                v,
                |v| (0.0..=1.0).contains(&v),
                "a finite number from 0 to 1 (a cosine)",
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ConfigError {
        match Config::parse(text) {
            Err(Error::Config(e)) => e,
            Err(other) => panic!("not a config error: {other}"),
            Ok(c) => panic!("accepted: {c:?}"),
        }
    }

    #[test]
    fn kebab_case_keys_parse_to_their_values() {
        let c = Config::parse(
            r#"
pinned = ["a/one"]
[search]
depth = 30
fusion = { kind = "rrf", k = 20 }
clause-vectors = false
clause-penalty = 0.05
clause-depth = 0
query-cache = 0
min-dense = -0.25
min-lexical = 1.5
pinned = ["b/two"]
[index]
boosts = { name = 2.0, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }
[lint.thresholds]
min-examples = 3
confusable-dense = 0.9
"#,
        )
        .unwrap();
        assert_eq!(c.pinned, ["a/one", "b/two"]);
        let s = &c.search;
        assert_eq!(s.depth, 30);
        assert_eq!(s.fusion, Fusion::Rrf { k: 20.0 });
        assert!(!s.clause_vectors);
        assert_eq!(s.clause_penalty, 0.05);
        assert_eq!(s.clause_depth, 0);
        assert_eq!(s.query_cache, 0);
        assert_eq!(s.min_dense, -0.25);
        assert_eq!(s.min_lexical, 1.5);
        assert_eq!(c.index.boosts.unwrap().name, 2.0);
        assert_eq!(c.lint.thresholds.min_examples, 3);
        assert_eq!(c.lint.thresholds.confusable_dense, 0.9);

        let c = Config::parse("[search]\nfusion = { kind = \"weighted\", dense-weight = 0.7 }\n")
            .unwrap();
        assert_eq!(c.search.fusion, Fusion::Weighted { dense_weight: 0.7 });
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.search, SearchConfig::default());
        assert_eq!(c.index, IndexConfig::default());
        assert!(c.pinned.is_empty() && c.lint.levels.is_empty());
    }

    #[test]
    fn old_spellings_are_refused_with_the_kebab_case_one() {
        for (old, new) in [
            ("minDense", "min-dense"),
            ("minLexical", "min-lexical"),
            ("clauseVectors", "clause-vectors"),
            ("clauseDepth", "clause-depth"),
            ("clausePenalty", "clause-penalty"),
            ("queryCache", "query-cache"),
            ("min_dense", "min-dense"),
        ] {
            let e = err(&format!("\n[search]\n{old} = 1\n"));
            assert_eq!(
                e.message,
                format!("unknown key `{old}` in [search]; did you mean `{new}`?")
            );
            assert_eq!(e.key.as_deref(), Some(format!("search.{old}").as_str()));
            assert_eq!(e.line, Some(3));
        }
        let e = err("[search]\nfusion = { kind = \"weighted\", dense_weight = 0.5 }\n");
        assert_eq!(
            e.message,
            "unknown key `dense_weight` in [search.fusion]; did you mean `dense-weight`?"
        );
        let e = err("[lint.thresholds]\nminExamples = 2\n");
        assert!(e.message.contains("did you mean `min-examples`?"), "{e}");
        let e = err("[lint.thresholds]\nmin-exampels = 2\n");
        assert!(e.message.contains("did you mean `min-examples`?"), "{e}");
    }

    #[test]
    fn engine_internals_are_not_settings() {
        for key in [
            "unionMaxDocs",
            "exactMaxPoints",
            "scanMaxPoints",
            "hnswEf",
            "union-max-docs",
            "hnsw_ef",
        ] {
            let e = err(&format!("[search]\n{key} = 10\n"));
            assert!(
                e.message
                    .contains("engine internal and no longer a setting"),
                "{e}"
            );
            assert!(e.message.contains(key), "{e}");
        }
        let e = err("[search]\nboosts = { name = 1.0 }\n");
        assert!(e.message.contains("[index]") && e.message.contains("rebuild"));
    }

    #[test]
    fn unknown_keys_are_refused_in_every_table() {
        for (text, key) in [
            ("depht = 3\n", "depht"),
            ("[serach]\ndepth = 3\n", "serach"),
            ("[search]\nnope = 1\n", "search.nope"),
            (
                "[search]\nfusion = { kind = \"rrf\", k = 60, dense-weight = 0.5 }\n",
                "search.fusion.dense-weight",
            ),
            ("[index]\nx = 1\n", "index.x"),
            ("[index.boosts]\nnames = 1.0\n", "index.boosts.names"),
            ("[lint.thresholds]\nfoo = 1\n", "lint.thresholds.foo"),
            (
                "[[lint.ignore]]\npath = \"a\"\nrule = [\"TR001\"]\n",
                "lint.ignore[0].rule",
            ),
            ("[lint]\nnope = \"warn\"\n", "lint.nope"),
        ] {
            let e = err(text);
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
        }
        let e = err("depht = 3\n");
        assert_eq!(
            e.message,
            "unknown key `depht` at the top level; did you mean `depth` in [search]?"
        );
        let e = err("pinnd = []\n");
        assert_eq!(
            e.message,
            "unknown key `pinnd` at the top level; did you mean `pinned`?"
        );
        let e = err("min-dense = 0.3\n");
        assert_eq!(
            e.message,
            "unknown key `min-dense` at the top level; did you mean `min-dense` in [search]?"
        );
    }

    #[test]
    fn nan_inf_and_out_of_range_numbers_are_refused_naming_the_key() {
        for (text, key) in [
            ("[search]\nfusion = { kind = \"rrf\", k = -1 }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = 0 }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = nan }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"rrf\", k = inf }\n", "search.fusion.k"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = nan }\n", "search.fusion.dense-weight"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = 1.5 }\n", "search.fusion.dense-weight"),
            ("[search]\nfusion = { kind = \"weighted\", dense-weight = -0.1 }\n", "search.fusion.dense-weight"),
            ("[search]\nmin-dense = nan\n", "search.min-dense"),
            ("[search]\nmin-dense = 1.5\n", "search.min-dense"),
            ("[search]\nmin-dense = -inf\n", "search.min-dense"),
            ("[search]\nmin-lexical = -0.5\n", "search.min-lexical"),
            ("[search]\nmin-lexical = inf\n", "search.min-lexical"),
            ("[search]\nclause-penalty = nan\n", "search.clause-penalty"),
            ("[search]\ndepth = 0\n", "search.depth"),
            ("[search]\ndepth = 1000000000\n", "search.depth"),
            ("[search]\ndepth = -3\n", "search.depth"),
            ("[search]\nquery-cache = 100000000000\n", "search.query-cache"),
            ("[index]\nboosts = { name = nan, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }\n", "index.boosts.name"),
            ("[index]\nboosts = { name = -1.0, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }\n", "index.boosts.name"),
            ("[index]\nboosts = { name = 0, summary = 0, description = 0.0, params = 0.0, examples = 0, tags = 0, namespace = 0, all = 0 }\n", "index.boosts"),
            ("[lint.thresholds]\nconfusable-dense = nan\n", "lint.thresholds.confusable-dense"),
            ("[lint.thresholds]\nconfusable-lexical = 1.2\n", "lint.thresholds.confusable-lexical"),
            ("[lint.thresholds]\nmin-examples = 1000\n", "lint.thresholds.min-examples"),
            ("[lint.thresholds]\nmin-edge-cases = -1\n", "lint.thresholds.min-edge-cases"),
            ("[lint.thresholds]\nmax-description-tokens = 0\n", "lint.thresholds.max-description-tokens"),
            ("[lint.thresholds]\nbase64-min-length = 2\n", "lint.thresholds.base64-min-length"),
        ] {
            let e = err(text);
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
            assert!(e.message.contains(key), "{text}: {e}");
            assert_eq!(e.line, Some(2), "{text}: {e}");
        }
    }

    #[test]
    fn type_errors_name_the_key_and_line() {
        let e = err("[search]\n\nclause-vectors = \"yes\"\n");
        assert_eq!(e.key.as_deref(), Some("search.clause-vectors"));
        assert_eq!(e.line, Some(3));
        let e = err("[search]\nfusion = { kind = \"mean\" }\n");
        assert_eq!(e.key.as_deref(), Some("search.fusion.kind"), "{e}");
        let e = err("pinned = \"a/b\"\n");
        assert_eq!(e.key.as_deref(), Some("pinned"));
        let e = err("[lint]\nTR001 = \"loud\"\n");
        assert_eq!(e.key.as_deref(), Some("lint.TR001"), "{e}");
        let e = err("[[lint.ignore]]\ntool = \"a\"\n[[lint.ignore]]\npath = 3\n");
        assert_eq!(e.key.as_deref(), Some("lint.ignore[1].path"), "{e}");
        assert_eq!(e.line, Some(4));
        let e = err("search = 3\n");
        assert_eq!(e.key.as_deref(), Some("search"));
    }

    #[test]
    fn the_gateway_table_is_read_and_checked() {
        let c = Config::parse(
            "[gateway]\nallow = [\"memory\", \"fs/write_file\"]\noutput-guard = \"block\"\nrelist-seconds = 0\n",
        )
        .unwrap();
        assert_eq!(c.gateway.output_guard, OutputGuard::Block);
        assert_eq!(c.gateway.relist_seconds, 0.0);
        assert_eq!(
            c.gateway.allow_entry("memory/create_entities"),
            Some("memory")
        );
        assert_eq!(
            c.gateway.allow_entry("fs/write_file"),
            Some("fs/write_file")
        );
        assert_eq!(c.gateway.allow_entry("fs/move_file"), None);
        let e = err("[gateway]\nrelist-seconds = -1\n");
        assert_eq!(e.key.as_deref(), Some("gateway.relist-seconds"), "{e}");
        assert_eq!(e.line, Some(2));
        let e = err("[gateway]\noutput-guard = \"loud\"\n");
        assert_eq!(e.key.as_deref(), Some("gateway.output-guard"), "{e}");
        let e = err("[gateway]\nallowed = []\n");
        assert!(e.message.contains("did you mean `allow`?"), "{e}");
        let keys = |v: serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let mut want: Vec<String> = GATEWAY_KEYS.iter().map(|k| k.to_string()).collect();
        want.sort();
        let full = GatewayConfig {
            lock_file: Some("a".into()),
            audit_log: Some("b".into()),
            ..GatewayConfig::default()
        };
        assert_eq!(keys(serde_json::to_value(full).unwrap()), want);
    }

    #[test]
    fn a_file_that_is_not_toml_gives_its_line() {
        let e = err("[search]\ndepth = 3\ndepth = 4\n");
        assert_eq!(e.key, None);
        assert!(e.message.starts_with("invalid TOML"), "{e}");
        assert_eq!(e.line, Some(3));
    }

    #[test]
    fn errors_from_a_file_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolrag.toml");
        std::fs::write(&path, "[search]\nminDense = 0.3\n").unwrap();
        let e = Config::load(Some(&path)).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:2: unknown key `minDense` in [search]; did you mean `min-dense`?",
                path.display()
            )
        );
        std::fs::write(&path, "[search]\nmin-dense = 0.4\n").unwrap();
        let c = Config::load(Some(&path)).unwrap();
        assert_eq!(c.search.min_dense, 0.4);
        assert_eq!(c.file.as_deref(), Some(path.as_path()));
        let missing = dir.path().join("missing.toml");
        assert!(matches!(
            Config::load(Some(&missing)),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn validate_checks_a_config_built_in_code() {
        assert!(SearchConfig::default().validate().is_ok());
        assert!(Thresholds::default().validate().is_ok());
        assert!(Config::default().validate().is_ok());
        let s = SearchConfig {
            fusion: Fusion::Rrf { k: f32::NAN },
            ..SearchConfig::default()
        };
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("search.fusion.k") && e.contains("NaN"), "{e}");
        let mut c = Config::default();
        c.search.min_dense = f32::INFINITY;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("search.min-dense"));
    }

    /// The key lists above are the types' own fields, so a field added to
    /// one of them cannot be refused by mistake.
    #[test]
    fn the_key_lists_are_the_fields_of_the_types() {
        fn keys(v: serde_json::Value) -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        }
        fn sorted(list: &[&str], drop: &[&str]) -> Vec<String> {
            let mut k: Vec<String> = list
                .iter()
                .filter(|k| !drop.contains(k))
                .map(|k| k.to_string())
                .collect();
            k.sort();
            k
        }
        let mut search = keys(serde_json::to_value(SearchConfig::default()).unwrap());
        search.retain(|k| !ENGINE_INTERNALS.contains(&k.as_str()) && k != "boosts");
        assert_eq!(search, sorted(SEARCH_KEYS, &["pinned"]));
        assert_eq!(
            keys(serde_json::to_value(FieldBoosts::default()).unwrap()),
            sorted(BOOST_KEYS, &[])
        );
        assert_eq!(
            keys(serde_json::to_value(Thresholds::default()).unwrap()),
            sorted(THRESHOLD_KEYS, &[])
        );
        assert_eq!(
            keys(serde_json::to_value(IndexConfig::default()).unwrap()),
            sorted(INDEX_KEYS, &[])
        );
        let rrf = serde_json::to_value(Fusion::Rrf { k: 1.0 }).unwrap();
        assert_eq!(keys(rrf), sorted(RRF_KEYS, &[]));
        let w = serde_json::to_value(Fusion::Weighted { dense_weight: 0.5 }).unwrap();
        assert_eq!(keys(w), sorted(WEIGHTED_KEYS, &[]));
    }
}
