//! `toolrag tools list|show`: inspect a registry.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use super::table::{write_table, Column};
use super::{plural, ListFormat, RegistryArgs};

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List every tool: id, namespace and one-line summary.
    ///
    /// Examples:
    ///   toolrag tools list
    ///   toolrag tools list my-tools.jsonl --format json
    ///   toolrag tools list - < tests/fixtures/mcp-reference/git.json
    #[command(verbatim_doc_comment)]
    List {
        /// Registry files or folders (default: tools/).
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Show one tool, normalised, as JSON (the same shape for every source format).
    ///
    /// `learnt` lists the requests `toolrag learn` learnt for it from use, read
    /// from the index folder (--index, default index/). With --index and no
    /// registry path, the tool is read from that index, as it was indexed: the
    /// way to see a gateway's upstream tools.
    ///
    /// Examples:
    ///   toolrag tools show filesystem/read_text_file
    ///   toolrag tools show everything/echo - < tests/fixtures/mcp-reference/everything.json
    ///   toolrag tools show git/git_log --index gw
    #[command(verbatim_doc_comment)]
    Show {
        /// The tool id (a `tool://` handle is accepted).
        id: String,
        /// Registry files or folders (default: tools/).
        paths: Vec<PathBuf>,
        /// The index folder whose learnt requests to show.
        #[arg(long, value_name = "DIR")]
        index: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

pub fn run(cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cmd {
        ToolsCommand::List {
            paths,
            format,
            registry,
        } => {
            let reg = registry.load(&paths)?;
            match format {
                ListFormat::Json => {
                    let rows: Vec<serde_json::Value> = reg
                        .tools()
                        .iter()
                        .map(|t| {
                            serde_json::json!({
                                "id": t.id, "name": t.name, "namespace": t.namespace, "summary": t.summary,
                            })
                        })
                        .collect();
                    serde_json::to_writer_pretty(&mut out, &rows)?;
                    writeln!(out)?;
                }
                ListFormat::Text => {
                    let columns = [
                        Column::left("ID").within(2, 48),
                        Column::left("NAMESPACE").within(9, 24),
                        Column::left("SUMMARY"),
                    ];
                    let rows: Vec<Vec<String>> = reg
                        .tools()
                        .iter()
                        .map(|t| vec![t.id.clone(), t.namespace.clone(), t.summary.clone()])
                        .collect();
                    write_table(&mut out, &columns, "  ", &rows)?;
                    writeln!(
                        out,
                        "{} in {}",
                        plural(reg.len(), "tool", "tools"),
                        plural(reg.namespaces().len(), "namespace", "namespaces")
                    )?;
                }
            }
        }
        ToolsCommand::Show {
            id,
            paths,
            index,
            registry,
        } => {
            let from_index = index.is_some() && paths.is_empty();
            let folder = index.unwrap_or_else(|| PathBuf::from("index"));
            let (reg, place) = if from_index {
                let gen = toolrag::index::current_generation(&folder)?;
                let tools = toolrag::index::read_tools(&gen)?;
                let place = format!("the index {}", folder.display());
                (toolrag::Registry::from_tools(tools)?, place)
            } else {
                (registry.load(&paths)?, "the registry".to_string())
            };
            let mut tool = reg
                .get(&id)
                .with_context(|| {
                    format!("no tool with id `{id}` in {place} ({} tools)", reg.len())
                })?
                .clone();
            if !from_index {
                tool.learnt = toolrag::learn::Learnt::read(&folder)?.requests_for(&tool);
            }
            serde_json::to_writer_pretty(&mut out, &tool)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
