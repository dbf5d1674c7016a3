//! Which keys each table of `toolrag.toml` has, and the line of each key in
//! the file, so that an error names both.

use std::collections::BTreeMap;

use toolrag_core::settings::{did_you_mean, join, kebab, ConfigError};

/// The keys of each table. Tests check them against the types' own fields.
pub(super) const TOP_KEYS: &[&str] = &["pinned", "search", "index", "model", "lint", "gateway"];
/// The keys of `[gateway]`, checked here on every load although the table
/// is typed by the gateway ([`super::Config::gateway`]), so that a misspelt
/// gateway setting is refused by every command.
pub const GATEWAY_KEYS: &[&str] = &[
    "allow",
    "output-guard",
    "relist-seconds",
    "call-timeout-seconds",
    "lock-file",
    "audit-log",
    "key-file",
    "approvals-db",
    "approval-ttl-seconds",
    "policy",
    "tool-calls-per-minute",
    "record-usage",
    "usage-log",
    "usage-max-mb",
    "usage-max-age-days",
    "teachers",
    "max-sessions",
    "max-sessions-per-principal",
    "session-idle-seconds",
    "state",
    "state-password-env",
    "state-prefix",
    "state-timeout-seconds",
];
/// The keys of each `[[gateway.policy]]` rule.
pub const POLICY_KEYS: &[&str] = &["principals", "tools", "allow"];
pub(super) const MODEL_KEYS: &[&str] =
    &["name", "dir", "pooling", "query-prefix", "document-prefix"];
pub(super) const SEARCH_KEYS: &[&str] = &[
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
pub(super) const RRF_KEYS: &[&str] = &["kind", "k"];
pub(super) const WEIGHTED_KEYS: &[&str] = &["kind", "dense-weight"];
pub(super) const INDEX_KEYS: &[&str] = &["boosts"];
pub(super) const BOOST_KEYS: &[&str] = &[
    "name",
    "summary",
    "description",
    "params",
    "examples",
    "tags",
    "namespace",
    "all",
];
pub(super) const THRESHOLD_KEYS: &[&str] = &[
    "min-examples",
    "min-edge-cases",
    "min-description-words",
    "max-description-tokens",
    "confusable-dense",
    "confusable-lexical",
    "base64-min-length",
];
pub(super) const IGNORE_KEYS: &[&str] = &["path", "tool", "rules"];

/// Former `[search]` settings that are engine internals now, in kebab-case.
pub(super) const ENGINE_INTERNALS: &[&str] = &[
    "union-max-docs",
    "exact-max-points",
    "scan-max-points",
    "hnsw-ef",
];

/// The line of every key, by dotted path (`search.fusion.k`,
/// `lint.ignore[0].path`). A file that is not TOML fails here, with the line
/// of the first problem.
pub(super) fn key_lines(text: &str) -> std::result::Result<BTreeMap<String, u32>, ConfigError> {
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
pub(super) fn locate(lines: &BTreeMap<String, u32>, key: &str) -> Option<u32> {
    let mut k = key;
    loop {
        if let Some(l) = lines.get(k) {
            return Some(*l);
        }
        k = &k[..k.rfind(['.', '['])?];
    }
}

pub(super) fn table_of(
    value: toml::Value,
    key: &str,
) -> std::result::Result<toml::Table, ConfigError> {
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
pub(super) fn check_keys(top: &toml::Table) -> std::result::Result<(), ConfigError> {
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
        if let Some(toml::Value::Array(rules)) = gateway.get("policy") {
            for (i, entry) in rules.iter().enumerate() {
                if let toml::Value::Table(t) = entry {
                    known(t, &format!("gateway.policy[{i}]"), POLICY_KEYS)?;
                }
            }
        }
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
