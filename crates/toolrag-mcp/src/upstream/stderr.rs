//! The end of a stdio server's stderr, kept while it runs so that a failure
//! report can show it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// How much of a server's stderr is kept (the end of it), in bytes.
const STDERR_KEEP: usize = 16 * 1024;

/// How many lines of a server's stderr a failure report shows.
const STDERR_TAIL_LINES: usize = 20;

/// The end of a server's stderr, captured while it runs. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    inner: Arc<Mutex<TailState>>,
    closed: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct TailState {
    bytes: Vec<u8>,
    closed: bool,
}

impl StderrTail {
    /// An empty tail (an HTTP server's stays empty).
    pub fn new() -> StderrTail {
        StderrTail::default()
    }

    /// Reads `stderr` to its end on a task of its own, keeping the last
    /// 16 KiB; each line is also logged at debug level under `server`.
    pub(super) fn capture(&self, mut stderr: tokio::process::ChildStderr, server: String) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let mut pending = Vec::new();
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        pending.extend_from_slice(chunk);
                        while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                            let line: Vec<u8> = pending.drain(..=i).collect();
                            tracing::debug!(
                                server = %server,
                                "stderr: {}",
                                String::from_utf8_lossy(&line).trim_end()
                            );
                        }
                        if pending.len() > STDERR_KEEP {
                            pending.clear();
                        }
                        let mut state = tail.inner.lock().expect("not poisoned");
                        state.bytes.extend_from_slice(chunk);
                        if state.bytes.len() > STDERR_KEEP {
                            let cut = state.bytes.len() - STDERR_KEEP;
                            state.bytes.drain(..cut);
                        }
                    }
                }
            }
            tail.inner.lock().expect("not poisoned").closed = true;
            tail.closed.notify_waiters();
        });
    }

    /// The last lines written so far (at most 20), without trailing blanks.
    pub fn text(&self) -> String {
        let state = self.inner.lock().expect("not poisoned");
        let text = String::from_utf8_lossy(&state.bytes);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
        lines[from..].join("\n")
    }

    /// Waits up to `wait` for the server to close its stderr (it has exited
    /// or been killed), then returns [`StderrTail::text`].
    pub async fn settle(&self, wait: Duration) -> String {
        let closed = self.closed.notified();
        let done = self.inner.lock().expect("not poisoned").closed;
        if !done {
            let _ = tokio::time::timeout(wait, closed).await;
        }
        self.text()
    }
}
