//! `toolrag plan`: the plan model in the loop. Retrieve the candidates, ask
//! the plan model for a Khipu plan over them, gate it, and repair it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use toolrag::gate::{ToolResolver, Verdict};
use toolrag::planner::{AttemptRecord, PlanFailure, Planned, Planner, PlannerOptions};
use toolrag::search::{khipu, Mode, SearchRequest};

use super::query::open_searcher;
use super::{Config, ModelArgs};

/// Output format of `toolrag plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// {"plan", "attempts", "verdict"} on success; {"attempts", "verdict", "history"} when aborted.
    Json,
    /// The decision, the cited tools, the approvals and each attempt's violations, in lines.
    Human,
}

/// Ask a plan model for a Khipu plan over the retrieved tools, and gate it.
///
/// The request's top-k tools are retrieved exactly as `toolrag query --format
/// khipu` retrieves them. The plan model (any OpenAI-compatible chat server:
/// llama.cpp's server, llama-cpp-python, vLLM, Ollama, LM Studio, TGI or a
/// hosted API) is asked only for what needs judgment: the decision, the steps,
/// the cited handles and the reason to abstain. toolrag fills in the rest of
/// the plan from what it offered, and the gate checks the whole plan. On a
/// violation, the gate's feedback goes back to the model as the next message,
/// up to --max-retry repairs.
///
/// The request carries a JSON Schema made for it (response_format), in which
/// every handle is one of the offered handles and NAVIGATE and ABSTAIN are two
/// branches: a server that enforces it cannot let the model cite a tool that
/// was not offered. A server that refuses the form is asked with
/// llama-cpp-python's form, then with none (said once on stderr).
///
/// The API key is read from TOOLRAG_PLANNER_API_KEY and sent as a bearer
/// token; it is never printed or logged.
///
/// Exit status: 0 when a plan passed the gate (an ABSTAIN plan with its reason
/// is a plan); 1 when every attempt was rejected (the last verdict and every
/// attempt's violations are printed); 2 when the planner cannot be reached,
/// times out or answers an HTTP error (at once, with no retry spent), or the
/// index or an option is wrong.
///
/// Examples:
///   toolrag plan "what did I change in my repo?" --planner http://127.0.0.1:8080/v1
///   toolrag plan "undo my last commit" --index gw --planner http://127.0.0.1:8080/v1 --format human
///   TOOLRAG_PLANNER_API_KEY=sk-... toolrag plan "post in #deploys" \
///       --planner https://api.openai.com/v1 --planner-model gpt-4o-mini
///   toolrag plan "read /etc/hosts" --planner http://127.0.0.1:8080/v1 --no-constrain --max-retry 0
///   toolrag plan "read /etc/hosts" --planner http://127.0.0.1:8080/v1 --prompt my-system-prompt.txt
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PlanArgs {
    /// The request, in words.
    request: String,
    /// The index folder.
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// The plan model's OpenAI-compatible base URL; toolrag posts to
    /// URL/chat/completions.
    #[arg(long, value_name = "URL")]
    planner: String,
    /// The `model` field of each request (a local server serves its one model
    /// without it).
    #[arg(long, value_name = "NAME")]
    planner_model: Option<String>,
    /// Repairs after the first proposal: at most 1 + N calls to the planner.
    #[arg(long, default_value_t = toolrag::planner::DEFAULT_MAX_RETRY, value_name = "N")]
    max_retry: usize,
    /// How many tools to offer the plan model.
    #[arg(short, default_value_t = 5)]
    k: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Json)]
    format: PlanFormat,
    /// How long one call to the planner may take, seconds.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    planner_timeout: f64,
    /// A file whose text replaces the system prompt (the request and the
    /// offered tools always follow in the user message).
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// Send no response_format: the prompt alone asks for JSON, and the gate
    /// catches what the model gets wrong.
    #[arg(long)]
    no_constrain: bool,
    /// Append every attempt to FILE, one JSON line each: {"request",
    /// "attempt", "answer" (the model's text), "verdict", "seconds"}.
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// Retrievers: hybrid (default), lexical (BM25) or dense.
    #[arg(
        long,
        default_value_t = Mode::Hybrid,
        value_parser = super::mode_parser()
    )]
    mode: Mode,
    /// The config file (default: ./toolrag.toml when present).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

impl PlanArgs {
    fn options(&self) -> anyhow::Result<PlannerOptions> {
        if self.k == 0 {
            bail!("-k must be at least 1");
        }
        if !(self.planner_timeout.is_finite() && self.planner_timeout > 0.0) {
            bail!(
                "--planner-timeout must be a positive number of seconds, not {}",
                self.planner_timeout
            );
        }
        if !(self.planner.starts_with("http://") || self.planner.starts_with("https://")) {
            bail!(
                "--planner must be an http:// or https:// URL, such as http://127.0.0.1:8080/v1, not {:?}",
                self.planner
            );
        }
        let mut opts = PlannerOptions::new(self.planner.clone());
        opts.model = self.planner_model.clone();
        opts.max_retry = self.max_retry;
        opts.timeout = Duration::from_secs_f64(self.planner_timeout);
        opts.constrain = !self.no_constrain;
        opts.api_key = std::env::var(toolrag::planner::API_KEY_VAR)
            .ok()
            .filter(|k| !k.is_empty());
        if let Some(path) = &self.prompt {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--prompt {}: cannot read", path.display()))?;
            if text.trim().is_empty() {
                bail!("--prompt {}: the file is empty", path.display());
            }
            opts.prompt = Some(text);
        }
        Ok(opts)
    }
}

pub fn run(mut args: PlanArgs) -> anyhow::Result<ExitCode> {
    if args.request.trim().is_empty() {
        bail!("the request is empty: say what you want done");
    }
    let opts = args.options()?;
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let searcher = open_searcher(&args.index, &args.model, args.mode, 1, config.search)?;
    let mut request = SearchRequest::new(args.request.clone());
    request.k = args.k;
    request.mode = args.mode;
    request.pin = config.pinned.clone();
    let result = searcher.search(&request)?;
    let offered = khipu::candidate_set(&result, |id| searcher.tool(id)).candidates;
    if offered.is_empty() {
        // A plan over no handle cannot pass the gate (candidates has minItems 1):
        // asking the model would only spend the budget.
        bail!(
            "no tool in {} matches the request, so there is nothing to plan over (try --mode hybrid, or index more tools)",
            args.index.display()
        );
    }
    let planner = Planner::new(opts);
    let outcome = planner.plan(
        &args.request,
        &offered,
        Some(&searcher as &dyn ToolResolver),
    );
    if let Some(path) = &args.transcript {
        let history = match &outcome {
            Ok(planned) => &planned.history[..],
            Err(PlanFailure::Aborted(aborted)) => &aborted.history[..],
            Err(PlanFailure::Planner(_)) => &[],
        };
        write_transcript(path, &args.request, history)
            .with_context(|| format!("--transcript {}: cannot write", path.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match outcome {
        Ok(planned) => {
            match args.format {
                PlanFormat::Json => {
                    serde_json::to_writer_pretty(&mut out, &planned)?;
                    writeln!(out)?;
                }
                PlanFormat::Human => print_planned(&mut out, &planned)?,
            }
            ExitCode::SUCCESS
        }
        Err(PlanFailure::Aborted(aborted)) => {
            match args.format {
                PlanFormat::Json => {
                    serde_json::to_writer_pretty(&mut out, &aborted)?;
                    writeln!(out)?;
                }
                PlanFormat::Human => {
                    print_history(&mut out, &aborted.history)?;
                    writeln!(
                        out,
                        "aborted: no plan passed the gate in {} attempt(s)",
                        aborted.attempts
                    )?;
                }
            }
            ExitCode::from(1)
        }
        Err(PlanFailure::Planner(e)) => {
            return Err(anyhow::Error::new(e).context("no plan: the planner failed"))
        }
    };
    out.flush()?;
    Ok(code)
}

/// Appends one JSON line per attempt to `path`.
fn write_transcript(
    path: &std::path::Path,
    request: &str,
    history: &[AttemptRecord],
) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut text = String::new();
    for a in history {
        let mut line = serde_json::to_value(a).map_err(std::io::Error::other)?;
        line["request"] = serde_json::Value::String(request.to_string());
        text.push_str(&line.to_string());
        text.push('\n');
    }
    // One write, so that concurrent runs appending to one file do not interleave lines.
    f.write_all(text.as_bytes())
}

fn print_planned(out: &mut impl Write, planned: &Planned) -> std::io::Result<()> {
    print_history(
        out,
        &planned.history[..planned.history.len().saturating_sub(1)],
    )?;
    let plan = &planned.plan;
    let decision = plan["decision"].as_str().unwrap_or("?");
    writeln!(
        out,
        "decision: {decision} (attempt {} of the loop)",
        planned.attempts
    )?;
    if let Some(reason) = plan["abstainReason"].as_str() {
        writeln!(out, "reason: {reason}")?;
    }
    for step in plan["steps"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "  {} {}: {}",
            step["action"].as_str().unwrap_or("?"),
            step["nodeId"].as_str().unwrap_or("?"),
            step["rationale"].as_str().unwrap_or("")
        )?;
    }
    print_approvals(out, &planned.verdict)
}

fn print_approvals(out: &mut impl Write, verdict: &Verdict) -> std::io::Result<()> {
    for a in &verdict.requires_approval {
        let why: Vec<&str> = a.reasons.iter().map(|r| r.describe()).collect();
        writeln!(
            out,
            "approval required before running {}: {}",
            a.node_id,
            why.join("; ")
        )?;
    }
    Ok(())
}

/// One block per rejected attempt: its violations.
fn print_history(out: &mut impl Write, history: &[AttemptRecord]) -> std::io::Result<()> {
    for a in history {
        writeln!(
            out,
            "attempt {}: rejected ({} violation(s), {:.1} s)",
            a.attempt,
            a.verdict.violations.len(),
            a.seconds
        )?;
        for v in &a.verdict.violations {
            writeln!(out, "  {v}")?;
        }
    }
    Ok(())
}
