//! # Each retriever's raw list, for fusion research
//!
//! Prints, for every request of a JSONL file (`{"id", "query"}` per line),
//! what fusion starts from: each retriever's top `DEPTH` tools with their raw
//! scores (BM25, cosine), and the request's analysed terms with their
//! statistics in the index (document frequency and largest impact, or null
//! for a term no tool has). `research/eval/lodo` reads this to compare fusion and
//! abstain rules offline, over every labelled set, with each set held out.
//!
//! ```text
//! cargo run --release --example retriever_lists -- INDEX QUERIES.jsonl [DEPTH] > lists.jsonl
//! ```
//!
//! With `TOOLRAG_CLAUSE_VECTORS=0` the dense side searches with the whole
//! request only (no clause vectors), to check what they buy on held-out sets.
//!
//! The first line is `{"tools": [ids in ordinal order], "terms": N}`; then
//! one line per request: `{"id", "terms": [[term, df, max]], "lexical":
//! [[ordinal, score]], "dense": [[ordinal, score]], "per_term": [[[ordinal,
//! impact]] per term], "lang"}`: `per_term` holds, for each analysed term in
//! order, what it adds to each tool of the lexical list that has it. `lang`
//! is the code of the calibrated language whose noise the searcher judges
//! the request against when the English noise would abstain on it (null
//! when there is none: `calibration::language_of`). The model is found as
//! the binary finds it (`TOOLRAG_MODEL_DIR`, then `./models`), or is the one
//! `TOOLRAG_MODEL` names (a shipped model's name, or a model folder).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use toolrag::embed::{EmbedOptions, Embedder, FastEmbedder, ModelConfig, ModelDir};
use toolrag::search::lexical::LexicalRetriever;
use toolrag::search::{SearchConfig, Searcher};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [index, queries, rest @ ..] = args.as_slice() else {
        return Err("usage: retriever_lists INDEX QUERIES.jsonl [DEPTH]".into());
    };
    let depth: usize = rest.first().map_or(Ok(50), |d| d.parse())?;
    let choice = match std::env::var("TOOLRAG_MODEL") {
        Ok(m) if std::path::Path::new(&m).is_dir() => ModelConfig {
            dir: Some(m.into()),
            ..ModelConfig::default()
        },
        Ok(m) if !m.is_empty() => ModelConfig {
            name: Some(m),
            ..ModelConfig::default()
        },
        _ => ModelConfig::default(),
    };
    let dir = ModelDir::select(None, &choice)?;
    let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::load(&dir, &EmbedOptions::default())?);
    let mut config = SearchConfig::default();
    config.clause_vectors = std::env::var("TOOLRAG_CLAUSE_VECTORS").map_or(true, |v| v != "0");
    let searcher = Searcher::open(&PathBuf::from(index), Some(embedder), config)?;
    let lexical = searcher
        .retriever(&toolrag::search::RetrieverId::LEXICAL)
        .ok_or("no lexical retriever")?;
    let dense = searcher
        .retriever(&toolrag::search::RetrieverId::DENSE)
        .ok_or("no dense side")?;
    // The concrete lexical retriever, for term statistics.
    let gen = searcher.generation().to_path_buf();
    let stats = LexicalRetriever::open(&gen)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let ids: Vec<&str> = searcher.tools().iter().map(|t| t.id.as_str()).collect();
    writeln!(
        out,
        "{}",
        json!({"tools": ids, "terms": stats.impacts().terms()})
    )?;
    let file = std::io::BufReader::new(std::fs::File::open(queries)?);
    for (n, line) in file.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let q: Value =
            serde_json::from_str(&line).map_err(|e| format!("{queries}:{}: {e}", n + 1))?;
        let text = q["query"].as_str().ok_or("a line without `query`")?.trim();
        let analysed = stats.analyse(text);
        let terms: Vec<Value> = analysed
            .iter()
            .map(|t| match stats.impacts().term_stats(t) {
                Some((df, max)) => json!([t, df, max]),
                None => json!([t, null, null]),
            })
            .collect();
        let l = lexical.retrieve(text, depth, None)?;
        let d = dense.retrieve(text, depth, None)?;
        let in_list: std::collections::HashSet<u32> = l.iter().map(|x| x.0).collect();
        let keep = |o: u32| in_list.contains(&o);
        let per_term: Vec<Vec<(u32, f32)>> = analysed
            .iter()
            .map(|t| {
                stats
                    .impacts()
                    .search(std::slice::from_ref(t), depth, Some(&keep))
            })
            .collect();
        writeln!(
            out,
            "{}",
            json!({"id": q["id"], "terms": terms, "lexical": l, "dense": d, "per_term": per_term,
                   "lang": toolrag::search::calibration::language_of(text)})
        )?;
    }
    Ok(())
}
