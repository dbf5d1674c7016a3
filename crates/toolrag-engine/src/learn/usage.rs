//! The usage log: one JSON line per call an agent made after a search,
//! written by the MCP gateway, read by `toolrag learn`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use toolrag_core::error::{Error, Result};

/// How a call that followed a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum UsageOutcome {
    /// The server ran the tool and it reported no error.
    Succeeded,
    /// The server ran the tool and it reported an error (`isError`).
    ToolError,
    /// The call did not complete: the server failed, stopped or timed out.
    Failed,
}

/// One call after a search. Arguments and results are never recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UsageRecord {
    /// When the call ended.
    pub at: DateTime<Utc>,
    /// Who called: a token name, a subject, or `local` over stdio.
    pub principal: String,
    /// Whether the principal may teach (`[gateway] teachers`); `toolrag
    /// learn` counts only records of principals who may.
    pub teach: bool,
    /// The request of the search that offered the tool.
    pub request: String,
    /// The handle set that search returned (tool ids, best first).
    pub handles: Vec<String>,
    /// The tool that was called.
    pub tool: String,
    /// How the call ended.
    pub outcome: UsageOutcome,
}

impl UsageRecord {
    /// A record of `tool`, called by `principal` after the search for
    /// `request` returned `handles`, ending now with `outcome`.
    pub fn new(
        principal: impl Into<String>,
        teach: bool,
        request: impl Into<String>,
        handles: Vec<String>,
        tool: impl Into<String>,
        outcome: UsageOutcome,
    ) -> UsageRecord {
        UsageRecord {
            at: Utc::now(),
            principal: principal.into(),
            teach,
            request: request.into(),
            handles,
            tool: tool.into(),
            outcome,
        }
    }

    /// The same record, dated `at` (for replays and tests).
    pub fn at(mut self, at: DateTime<Utc>) -> UsageRecord {
        self.at = at;
        self
    }
}

/// How much of the usage log is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct UsageLimits {
    /// Past this size the log is compacted to half of it, newest lines kept.
    pub max_bytes: u64,
    /// Lines older than this many days are dropped when the log is
    /// compacted, and never learnt from.
    pub max_age_days: f64,
}

impl UsageLimits {
    /// A log cut to half when over `max_bytes`, and records kept
    /// `max_age_days`.
    pub fn new(max_bytes: u64, max_age_days: f64) -> UsageLimits {
        UsageLimits {
            max_bytes,
            max_age_days,
        }
    }
}

impl Default for UsageLimits {
    fn default() -> Self {
        UsageLimits {
            max_bytes: 16 << 20,
            max_age_days: 90.0,
        }
    }
}

/// The usage log, appended to by one process; each record is one `write`
/// of a whole line, so a crash loses at most the line being written and
/// never tears an earlier one.
#[derive(Debug)]
pub struct UsageLog {
    path: PathBuf,
    limits: UsageLimits,
    file: Mutex<File>,
}

impl UsageLog {
    /// Opens (creating) the log at `path` for appending.
    pub fn open(path: impl Into<PathBuf>, limits: UsageLimits) -> Result<UsageLog> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut file = append(&path)?;
        end_torn_line(&path, &mut file)?;
        Ok(UsageLog {
            path,
            limits,
            file: Mutex::new(file),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record`, then compacts the log when it has grown past
    /// [`UsageLimits::max_bytes`]. Another process that shares the log (two
    /// gateways on one index folder) may have compacted it, replacing the
    /// file: the log is then opened again, so no later record goes to the
    /// replaced one.
    pub fn append(&self, record: &UsageRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record).expect("a usage record serialises");
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if replaced(&self.path, &file) {
            *file = append(&self.path)?;
        }
        file.write_all(&line)
            .map_err(|e| Error::io(&self.path, e))?;
        let size = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        if size > self.limits.max_bytes {
            compact(&self.path, self.limits)?;
            *file = append(&self.path)?;
        }
        Ok(())
    }
}

/// Whether the file at `path` is no longer `file` (renamed over, or gone).
#[cfg(unix)]
fn replaced(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(now), Ok(open)) => now.ino() != open.ino() || now.dev() != open.dev(),
        _ => true,
    }
}

#[cfg(not(unix))]
fn replaced(_path: &Path, _file: &File) -> bool {
    false
}

/// Ends a last line that a crash cut short, so that it stays one unreadable
/// line (skipped by [`read_usage`]) instead of spoiling the next record.
fn end_torn_line(path: &Path, file: &mut File) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut reader = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = reader.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    reader
        .seek(SeekFrom::Start(len - 1))
        .and_then(|_| reader.read_exact(&mut last))
        .map_err(|e| Error::io(path, e))?;
    if last[0] != b'\n' {
        file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// Rewrites the log with the lines younger than the age limit, newest first
/// until half the size limit, in their order; written whole, then renamed.
fn compact(path: &Path, limits: UsageLimits) -> Result<()> {
    let (records, _) = read_usage(path)?;
    let oldest = oldest_kept(limits.max_age_days);
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0u64;
    for r in records.iter().rev().filter(|r| r.at >= oldest) {
        let mut line = serde_json::to_vec(r).expect("a usage record serialises");
        line.push(b'\n');
        bytes += line.len() as u64;
        if bytes > limits.max_bytes / 2 {
            break;
        }
        kept.push(line);
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let mut tmp = tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new(".")))
        .map_err(|e| Error::io(path, e))?;
    for line in kept.iter().rev() {
        tmp.write_all(line).map_err(|e| Error::io(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    tracing::info!(
        log = %path.display(),
        kept = kept.len(),
        of = records.len(),
        "usage log compacted"
    );
    Ok(())
}

/// The earliest time a record may have and still count, `max_age_days` ago.
pub(crate) fn oldest_kept(max_age_days: f64) -> DateTime<Utc> {
    let secs = (max_age_days * 86_400.0).clamp(0.0, 1e11) as i64;
    Utc::now() - chrono::Duration::seconds(secs)
}

/// A line of the usage log that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// Its line number, from 1.
    pub line: usize,
    /// Why.
    pub message: String,
}

/// Every record of the log at `path`, in order, and the lines that are not
/// records (a line cut short by a crash, an edit by hand); a missing log is
/// empty.
pub fn read_usage(path: &Path) -> Result<(Vec<UsageRecord>, Vec<SkippedLine>)> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((vec![], vec![])),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<UsageRecord>(&line) {
            Ok(r) => records.push(r),
            Err(e) => skipped.push(SkippedLine {
                line: i + 1,
                message: e.to_string(),
            }),
        }
    }
    Ok((records, skipped))
}
