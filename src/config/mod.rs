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
//! abstain-below = 0.82                # a share of the calibration requests
//! min-dense = -1.0                     # off
//! min-lexical = 0.0
//! pinned = []                          # added to the top-level `pinned`
//!
//! [index]                              # build settings, recorded in the index
//! boosts = { name = 0.5, summary = 0.5, description = 0.0, params = 0.0, examples = 0.5, tags = 0.5, namespace = 0.25, all = 1.0 }
//!
//! [model]                              # see [`toolrag_embed::ModelConfig`]
//! name = "minilm"                      # or dir = "path/to/folder"
//! query-prefix = ""
//!
//! [lint]                               # see [`toolrag_lint::LintConfig`]
//! "missing-edge-cases" = "error"
//!
//! [gateway]                            # `toolrag mcp --upstream`: see [`Config::gateway`]
//! allow = ["memory", "filesystem/write_file"] # act without asking a person
//! output-guard = "mark"                # or "block", or "off"
//! relist-seconds = 300.0               # 0: only on list_changed
//! call-timeout-seconds = 120.0
//! lock-file = "index.lock.json"        # default: beside the index folder
//! audit-log = "index.audit.jsonl"      # default: beside the index folder
//! key-file = "index.key"               # seals approvals; created 0600; share it with replicas
//! approvals-db = "index.approvals.sqlite" # used approvals; share it with replicas
//! approval-ttl-seconds = 600.0
//! record-usage = true                  # for `toolrag learn`: request, handles, tool, outcome; never arguments
//! usage-log = "index/usage.jsonl"      # default: in the index folder
//! usage-max-mb = 16.0                  # then cut to half, newest kept
//! usage-max-age-days = 90.0
//! teachers = ["alice", "group:eng"]    # whose calls teach (default: only the local user)
//! max-sessions = 10000                 # `--http`: 2025-11-25 sessions open at once; then 503
//! max-sessions-per-principal = 100     # each principal's; then 429
//! session-idle-seconds = 1800.0        # a session idle this long is closed
//! state = "redis://redis:6379/0"       # replicas share approvals, budgets, revocations (rediss:// for TLS)
//! state-password-env = "REDIS_PASSWORD" # the Redis password, from the environment
//! state-prefix = "toolrag:"            # of every Redis key
//! state-timeout-seconds = 1.0          # each Redis call; past it, Redis is unreachable
//!
//! [[gateway.policy]]                   # who may see and call what (none: everyone, everything)
//! principals = ["bob", "group:support"] # token names, subjects, client ids, group:<claim value>
//! tools = ["shop/list_orders", "time"] # globs over <server>/<tool>; a bare server: all its tools
//! allow = []                           # of those, the ones these principals run without asking
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
use std::path::Path;

use toolrag_core::settings::typed;
use toolrag_core::{Error, Result};
use toolrag_embed::ModelConfig;
use toolrag_lint::LintConfig;

pub use toolrag_core::settings::{ConfigError, FILE};
pub use toolrag_engine::index::IndexConfig;
pub use toolrag_engine::search::SearchConfig;

mod keys;
#[cfg(test)]
mod tests;

use keys::{check_keys, key_lines, locate, table_of};
pub use keys::{GATEWAY_KEYS, POLICY_KEYS};

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
    /// The MCP gateway's settings (the `[gateway]` table) as written, its
    /// keys checked ([`GATEWAY_KEYS`], [`POLICY_KEYS`]). The gateway is a
    /// front end above this crate: it reads the table as its own type with
    /// [`Config::gateway`] (`toolrag mcp` as `toolrag_mcp::GatewayConfig`).
    pub gateway: toml::Table,
    /// The file this configuration was read from; `None` for the defaults or
    /// text parsed with [`Config::parse`].
    pub file: Option<std::path::PathBuf>,
    /// The line of each key of the text, for the errors of [`Config::gateway`].
    lines: BTreeMap<String, u32>,
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
        if let Some(dir) = config.model.dir.as_mut() {
            *dir = relative_to_file(path, dir);
        }
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// The `[gateway]` table read as the gateway's own settings `T` (the
    /// defaults without one): its values typed, then `check` run on them with
    /// [`Config::file`] (to make their relative paths relative to the file's
    /// folder, as [`relative_to_file`] does, and to check their ranges).
    /// An error names the file, the key and its line, as the other tables'
    /// errors do.
    pub fn gateway<T: serde::de::DeserializeOwned>(
        &self,
        check: impl FnOnce(&mut T, Option<&Path>) -> Result<()>,
    ) -> Result<T> {
        let place = |mut e: ConfigError| {
            e.line = e.key.as_deref().and_then(|k| locate(&self.lines, k));
            e.file.clone_from(&self.file);
            Error::Config(e)
        };
        let table = toml::Value::Table(self.gateway.clone());
        let mut settings: T = typed(table, "gateway").map_err(place)?;
        check(&mut settings, self.file.as_deref()).map_err(|e| match e {
            Error::Config(c) => place(c),
            other => other,
        })?;
        Ok(settings)
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
    /// code. (`[gateway]` is checked by [`Config::gateway`].)
    ///
    /// [`Thresholds::validate`]: toolrag_lint::Thresholds::validate
    pub fn validate(&self) -> Result<()> {
        self.search
            .validate()
            .and_then(|()| self.index.validate())
            .and_then(|()| self.lint.thresholds.validate())
            .map_err(|e| match e {
                Error::Config(mut c) => {
                    c.file.clone_from(&self.file);
                    Error::Config(c)
                }
                other => other,
            })
    }
}

pub(crate) fn parse_text(text: &str) -> std::result::Result<Config, ConfigError> {
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
        config.gateway = table_of(v, "gateway").map_err(place)?;
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
    config.lines = spans;
    Ok(config)
}

/// `path`, a path written in the configuration file `file`, made relative
/// to the file's folder when it is relative.
pub fn relative_to_file(file: &Path, path: &Path) -> std::path::PathBuf {
    match file.parent() {
        Some(base) if path.is_relative() => base.join(path),
        _ => path.to_path_buf(),
    }
}
