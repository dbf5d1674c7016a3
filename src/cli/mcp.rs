//! `toolrag mcp`: an MCP server on stdio with `search_tools` and `get_tool`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;
use toolrag::mcp::McpServer;
use toolrag::serve::RELOAD_POLL;

use super::{Config, ModelArgs};

/// Serve the index to MCP clients over stdio (JSON-RPC, protocol 2025-06-18 and newer).
///
/// Two tools: `search_tools` (query, and optional k, namespace, readOnly) returns
/// the Khipu candidate set as structured content and as text; `get_tool`
/// resolves a handle to the tool's full card. The index is followed across
/// rebuilds, as with `toolrag serve`. Logs go to stderr; stdout carries only
/// the protocol.
///
/// Client configuration (Claude Desktop, Cursor and others):
///   {"mcpServers": {"toolrag": {"command": "toolrag",
///     "args": ["mcp", "--index", "/abs/path/to/index"]}}}
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The index folder.
    #[arg(long, default_value = "index", value_name = "DIR")]
    index: PathBuf,
    /// The config file (default: ./toolrag.toml when present).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(mut args: McpArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config.as_deref())?;
    args.model.configure(&config);
    let live = Arc::new(super::serve::open_live(
        &args.index,
        &args.model,
        config.search,
    )?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
