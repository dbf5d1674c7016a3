//! Model-only throughput, the yardstick of `scripts/loadtest`: the query
//! embedder alone, set up as `toolrag serve` sets it up (one single-threaded
//! session per core, warmed up, one query per call), driven by one caller per
//! core for a fixed time over a query file, cycling through it. No index, no
//! HTTP, no cache: what the model can do on these cores, to which the
//! server's hybrid requests per second are compared.
//!
//! `cargo bench --bench model_only` with `QUERIES=<queries.jsonl>` (default
//! bfcl's, under `TOOLRAG_BENCH_DATA`, which `scripts/bench` sets) and
//! `MODEL_SECONDS=<n>` (default 60); prints one line,
//! `model-only: <n> queries in <s> s = <r> queries/s (<t> callers, <t> sessions)`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelDir};

/// The binary's allocator, so the bench measures what `toolrag` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // `cargo test --all-targets` runs this once without `--bench`: a one-second
    // smoke run over the project's own golden requests, needing nothing else.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let queries_path = std::env::var_os("QUERIES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            if smoke {
                root.join("tests/golden/tools-queries.jsonl")
            } else {
                std::env::var_os("TOOLRAG_BENCH_DATA")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| root.join("../shared/data"))
                    .join("bfcl/queries.jsonl")
            }
        });
    let seconds: u64 = std::env::var("MODEL_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if smoke { 1 } else { 60 });
    let text = std::fs::read_to_string(&queries_path)
        .unwrap_or_else(|e| panic!("{}: {e}", queries_path.display()));
    // The bodies scripts/loadtest sends: every non-empty query within 4 KiB.
    let queries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(|q| q.trim().to_string()))
        .filter(|q| !q.is_empty() && q.len() <= 4096)
        .collect();
    assert!(
        !queries.is_empty(),
        "no queries in {}",
        queries_path.display()
    );

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = ModelDir::select(Some(&root.join("models")), &Default::default())
        .expect("the model is in models/ (run scripts/fetch-model)");
    let options = EmbedOptions {
        threads: 1,
        sessions: cores,
        ..EmbedOptions::default()
    };
    let embedder = FastEmbedder::load(&dir, &options).expect("the model loads");
    embedder.warm_up().expect("the model warms up");

    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for caller in 0..cores {
            let (embedder, queries, done, stop) = (&embedder, &queries, &done, &stop);
            s.spawn(move || {
                // Callers start spread over the list, as wrk's threads do.
                let mut i = caller * queries.len() / cores;
                while !stop.load(Ordering::Relaxed) {
                    embedder
                        .embed_query(&queries[i % queries.len()])
                        .expect("a query embeds");
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    println!(
        "model-only: {n} queries in {elapsed:.1} s = {:.1} queries/s ({cores} callers, {cores} sessions)",
        n as f64 / elapsed
    );
}
