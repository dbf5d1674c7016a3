//! `toolrag index`: build the on-disk index of a registry.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use toolrag::index::{BuildOptions, BuildProgress};

use super::{ModelArgs, RegistryArgs};

/// Build (or incrementally rebuild) the index of a tool registry.
///
/// The index holds BM25 fields (tantivy) and dense vectors (one per tool and
/// one per example request; above 300,000 of them, in an HNSW graph too). A
/// rebuild embeds only new and changed texts, and the new index is swapped in
/// atomically: a killed build leaves the previous index intact.
///
/// Examples:
///   toolrag index                                   # tools/ -> index/
///   toolrag index ../shared/data/bfcl/tools.jsonl --out /tmp/bfcl-index
///   toolrag index --lexical-only                    # BM25 only, no model needed
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct IndexArgs {
    /// Registry files or folders (default: tools/).
    paths: Vec<PathBuf>,
    /// The index folder to build into.
    #[arg(long, short, default_value = "index", value_name = "DIR")]
    out: PathBuf,
    /// Build a BM25-only index, without the embedding model.
    #[arg(long)]
    lexical_only: bool,
    /// Print the build report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The config file (default: ./toolrag.toml when present); its [index]
    /// table holds the build settings (the BM25 field boosts).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    model: ModelArgs,
}

fn progress_bar() -> Option<ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return None;
    }
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} embedding {bar:40} {pos}/{len} texts ({per_sec}, eta {eta})",
        )
        .expect("a valid template"),
    );
    Some(pb)
}

pub fn run(mut args: IndexArgs) -> anyhow::Result<ExitCode> {
    let config = super::Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let registry = args.registry.load(&args.paths)?;
    let embedder = if args.lexical_only {
        None
    } else {
        args.model.model_for_build()?
    };
    let mut opts = BuildOptions::new(args.out.clone());
    opts.fail_point = Some(fail_point);
    opts.boosts = config.index.boosts.unwrap_or_default();
    let pb = progress_bar();
    let on_progress = |p: BuildProgress| {
        if let BuildProgress::MemoryFreed = p {
            crate::release_allocator_memory();
        }
        if let Some(pb) = &pb {
            match p {
                BuildProgress::EmbedStart { total } => pb.set_length(total as u64),
                BuildProgress::Embedded { done } => pb.inc(done as u64),
                BuildProgress::EmbedDone => pb.finish_and_clear(),
                _ => {}
            }
        }
    };
    let report = toolrag::index::build(registry, embedder, &opts, &on_progress)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Test hook: `TOOLRAG_FAIL_AT=<name>` aborts the process at the build's
/// fail point `name`, as a `kill -9` would, so the killed-build test is
/// deterministic.
fn fail_point(name: &str) {
    if std::env::var("TOOLRAG_FAIL_AT").is_ok_and(|v| v == name) {
        std::process::abort();
    }
}
