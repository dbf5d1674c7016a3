//! `learnt.json`: the requests learnt per tool, and what was forgotten.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use toolrag_core::error::{Error, Result};

/// The file's name in the index folder.
pub const LEARNT_FILE: &str = "learnt.json";

/// The usage log's default name in the index folder.
pub const USAGE_FILE: &str = "usage.jsonl";

const VERSION: u32 = 1;

/// One learnt request of a tool.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LearntExample {
    /// The request, as the user wrote it (whitespace collapsed).
    pub request: String,
    /// Successful calls of the tool after this request.
    pub calls: u32,
    /// Distinct principals who made them.
    pub principals: u32,
    /// The latest of them.
    pub last: DateTime<Utc>,
}

/// What `toolrag learn` learnt, kept in the index folder as `learnt.json`.
/// Every build of that folder reads it and gives each tool its learnt
/// requests ([`toolrag_core::registry::ToolDef::learnt`]).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Learnt {
    /// The file format's version.
    #[serde(default)]
    pub version: u32,
    /// Records before this time are never learnt from (`--reset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_at: Option<DateTime<Utc>>,
    /// Per tool, records before this time are never learnt from (`--forget`).
    #[serde(default)]
    pub forgotten: BTreeMap<String, DateTime<Utc>>,
    /// The learnt requests of each tool, best first.
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<LearntExample>>,
}

impl Learnt {
    /// The path of the file in the index folder `index`.
    pub fn path_in(index: &Path) -> PathBuf {
        index.join(LEARNT_FILE)
    }

    /// Reads the file of the index folder `index`; none is an empty one.
    pub fn read(index: &Path) -> Result<Learnt> {
        let path = Learnt::path_in(index);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Learnt::default()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let learnt: Learnt = serde_json::from_slice(&bytes).map_err(|e| {
            Error::InvalidInput(format!(
                "{}:{}:{}: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        if learnt.version > VERSION {
            return Err(Error::InvalidInput(format!(
                "{}: version {} is newer than this toolrag reads ({VERSION})",
                path.display(),
                learnt.version
            )));
        }
        Ok(learnt)
    }

    /// Writes the file into the index folder `index`, whole, then renamed,
    /// so a crash leaves the old file or the new one.
    pub fn write(&self, index: &Path) -> Result<()> {
        std::fs::create_dir_all(index).map_err(|e| Error::io(index, e))?;
        let path = Learnt::path_in(index);
        let mut out = self.clone();
        out.version = VERSION;
        let mut tmp = tempfile::NamedTempFile::new_in(index).map_err(|e| Error::io(index, e))?;
        serde_json::to_writer_pretty(&mut tmp, &out).expect("learnt requests serialise");
        tmp.write_all(b"\n").map_err(|e| Error::io(&path, e))?;
        tmp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }

    /// The learnt requests of `tool`, best first.
    pub fn requests_of(&self, tool: &str) -> impl Iterator<Item = &str> {
        self.tools
            .get(tool)
            .into_iter()
            .flatten()
            .map(|e| e.request.as_str())
    }

    /// Forgets what was learnt for `tool`, and every record of it so far.
    pub fn forget(&mut self, tool: &str) {
        self.tools.remove(tool);
        self.forgotten.insert(tool.to_string(), Utc::now());
    }

    /// Forgets everything learnt, and every record so far.
    pub fn reset(&mut self) {
        self.tools.clear();
        self.forgotten.clear();
        self.reset_at = Some(Utc::now());
    }

    /// Learnt requests in all, over every tool.
    pub fn len(&self) -> usize {
        self.tools.values().map(Vec::len).sum()
    }

    /// Whether nothing is learnt.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
