//! The live index: the searcher of the current generation behind an
//! [`ArcSwap`], replaced whole when a build publishes a new one.
//!
//! Each request takes one snapshot ([`LiveIndex::snapshot`]) and uses it for
//! everything it does, so it never sees a mix of two generations. A new
//! generation is opened completely before the swap; if it does not open, it is
//! refused with a log line and the old one keeps serving.
//!
//! Every server reads the index through it: the HTTP API, the MCP server (over
//! stdio or HTTP) and the MCP gateway. It knows nothing of HTTP; the limits,
//! errors and statuses the HTTP front ends share are `toolrag-serve`'s.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::search::khipu::{self, CandidateSet};
use crate::search::{SearchConfig, SearchRequest, Searcher};
use toolrag_core::error::Result;
use toolrag_embed::Embedder;

/// How often the servers' reload watchers look at `CURRENT` (the period they
/// give [`LiveIndex::watch`]).
pub const RELOAD_POLL: Duration = Duration::from_millis(500);

/// A reloadable index folder.
pub struct LiveIndex {
    dir: PathBuf,
    embedder: Option<Arc<dyn Embedder>>,
    config: SearchConfig,
    current: ArcSwap<Searcher>,
    /// What `CURRENT` named when a reload last failed, so a broken generation
    /// is reported once, not every poll.
    refused: Mutex<Option<String>>,
    reloads: AtomicU64,
    failures: AtomicU64,
}

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("dir", &self.dir)
            .field("current", &self.current.load().generation())
            .finish()
    }
}

/// What a reload check did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reload {
    /// `CURRENT` names the generation already served.
    Unchanged,
    /// A new generation was opened and swapped in.
    Swapped(PathBuf),
    /// `CURRENT` names a generation that does not open; the old one stays.
    Refused(toolrag_core::Error),
    /// The same broken generation as last time; already reported.
    StillRefused,
}

/// One answer, with the generation that produced it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Answer<T> {
    /// The generation folder name (`gen-000007`).
    pub generation: String,
    /// The answer itself.
    pub value: T,
}

impl<T> Answer<T> {
    /// `value`, answered by the generation named `generation`.
    pub fn new(generation: String, value: T) -> Self {
        Answer { generation, value }
    }
}

impl LiveIndex {
    /// Opens the live generation of `dir`. The embedder and config are kept
    /// for every later reload.
    pub fn open(
        dir: &Path,
        embedder: Option<Arc<dyn Embedder>>,
        config: SearchConfig,
    ) -> Result<LiveIndex> {
        let searcher = Searcher::open(dir, embedder.clone(), config)?;
        Ok(LiveIndex {
            dir: dir.to_path_buf(),
            embedder,
            config,
            current: ArcSwap::from_pointee(searcher),
            refused: Mutex::new(None),
            reloads: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        })
    }

    /// The index folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The searcher of the generation being served. Hold it for the whole of
    /// a request.
    pub fn snapshot(&self) -> Arc<Searcher> {
        self.current.load_full()
    }

    /// Successful reloads so far.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// Refused reloads so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Searches one snapshot and renders the Khipu candidate set.
    pub fn search(&self, req: &SearchRequest) -> Result<Answer<CandidateSet>> {
        let s = self.snapshot();
        let result = s.search(req)?;
        Ok(Answer {
            generation: generation_name(&s),
            value: khipu::candidate_set(&result, |id| s.tool(id)),
        })
    }

    /// Searches many requests on one snapshot; an error names the request's
    /// position.
    pub fn search_many(
        &self,
        reqs: &[SearchRequest],
    ) -> std::result::Result<Answer<Vec<CandidateSet>>, (usize, toolrag_core::Error)> {
        let s = self.snapshot();
        let mut out = Vec::with_capacity(reqs.len());
        for (i, req) in reqs.iter().enumerate() {
            let result = s.search(req).map_err(|e| (i, e))?;
            out.push(khipu::candidate_set(&result, |id| s.tool(id)));
        }
        Ok(Answer {
            generation: generation_name(&s),
            value: out,
        })
    }

    /// Opens the generation `CURRENT` names if it is not the one served, and
    /// swaps it in. Blocking: it reads the whole generation.
    pub fn reload_if_changed(&self) -> Reload {
        let named = match crate::index::current_generation(&self.dir) {
            Ok(gen) if gen == self.current.load().generation() => return Reload::Unchanged,
            Ok(gen) => gen.display().to_string(),
            Err(e) => format!("error: {e}"),
        };
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.as_deref() == Some(named.as_str()) {
            return Reload::StillRefused;
        }
        // Opening runs third-party loaders (tantivy's analyser, hnsw_rs): a
        // panic in one refuses the generation and leaves the reload thread
        // alive for the next one.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Searcher::open(&self.dir, self.embedder.clone(), self.config)
        }))
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Err(toolrag_core::Error::Index(format!(
                "{named}: opening it panicked: {what}"
            )))
        });
        match opened {
            Ok(s) => {
                let gen = s.generation().to_path_buf();
                self.current.store(Arc::new(s));
                self.reloads.fetch_add(1, Ordering::Relaxed);
                *refused = None;
                Reload::Swapped(gen)
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                *refused = Some(named);
                Reload::Refused(e)
            }
        }
    }

    /// Polls `CURRENT` every `every` on a dedicated thread, reloading on
    /// change and logging swaps (info) and refusals (error), until the
    /// returned [`Watcher`] is dropped.
    ///
    /// One thread, always the same, loads every generation: the allocator
    /// then reuses the memory of the generation it replaced, where loads spread
    /// over a pool's threads (and so over the allocator's per-thread arenas)
    /// made RSS climb by a third in a minute of reloads under load.
    pub fn watch(self: Arc<Self>, every: Duration) -> Watcher {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("toolrag-reload".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    self.reload_and_log();
                }
            })
            .expect("the reload thread starts");
        Watcher {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn reload_and_log(&self) {
        match self.reload_if_changed() {
            Reload::Swapped(gen) => tracing::info!(
                target: "server::reload",
                generation = %gen.display(),
                tools = self.snapshot().tools().len(),
                "serving a new index generation"
            ),
            Reload::Refused(e) => tracing::error!(
                target: "server::reload",
                dir = %self.dir.display(),
                "refusing the new index generation; the previous one keeps serving: {e}"
            ),
            Reload::Unchanged | Reload::StillRefused => {}
        }
    }
}

/// The reload thread of [`LiveIndex::watch`]; dropping it stops the thread
/// (after the load in progress, if any).
#[derive(Debug)]
pub struct Watcher {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The folder name of a searcher's generation (`gen-000007`).
pub fn generation_name(s: &Searcher) -> String {
    s.generation()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
