//! `toolrag mcp`: an MCP server on stdio with `search_tools` and `get_tool`,
//! or, with `--upstream`, the gateway in front of other MCP servers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;
use toolrag::mcp::gateway::{Gateway, GatewayOptions, GatewayServer};
use toolrag::mcp::upstream::McpConfig;
use toolrag::mcp::McpServer;
use toolrag::serve::RELOAD_POLL;

use super::model::Need;
use super::{plural, Config, ModelArgs};

/// Serve the index to MCP clients over stdio, or be a gateway in front of
/// your MCP servers (JSON-RPC, protocol 2025-06-18 and newer).
///
/// Without --upstream: two tools over the index in --index. `search_tools`
/// (query, and optional k, namespace, readOnly) returns the Khipu candidate
/// set as structured content; `get_tool` resolves a handle to the tool's full
/// card. The index is followed across rebuilds, as with `toolrag serve`.
///
/// With --upstream FILE (a Claude Desktop, Cursor or VS Code MCP
/// configuration): toolrag starts or connects to every server in it, keeps
/// the sessions open, indexes their tools in --index (built on start when
/// missing or stale; only new texts are embedded) and offers three tools:
/// `search_tools`, `get_tool` and `call_tool` ({handle, arguments}), which
/// checks the arguments against the tool's input schema and forwards the
/// call to the server that owns the tool. Around each call:
///   - a tool whose description addresses the model (tool poisoning,
///     lint rule hidden-instructions) is quarantined: not searchable, not
///     callable; `--check` lists such tools and exits 1;
///   - each definition is pinned in a lock file beside the index the first
///     time it is seen; one that changes later (a "rug pull") is
///     quarantined until a person runs `--accept <server/tool>`;
///   - a tool that needs approval (destructive, may be destructive, or
///     open world and not idempotent) asks the person through MCP
///     elicitation; a client without elicitation gets a refusal naming
///     the `[gateway] allow` entry that would permit it;
///   - every decision is appended to an audit log (JSON Lines) beside the
///     index; results that address the model are marked as data (or
///     withheld, with `[gateway] output-guard = "block"`).
///
/// A server that sends notifications/tools/list_changed is listed again and
/// the index rebuilt in the background; servers are re-listed every
/// `[gateway] relist-seconds` (default 300) too, and restarted when they die.
///
/// Logs go to stderr; stdout carries only the protocol.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// The index folder (with --upstream: where the upstream tools are indexed).
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// The config file (default: ./toolrag.toml when present); its [gateway]
    /// table holds the gateway's allow-list, output guard and intervals.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Be a gateway in front of the MCP servers of this configuration file
    /// (`mcpServers` of Claude Desktop or Cursor, `servers` of VS Code).
    #[arg(long, value_name = "FILE")]
    upstream: Option<PathBuf>,
    /// With --upstream: list the servers' tools, print the quarantined ones
    /// with their findings, and exit (1 when any tool is quarantined or a
    /// server failed). Pins nothing.
    #[arg(long, requires = "upstream")]
    check: bool,
    /// With --upstream: accept the current definition of this tool
    /// (<server>/<tool>) or of every tool of this server, pin it in the lock
    /// file, and exit. Repeat it for several.
    #[arg(long, requires = "upstream", value_name = "ID")]
    accept: Vec<String>,
    /// Seconds each upstream server has to start, initialise and list its tools.
    #[arg(long, value_name = "SECS", default_value_t = 30.0,
          value_parser = super::index::parse_seconds)]
    mcp_timeout: f64,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(mut args: McpArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    if let Some(upstream) = args.upstream.clone() {
        return gateway(args, config, upstream);
    }
    let live = Arc::new(super::serve::open_live(
        &args.index,
        &args.model,
        config.search,
    )?);
    let rt = runtime()?;
    let result = rt.block_on(async move {
        let watcher = live.clone().watch(RELOAD_POLL);
        let service = McpServer::new(live)
            .with_pinned(config.pinned)
            .serve(toolrag::mcp::jsonrpc::stdio())
            .await
            .context("the MCP handshake failed")?;
        let result = service.waiting().await;
        drop(watcher);
        result.context("the MCP server failed")?;
        anyhow::Ok(())
    });
    // stdin may still have a pending read that cannot be cancelled; do not
    // wait for it.
    rt.shutdown_background();
    result.map(|()| ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn gateway(args: McpArgs, config: Config, upstream: PathBuf) -> anyhow::Result<ExitCode> {
    let mcp_config = McpConfig::load(&upstream)?;
    for name in &mcp_config.disabled {
        tracing::info!(
            "{}: server `{name}` is disabled, skipped",
            upstream.display()
        );
    }
    if mcp_config.servers.is_empty() {
        anyhow::bail!(
            "{}: no enabled server to put a gateway in front of",
            upstream.display()
        );
    }
    let mut opts = GatewayOptions::new(args.index.clone(), config.gateway.clone());
    opts.search = config.search;
    opts.pinned = config.pinned.clone();
    opts.boosts = config.index.boosts.unwrap_or_default();
    opts.thresholds = config.lint.thresholds.clone();
    opts.connect_timeout = Duration::from_secs_f64(args.mcp_timeout);
    let only_lock = args.check || !args.accept.is_empty();
    let embedder: Option<Arc<dyn toolrag::embed::Embedder>> = if only_lock {
        None
    } else {
        let sessions = std::thread::available_parallelism().map_or(2, |n| n.get());
        match args
            .model
            .query_embedder(Need::Optional("indexing and serving BM25 only"), sessions)?
        {
            Some(e) => {
                e.warm_up()?;
                Some(Arc::new(e))
            }
            None => None,
        }
    };
    let rt = runtime()?;
    let result = rt.block_on(async move {
        let (gw, changes) = Gateway::connect(&mcp_config, opts, embedder).await?;
        if args.check {
            let quarantined = gw.check().await;
            let failed = gw.failed_servers();
            for q in &quarantined {
                println!("quarantined {}", q.id);
                for r in &q.reasons {
                    println!("  {r}");
                }
            }
            for f in &failed {
                println!("failed server {f}");
            }
            println!(
                "{} quarantined, {} failed",
                plural(quarantined.len(), "tool", "tools"),
                plural(failed.len(), "server", "servers")
            );
            gw.shutdown().await;
            return anyhow::Ok(if quarantined.is_empty() && failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
        if !args.accept.is_empty() {
            let accepted = gw.accept(&args.accept).await;
            gw.shutdown().await;
            let accepted = accepted?;
            if accepted.is_empty() {
                eprintln!(
                    "toolrag: nothing to accept: the definitions are already the pinned ones"
                );
            }
            for id in accepted {
                println!("accepted {id}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        let report = gw.open_index().await?;
        match &report.build {
            Some(b) => tracing::info!("index {}: {b}", args.index.display()),
            None => tracing::info!("index {} is up to date", args.index.display()),
        }
        let background = tokio::spawn(gw.clone().run_background(changes));
        let watcher = gw.live().clone().watch(RELOAD_POLL);
        let service = GatewayServer::new(gw.clone())
            .serve(toolrag::mcp::jsonrpc::stdio())
            .await
            .context("the MCP handshake failed")?;
        let result = service.waiting().await;
        background.abort();
        drop(watcher);
        gw.shutdown().await;
        result.context("the MCP server failed")?;
        Ok(ExitCode::SUCCESS)
    });
    rt.shutdown_background();
    result
}
