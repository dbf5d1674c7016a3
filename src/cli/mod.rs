//! Command-line parsing (clap derive) and dispatch to one module per subcommand.

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
    }
}
