//! Limits on what one registry file may hold, checked while loading, before
//! a tool's text is parsed and copied: a one-tool file with a 50 MB
//! description took 1 GB to list and 4.8 GB to index. Over a limit is a
//! `file:line` [`LoadError`] that names the limit; each front end says how
//! to raise it (the CLI's `--limit NAME=N`, Python's `limits=`), so the
//! message here carries no front end's wording.

use std::io::Write;

use serde_json::Value;

use crate::error::{LoadError, Location};

/// The limits of one load; every one can be raised (`--limit NAME=VALUE` on
/// the command line, [`LoadLimits::set`] in the library).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadLimits {
    /// The largest registry file, in bytes (`file-bytes`, default 1 GiB).
    pub file_bytes: u64,
    /// The longest tool description, in bytes (`description-bytes`,
    /// default 64 KiB; real tools' descriptions are at most a few KiB).
    pub description_bytes: usize,
    /// The largest input or output schema, as compact JSON, in bytes
    /// (`schema-bytes`, default 256 KiB).
    pub schema_bytes: usize,
    /// The deepest nesting of a schema's objects and arrays
    /// (`schema-depth`, default 32).
    pub schema_depth: usize,
    /// The most tools in one file (`tools-per-file`, default 1,000,000).
    pub tools_per_file: usize,
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits {
            file_bytes: 1 << 30,
            description_bytes: 64 * 1024,
            schema_bytes: 256 * 1024,
            schema_depth: 32,
            tools_per_file: 1_000_000,
        }
    }
}

/// The limits' names, as `--limit` takes them.
pub const LIMIT_NAMES: [&str; 5] = [
    "file-bytes",
    "description-bytes",
    "schema-bytes",
    "schema-depth",
    "tools-per-file",
];

impl LoadLimits {
    /// Sets the limit `name` (one of [`LIMIT_NAMES`]) to `value`.
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), String> {
        let usize_value = usize::try_from(value).unwrap_or(usize::MAX);
        match name {
            "file-bytes" => self.file_bytes = value,
            "description-bytes" => self.description_bytes = usize_value,
            "schema-bytes" => self.schema_bytes = usize_value,
            "schema-depth" => self.schema_depth = usize_value,
            "tools-per-file" => self.tools_per_file = usize_value,
            other => {
                return Err(format!(
                    "unknown limit `{other}`; the limits are {}",
                    LIMIT_NAMES.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// Sets a limit from `NAME=VALUE` (`description-bytes=1000000`).
    pub fn set_from(&mut self, spec: &str) -> Result<(), String> {
        let (name, value) = spec.split_once('=').ok_or_else(|| {
            format!("`{spec}`: expected NAME=VALUE, e.g. description-bytes=1000000")
        })?;
        let value: u64 = value
            .trim()
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{spec}`: the value must be a whole number"))?;
        self.set(name.trim(), value)
    }

    /// A `LoadError` at `location` for a value of `what` that is `found`
    /// against the limit `name` of `limit`.
    pub(super) fn over(
        location: &Location,
        what: &str,
        found: String,
        name: &'static str,
        limit: impl std::fmt::Display,
    ) -> LoadError {
        LoadError {
            location: location.clone(),
            message: format!("{what} is {found}, over the limit {name} of {limit}"),
            limit: Some(name),
        }
    }

    /// Checks a tool's description and schemas against the limits.
    pub(super) fn check_tool(
        &self,
        location: &Location,
        name: &str,
        description: &str,
        schemas: &[(&str, Option<&Value>)],
    ) -> Result<(), LoadError> {
        if description.len() > self.description_bytes {
            return Err(LoadLimits::over(
                location,
                &format!("tool `{name}`: the description"),
                format!("{} bytes", description.len()),
                "description-bytes",
                self.description_bytes,
            ));
        }
        for (field, schema) in schemas {
            let Some(schema) = schema else { continue };
            let depth = depth(schema, self.schema_depth + 1);
            if depth > self.schema_depth {
                return Err(LoadLimits::over(
                    location,
                    &format!("tool `{name}`: the {field} nesting"),
                    format!("deeper than {}", self.schema_depth),
                    "schema-depth",
                    self.schema_depth,
                ));
            }
            if let Some(size) = over_size(schema, self.schema_bytes) {
                return Err(LoadLimits::over(
                    location,
                    &format!("tool `{name}`: the {field}"),
                    format!("over {size} bytes as JSON"),
                    "schema-bytes",
                    self.schema_bytes,
                ));
            }
        }
        Ok(())
    }
}

/// The nesting depth of `v` (a scalar is 0), counted no further than `stop`.
fn depth(v: &Value, stop: usize) -> usize {
    if stop == 0 {
        return 0;
    }
    match v {
        Value::Array(a) => 1 + a.iter().map(|x| depth(x, stop - 1)).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(|x| depth(x, stop - 1)).max().unwrap_or(0),
        _ => 0,
    }
}

/// `Some(limit)` when `v` as compact JSON is longer than `limit` bytes; the
/// writing stops at the limit.
fn over_size(v: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        left: usize,
    }
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if buf.len() > self.left {
                return Err(std::io::Error::other("over"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter { left: limit };
    serde_json::to_writer(&mut c, v).err().map(|_| limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_are_checked_and_can_be_raised() {
        let at = Location::file_start("t.jsonl");
        let mut l = LoadLimits::default();
        assert!(l.check_tool(&at, "t", "short", &[]).is_ok());
        let long = "x".repeat(l.description_bytes + 1);
        let e = l.check_tool(&at, "t", &long, &[]).unwrap_err();
        assert_eq!(e.limit, Some("description-bytes"));
        assert!(
            e.message
                .contains("over the limit description-bytes of 65536"),
            "{}",
            e.message
        );
        assert!(
            !e.message.contains("--limit"),
            "no CLI wording: {}",
            e.message
        );
        l.set_from("description-bytes=1_000_000").unwrap();
        assert!(l.check_tool(&at, "t", &long, &[]).is_ok());

        let mut deep = json!("leaf");
        for _ in 0..40 {
            deep = json!({ "properties": deep });
        }
        let e = l
            .check_tool(&at, "t", "", &[("input schema", Some(&deep))])
            .unwrap_err();
        assert!(e.message.contains("schema-depth"), "{}", e.message);
        l.set("schema-depth", 100).unwrap();
        assert!(l
            .check_tool(&at, "t", "", &[("input schema", Some(&deep))])
            .is_ok());

        let big = json!({ "enum": vec!["abcdefgh"; 40_000] });
        let e = l
            .check_tool(&at, "t", "", &[("input schema", Some(&big))])
            .unwrap_err();
        assert!(e.message.contains("schema-bytes"), "{}", e.message);
        assert!(l.set_from("nope=1").unwrap_err().contains("unknown limit"));
        assert!(l.set_from("schema-bytes").is_err());
        assert!(l.set_from("schema-bytes=lots").is_err());
    }
}
