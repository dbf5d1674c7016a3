//! `toolrag lint`: review a registry's docstrings and report diagnostics.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use toolrag::embed::{FastEmbedder, TokenCounter};
use toolrag::lint::render::{render, OutputFormat, RenderOptions};
use toolrag::lint::{self, Level, LintConfig, LintContext, SimilarityKind};

use super::model::Need;
use super::table::{write_table, Column};
use super::{ModelArgs, RegistryArgs};

/// What `toolrag lint --help` adds after the options: the command's doc
/// comment lives on its variant in `cli/mod.rs`, which is kept to one line.
const LINT_HELP: &str = "\
Reviews every tool's docstring the way a senior engineer reviews an API meant
for a junior colleague: examples, edge cases, input formats, absolute paths,
boundaries between look-alike tools, side-effect annotations, tool poisoning.

Exit status: 0 when there are no errors, 1 when there are errors (or warnings,
with --deny-warnings), 2 when the run fails (a registry file that does not
load, a bad config).

Rule levels, per-path ignores and thresholds come from the [lint] table of
./toolrag.toml (or --config); see examples/toolrag.toml. `toolrag rule` lists
the rules and explains each one; docs/rules/ has a page per rule.

Linting servers you do not own: --profile consumer keeps the findings a
consumer can act on (relative-path-parameter, confusable-tools,
hidden-instructions, missing-side-effect-annotations, duplicate-tool-name,
invalid-tool-name, invalid-input-schema) and turns authoring advice
(examples, edge cases, wording) into informational notes, which never fail
the run.

Examples:
  toolrag lint
  toolrag lint tools/ my-server.json --format concise
  toolrag lint --format sarif --output toolrag.sarif
  toolrag lint my-tools.jsonl --lexical --statistics
  toolrag lint --select relative-path-parameter,hidden-instructions
  toolrag lint tests/fixtures/mcp-reference/ --profile consumer --format concise
  npx @modelcontextprotocol/inspector --cli --method tools/list npx -y \\
    @modelcontextprotocol/server-memory | toolrag lint - --profile consumer";

/// Lint tool docstrings: examples, edge cases, formats, paths, boundaries, poisoning.
#[derive(Debug, Args)]
#[command(after_long_help = LINT_HELP)]
pub struct LintArgs {
    /// Registry files or folders (default: tools/); `-` reads one registry
    /// file from standard input.
    paths: Vec<PathBuf>,
    /// Output format: full (source snippets), concise (one line each), json,
    /// sarif (SARIF 2.1.0 for code scanning) or github (workflow annotations).
    #[arg(long, value_enum, default_value_t = Format::Full)]
    format: Format,
    /// A toolrag.toml whose [lint] table sets levels, ignores and thresholds
    /// (default: ./toolrag.toml when it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run only these rules: codes or names, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    select: Vec<String>,
    /// Use lexical (TF-IDF) similarity for confusable-tools even when the model
    /// is present. Much faster on large registries: embedding is skipped.
    #[arg(long)]
    lexical: bool,
    /// Exit 1 when there are warnings, not only errors.
    #[arg(long)]
    deny_warnings: bool,
    /// Whose lint this is: author (every rule at its level) or consumer
    /// (servers you do not own: authoring advice becomes informational).
    #[arg(long, value_enum, default_value_t = ProfileArg::Author)]
    profile: ProfileArg,
    /// Print how many diagnostics and tools each rule has, instead of the
    /// diagnostics.
    #[arg(long)]
    statistics: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// The profiles, as command-line values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProfileArg {
    /// The author of the tools: every rule at its configured level.
    Author,
    /// A consumer of servers they do not own.
    Consumer,
}

/// The output formats, as command-line values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Full,
    Concise,
    Json,
    Sarif,
    Github,
}

impl From<Format> for OutputFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Full => OutputFormat::Full,
            Format::Concise => OutputFormat::Concise,
            Format::Json => OutputFormat::Json,
            Format::Sarif => OutputFormat::Sarif,
            Format::Github => OutputFormat::Github,
        }
    }
}

fn load_config(args: &mut LintArgs) -> anyhow::Result<LintConfig> {
    let full = super::Config::load(args.config.as_deref())?;
    args.model.configure(&full);
    let mut config = full.lint.clone();
    config.profile = match args.profile {
        ProfileArg::Author => lint::Profile::Author,
        ProfileArg::Consumer => lint::Profile::Consumer,
    };
    if !args.select.is_empty() {
        config.select(&args.select)?;
    }
    Ok(config)
}

/// Adds what the model offers: a token counter always, and document
/// embeddings when confusable-tools runs and --lexical is off. No model is not
/// an error: the lint says so once and goes on lexically.
fn with_model(
    args: &LintArgs,
    mut cx: LintContext,
    registry: &toolrag::Registry,
) -> anyhow::Result<LintContext> {
    // With --lexical the model only counts tokens: its absence is not news.
    let need = if args.lexical {
        Need::IfPresent
    } else {
        Need::Optional(
            "confusable-tools uses lexical similarity and description tokens are estimated",
        )
    };
    let Some(dir) = args.model.locate(need)? else {
        return Ok(cx);
    };
    cx = cx.with_token_counter(TokenCounter::load(&dir)?);
    let confusable = lint::find_rule("confusable-tools").context("the rule table")?;
    if args.lexical || cx.config.level_of(confusable) == Level::Ignore || registry.len() < 2 {
        return Ok(cx);
    }
    let opts = super::model::embed_options(super::model::one_session_per_core());
    let embedder = FastEmbedder::load(&dir, &opts)?;
    tracing::info!(tools = registry.len(), "embedding tool documents");
    let vectors = lint::similarity::embed_tools(registry, &embedder)?;
    Ok(cx.with_embeddings(vectors))
}

fn write_statistics(out: &mut dyn Write, diagnostics: &[lint::Diagnostic]) -> std::io::Result<()> {
    let columns = [
        Column::left("CODE").fixed(6),
        Column::left("NAME").within(4, usize::MAX),
        Column::left("LEVEL").fixed(5),
        Column::right("DIAGNOSTICS").fixed(11),
        Column::right("TOOLS").fixed(6),
    ];
    let rows: Vec<Vec<String>> = lint::statistics(diagnostics)
        .iter()
        .map(|s| {
            vec![
                s.code.to_string(),
                s.name.clone(),
                s.level.to_string(),
                s.diagnostics.to_string(),
                s.tools.to_string(),
            ]
        })
        .collect();
    write_table(out, &columns, " ", &rows)
}

pub fn run(mut args: LintArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(&mut args)?;
    let registry = args.registry.load(&args.paths)?;
    let cx = with_model(&args, LintContext::new(config), &registry)?;
    let started = std::time::Instant::now();
    let diagnostics = lint::lint(&registry, &cx);
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        similarity = match cx.similarity_kind(&registry) {
            SimilarityKind::Dense => "dense",
            SimilarityKind::Lexical => "lexical",
        },
        "lint finished"
    );

    let (mut out, to_terminal): (Box<dyn Write>, bool) = match &args.output {
        Some(p) => (
            Box::new(
                std::fs::File::create(p)
                    .with_context(|| format!("cannot write {}", p.display()))?,
            ),
            false,
        ),
        None => (
            Box::new(std::io::stdout().lock()),
            std::io::stdout().is_terminal(),
        ),
    };
    let mut out = std::io::BufWriter::new(&mut out);
    if args.statistics {
        write_statistics(&mut out, &diagnostics)?;
    } else {
        let opts = RenderOptions {
            color: to_terminal && std::env::var_os("NO_COLOR").is_none(),
            tools_checked: registry.len(),
        };
        render(args.format.into(), &diagnostics, &opts, &mut out)?;
    }
    out.flush()?;

    let (errors, warnings) = lint::count_levels(&diagnostics);
    Ok(if errors > 0 || (args.deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
