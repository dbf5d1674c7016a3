//! `toolrag gate`: check a Khipu plan before anything acts on it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde_json::Value;
use toolrag::gate::{Gate, ToolResolver, Verdict};
use toolrag::search::{SearchConfig, Searcher};

/// Output format of `toolrag gate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateFormat {
    /// One readable line per violation and per approval, then a summary line.
    Human,
    /// The verdict: {"valid", "violations": [{"code", "path", "message"}], "requiresApproval"}.
    Json,
}

/// What `toolrag gate --help` adds after the options: the command's doc
/// comment lives on its variant in `cli/mod.rs`, which is kept to one line.
const GATE_HELP: &str = "\
The plan gate is deterministic code between the plan model and anything that
acts on its plan. It checks the plan against khipu-plan.schema.json; checks
that every step and citation names an offered candidate (and, with --offered,
that the candidates are exactly the offered set, none added, dropped or
altered); checks the decision's logic (ABSTAIN: no steps, no citations, a
reason; NAVIGATE: steps, citations, no reason; every citation acted on; nothing
listed twice); and, with --index, lists the cited tools that need a person's
approval (destructive, or open-world and not idempotent). Every violation is
reported, with a stable code and a JSON Pointer.

Exit status: 0 when the plan is valid (approvals or not), 1 when it is not, 2
when an input cannot be read or is not JSON.

Examples:
  toolrag query \"undo my last commit\" --format khipu > offered.json
  toolrag gate plan.json --offered offered.json
  model-client < prompt.txt | toolrag gate - --offered offered.json --format json
  toolrag gate plan.json --offered offered.json --index index";

/// The arguments of `toolrag gate`.
#[derive(Debug, Args)]
#[command(after_long_help = GATE_HELP)]
pub struct GateArgs {
    /// The plan, a JSON file; `-` reads standard input.
    #[arg(value_name = "PLAN.json")]
    plan: PathBuf,
    /// The candidate set the plan model was offered: the output of
    /// `toolrag query --format khipu` (or a JSON array of candidates); `-` reads
    /// standard input. The plan's candidates must be exactly these.
    #[arg(long, value_name = "CANDIDATES.json")]
    offered: Option<PathBuf>,
    /// An index to resolve cited tools in, for the approval check.
    #[arg(long, value_name = "DIR")]
    index: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GateFormat::Human)]
    format: GateFormat,
}

pub fn run(args: GateArgs) -> anyhow::Result<ExitCode> {
    let stdin = Path::new("-");
    if args.plan == stdin && args.offered.as_deref() == Some(stdin) {
        bail!("the plan and --offered cannot both be read from standard input");
    }
    let plan = read_json(&args.plan)?;
    let offered = match &args.offered {
        Some(path) => {
            let v = read_json(path)?;
            Some(toolrag::gate::parse_offered(&v).with_context(|| display(path))?)
        }
        None => None,
    };
    let searcher = match &args.index {
        Some(dir) => Some(
            Searcher::open(dir, None, SearchConfig::default())
                .with_context(|| format!("cannot open the index in {}", dir.display()))?,
        ),
        None => None,
    };
    let gate = Gate {
        offered: offered.as_deref(),
        tools: searcher.as_ref().map(|s| s as &dyn ToolResolver),
    };
    let verdict = gate.check(&plan);

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        GateFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &verdict)?;
            writeln!(out)?;
        }
        GateFormat::Human => print_human(&mut out, &display(&args.plan), &verdict)?,
    }
    out.flush()?;
    Ok(if verdict.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `plan.json: error[not-offered] at /steps/1/nodeId: step 2 cites ...`,
/// one line per violation and approval, then `plan.json: valid` or
/// `plan.json: invalid (N violations)`.
fn print_human(out: &mut impl Write, name: &str, verdict: &Verdict) -> std::io::Result<()> {
    for v in &verdict.violations {
        if v.path.is_empty() {
            writeln!(out, "{name}: error[{}]: {}", v.code, v.message)?;
        } else {
            writeln!(
                out,
                "{name}: error[{}] at {}: {}",
                v.code, v.path, v.message
            )?;
        }
    }
    for a in &verdict.requires_approval {
        let why: Vec<&str> = a.reasons.iter().map(|r| r.describe()).collect();
        writeln!(
            out,
            "{name}: approval required before running {}: {}",
            a.node_id,
            why.join("; ")
        )?;
    }
    let n = verdict.violations.len();
    if verdict.valid {
        writeln!(out, "{name}: valid")
    } else {
        let s = if n == 1 { "" } else { "s" };
        writeln!(out, "{name}: invalid ({n} violation{s})")
    }
}

/// How an input is named in messages: its path, or `<stdin>`.
fn display(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

/// Reads `path` (or stdin for `-`) as JSON; any failure names the input.
fn read_json(path: &Path) -> anyhow::Result<Value> {
    let name = display(path);
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .with_context(|| format!("{name}: cannot read"))?;
        buf
    } else {
        std::fs::read(path).with_context(|| format!("{name}: cannot read"))?
    };
    serde_json::from_slice(&bytes).with_context(|| format!("{name}: not valid JSON"))
}
