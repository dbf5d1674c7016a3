//! `toolrag resolve`: a handle's full tool card, resolved outside the model.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolrag::search::{SearchConfig, Searcher};

/// Resolve a `tool://<id>` handle to its full tool card (docstring, input
/// schema, annotations, examples, edge cases, boundaries) as JSON.
///
/// This is the controller's side of the contract: the plan model only ever
/// sees handles; the controller resolves the ones it cites.
#[derive(Debug, Args)]
#[command(
    after_long_help = "Examples:\n  toolrag resolve tool://filesystem/read_text_file\n  toolrag resolve 'tool://math.sum#283188eb' --index /tmp/my-index"
)]
pub struct ResolveArgs {
    /// The handle (`tool://<id>`) or the bare tool id.
    handle: String,
    /// The index folder.
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
}

pub fn run(args: ResolveArgs) -> anyhow::Result<ExitCode> {
    let searcher = Searcher::open(&args.index, None, SearchConfig::default())
        .with_context(|| format!("cannot open the index in {}", args.index.display()))?;
    let tool = searcher.tool(&args.handle).with_context(|| {
        format!(
            "unknown handle `{}`: no such tool among the {} tools of {} (find handles with `toolrag query`)",
            args.handle,
            searcher.tools().len(),
            args.index.display()
        )
    })?;
    let mut card = serde_json::to_value(tool)?;
    if let Some(m) = card.as_object_mut() {
        m.insert("handle".into(), tool.handle().into());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer_pretty(&mut out, &card)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}
