//! The audit log's file, written by a thread of its own: the gateway hands
//! it lines through a bounded queue, and it appends what has queued up and
//! syncs once for the whole batch.
//!
//! Two ways to hand it a line:
//! - [`AuditLog::write`] waits until the line is on disk (synced), and says
//!   whether it got there: for decisions the gateway acts on (a call that
//!   goes out, an approval, a result that goes back), whose line must exist
//!   before the action;
//! - [`AuditLog::record`] waits only for room in the queue: for refusals
//!   (a tool the caller may not see or that does not exist, a rate limit, a
//!   quarantine, arguments that do not match), where the answer must not
//!   wait on the disk, so that a refusal that writes a line takes the time
//!   of one that writes a line elsewhere, not of an fsync. A failure to
//!   write it is logged, as it always was for refusals.
//!
//! No line is dropped: when the queue is full, the caller waits for room
//! (backpressure), and [`AuditLog::flush`] (at shutdown) returns once every
//! line queued before it is synced.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use super::super::GatewayError;

/// Lines that may wait in the queue (about 2 MiB of typical lines).
const QUEUE: usize = 4096;
/// The most lines written between two syncs.
const BATCH: usize = 512;

/// What a sync came to: `Err((kind, message))` when it failed.
type Synced = Result<(), (std::io::ErrorKind, String)>;

enum Job {
    /// A line, and who waits for it to be synced, if anyone.
    Line(Vec<u8>, Option<oneshot::Sender<Synced>>),
    /// Tell when everything before is synced.
    Flush(oneshot::Sender<Synced>),
}

/// An append-only JSON Lines file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    queue: mpsc::Sender<Job>,
}

impl AuditLog {
    /// Opens `path` for appending, creating it and its folder if needed,
    /// and starts its writer.
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
        AuditLog::start(path, file).map_err(io)
    }

    /// A log of `path` whose lines go to `sink`, written by a new thread.
    fn start(path: &Path, sink: impl Sink) -> std::io::Result<AuditLog> {
        let (queue, jobs) = mpsc::channel(QUEUE);
        let shown = path.to_path_buf();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || run(sink, &shown, jobs))?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            queue,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line and waits until it is synced to disk.
    pub async fn write(&self, record: &impl Serialize) -> Result<(), GatewayError> {
        let (done, synced) = oneshot::channel();
        self.send(Job::Line(line(record), Some(done))).await?;
        self.outcome(synced.await)
    }

    /// Queues `record` as one line, to be appended and synced with the next
    /// batch; waits only while the queue is full.
    pub async fn record(&self, record: &impl Serialize) {
        if let Err(e) = self.send(Job::Line(line(record), None)).await {
            tracing::error!("cannot write the audit log: {e}");
        }
    }

    /// [`AuditLog::record`] from code that cannot wait: the line is queued
    /// now, or, when the queue is full, by a task that waits for room.
    pub fn record_now(&self, record: &impl Serialize) {
        match self.queue.try_send(Job::Line(line(record), None)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(job)) => {
                let queue = self.queue.clone();
                match tokio::runtime::Handle::try_current() {
                    Ok(rt) => drop(rt.spawn(async move { queue.send(job).await })),
                    Err(_) => drop(queue.blocking_send(job)),
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::error!("cannot write the audit log: its writer has stopped");
            }
        }
    }

    /// Waits until every line queued so far is synced to disk.
    pub async fn flush(&self) -> Result<(), GatewayError> {
        let (done, synced) = oneshot::channel();
        self.send(Job::Flush(done)).await?;
        self.outcome(synced.await)
    }

    async fn send(&self, job: Job) -> Result<(), GatewayError> {
        self.queue
            .send(job)
            .await
            .map_err(|_| self.error(std::io::ErrorKind::BrokenPipe, "its writer has stopped"))
    }

    fn outcome(
        &self,
        synced: Result<Synced, oneshot::error::RecvError>,
    ) -> Result<(), GatewayError> {
        match synced {
            Ok(Ok(())) => Ok(()),
            Ok(Err((kind, message))) => Err(self.error(kind, &message)),
            Err(_) => Err(self.error(std::io::ErrorKind::BrokenPipe, "its writer has stopped")),
        }
    }

    fn error(&self, kind: std::io::ErrorKind, message: &str) -> GatewayError {
        GatewayError::Io {
            path: self.path.clone(),
            source: std::io::Error::new(kind, message.to_string()),
        }
    }
}

/// Where the writer puts a batch of lines.
trait Sink: Send + 'static {
    /// Appends `bytes` and syncs them to disk.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()>;
}

impl Sink for std::fs::File {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write_all(bytes)?;
        self.sync_data()
    }
}

/// `record` as one JSON line.
fn line(record: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(record).unwrap_or_else(|e| {
        // The records are plain structs of strings and numbers.
        format!("{{\"event\":\"unserialisable\",\"reason\":\"{e}\"}}").into_bytes()
    });
    line.push(b'\n');
    line
}

/// The writer: takes what has queued up (at most [`BATCH`] lines), appends
/// it, syncs once, and tells whoever waits. Ends when every sender is gone
/// and the queue is empty.
fn run(mut sink: impl Sink, path: &Path, mut jobs: mpsc::Receiver<Job>) {
    let mut buf = Vec::new();
    let mut waiting = Vec::new();
    while let Some(first) = jobs.blocking_recv() {
        let mut next = Some(first);
        let (mut lines, mut unwaited) = (0usize, 0usize);
        while let Some(job) = next.take() {
            match job {
                Job::Line(line, done) => {
                    buf.extend_from_slice(&line);
                    lines += 1;
                    match done {
                        Some(d) => waiting.push(d),
                        None => unwaited += 1,
                    }
                }
                Job::Flush(done) => waiting.push(done),
            }
            if lines < BATCH {
                next = jobs.try_recv().ok();
            }
        }
        let synced: Synced = sink.append(&buf).map_err(|e| (e.kind(), e.to_string()));
        buf.clear();
        if let (Err((_, e)), true) = (&synced, unwaited > 0) {
            tracing::error!(
                "cannot write {unwaited} lines of the audit log {}: {e}",
                path.display()
            );
        }
        for done in waiting.drain(..) {
            let _ = done.send(synced.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queued line does not wait for the disk, a written one does, and a
    /// flush returns once everything before it is on disk, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_lines_are_not_waited_for_and_none_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        for i in 0..(QUEUE + 100) {
            log.record(&serde_json::json!({ "n": i })).await;
        }
        log.write(&serde_json::json!({ "n": "written" }))
            .await
            .unwrap();
        log.record_now(&serde_json::json!({ "n": "now" }));
        log.flush().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), QUEUE + 102);
        assert_eq!(lines[0], r#"{"n":0}"#);
        assert_eq!(lines[QUEUE + 100], r#"{"n":"written"}"#);
        assert_eq!(lines[QUEUE + 101], r#"{"n":"now"}"#);
    }

    /// A sink that appends one batch per permit, to a shared buffer.
    struct Gated(
        std::sync::mpsc::Receiver<()>,
        std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    );

    impl Sink for Gated {
        fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            self.0.recv().map_err(|_| std::io::ErrorKind::BrokenPipe)?;
            self.1.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        }
    }

    /// While the disk does not answer, a queued line is handed over at once
    /// and a written one waits; once it answers, both are there, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_queued_line_does_not_wait_for_a_blocked_disk() {
        let (permit, gate) = std::sync::mpsc::channel();
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = AuditLog::start(Path::new("blocked.jsonl"), Gated(gate, out.clone())).unwrap();
        let long = std::time::Duration::from_secs(30);
        tokio::time::timeout(long, log.record(&serde_json::json!({"n": 1})))
            .await
            .expect("a queued line is not held by the disk");
        let second = serde_json::json!({"n": 2});
        let written = log.write(&second);
        tokio::pin!(written);
        let short = std::time::Duration::from_millis(300);
        assert!(
            tokio::time::timeout(short, &mut written).await.is_err(),
            "a written line waits for the disk"
        );
        for _ in 0..2 {
            permit.send(()).unwrap();
        }
        tokio::time::timeout(long, written).await.unwrap().unwrap();
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "{\"n\":1}\n{\"n\":2}\n");
    }
}
