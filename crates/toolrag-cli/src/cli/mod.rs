//! Command-line parsing (clap derive) and dispatch to one module per subcommand.

mod completions;
mod config;
mod eval;
mod gate;
mod index;
mod learn;
mod lint;
mod mcp;
mod model;
mod plan;
mod query;
mod resolve;
mod rule;
mod serve;
mod table;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// toolrag: lint, index and retrieve tools for agents.
///
/// An agent with hundreds of tools should not put all of them in its prompt.
/// toolrag lints tool docstrings, indexes a tool registry with hybrid BM25 and
/// dense vectors, and returns the top-k tools for a request as a Khipu candidate
/// handle set.
///
/// Registries are folders of native TOML tools (tools/<namespace>/<name>.toml),
/// MCP tools/list results (.json), OpenAI tools arrays (.json) or JSON Lines
/// (.jsonl). See tools/README.md for the formats.
#[derive(Debug, Parser)]
#[command(
    name = "toolrag",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug). TOOLRAG_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    command: Command,
}

// A doc comment on a variant replaces the whole help of its arguments struct
// (`about` and `long_about`), which is how the long help of `serve` and `mcp`
// was lost: a command whose struct carries its help has no doc comment here.
#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect a tool registry: list its tools or show one, normalised.
    #[command(subcommand, after_long_help = TOOLS_HELP)]
    Tools(tools::ToolsCommand),
    Index(index::IndexArgs),
    Learn(learn::LearnArgs),
    Query(query::QueryArgs),
    Resolve(resolve::ResolveArgs),
    Lint(lint::LintArgs),
    Rule(rule::RuleArgs),
    Serve(serve::ServeArgs),
    #[command(after_long_help = MCP_HELP)]
    Mcp(mcp::McpArgs),
    /// Check a Khipu plan: schema, groundedness, decision logic, approvals.
    Gate(gate::GateArgs),
    Plan(plan::PlanArgs),
    /// Measure retrieval quality on labelled queries: recall, nDCG, MRR, abstain, latency.
    Eval(eval::EvalArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
}

/// What `toolrag tools --help` ends with.
const TOOLS_HELP: &str = "\
Examples:
  toolrag tools list
  toolrag tools list my-tools.jsonl --format json
  toolrag tools show filesystem/read_text_file
  toolrag tools show git/git_log --index gw      # with what `toolrag learn` learnt
  curl -s https://example.com/tools.json | toolrag tools list -";

/// What `toolrag mcp --help` ends with: how a client starts it. Kept here,
/// on the variant, so that it shows whatever `mcp::McpArgs` declares.
const MCP_HELP: &str = "\
Client configuration (Claude Desktop, Cursor and others), the index:
  {\"mcpServers\": {\"toolrag\": {\"command\": \"toolrag\",
    \"args\": [\"mcp\", \"--index\", \"/abs/path/to/index\"]}}}

The gateway, in front of the servers of another configuration file:
  {\"mcpServers\": {\"toolrag\": {\"command\": \"toolrag\",
    \"args\": [\"mcp\", \"--upstream\", \"/abs/path/to/upstream.json\",
             \"--index\", \"/abs/path/to/gateway-index\"]}}}

Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set (OTLP over http/protobuf, a collector's
port 4318), each tool call received, search and call sent upstream is a span; a client's
traceparent (in params._meta or an HTTP header) is continued and passed on upstream.

Examples:
  toolrag index && toolrag mcp
  toolrag mcp --index /abs/path/to/index --config toolrag.toml
  npx @modelcontextprotocol/inspector toolrag mcp --index /abs/path/to/index
  toolrag mcp --upstream ~/.cursor/mcp.json --index ~/.cache/toolrag/gw
  toolrag mcp --upstream upstream.json --index gw --check
  toolrag mcp --upstream upstream.json --index gw --accept memory/create_entities
  toolrag mcp --upstream upstream.json --index gw --http 127.0.0.1:8765 --auth-tokens tokens
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 toolrag mcp --upstream upstream.json --index gw";

/// Options shared by every command that reads a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Namespace for MCP, OpenAI and JSONL files (default: the file stem;
    /// `stdin` for `-`).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Raise (or lower) a registry limit, NAME=VALUE, repeatable:
    /// description-bytes (default 65536), schema-bytes (262144), schema-depth
    /// (32), tools-per-file (1000000), file-bytes (1 GiB). A tool over a limit
    /// is a file:line error.
    #[arg(long, value_name = "NAME=VALUE")]
    pub limit: Vec<String>,
}

/// How a registry read from standard input is named in diagnostics.
const STDIN_NAME: &str = "<stdin>";

impl RegistryArgs {
    /// Loads the registry at `paths` (default `tools/`). A path `-` reads one
    /// registry file from standard input: an MCP `tools/list` result or an
    /// OpenAI tools array (JSON), JSON Lines, or one native TOML tool.
    pub fn load(&self, paths: &[PathBuf]) -> anyhow::Result<toolrag::Registry> {
        let default = [PathBuf::from("tools")];
        let paths = if paths.is_empty() {
            &default[..]
        } else {
            paths
        };
        let mut limits = toolrag::registry::LoadLimits::default();
        for spec in &self.limit {
            limits
                .set_from(spec)
                .map_err(|e| anyhow::anyhow!("--limit {e}"))?;
        }
        let opts = toolrag::registry::LoadOptions {
            namespace: self.namespace.clone(),
            limits,
        };
        let stdin_at = paths.iter().position(|p| p.as_os_str() == "-");
        if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
            anyhow::bail!("`-` (standard input) can be given only once");
        }
        let Some(at) = stdin_at else {
            return Ok(toolrag::Registry::load(paths, &opts).map_err(limit_hint)?);
        };
        // The loader reads files and tells formats by extension: standard
        // input goes through a file named for the format it holds.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .map_err(|e| anyhow::anyhow!("cannot read standard input: {e}"))?;
        // A native TOML tool takes its namespace from its folder.
        let dir = tempfile::tempdir()?;
        let folder = dir
            .path()
            .join(self.namespace.as_deref().unwrap_or("stdin"));
        std::fs::create_dir_all(&folder)?;
        let file = folder.join(format!("stdin.{}", stdin_extension(&text)));
        std::fs::write(&file, &text)?;
        let mut paths = paths.to_vec();
        paths[at] = file.clone();
        let rename = |loc: &mut toolrag::registry::Location| {
            if loc.file == file {
                loc.file = PathBuf::from(STDIN_NAME);
            }
        };
        let rename_error = |e: toolrag::Error| match e {
            toolrag::Error::Load(mut errors) => {
                for e in &mut errors.0 {
                    rename(&mut e.location);
                }
                toolrag::Error::Load(errors)
            }
            other => other,
        };
        let registry = toolrag::Registry::load(&paths, &opts)
            .map_err(rename_error)
            .map_err(limit_hint)?;
        let mut tools = registry.into_tools();
        for t in &mut tools {
            rename(&mut t.source.location);
            t.source.spans.values_mut().for_each(rename);
        }
        Ok(toolrag::Registry::from_tools(tools).map_err(rename_error)?)
    }
}

/// Says how to raise a limit the registry went over, the command line's way
/// (the library's message names the limit only).
fn limit_hint(e: toolrag::Error) -> toolrag::Error {
    match e {
        toolrag::Error::Load(mut errors) => {
            for e in &mut errors.0 {
                if let Some(name) = e.limit {
                    e.message
                        .push_str(&format!(" (raise it with --limit {name}=N)"));
                }
            }
            toolrag::Error::Load(errors)
        }
        other => other,
    }
}

/// The extension the loader needs for a registry read from standard input:
/// `json` for one JSON document (a `tools/list` result, an OpenAI tools
/// array), `jsonl` for JSON objects one per line, otherwise `toml`.
fn stdin_extension(text: &str) -> &'static str {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return "toml";
    }
    match serde_json::from_str::<serde_json::Value>(t) {
        Ok(serde_json::Value::Array(_)) => "json",
        Ok(serde_json::Value::Object(o)) if o.contains_key("tools") => "json",
        _ => "jsonl",
    }
}

/// The value parser of a `--mode` (or `--modes`) argument: the names of
/// [`toolrag::Mode::NAMES`], shown as possible values, read as a `Mode`.
pub fn mode_parser() -> impl clap::builder::TypedValueParser<Value = toolrag::Mode> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(toolrag::Mode::NAMES)
        .map(|m| m.parse::<toolrag::Mode>().unwrap_or_default())
}

/// Options that choose the embedding model.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The embedding model: a shipped one by name (minilm, minilm-tools), or
    /// a folder holding model.onnx and its tokenizer files [default: the
    /// `[model]` table of toolrag.toml, else minilm-tools]
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// The models folder, where the shipped models are looked for (or the
    /// chosen model's own folder, e.g. models/minilm-tools). Default:
    /// for an index, the model folder it was built with, then next to the
    /// executable, the user's data folder, $TOOLRAG_MODEL_DIR and ./models;
    /// otherwise $TOOLRAG_MODEL_DIR, ./models, next to the executable and the
    /// user's data folder.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// The `[model]` table of the configuration, set by the command after it
    /// reads toolrag.toml ([`ModelArgs::configure`]).
    #[arg(skip)]
    pub config: toolrag::embed::ModelConfig,
}

impl ModelArgs {
    /// The embedder for building an index, loaded by the build when it needs
    /// it (after the registry is indexed and released). No model at all is
    /// not an error: the build falls back to lexical-only and says how to get
    /// one.
    pub fn model_for_build(&self) -> anyhow::Result<Option<toolrag::index::BuildModel<'static>>> {
        let need = model::Need::Optional("building a lexical-only index");
        Ok(self.locate(need)?.map(toolrag::app::deferred_model))
    }
}

/// `toolrag.toml`, read and checked by the library's one loader, with the
/// gateway's table: every command loads it this way.
pub use config::Config;

/// `n` and the noun, singular for one: "1 tool", "2 tools".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Output format for listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A readable table.
    Text,
    /// A JSON array.
    Json,
}

/// The command line as clap sees it, with every command's examples moved to
/// the end of its long help: a doc comment's `Examples:` paragraph (and
/// what follows it) becomes the `after_long_help`, so `toolrag <command>
/// --help` always ends with examples, whatever the declaration. The parser,
/// the completions and the man page all use it.
pub fn command() -> clap::Command {
    examples_last(<Cli as clap::CommandFactory>::command())
}

/// Parses `args` (the first is the program name) with [`command`]. On
/// `--help`, `--version` or a usage error, prints what clap prints and returns
/// its exit status instead.
pub fn parse_from<I, T>(args: I) -> Result<Cli, u8>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let parsed = command()
        .try_get_matches_from(args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    parsed.map_err(|e| {
        // A closed pipe while printing the help is not worth a word.
        let _ = e.print();
        u8::try_from(e.exit_code()).unwrap_or(2)
    })
}

fn examples_last(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_subcommands(examples_last);
    let Some(long) = cmd.get_long_about().map(|s| s.to_string()) else {
        return cmd;
    };
    let at = ["\n\nExamples:", "\n\nExample:"]
        .iter()
        .filter_map(|m| long.find(m))
        .min();
    let Some(at) = at else { return cmd };
    let (about, examples) = long.split_at(at);
    let examples = examples.trim().to_string();
    let after = match cmd.get_after_long_help().map(|s| s.to_string()) {
        Some(existing) => format!("{existing}\n\n{examples}"),
        None => examples,
    };
    cmd.long_about(about.trim_end().to_string())
        .after_long_help(after)
}

/// Runs the parsed command line; the exit code is the command's own.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Tools(cmd) => tools::run(cmd),
        Command::Index(args) => index::run(args),
        Command::Learn(args) => learn::run(args),
        Command::Query(args) => query::run(args),
        Command::Resolve(args) => resolve::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Rule(args) => rule::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Completions(args) => completions::run_completions(args),
        Command::Man(args) => completions::run_man(args),
    }
}
