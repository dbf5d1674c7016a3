//! Definition pinning: the hash of each upstream tool's definition, recorded
//! in a lock file the first time the gateway sees the tool ("trust on first
//! use"). A definition that later differs (a "rug pull": the description,
//! the schemas, the title or the annotations changed after a person started
//! trusting the tool) is quarantined until a person accepts it with
//! `toolrag mcp --upstream FILE --accept ID`.
//!
//! The lock file is JSON, written whole to a temporary file and renamed over
//! the old one, so a crash leaves either the old lock or the new one:
//!
//! ```json
//! {"version": 1, "tools": {"time/get_current_time": {
//!   "sha256": "9f2c…", "pinnedAt": "2026-12-02T15:00:00Z",
//!   "definition": {"name": "get_current_time", "description": "…", "inputSchema": {…}}}}}
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::GatewayError;
use toolrag_core::error::Location;

/// The lock file's format version.
const VERSION: u32 = 1;

/// The fields of an MCP `Tool` that are pinned: what the model reads and what
/// the gateway decides with. `_meta` and `icons` are not: servers change them
/// freely and the model does not act on them.
const PINNED_FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LockFile {
    version: u32,
    tools: BTreeMap<String, Pin>,
}

/// One pinned definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pin {
    /// sha256 (hex) of the canonical JSON of `definition`.
    pub sha256: String,
    /// When it was pinned (RFC 3339, UTC).
    pub pinned_at: String,
    /// The pinned fields of the definition, canonical (keys sorted).
    pub definition: Value,
}

/// How a listed definition compares with its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinCheck {
    /// The tool has no pin yet.
    New,
    /// The definition is the pinned one.
    Same,
    /// The definition changed since it was pinned.
    Changed {
        /// When the old definition was pinned.
        pinned_at: String,
        /// The top-level fields that differ (`description`, `inputSchema`, ...).
        fields: Vec<String>,
    },
}

/// The pins of every tool the gateway has seen, and the file they live in.
#[derive(Debug)]
pub struct PinLock {
    path: PathBuf,
    tools: BTreeMap<String, Pin>,
    dirty: bool,
}

impl PinLock {
    /// Reads the lock file at `path`; a missing file is an empty lock. A file
    /// that is not a lock file is an error naming its line.
    pub fn open(path: &Path) -> Result<PinLock, GatewayError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PinLock {
                    path: path.to_path_buf(),
                    tools: BTreeMap::new(),
                    dirty: false,
                })
            }
            Err(source) => {
                return Err(GatewayError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let file: LockFile = serde_json::from_str(&text).map_err(|e| GatewayError::LockFile {
            location: Location {
                file: path.to_path_buf(),
                line: e.line() as u32,
                column: e.column() as u32,
            },
            message: format!("not a toolrag lock file: {e}; move it away to pin every tool afresh"),
        })?;
        if file.version != VERSION {
            return Err(GatewayError::LockFile {
                location: Location::file_start(path),
                message: format!(
                    "lock file version {} is not {VERSION}, the one this toolrag writes",
                    file.version
                ),
            });
        }
        Ok(PinLock {
            path: path.to_path_buf(),
            tools: file.tools,
            dirty: false,
        })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pin of `id`, if any.
    pub fn get(&self, id: &str) -> Option<&Pin> {
        self.tools.get(id)
    }

    /// How `tool` (MCP `Tool` JSON, as listed) compares with the pin of `id`.
    pub fn check(&self, id: &str, tool: &Value) -> PinCheck {
        let Some(pin) = self.tools.get(id) else {
            return PinCheck::New;
        };
        let definition = pinned_definition(tool);
        if hash(&definition) == pin.sha256 {
            return PinCheck::Same;
        }
        let fields = PINNED_FIELDS
            .iter()
            .filter(|f| definition.get(**f) != pin.definition.get(**f))
            .map(|f| f.to_string())
            .collect();
        PinCheck::Changed {
            pinned_at: pin.pinned_at.clone(),
            fields,
        }
    }

    /// Pins `tool` as the trusted definition of `id` (replacing any pin).
    pub fn pin(&mut self, id: &str, tool: &Value) {
        let definition = pinned_definition(tool);
        let pin = Pin {
            sha256: hash(&definition),
            pinned_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            definition,
        };
        self.tools.insert(id.to_string(), pin);
        self.dirty = true;
    }

    /// Writes the lock file if a pin changed since it was read or saved: a
    /// temporary file beside it, synced, then renamed over it. The temporary
    /// file's name is unique, so two gateways sharing the lock file (two
    /// clients on one index folder) never rename each other's.
    pub fn save(&mut self) -> Result<(), GatewayError> {
        if !self.dirty {
            return Ok(());
        }
        let io = |source| GatewayError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = LockFile {
            version: VERSION,
            tools: self.tools.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).expect("a lock file serialises");
        bytes.push(b'\n');
        let mut tmp = tempfile::Builder::new()
            .prefix(".lock.")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(io)?;
        tmp.write_all(&bytes).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        self.dirty = false;
        Ok(())
    }
}

/// The pinned fields of an MCP `Tool`, with every object's keys sorted.
pub fn pinned_definition(tool: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for f in PINNED_FIELDS {
        if let Some(v) = tool.get(*f).filter(|v| !v.is_null()) {
            out.insert(f.to_string(), canonical(v));
        }
    }
    canonical(&Value::Object(out))
}

/// `value` with every object's keys in sorted order, so equal JSON hashes equal.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// sha256 (hex) of the canonical JSON text of `value`.
pub fn hash(value: &Value) -> String {
    let text = serde_json::to_vec(&canonical(value)).expect("JSON serialises");
    hex::encode(Sha256::digest(&text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_sight_pins_and_a_changed_description_or_schema_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.lock.json");
        let tool = json!({"name": "add", "description": "Adds two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "_meta": {"x": 1}});
        let mut lock = PinLock::open(&path).unwrap();
        assert_eq!(lock.check("m/add", &tool), PinCheck::New);
        lock.pin("m/add", &tool);
        lock.save().unwrap();

        let lock = PinLock::open(&path).unwrap();
        assert_eq!(lock.check("m/add", &tool), PinCheck::Same);
        // Key order and _meta do not matter.
        let reordered = json!({"inputSchema": {"properties": {"a": {"type": "number"}}, "type": "object"},
            "description": "Adds two numbers.", "name": "add", "_meta": {"x": 2}});
        assert_eq!(lock.check("m/add", &reordered), PinCheck::Same);
        let pulled = json!({"name": "add", "description": "Adds two numbers. <IMPORTANT>...</IMPORTANT>",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "note": {"type": "string"}}}});
        match lock.check("m/add", &pulled) {
            PinCheck::Changed { fields, .. } => assert_eq!(fields, ["description", "inputSchema"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn two_writers_of_one_lock_file_never_fail_and_leave_a_whole_file() {
        // Two gateways on one index folder pin the same tools at the same
        // time. With one shared temporary name, one renamed the other's
        // file away and failed with "No such file or directory".
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.lock.json");
        let tool = json!({"name": "add", "description": "Adds two numbers."});
        std::thread::scope(|scope| {
            for w in 0..2 {
                let (path, tool) = (&path, &tool);
                scope.spawn(move || {
                    for i in 0..200 {
                        let mut lock = PinLock::open(path).unwrap();
                        lock.pin(&format!("m/add-{w}-{i}"), tool);
                        lock.save().unwrap();
                    }
                });
            }
        });
        // Whole and readable; a concurrent writer's pins may be lost (each
        // rewrites what it read), but the last writer's own last pin is there.
        let lock = PinLock::open(&path).unwrap();
        assert!(
            lock.check("m/add-0-199", &tool) == PinCheck::Same
                || lock.check("m/add-1-199", &tool) == PinCheck::Same
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left,
            [std::ffi::OsString::from("index.lock.json")],
            "{left:?}"
        );
    }

    #[test]
    fn a_damaged_lock_file_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.lock.json");
        std::fs::write(&path, "{\"version\": 1,\n \"tools\": {\"a\": 3}}\n").unwrap();
        let e = PinLock::open(&path).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2:", path.display())), "{e}");
        assert!(e.contains("not a toolrag lock file"), "{e}");
    }
}
