//! `toolrag query`: the top-k tools for a request, or many requests (`--batch`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use toolrag::search::{khipu, Mode, SearchConfig, SearchRequest, SearchResult, Searcher};

use super::table::{write_table, Column};
use super::{Config, ModelArgs};

/// Output format of `toolrag query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryFormat {
    /// A readable table: rank, id, score, rank in each retriever, summary.
    Text,
    /// Everything, structured, with `decision` and `abstainReason`.
    Json,
    /// The Khipu candidate handle set, ready for the plan model.
    Khipu,
}

/// Retrieve the top-k tools for a request.
///
/// Hybrid mode runs BM25 and dense retrieval and fuses them; when no tool is
/// supported by enough evidence the suggested decision is ABSTAIN, with the
/// nearest misses. User text is plain text: quotes, colons and other query
/// syntax mean nothing special.
///
/// Examples:
///   toolrag query "read the file /etc/hosts"
///   toolrag query "post in #deploys" -k 5 --format khipu
///   toolrag query "delete old branches" --namespace git --exclude-destructive
///   toolrag query --batch queries.jsonl --index /tmp/my-index > rankings.jsonl
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct QueryArgs {
    /// The request, in words.
    #[arg(required_unless_present = "batch")]
    text: Option<String>,
    /// How many tools to return (1 or more; capped at the index size).
    #[arg(short, default_value_t = toolrag::search::DEFAULT_K)]
    k: usize,
    /// The index folder.
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = QueryFormat::Text)]
    format: QueryFormat,
    /// Retrievers: hybrid (default), lexical (BM25) or dense.
    #[arg(
        long,
        default_value_t = Mode::Hybrid,
        value_parser = super::mode_parser()
    )]
    mode: Mode,
    /// Only tools in this namespace (repeatable).
    #[arg(long = "namespace", value_name = "NS")]
    namespaces: Vec<String>,
    /// Only tools with this tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only tools annotated read-only.
    #[arg(long)]
    read_only: bool,
    /// Leave out tools that are, or may be, destructive.
    #[arg(long)]
    exclude_destructive: bool,
    /// Always include this tool (repeatable; adds to `pinned` in toolrag.toml).
    #[arg(long = "pin", value_name = "ID")]
    pins: Vec<String>,
    /// Read requests from a JSONL file of {"id", "query"} lines; write one JSON
    /// line per request: {"id", "ranked", "scores", "decision"}.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "text")]
    batch: Option<PathBuf>,
    /// The config file (default: ./toolrag.toml when present).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

impl QueryArgs {
    fn request(&self, query: String, pinned: &[String]) -> SearchRequest {
        let mut pin = pinned.to_vec();
        pin.extend(self.pins.iter().cloned());
        SearchRequest {
            query,
            k: self.k,
            mode: self.mode,
            namespaces: self.namespaces.clone(),
            tags: self.tags.clone(),
            read_only: self.read_only,
            exclude_destructive: self.exclude_destructive,
            pin,
            visible: None,
        }
    }
}

pub fn run(mut args: QueryArgs) -> anyhow::Result<ExitCode> {
    if args.k == 0 {
        bail!("-k must be at least 1");
    }
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let sessions = if args.batch.is_some() {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        1
    };
    let searcher = open_searcher(&args.index, &args.model, args.mode, sessions, config.search)?;
    match &args.batch {
        Some(file) => run_batch(&args, &searcher, file, &config.pinned),
        None => {
            let text = args
                .text
                .clone()
                .expect("clap requires text without --batch");
            let result = searcher.search(&args.request(text, &config.pinned))?;
            print_one(&searcher, &result, args.format)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Opens the index with the model when it has a dense side and the mode needs it.
pub fn open_searcher(
    index: &std::path::Path,
    model: &ModelArgs,
    mode: Mode,
    sessions: usize,
    config: SearchConfig,
) -> anyhow::Result<Searcher> {
    let embedder = model.embedder_for_index(index, mode, sessions)?;
    Searcher::open(index, embedder, config)
        .with_context(|| format!("cannot open the index in {}", index.display()))
}

fn print_one(
    searcher: &Searcher,
    result: &SearchResult,
    format: QueryFormat,
) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        QueryFormat::Json => {
            serde_json::to_writer_pretty(&mut out, result)?;
            writeln!(out)?;
        }
        QueryFormat::Khipu => {
            let set = khipu::candidate_set(result, |id| searcher.tool(id));
            serde_json::to_writer_pretty(&mut out, &set)?;
            writeln!(out)?;
        }
        QueryFormat::Text => {
            let columns = [
                Column::right("RANK").fixed(4),
                Column::left("TOOL").within(4, 48),
                Column::right("SCORE").fixed(7),
                Column::right("BM25").fixed(4),
                Column::right("DENSE").fixed(5),
                Column::left("SUMMARY"),
            ];
            use toolrag::search::RetrieverId;
            let r = |x: Option<u32>| x.map_or("-".to_string(), |v| v.to_string());
            let rows: Vec<Vec<String>> = result
                .hits
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let summary: String = h.summary.chars().take(80).collect();
                    let pin = if h.pinned { " (pinned)" } else { "" };
                    let note = h.note.as_ref().map_or(String::new(), |n| format!(" ({n})"));
                    vec![
                        (i + 1).to_string(),
                        h.id.clone(),
                        format!("{:.4}", h.score),
                        r(h.retrievers.rank(&RetrieverId::LEXICAL)),
                        r(h.retrievers.rank(&RetrieverId::DENSE)),
                        format!("{summary}{pin}{note}"),
                    ]
                })
                .collect();
            write_table(&mut out, &columns, "  ", &rows)?;
            match &result.abstain_reason {
                None => writeln!(
                    out,
                    "decision: NAVIGATE ({} mode, confidence {:.2})",
                    result.mode, result.confidence
                )?,
                Some(why) => writeln!(out, "decision: ABSTAIN: {why}")?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn run_batch(
    args: &QueryArgs,
    searcher: &Searcher,
    file: &std::path::Path,
    pinned: &[String],
) -> anyhow::Result<ExitCode> {
    let f = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut lines = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: cannot read", file.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: invalid JSON", file.display(), i + 1))?;
        let id = match &v["id"] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => bail!("{}:{}: each line needs an \"id\"", file.display(), i + 1),
        };
        let Some(q) = v["query"].as_str() else {
            bail!(
                "{}:{}: each line needs a \"query\" string",
                file.display(),
                i + 1
            )
        };
        lines.push((i + 1, id, q.to_string()));
    }
    let results: Vec<anyhow::Result<serde_json::Value>> = lines
        .par_iter()
        .map(|(line, id, q)| {
            let r = searcher
                .search(&args.request(q.clone(), pinned))
                .with_context(|| format!("{}:{line}: query {id}", file.display()))?;
            Ok(serde_json::json!({
                "id": id,
                "ranked": r.hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
                "scores": r.hits.iter().map(|h| h.score).collect::<Vec<_>>(),
                "confidence": r.confidence,
                "decision": r.decision,
            }))
        })
        .collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for r in results {
        serde_json::to_writer(&mut out, &r?)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
