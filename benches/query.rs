//! Query latency, single-threaded, over the bfcl registry (3,258 tools):
//! embedding alone, lexical, dense and hybrid top-10.
//!
//! Run with `cargo bench --bench query` (or `scripts/bench`). The bfcl index is
//! built into `target/bench-index/bfcl` on the first run (vectors are reused
//! afterwards). The query cache is off, so every hybrid query pays the model.
//!
//! `TOOLRAG_BENCH_INDEX=DIR` times an index built beforehand instead (such as
//! a synthetic registry of 10k or 100k tools from `scripts/synth-registry`),
//! with the same bfcl queries and only the per-query pass; the figures go to
//! `target/bench-latency-<folder name>.json`.

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelDir};
use toolrag::index::{build, BuildModel, BuildOptions};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{Mode, SearchConfig, SearchRequest, Searcher};

/// The binary's allocator, so the bench times what `toolrag` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn data_dir() -> PathBuf {
    std::env::var_os("TOOLRAG_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

fn embedder() -> FastEmbedder {
    let dir = ModelDir::locate(Some(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"),
    ))
    .expect("model");
    FastEmbedder::load(&dir, &EmbedOptions::default()).expect("model loads")
}

fn bfcl_index() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-index/bfcl");
    let reg = Registry::load(
        &[data_dir().join("bfcl/tools.jsonl")],
        &LoadOptions::default(),
    )
    .expect("bfcl loads");
    let e = FastEmbedder::load(
        &ModelDir::locate(Some(
            &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"),
        ))
        .unwrap(),
        &EmbedOptions {
            sessions: 2,
            ..EmbedOptions::default()
        },
    )
    .unwrap();
    let opts = BuildOptions::new(out.clone());
    build(reg, Some(BuildModel::Loaded(&e)), &opts, &|_| {}).expect("bfcl index builds");
    out
}

fn queries() -> Vec<String> {
    let text =
        std::fs::read_to_string(data_dir().join("bfcl/queries.jsonl")).expect("bfcl queries");
    text.lines()
        .take(400)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["query"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// `SearchConfig` from the `[search]` table of `TOOLRAG_BENCH_CONFIG` (a
/// toolrag.toml), to time other settings; the defaults otherwise.
fn search_config() -> SearchConfig {
    let Some(path) = std::env::var_os("TOOLRAG_BENCH_CONFIG") else {
        return SearchConfig::default();
    };
    toolrag::config::Config::from_file(std::path::Path::new(&path))
        .unwrap_or_else(|e| panic!("TOOLRAG_BENCH_CONFIG: {e}"))
        .search
}

fn bench(c: &mut Criterion) {
    // `cargo test --all-targets` runs benches once without `--bench`; building
    // the bfcl index there would only slow the test suite down.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    // One thread everywhere: the targets are single-threaded.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .ok();
    if let Some(index) = std::env::var_os("TOOLRAG_BENCH_INDEX").map(PathBuf::from) {
        let e: Arc<dyn Embedder> = Arc::new(embedder());
        let mut config = search_config();
        config.query_cache = 0;
        let searcher = Searcher::open(&index, Some(e.clone()), config).expect("the index opens");
        let label = index
            .file_name()
            .map_or("index".into(), |n| n.to_string_lossy().into_owned());
        println!("{}: {} tools", index.display(), searcher.tools().len());
        let qs = queries();
        per_query_latency(
            &searcher,
            e.as_ref(),
            &qs,
            &format!("bench-latency-{label}.json"),
        );
        if std::env::var_os("TOOLRAG_BENCH_EXACT").is_some() {
            // The same index with the dense side scanned exactly, in full.
            let exact_dense = toolrag::index::dense::DenseOptions {
                exact_max_points: usize::MAX,
                ..Default::default()
            };
            let exact = Searcher::open_tuned(&index, Some(e.clone()), config, exact_dense)
                .expect("the index opens");
            agreement_with_exact(&searcher, &exact, &qs);
        }
        return;
    }
    let index = bfcl_index();
    let e: Arc<dyn Embedder> = Arc::new(embedder());
    let mut config = search_config();
    config.query_cache = 0;
    let searcher = Searcher::open(&index, Some(e.clone()), config).unwrap();
    let qs = queries();
    let mut g = c.benchmark_group("bfcl");
    g.sample_size(100);
    let mut i = 0;
    g.bench_function("embed_query_only", |b| {
        b.iter(|| {
            i = (i + 1) % qs.len();
            e.embed_query(&qs[i]).unwrap()
        })
    });
    for mode in [Mode::Lexical, Mode::Dense, Mode::Hybrid] {
        let mut i = 0;
        g.bench_function(format!("{mode}_top10"), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                searcher
                    .search(&SearchRequest {
                        query: qs[i].clone(),
                        k: 10,
                        mode,
                        ..Default::default()
                    })
                    .unwrap()
            })
        });
    }
    g.finish();
    per_query_latency(&searcher, e.as_ref(), &qs, "bench-latency.json");
}

/// Per-query latency of each mode over the same queries, interleaved (each
/// query is embedded alone, then searched in every mode, before the next
/// one), so that the ratios compare like with like. Criterion's estimates are
/// means over samples of a rotating query mix; this gives true per-query
/// p50/p95. Printed, and written to `target/<file>` for `scripts/bench`.
fn per_query_latency(searcher: &Searcher, e: &dyn Embedder, qs: &[String], file: &str) {
    use std::time::Instant;
    const PASSES: usize = 3;
    let names = [
        "embed_query_only",
        "embed_with_clauses",
        "lexical_top10",
        "dense_top10",
        "hybrid_top10",
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..PASSES {
        for q in qs {
            let t = Instant::now();
            std::hint::black_box(e.embed_query(q).unwrap());
            times[0].push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(searcher.embed_query(q).unwrap());
            times[1].push(t.elapsed().as_secs_f64() * 1e3);
            for (slot, mode) in [(2, Mode::Lexical), (3, Mode::Dense), (4, Mode::Hybrid)] {
                let req = SearchRequest {
                    query: q.clone(),
                    k: 10,
                    mode,
                    ..Default::default()
                };
                let t = Instant::now();
                std::hint::black_box(searcher.search(&req).unwrap());
                times[slot].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    // Lexical on its own, as a lexical-only deployment runs it: back to back,
    // with the index in the CPU caches (in the interleaved loop above it
    // always follows a model call).
    let mut alone = Vec::new();
    for _ in 0..PASSES {
        for q in qs {
            let req = SearchRequest {
                query: q.clone(),
                k: 10,
                mode: Mode::Lexical,
                ..Default::default()
            };
            let t = Instant::now();
            std::hint::black_box(searcher.search(&req).unwrap());
            alone.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.push(alone);
    let names = [&names[..], &["lexical_top10_alone"]].concat();
    let pct = |v: &[f64], p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let mut out = serde_json::Map::new();
    println!(
        "per-query latency, {} queries x {PASSES} passes, interleaved:",
        qs.len()
    );
    for (name, mut v) in names.iter().zip(times) {
        v.sort_by(f64::total_cmp);
        let (p50, p95) = (pct(&v, 0.5), pct(&v, 0.95));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        println!("  {name:<18} p50 {p50:>8.3} ms  p95 {p95:>8.3} ms  mean {mean:>8.3} ms");
        out.insert(
            (*name).to_string(),
            serde_json::json!({"p50_ms": p50, "p95_ms": p95, "mean_ms": mean, "n": v.len()}),
        );
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(file);
    if let Err(err) = std::fs::write(&path, serde_json::Value::Object(out).to_string()) {
        eprintln!("cannot write {}: {err}", path.display());
    }
}

/// How much of the exact answer the configured searcher finds, per query:
/// the share of the exact dense top-50 tools in its dense top-50, and of the
/// exact hybrid top-10 in its hybrid top-10. A label-free check of the bit
/// scan, the graph walk and anything else that trades exactness for time.
fn agreement_with_exact(searcher: &Searcher, exact: &Searcher, qs: &[String]) {
    let ids = |s: &Searcher, q: &str, mode: Mode, k: usize| -> Vec<String> {
        let mut req = SearchRequest::new(q);
        req.k = k;
        req.mode = mode;
        s.search(&req)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    for (mode, k) in [(Mode::Dense, 50), (Mode::Hybrid, 10)] {
        let mut sum = 0.0;
        for q in qs {
            let want = ids(exact, q, mode, k);
            let got = ids(searcher, q, mode, k);
            let found = want.iter().filter(|id| got.contains(id)).count();
            sum += found as f64 / want.len().max(1) as f64;
        }
        println!(
            "  agreement with exact search, {mode} top-{k}: {:.4}",
            sum / qs.len() as f64
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
