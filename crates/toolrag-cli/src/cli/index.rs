//! `toolrag index`: build the on-disk index of a registry.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use toolrag::registry::ToolDef;
use toolrag_mcp::upstream::{self, McpConfig};

use crate::progress::TerminalProgress;

use super::{ModelArgs, RegistryArgs};

/// Build (or incrementally rebuild) the index of a tool registry.
///
/// The index holds BM25 fields (tantivy) and dense vectors (one per tool and
/// one per example request; above 300,000 of them, in an HNSW graph too). A
/// rebuild embeds only new and changed texts, and the new index is swapped in
/// atomically: a killed build leaves the previous index intact.
///
/// With --mcp-config, the tools come from live MCP servers too: those of a
/// Claude Desktop or Cursor configuration (`mcpServers`) or a VS Code one
/// (`servers`), stdio (`command`, `args`, `env`, `cwd`) or streamable HTTP
/// (`url`, `headers`). Each server is started or connected to, initialised
/// and asked for every page of `tools/list`; its tools are indexed as
/// <server>/<tool>, exactly as if its `tools/list` had been saved to a file
/// <server>.json. A server that fails or does not answer within --mcp-timeout
/// is reported by name with the end of its stderr; the others are indexed
/// (the failed server's tools are not in the new index).
///
/// Exit status: 0 when everything was indexed; 1 when some MCP server failed
/// or listed an invalid tool (the rest is indexed); 2 on an error, when
/// nothing was built (a bad registry file or configuration file).
///
/// Examples:
///   toolrag index                                   # tools/ -> index/
///   toolrag index my-tools.jsonl --out /tmp/my-index
///   toolrag index --lexical-only                    # BM25 only, no model needed
///   toolrag index --mcp-config ~/.config/Claude/claude_desktop_config.json
///   toolrag index tools/ --mcp-config .vscode/mcp.json --mcp-timeout 60
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct IndexArgs {
    /// Registry files or folders (default: tools/, unless --mcp-config is given).
    paths: Vec<PathBuf>,
    /// An MCP client configuration whose servers to index (Claude Desktop's
    /// claude_desktop_config.json, Cursor's .cursor/mcp.json, VS Code's
    /// .vscode/mcp.json). Repeat it for several files.
    #[arg(long, value_name = "FILE")]
    mcp_config: Vec<PathBuf>,
    /// Seconds each MCP server has to start, initialise and list its tools.
    #[arg(long, value_name = "SECS", default_value_t = 30.0,
          value_parser = parse_seconds)]
    mcp_timeout: f64,
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

pub(super) fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "expected seconds above 0 (at most a day), found `{s}`"
        )),
    }
}

pub fn run(mut args: IndexArgs) -> anyhow::Result<ExitCode> {
    let config = super::Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let mcp_configs = args
        .mcp_config
        .iter()
        .map(|p| McpConfig::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut registry = if args.paths.is_empty() && !mcp_configs.is_empty() {
        toolrag::Registry::default()
    } else {
        args.registry.load(&args.paths)?
    };
    let mut some_failed = false;
    if !mcp_configs.is_empty() {
        let timeout = Duration::from_secs_f64(args.mcp_timeout);
        let (live, failed) = live_tools(&mcp_configs, timeout)?;
        some_failed = failed;
        let mut tools = registry.into_tools();
        tools.extend(live);
        registry = toolrag::Registry::from_tools(tools)?;
        if registry.is_empty() && some_failed {
            eprintln!("toolrag: nothing to index: every MCP server failed (see above)");
            return Ok(ExitCode::from(1));
        }
        if registry.is_empty() {
            anyhow::bail!("nothing to index: the MCP servers list no tools");
        }
    }
    let embedder = if args.lexical_only {
        None
    } else {
        args.model.model_for_build()?
    };
    let mut opts = toolrag::app::build_options(args.out.clone(), &config);
    opts.fail_point = Some(fail_point);
    let report = toolrag::app::build(registry, embedder, &opts, &TerminalProgress::on_terminal())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!("{report}");
    }
    if some_failed {
        eprintln!("toolrag: some MCP servers failed (see above); the others are indexed");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The tools of every server of `configs`, fetched at once, and whether any
/// server failed or listed an invalid tool (each reported on stderr).
fn live_tools(configs: &[McpConfig], timeout: Duration) -> anyhow::Result<(Vec<ToolDef>, bool)> {
    let servers: Vec<_> = configs.iter().flat_map(|c| c.servers.clone()).collect();
    for c in configs {
        for name in &c.disabled {
            eprintln!(
                "note: {}: server `{name}` is disabled, skipped",
                c.path.display()
            );
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let results = rt.block_on(upstream::fetch_all(&servers, timeout));
    rt.shutdown_timeout(Duration::from_secs(1));
    let mut tools = Vec::new();
    let mut failed = false;
    for result in results {
        match result {
            Ok(listed) => {
                let (defs, errors) = listed.normalise();
                let from = listed
                    .server_info
                    .as_ref()
                    .map(|i| format!(" ({} {})", i.name, i.version))
                    .unwrap_or_default();
                eprintln!(
                    "server `{}`{from}: {} tools",
                    listed.server.name,
                    defs.len()
                );
                for e in &errors {
                    eprintln!(
                        "toolrag: server `{}` listed an invalid tool, left out: {}",
                        listed.server.name, e.message
                    );
                }
                failed |= !errors.is_empty();
                tools.extend(defs);
            }
            Err(failure) => {
                eprintln!("toolrag: {failure}");
                failed = true;
            }
        }
    }
    Ok((tools, failed))
}

/// Test hook: `TOOLRAG_FAIL_AT=<name>` aborts the process at the build's
/// fail point `name`, as a `kill -9` would, so the killed-build test is
/// deterministic.
fn fail_point(name: &str) {
    if std::env::var("TOOLRAG_FAIL_AT").is_ok_and(|v| v == name) {
        std::process::abort();
    }
}
