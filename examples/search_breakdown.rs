//! # Where a query's time goes after the model call
//!
//! For the first 400 requests of a JSONL file (`{"query"}` per line), on a
//! built index: the model call, then, each right after another model call
//! (so the CPU caches hold what the model left, as in a real request), the
//! dense retriever's scan, the lexical retriever, and a whole search in each
//! mode with the request's vectors already computed. Then, as
//! `scripts/bench latency` times it, a hybrid search that embeds the request
//! itself (`hybrid_uncached`), right after the same request's vectors were
//! computed alone (`embed_with_clauses`), and the difference of the two per
//! request (`hybrid_minus_embed`): what the ratio "hybrid p50 / embedding
//! p50" is made of.
//!
//! ```text
//! taskset -c 0 cargo run --release --example search_breakdown -- INDEX QUERIES.jsonl
//! ```
//!
//! Run it on one core (`taskset`), as the targets are single-threaded. The
//! model is found as the binary finds it (`TOOLRAG_MODEL_DIR`, then
//! `./models`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelConfig, ModelDir};
use toolrag::search::{Mode, RetrieverId, SearchConfig, SearchRequest, Searcher};

/// The binary's allocator, so the figures are what `toolrag` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const QUERIES: usize = 400;
const PASSES: usize = 3;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(index), Some(queries)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: search_breakdown INDEX QUERIES.jsonl");
    };
    let dir = ModelDir::select(None, &ModelConfig::default()).context("the embedding model")?;
    let model: Arc<dyn Embedder> = Arc::new(FastEmbedder::load(&dir, &EmbedOptions::default())?);
    let searcher = Searcher::open(
        &PathBuf::from(&index),
        Some(model.clone()),
        SearchConfig::default(),
    )?;
    let text = std::fs::read_to_string(&queries).with_context(|| queries.clone())?;
    let mut qs = Vec::new();
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{queries}:{}", n + 1))?;
        let q = v["query"]
            .as_str()
            .with_context(|| format!("{queries}:{}: no \"query\"", n + 1))?;
        qs.push(q.to_string());
        if qs.len() == QUERIES {
            break;
        }
    }
    let names = [
        "embed_query",
        "dense_retrieve",
        "lexical_retrieve",
        "dense_search",
        "lexical_search",
        "hybrid_search",
        "embed_with_clauses",
        "hybrid_uncached",
        "hybrid_minus_embed",
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut uncached_config = SearchConfig::default();
    uncached_config.query_cache = 0;
    let uncached = Searcher::open(&PathBuf::from(&index), Some(model.clone()), uncached_config)?;
    let mut clauses = 0;
    let depth = SearchConfig::default().depth;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    // One top-10 search of `q` in `mode`, timed in ms.
    let timed = |s: &Searcher, q: &str, mode: Mode| -> Result<f64> {
        let req = SearchRequest {
            k: 10,
            mode,
            ..SearchRequest::new(q)
        };
        let t = Instant::now();
        std::hint::black_box(s.search(&req)?);
        Ok(ms(t))
    };
    for _ in 0..PASSES {
        for q in &qs {
            let t = Instant::now();
            std::hint::black_box(model.embed_query(q)?);
            times[0].push(ms(t));
            // Cached from here on: the timings below exclude the model.
            clauses += searcher.embed_query(q)?.len() - 1;
            for (slot, id) in [(1, RetrieverId::DENSE), (2, RetrieverId::LEXICAL)] {
                model.embed_query(q)?;
                let r = searcher.retriever(&id).context(id)?;
                let t = Instant::now();
                std::hint::black_box(r.retrieve(q, depth, None)?);
                times[slot].push(ms(t));
            }
            for (slot, mode) in [(3, Mode::Dense), (4, Mode::Lexical), (5, Mode::Hybrid)] {
                model.embed_query(q)?;
                times[slot].push(timed(&searcher, q, mode)?);
            }
            let t = Instant::now();
            std::hint::black_box(uncached.embed_query(q)?);
            times[6].push(ms(t));
            times[7].push(timed(&uncached, q, Mode::Hybrid)?);
            let d = times[7][times[7].len() - 1] - times[6][times[6].len() - 1];
            times[8].push(d);
        }
    }
    println!(
        "{} requests x {PASSES} passes, {:.2} clause vectors a request; ms:",
        qs.len(),
        clauses as f64 / (qs.len() * PASSES).max(1) as f64
    );
    for (name, mut v) in names.iter().zip(times) {
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!(
            "  {name:<17} p50 {:>7.3}  p95 {:>7.3}  mean {mean:>7.3}",
            pct(0.5),
            pct(0.95)
        );
    }
    Ok(())
}
