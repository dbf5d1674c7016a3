//! Command-line parsing (clap derive) and dispatch to one module per subcommand.

mod eval;
mod gate;
mod index;
mod lint;
mod mcp;
mod model;
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

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect a tool registry: list its tools or show one, normalised.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    Index(index::IndexArgs),
    Query(query::QueryArgs),
    Resolve(resolve::ResolveArgs),
    /// Lint tool docstrings: examples, edge cases, formats, paths, boundaries, poisoning.
    Lint(lint::LintArgs),
    /// Explain a lint rule (by code or name), or list every rule.
    Rule(rule::RuleArgs),
    /// Serve the index over HTTP: search, batch, tool cards, health, metrics, hot reload.
    Serve(serve::ServeArgs),
    /// Serve the index to MCP clients over stdio: the search_tools and get_tool tools.
    Mcp(mcp::McpArgs),
    /// Check a Khipu plan: schema, groundedness, decision logic, approvals.
    Gate(gate::GateArgs),
    /// Measure retrieval quality on labelled queries: recall, nDCG, MRR, abstain, latency.
    Eval(eval::EvalArgs),
}

/// Options shared by every command that reads a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Namespace for MCP, OpenAI and JSONL files (default: the file stem).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

impl RegistryArgs {
    /// Loads the registry at `paths` (default `tools/`).
    pub fn load(&self, paths: &[PathBuf]) -> anyhow::Result<toolrag::Registry> {
        let default = [PathBuf::from("tools")];
        let paths = if paths.is_empty() {
            &default[..]
        } else {
            paths
        };
        let opts = toolrag::registry::LoadOptions {
            namespace: self.namespace.clone(),
        };
        Ok(toolrag::Registry::load(paths, &opts)?)
    }
}

/// Options that choose the embedding model.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The embedding model: a shipped one by name (minilm, minilm-tools), or
    /// a folder holding model.onnx and its tokenizer files [default: the
    /// `[model]` table of toolrag.toml, else minilm]
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// The models folder, where the shipped models are looked for (default:
    /// $TOOLRAG_MODEL_DIR, then ./models).
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
        use toolrag::embed::{Embedder, FastEmbedder};
        let need = model::Need::Optional("building a lexical-only index");
        let Some(dir) = self.locate(need)? else {
            return Ok(None);
        };
        let opts = model::embed_options(model::one_session_per_core());
        Ok(Some(toolrag::index::BuildModel::Deferred(Box::new(
            move || FastEmbedder::load(&dir, &opts).map(|e| Box::new(e) as Box<dyn Embedder>),
        ))))
    }
}

/// `toolrag.toml`, read and checked by the library's one loader
/// ([`toolrag::config::Config::load`]): every command loads it this way.
pub use toolrag::config::Config;

/// Output format for listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A readable table.
    Text,
    /// A JSON array.
    Json,
}

/// Runs the parsed command line; the exit code is the command's own.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Tools(cmd) => tools::run(cmd),
        Command::Index(args) => index::run(args),
        Command::Query(args) => query::run(args),
        Command::Resolve(args) => resolve::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Rule(args) => rule::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Eval(args) => eval::run(args),
    }
}
