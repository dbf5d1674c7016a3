//! The audit log: one JSON line per decision the gateway takes about a
//! `call_tool`, appended and synced before the gateway acts on it, so that a
//! crash cannot lose a decision that was acted on.
//!
//! ```json
//! {"time":"2026-12-02T15:04:05.123Z","event":"decision","tool":"fs/write_file","server":"fs",
//!  "argumentsSha256":"5d41…","decision":"approved","decidedBy":"person (elicitation)"}
//! {"time":"2026-12-02T15:04:05.160Z","event":"result","tool":"fs/write_file","server":"fs",
//!  "argumentsSha256":"5d41…","decision":"passed","decidedBy":"output guard"}
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

use super::GatewayError;

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord<'a> {
    /// When (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// `decision` (whether the call may go to the server) or `result` (what
    /// the output guard did with its result).
    pub event: &'a str,
    /// The tool's id, `<server>/<tool>`.
    pub tool: &'a str,
    /// The server it belongs to.
    pub server: &'a str,
    /// sha256 (hex) of the arguments' canonical JSON: the log says which
    /// arguments were decided on without keeping them.
    pub arguments_sha256: String,
    /// `allowed`, `approved`, `rejected`, `cancelled`, `refused`,
    /// `invalid-arguments`; for a result, `passed`, `marked`, `blocked` or
    /// `failed`.
    pub decision: &'a str,
    /// Who or what decided: `person (elicitation)`, `allow-list: <entry>`,
    /// `annotations: no approval needed`, `gateway: ...`.
    pub decided_by: String,
    /// Why, when there is more to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl<'a> AuditRecord<'a> {
    /// A record of `event` about a call of `tool` (`<server>/<tool>`) with
    /// `arguments`, stamped now.
    pub fn new(
        event: &'a str,
        tool: &'a str,
        arguments: &Value,
        decision: &'a str,
        decided_by: impl Into<String>,
    ) -> AuditRecord<'a> {
        AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            event,
            tool,
            server: tool.split_once('/').map_or(tool, |(s, _)| s),
            arguments_sha256: super::pins::hash(arguments),
            decision,
            decided_by: decided_by.into(),
            reason: None,
        }
    }

    /// The record with a reason.
    pub fn because(mut self, reason: impl Into<String>) -> AuditRecord<'a> {
        self.reason = Some(reason.into());
        self
    }
}

/// An append-only JSON Lines file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    /// Opens `path` for appending, creating it and its folder if needed.
    pub fn open(path: &Path) -> Result<AuditLog, GatewayError> {
        let io = |source| GatewayError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line and syncs it to disk.
    pub fn write(&self, record: &AuditRecord<'_>) -> Result<(), GatewayError> {
        let mut line = serde_json::to_vec(record).expect("a record serialises");
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(&line)
            .and_then(|()| f.sync_data())
            .map_err(|source| GatewayError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_appended_one_json_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit").join("log.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let args = serde_json::json!({"path": "/tmp/x", "content": "secret"});
        log.write(&AuditRecord::new(
            "decision",
            "fs/write_file",
            &args,
            "approved",
            "person (elicitation)",
        ))
        .unwrap();
        log.write(
            &AuditRecord::new(
                "decision",
                "fs/write_file",
                &args,
                "rejected",
                "person (elicitation)",
            )
            .because("no"),
        )
        .unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["server"], "fs");
        assert_eq!(lines[0]["decision"], "approved");
        assert_eq!(lines[1]["reason"], "no");
        assert_eq!(lines[0]["argumentsSha256"], lines[1]["argumentsSha256"]);
        assert!(!text.contains("secret"), "arguments are hashed, not logged");
    }
}
