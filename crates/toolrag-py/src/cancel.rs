//! Long calls that Ctrl-C stops: a build runs on a thread of its own, the
//! GIL released, while the calling thread looks at Python's signals every
//! few milliseconds. On a `KeyboardInterrupt` (or any exception a signal
//! handler raises) the build is told to stop ([`BuildOptions::cancel`]):
//! it ends before its next chunk of texts, removes what it staged and
//! publishes nothing; then the exception is raised.
//!
//! [`BuildOptions::cancel`]: toolrag::index::BuildOptions

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::errors::to_py;

/// How often the calling thread looks at Python's signals.
const POLL: Duration = Duration::from_millis(20);

/// Runs `work(cancel)` on a scoped thread and waits for it, answering
/// signals meanwhile; `cancel` is the flag to hand to the build.
pub fn run<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(Arc<AtomicBool>) -> toolrag::Result<T> + Send,
) -> PyResult<T> {
    let cancel = Arc::new(AtomicBool::new(false));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let flag = Arc::clone(&cancel);
        let done_ref = &done;
        let handle = s.spawn(move || {
            let result = work(flag);
            done_ref.store(true, Ordering::Release);
            result
        });
        let mut interrupted = None;
        while !done.load(Ordering::Acquire) {
            py.detach(|| {
                let start = Instant::now();
                while !done.load(Ordering::Acquire) && start.elapsed() < POLL {
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
        }
        let result = match handle.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match interrupted {
            Some(e) => Err(e),
            None => result.map_err(to_py),
        }
    })
}
