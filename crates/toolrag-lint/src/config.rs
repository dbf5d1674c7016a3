//! The `[lint]` table of `toolrag.toml`: per-rule levels, per-path ignores and
//! thresholds.
//!
//! ```toml
//! [lint]
//! "missing-edge-cases" = "warn"     # by name...
//! TR014 = "error"                   # ...or by code
//! select = ["TR005", "TR010"]       # optional: run only these rules
//!
//! [lint.thresholds]
//! max-description-tokens = 300
//!
//! [[lint.ignore]]
//! path = "vendor/**"                # a glob on the file path
//! rules = ["missing-examples"]      # omitted or empty: every rule
//!
//! [[lint.ignore]]
//! tool = "legacy/*"                 # a glob on the tool id
//! ```

use std::collections::BTreeMap;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use super::rule::RuleInfo;
use super::{rules, Diagnostic, Level};
pub use crate::thresholds::Thresholds;
use toolrag_core::error::{Error, Result};
use toolrag_core::settings::{did_you_mean, typed, ConfigError};

/// The config file looked for in the current directory
/// (the same as [`toolrag_core::settings::FILE`]).
pub const CONFIG_FILE: &str = toolrag_core::settings::FILE;

/// The keys of `[lint]` that are not rule names.
pub const LINT_KEYS: &[&str] = &["select", "ignore", "thresholds"];

/// One per-path (or per-tool) ignore.
#[derive(Debug, Clone)]
pub struct IgnoreEntry {
    /// A glob matched against the diagnostic's file path.
    pub path: Option<String>,
    /// A glob matched against the tool id.
    pub tool: Option<String>,
    /// The rules (codes or names) to ignore there; empty means all of them.
    pub rules: Vec<String>,
    path_matcher: Option<GlobMatcher>,
    tool_matcher: Option<GlobMatcher>,
}

impl IgnoreEntry {
    /// An ignore for diagnostics whose file matches `path` and/or whose tool id
    /// matches `tool` (globs), for `rules` (all rules when empty).
    pub fn new(path: Option<&str>, tool: Option<&str>, rules: Vec<String>) -> Result<Self> {
        if path.is_none() && tool.is_none() {
            return Err(invalid("an ignore entry needs `path` or `tool`".into()));
        }
        let compile = |g: &str| {
            Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| invalid(format!("bad glob `{g}`: {e}")))
        };
        for r in &rules {
            known_rule(r)?;
        }
        Ok(IgnoreEntry {
            path_matcher: path.map(compile).transpose()?,
            tool_matcher: tool.map(compile).transpose()?,
            path: path.map(str::to_string),
            tool: tool.map(str::to_string),
            rules,
        })
    }

    fn matches(&self, d: &Diagnostic) -> bool {
        let rule_ok =
            self.rules.is_empty() || self.rules.iter().any(|r| r == &d.code || r == &d.name);
        let path_ok = self.path_matcher.as_ref().is_none_or(|m| {
            let file = d.location.file.to_string_lossy();
            m.is_match(file.strip_prefix("./").unwrap_or(&file))
        });
        let tool_ok = self
            .tool_matcher
            .as_ref()
            .is_none_or(|m| m.is_match(&d.tool_id));
        rule_ok && path_ok && tool_ok
    }
}

/// Who runs the lint, which decides what its findings are for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The author of the tools: every rule at its configured level.
    #[default]
    Author,
    /// A consumer of servers they do not own (`toolrag lint --profile
    /// consumer`): the findings a consumer can act on ([`CONSUMER_RULES`]:
    /// poisoning, paths, look-alikes, side-effect annotations, names and
    /// schemas that break clients) keep their level; authoring advice
    /// (examples, edge cases, wording) becomes [`Level::Info`].
    Consumer,
}

/// The rules whose findings a consumer of a server can act on (by not
/// enabling a tool, sandboxing it, requiring confirmation, or adding a
/// boundary in a gateway), by name.
pub const CONSUMER_RULES: &[&str] = &[
    "relative-path-parameter",
    "confusable-tools",
    "hidden-instructions",
    "missing-side-effect-annotations",
    "duplicate-tool-name",
    "invalid-tool-name",
    "invalid-input-schema",
];

/// The lint configuration: levels, selection, ignores and thresholds.
#[derive(Debug, Clone, Default)]
pub struct LintConfig {
    /// Level overrides, keyed by rule code (normalised from names).
    pub levels: BTreeMap<&'static str, Level>,
    /// When set, only these rules (codes) run.
    pub select: Option<Vec<&'static str>>,
    /// Per-path and per-tool ignores.
    pub ignore: Vec<IgnoreEntry>,
    /// Numbers the rules compare against.
    pub thresholds: Thresholds,
    /// Whose lint this is: the consumer profile makes authoring advice
    /// informational.
    pub profile: Profile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIgnore {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    rules: Vec<String>,
}

fn invalid(message: String) -> Error {
    Error::InvalidInput(message)
}

fn known_rule(code_or_name: &str) -> Result<&'static RuleInfo> {
    rules::find_rule(code_or_name).ok_or_else(|| {
        invalid(format!(
            "unknown lint rule `{code_or_name}` (`toolrag rule` lists them){}",
            did_you_mean(code_or_name, rules::rules().map(|r| r.name))
        ))
    })
}

impl LintConfig {
    /// Builds the lint configuration from the `[lint]` table of a `toolrag.toml`
    /// whose other keys the `toolrag.toml` loader has checked: every key that is not
    /// `select`, `ignore` or `thresholds` is a rule (by name or code) with its
    /// level. Errors name the key.
    pub fn from_table(table: toml::Table) -> std::result::Result<LintConfig, ConfigError> {
        // An error from checking a rule name or a glob, placed at `key`.
        let at = |key: &str, e: Error| ConfigError::at(key, format!("`{key}`: {e}"));
        let mut config = LintConfig::default();
        for (key, value) in table {
            let path = format!("lint.{key}");
            match key.as_str() {
                "select" => {
                    let names: Vec<String> = typed(value, &path)?;
                    let codes = names
                        .iter()
                        .map(|r| known_rule(r).map(|i| i.code))
                        .collect::<Result<Vec<_>>>()
                        .map_err(|e| at(&path, e))?;
                    config.select = Some(codes);
                }
                "ignore" => {
                    let entries: Vec<RawIgnore> = typed(value, &path)?;
                    for (n, i) in entries.into_iter().enumerate() {
                        let entry = IgnoreEntry::new(i.path.as_deref(), i.tool.as_deref(), i.rules)
                            .map_err(|e| at(&format!("{path}[{n}]"), e))?;
                        config.ignore.push(entry);
                    }
                }
                "thresholds" => config.thresholds = typed(value, &path)?,
                _ => {
                    let Some(rule) = rules::find_rule(&key) else {
                        return Err(ConfigError::at(
                            path,
                            format!(
                                "unknown lint rule `{key}` in [lint] (`toolrag rule` lists them){}",
                                did_you_mean(
                                    &key,
                                    LINT_KEYS
                                        .iter()
                                        .copied()
                                        .chain(rules::rules().map(|r| r.name))
                                )
                            ),
                        ));
                    };
                    let level: Level = typed(value, &path)?;
                    config.levels.insert(rule.code, level);
                }
            }
        }
        Ok(config)
    }

    /// Sets the level of one rule, by code or name.
    pub fn set_level(&mut self, code_or_name: &str, level: Level) -> Result<()> {
        self.levels.insert(known_rule(code_or_name)?.code, level);
        Ok(())
    }

    /// Runs only these rules (codes or names).
    pub fn select<S: AsRef<str>>(&mut self, rules: &[S]) -> Result<()> {
        let codes = rules
            .iter()
            .map(|r| known_rule(r.as_ref()).map(|i| i.code))
            .collect::<Result<Vec<_>>>()?;
        self.select = Some(codes);
        Ok(())
    }

    /// The level `rule` runs at: ignored when not selected, otherwise the
    /// configured level or the rule's default.
    pub fn level_of(&self, rule: &RuleInfo) -> Level {
        if let Some(sel) = &self.select {
            if !sel.contains(&rule.code) {
                return Level::Ignore;
            }
        }
        let level = self
            .levels
            .get(rule.code)
            .copied()
            .unwrap_or(rule.default_level);
        match self.profile {
            Profile::Consumer if level > Level::Info && !CONSUMER_RULES.contains(&rule.name) => {
                Level::Info
            }
            _ => level,
        }
    }

    pub(crate) fn is_ignored(&self, d: &Diagnostic) -> bool {
        self.ignore.iter().any(|i| i.matches(d))
    }
}
