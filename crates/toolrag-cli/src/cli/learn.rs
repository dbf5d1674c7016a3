//! `toolrag learn`: the usage log becomes learnt example requests, and the
//! index is rebuilt with them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolrag::index::{BuildOptions, Manifest};
use toolrag::learn::{self, LearnOptions, Learnt, USAGE_FILE};

use super::ModelArgs;

/// Learn from use: the requests after which agents called a tool become
/// learnt example requests of that tool.
///
/// The MCP gateway (`toolrag mcp --upstream`) writes <index>/usage.jsonl: for
/// every call that follows a search, the request, the handle set, the tool
/// called and how the call ended, never the arguments or the result
/// (`[gateway] record-usage = false` turns it off; the log is kept under
/// `usage-max-mb` and `usage-max-age-days`). `toolrag learn` reads it, keeps
/// the learnt requests in <index>/learnt.json and rebuilds the index, which
/// embeds each learnt request as a point of its tool, as it does the tool's
/// documented examples: a later request like it finds the tool. A running
/// `toolrag mcp` or `toolrag serve` picks the new index up, and every later
/// `toolrag index` into the same folder keeps what was learnt.
///
/// What a request teaches is what it asks, not what it names: the call's
/// argument values, numbers, paths, file names, quoted text and names written
/// with a capital become "something" ("add to what you know about Priya"
/// teaches "add to what you know about something"). And a learnt request
/// lifts its tool only together with the tool's own description, never alone.
///
/// What counts, so that a few bad calls cannot steer the index:
///   - only calls that succeeded, of tools still in the index, in the last
///     --max-age-days;
///   - only principals allowed to teach: `[gateway] teachers` (token names,
///     subjects, client ids, group:<value>); without it, only the local user
///     of a gateway over stdio or unauthenticated HTTP;
///   - a request followed by calls of several tools counts only for the tool
///     called most often after it;
///   - one principal gives a tool at most --per-principal requests, and a tool
///     keeps at most --per-tool: those asked by the most principals, then
///     most often, then most recently.
///
/// Undo: --forget TOOL drops a tool's learnt requests and every record of it
/// so far (later calls teach again); --reset does that for every tool. See a
/// tool's learnt requests with `toolrag tools show <id> --index DIR`.
///
/// Examples:
///   toolrag learn --index gw
///   toolrag learn --index gw --dry-run
///   toolrag learn --index gw --forget memory/create_entities
///   toolrag learn --index gw --reset
///   toolrag tools show git/git_log --index gw
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LearnArgs {
    /// The index folder to learn for (a gateway's --index).
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// The usage log to read (default: <index>/usage.jsonl).
    #[arg(long, value_name = "FILE")]
    usage: Option<PathBuf>,
    /// Forget what was learnt for this tool (an id or tool:// handle), and
    /// every record of it so far. Repeatable.
    #[arg(long, value_name = "TOOL")]
    forget: Vec<String>,
    /// Forget everything learnt, and every record so far.
    #[arg(long, conflicts_with = "forget")]
    reset: bool,
    /// Say what would be learnt; write nothing and rebuild nothing.
    #[arg(long)]
    dry_run: bool,
    /// The most learnt requests a tool keeps.
    #[arg(long, value_name = "N", default_value_t = LearnOptions::default().per_tool as u16,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    per_tool: u16,
    /// The most learnt requests one principal gives a tool.
    #[arg(long, value_name = "N", default_value_t = LearnOptions::default().per_principal as u16,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    per_principal: u16,
    /// Records older than this many days are not learnt from.
    #[arg(long, value_name = "DAYS", default_value_t = LearnOptions::default().max_age_days,
          value_parser = parse_days)]
    max_age_days: f64,
    /// Print what was learnt and the build report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The config file (default: ./toolrag.toml when present), for its
    /// [model] table.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

fn parse_days(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 36_500.0 => Ok(v),
        _ => Err(format!(
            "expected days above 0 (at most 36500), found `{s}`"
        )),
    }
}

pub fn run(mut args: LearnArgs) -> anyhow::Result<ExitCode> {
    let config = super::Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let gen = toolrag::index::current_generation(&args.index)?;
    let manifest = Manifest::read_unverified(&gen)?;
    if manifest.lexical_only {
        anyhow::bail!(
            "{}: the index is lexical-only; learnt requests are dense points, so build it with \
             the model first (`toolrag index` without --lexical-only)",
            args.index.display()
        );
    }
    let tools = toolrag::index::read_tools(&gen)?;

    // A reset needs nothing of the old file, so it also mends a damaged one.
    let mut previous = if args.reset {
        let mut fresh = Learnt::default();
        fresh.reset();
        fresh
    } else {
        Learnt::read(&args.index)
            .map_err(|e| anyhow::anyhow!("{e}\n  `toolrag learn --reset` starts it afresh."))?
    };
    for t in &args.forget {
        let id = t
            .strip_prefix(toolrag::registry::HANDLE_SCHEME)
            .unwrap_or(t);
        if !tools.iter().any(|d| d.id == id) && !previous.tools.contains_key(id) {
            anyhow::bail!(
                "no tool `{id}` in {} nor among its learnt requests",
                args.index.display()
            );
        }
        previous.forget(id);
    }

    let usage = args
        .usage
        .clone()
        .unwrap_or_else(|| args.index.join(USAGE_FILE));
    let (records, skipped) = learn::read_usage(&usage)?;
    warn_skipped(&usage, &skipped);
    let mut opts = LearnOptions::default();
    opts.per_tool = usize::from(args.per_tool);
    opts.per_principal = usize::from(args.per_principal);
    opts.max_age_days = args.max_age_days;
    let (learnt, report) = learn::learn(&records, &tools, &previous, &opts);
    if args.dry_run {
        if args.json {
            let out = serde_json::json!({"learn": report, "learnt": learnt.tools});
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            print_learnt(&learnt)?;
            eprintln!("{report} (dry run: nothing written)");
        }
        return Ok(ExitCode::SUCCESS);
    }
    learnt.write(&args.index)?;

    let model = args
        .model
        .model_for_build()?
        .context("learnt requests are embedded: the model is needed (see above)")?;
    let mut build = BuildOptions::new(args.index.clone());
    build.boosts = manifest.boosts;
    let registry = toolrag::Registry::from_tools(tools)?;
    let built = toolrag::index::build(registry, Some(model), &build, &|_| {})?;
    if args.json {
        let out = serde_json::json!({"learn": report, "learnt": learnt.tools, "build": built});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        eprintln!("{report}");
        eprintln!("{built}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Says which lines of the log were not records, the first few by number.
fn warn_skipped(usage: &Path, skipped: &[learn::SkippedLine]) {
    for s in skipped.iter().take(5) {
        eprintln!(
            "toolrag: warning: {}:{}: not a usage record, skipped: {}",
            usage.display(),
            s.line,
            s.message
        );
    }
    if skipped.len() > 5 {
        eprintln!(
            "toolrag: warning: {}: {} more lines skipped",
            usage.display(),
            skipped.len() - 5
        );
    }
}

/// Each tool's learnt requests, for --dry-run.
fn print_learnt(learnt: &Learnt) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for (tool, examples) in &learnt.tools {
        writeln!(out, "{tool}")?;
        for e in examples {
            writeln!(
                out,
                "  {:?}  ({} calls, {} principals)",
                e.request, e.calls, e.principals
            )?;
        }
    }
    Ok(())
}
