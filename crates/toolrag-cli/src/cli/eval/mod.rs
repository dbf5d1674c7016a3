//! `toolrag eval`: retrieval quality of an index (or a registry) on labelled
//! queries, per mode, with optional regression thresholds for CI.

mod render;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use toolrag::embed::Embedder;
use toolrag::eval::{Check, EvalReport, Threshold};
use toolrag::search::{Mode, Searcher};

use super::{Config, ModelArgs, RegistryArgs};

use render::{write_check, write_markdown, write_text};

/// Output format of `toolrag eval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// A readable table, one row per mode.
    Text,
    /// The whole report, with every query's outcome.
    Json,
    /// A Markdown table, for a README or a pull request.
    Markdown,
}

/// What `toolrag eval --help` adds after the options: the command's doc
/// comment lives on its variant in `cli/mod.rs`, which is kept to one line.
const EVAL_HELP: &str = "\
Queries are JSON Lines, one request per line, as in
tests/golden/tools-queries.jsonl: {\"id\", \"query\", \"relevant\", \"groups\"?,
\"kind\"?, \"subset\"?}. \"relevant\" holds one tool id per need; \"groups\"
gives each need its acceptable ids, and a need is met when any id of its
group is retrieved. Out-of-scope requests have \"kind\": \"none\" and no
relevant tool; they should abstain.

Metrics: Recall@1/5/10, nDCG@10, MRR@10 and Complete@10, macro means over
answerable queries (also per kind and subset); abstain precision and recall
of the ABSTAIN decision; AUROC of the confidence, answerable vs none;
latency p50/p95, one query at a time.

--min thresholds apply to the hybrid mode when it is evaluated, otherwise to
the last mode in --modes. A missed threshold lists the queries behind it on
stderr, with what was retrieved instead.

Exit status: 0 when every threshold holds (or none is given), 1 when one is
missed, 2 on an error (a bad query file, no index, or the mode the thresholds
apply to could not run).

Examples:
  toolrag eval --queries tests/golden/tools-queries.jsonl --registry tools/
  toolrag eval --queries my-queries.jsonl --registry my-tools.jsonl
  toolrag eval --queries golden.jsonl --index index --format markdown
  toolrag eval --queries golden.jsonl --registry tools/ --modes hybrid \\
      --min recall@5=0.81 --min mrr@10=0.65";

/// The arguments of `toolrag eval`.
#[derive(Debug, Args)]
#[command(after_long_help = EVAL_HELP)]
pub struct EvalArgs {
    /// The labelled queries (JSONL).
    #[arg(long, value_name = "FILE.jsonl")]
    queries: PathBuf,
    /// The index folder to evaluate (default: index).
    #[arg(long, value_name = "DIR", conflicts_with = "registry")]
    index: Option<PathBuf>,
    /// Evaluate this registry instead: build a temporary index of it, with the
    /// model when there is one (repeatable; files or folders, like `toolrag index`).
    #[arg(long, value_name = "PATH")]
    registry: Vec<PathBuf>,
    /// How many tools to retrieve per query (the metrics look at the top 10).
    #[arg(short, default_value_t = toolrag::eval::NDCG_K)]
    k: usize,
    /// The modes to evaluate, comma-separated. Dense and hybrid are skipped,
    /// with a note, when the index is lexical-only or there is no model.
    #[arg(
        long,
        value_parser = super::mode_parser(),
        value_delimiter = ',',
        default_value = "lexical,dense,hybrid"
    )]
    modes: Vec<Mode>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Text)]
    format: EvalFormat,
    /// Fail (exit 1) when METRIC is below VALUE (repeatable). METRIC is one of
    /// recall@1, recall@5, recall@10, ndcg@10, mrr@10, complete@10,
    /// abstain-precision, abstain-recall.
    #[arg(long = "min", value_name = "METRIC=VALUE")]
    min: Vec<Threshold>,
    /// The config file (default: ./toolrag.toml when present); its [search]
    /// table tunes retrieval as it does for `toolrag query`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    registry_args: RegistryArgs,
    #[command(flatten)]
    model: ModelArgs,
}

/// The mode `--min` thresholds apply to: hybrid when evaluated, else the last listed.
fn gated_mode(modes: &[Mode]) -> Mode {
    if modes.contains(&Mode::Hybrid) {
        Mode::Hybrid
    } else {
        modes.last().copied().unwrap_or(Mode::Hybrid)
    }
}

pub fn run(mut args: EvalArgs) -> anyhow::Result<ExitCode> {
    if args.k == 0 {
        bail!("-k must be at least 1");
    }
    if args.modes.is_empty() {
        bail!("--modes needs at least one mode");
    }
    let queries = toolrag::eval::load_queries(&args.queries)?;
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let needs_model = args.modes.iter().any(|m| *m != Mode::Lexical);

    // With --registry the index lives in a temporary folder, removed on return.
    let _tmp;
    let (index, embedder) = if args.registry.is_empty() {
        let index = args.index.clone().unwrap_or_else(|| PathBuf::from("index"));
        let embedder = if needs_model {
            query_embedder(&index, &args.model)?
        } else {
            None
        };
        (index, embedder)
    } else {
        let tmp = tempfile::Builder::new().prefix("toolrag-eval-").tempdir()?;
        let index = tmp.path().join("index");
        let embedder = build_temporary(&args, needs_model, &index)?;
        _tmp = tmp;
        (index, embedder)
    };

    let open = |mode: Mode| {
        let e = if mode == Mode::Lexical {
            None
        } else {
            embedder.clone()
        };
        Searcher::open(&index, e, config.search)
    };
    let report = toolrag::eval::run(open, &queries, &args.modes, args.k)
        .with_context(|| format!("cannot evaluate the index in {}", index.display()))?;
    for s in &report.skipped {
        eprintln!("toolrag: note: skipped {} mode: {}", s.mode, s.reason);
    }
    if !report.unknown_ids.is_empty() {
        let n = report.unknown_ids.len();
        let some: Vec<&str> = report
            .unknown_ids
            .iter()
            .take(5)
            .map(String::as_str)
            .collect();
        eprintln!(
            "toolrag: warning: {n} expected tool id{} not in the index, so never found: {}{}",
            if n == 1 { " is" } else { "s are" },
            some.join(", "),
            if n > some.len() { ", ..." } else { "" }
        );
    }

    let check = if args.min.is_empty() {
        None
    } else {
        let mode = gated_mode(&args.modes);
        let Some(m) = report.mode(mode) else {
            bail!("cannot check --min: the {mode} mode was not evaluated (see the note above)");
        };
        Some(toolrag::eval::check(m, &queries, &args.min))
    };

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        EvalFormat::Json => {
            #[derive(serde::Serialize)]
            struct Json<'a> {
                #[serde(flatten)]
                report: &'a EvalReport,
                check: Option<&'a Check>,
            }
            let json = Json {
                report: &report,
                check: check.as_ref(),
            };
            serde_json::to_writer_pretty(&mut out, &json)?;
            writeln!(out)?;
        }
        EvalFormat::Text => write_text(&mut out, &report, &args.queries)?,
        EvalFormat::Markdown => write_markdown(&mut out, &report)?,
    }
    out.flush()?;
    drop(out);

    match check {
        Some(c) => {
            let mut err = std::io::stderr().lock();
            write_check(&mut err, &c)?;
            Ok(if c.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The query embedder for an existing index: none when the index is
/// lexical-only or no model is found (the modes that need one are skipped).
fn query_embedder(index: &Path, model: &ModelArgs) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    let gen = toolrag::index::current_generation(index)?;
    // A look at the metadata: `Searcher::open` verifies every file next.
    if toolrag::index::Manifest::read_unverified(&gen)?.lexical_only {
        return Ok(None);
    }
    let embedder = model.query_embedder(super::model::Need::IfPresent, 1)?;
    Ok(embedder.map(|e| Arc::new(e) as Arc<dyn Embedder>))
}

/// Builds the index of `--registry` into `out`, with the model when there is
/// one and a mode needs it; returns the embedder for the queries.
fn build_temporary(
    args: &EvalArgs,
    needs_model: bool,
    out: &Path,
) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    let registry = args.registry_args.load(&args.registry)?;
    let model = if needs_model {
        args.model.model_for_build()?
    } else {
        None
    };
    let opts = toolrag::index::BuildOptions::new(out);
    let report = toolrag::index::build(registry, model, &opts, &|_| {})?;
    eprintln!("toolrag: temporary index: {report}");
    query_embedder(out, &args.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_gate_hybrid_or_the_last_mode() {
        assert_eq!(gated_mode(&[Mode::Hybrid, Mode::Lexical]), Mode::Hybrid);
        assert_eq!(gated_mode(&[Mode::Dense, Mode::Lexical]), Mode::Lexical);
    }
}
