//! A build's progress drawn on stderr: the bar of `toolrag index` and of the
//! Python `Index.build(..., progress=True)`, one [`Progress`] for both.

use indicatif::{ProgressBar, ProgressStyle};
use toolrag::app::Progress;

/// A progress bar of the embedding on stderr (or none), which also returns
/// mimalloc's freed pages to the system when the build frees its registry.
#[derive(Debug)]
pub struct TerminalProgress {
    bar: Option<ProgressBar>,
}

impl TerminalProgress {
    /// A bar when `show`, none otherwise.
    pub fn new(show: bool) -> Self {
        let bar = show.then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} embedding {bar:40} {pos}/{len} texts ({per_sec}, eta {eta})",
                )
                .expect("a valid template"),
            );
            bar
        });
        TerminalProgress { bar }
    }

    /// A bar when stderr is a terminal, outside CI.
    pub fn on_terminal() -> Self {
        use std::io::IsTerminal;
        TerminalProgress::new(std::io::stderr().is_terminal() && std::env::var_os("CI").is_none())
    }
}

impl Progress for TerminalProgress {
    fn embedding(&self, total: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    fn embedded(&self, done: usize) {
        if let Some(bar) = &self.bar {
            bar.inc(done as u64);
        }
    }

    fn embedding_done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Returns mimalloc's freed pages to the operating system. The binary
    /// and the Python extension both allocate with mimalloc; where mimalloc
    /// is not the allocator this frees nothing.
    fn memory_freed(&self) {
        // SAFETY: mi_collect only frees mimalloc's own unused pages.
        unsafe {
            libmimalloc_sys::mi_collect(true);
        }
    }
}
