//! What every settings type shares: [`ConfigError`] (the file, line and key
//! of a bad setting) and the helpers that read and check one TOML value.
//!
//! Each settings type lives with what it configures and checks its own
//! numbers (`SearchConfig::validate` in the engine's search, `Thresholds` in
//! lint, `GatewayConfig` in the gateway); the binary's `toolrag.toml` loader
//! places their errors at a line.

use std::ops::RangeInclusive;

use serde::de::DeserializeOwned;

pub use crate::error::ConfigError;
use crate::error::{Error, Result};

/// The config file looked for in the current directory.
pub const FILE: &str = "toolrag.toml";

/// `path.key`, or `key` at the top.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Deserialises `value`, the value of `key`; an error names the exact key
/// inside it.
pub fn typed<T: DeserializeOwned>(
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

/// `; did you mean `x`?` for the known key nearest `key`: its kebab-case
/// spelling, or one a typo or two away. Empty when none is close.
pub fn did_you_mean<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> String {
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
pub fn kebab(key: &str) -> String {
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

/// An [`Error::Config`] about `key`.
pub fn invalid(key: &str, message: String) -> Error {
    Error::Config(ConfigError::at(key, message))
}

/// `value` is finite and passes `ok`; else an error saying it must be `want`.
pub fn check_float(key: &str, value: f32, ok: impl Fn(f32) -> bool, want: &str) -> Result<()> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(invalid(key, format!("`{key}` must be {want}, not {value}")))
    }
}

/// `value` is in `range`; else an error naming the range.
pub fn check_int(key: &str, value: usize, range: RangeInclusive<usize>) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_case_and_near_keys_are_suggested() {
        assert_eq!(kebab("minDense"), "min-dense");
        assert_eq!(kebab("min_dense"), "min-dense");
        assert_eq!(
            did_you_mean("minDense", ["min-dense", "depth"]),
            "; did you mean `min-dense`?"
        );
        assert_eq!(did_you_mean("zzz", ["min-dense"]), "");
    }

    #[test]
    fn out_of_range_numbers_name_the_key() {
        let e = check_int("search.depth", 0, 1..=10).unwrap_err();
        assert!(e
            .to_string()
            .contains("`search.depth` must be from 1 to 10, not 0"));
        let e = check_float("a.b", f32::NAN, |_| true, "finite").unwrap_err();
        assert!(e.to_string().contains("`a.b` must be finite"));
    }
}
