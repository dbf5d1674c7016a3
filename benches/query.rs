//! Query latency, single-threaded, over the bfcl registry (3,258 tools):
//! embedding alone, lexical, dense and hybrid top-10.
//!
//! Run with `cargo bench --bench query` (or `scripts/bench`). The bfcl index is
//! built into `target/bench-index/bfcl` on the first run (vectors are reused
//! afterwards). The query cache is off, so every hybrid query pays the model.

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelDir};
use toolrag::index::{build, BuildOptions, ModelInfo};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{Mode, SearchConfig, SearchRequest, Searcher};

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
    let info = ModelInfo {
        id: e.model_id().into(),
        dimension: e.dimension(),
        sha256: e.fingerprint().into(),
    };
    let opts = BuildOptions {
        out: out.clone(),
        boosts: Default::default(),
    };
    build(&reg, Some((&e, info)), &opts, &|_| {}).expect("bfcl index builds");
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
    let index = bfcl_index();
    let e: Arc<dyn Embedder> = Arc::new(embedder());
    let config = SearchConfig {
        query_cache: 0,
        ..SearchConfig::default()
    };
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
