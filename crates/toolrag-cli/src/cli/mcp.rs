//! `toolrag mcp`: an MCP server on stdio with `search_tools` and `get_tool`,
//! or, with `--upstream`, the gateway in front of other MCP servers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;
use toolrag::serve::RELOAD_POLL;
use toolrag_auth::{Authenticator, OAuthConfig, OAuthVerifier, StaticTokens};
use toolrag_gateway::{Gateway, GatewayOptions, GatewayServer};
use toolrag_mcp::sessions::ForeignSessionHook;
use toolrag_mcp::shared::SharedState;
use toolrag_mcp::streamable_http::HttpOptions;
use toolrag_mcp::upstream::McpConfig;
use toolrag_mcp::McpServer;

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
    http: HttpArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Serve BM25 only, even when the index was built with the model: without
    /// this flag, an index with vectors whose model cannot be found is an
    /// error, not a silent fall back to BM25.
    #[arg(long)]
    lexical_only: bool,
}

/// Serving over streamable HTTP, for a team.
#[derive(Debug, Args)]
#[command(next_help_heading = "Streamable HTTP")]
struct HttpArgs {
    /// Serve MCP over streamable HTTP on this address instead of stdio,
    /// endpoint /mcp: e.g. 127.0.0.1:8765 (port 0: any free port; the
    /// address is logged). An address other than loopback needs
    /// --auth-tokens or --oauth-issuer.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Accept these static bearer tokens: a file with one `name:token` a
    /// line, or `name:sha256:<hex of the token's SHA-256>`. The name is the
    /// principal that [[gateway.policy]] and the audit log know. The file
    /// is read again when it changes and on SIGHUP: a token taken out is
    /// refused from then on, without a restart (a file that is not well
    /// formed keeps the tokens in force, and the error is logged).
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_tokens: Option<PathBuf>,
    /// Accept OAuth 2.1 access tokens (JWTs) from this authorization server
    /// (its issuer URL), for the audience --public-url. The protected
    /// resource metadata is served at /.well-known/oauth-protected-resource.
    #[arg(long, value_name = "URL", requires = "http")]
    oauth_issuer: Option<String>,
    /// A scope every OAuth token must carry; repeat for several.
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scopes: Vec<String>,
    /// The claim of an OAuth token that holds its groups (for
    /// "group:<value>" in [[gateway.policy]]).
    #[arg(
        long,
        value_name = "CLAIM",
        default_value = "groups",
        requires = "oauth_issuer"
    )]
    oauth_group_claim: String,
    /// The URL clients use for the endpoint, when it is not
    /// http://ADDR/mcp (behind a proxy, say): the audience of OAuth tokens
    /// and the resource of the metadata.
    #[arg(long, value_name = "URL", requires = "http")]
    public_url: Option<String>,
    /// A browser origin allowed to call, e.g. https://app.example.com;
    /// repeat for several. A request with any other Origin header is
    /// refused (against DNS rebinding); clients that are not browsers send
    /// none.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// How many requests a minute each caller may send; over it, 429 with
    /// Retry-After. Per-tool limits of the gateway are in
    /// [gateway.tool-calls-per-minute].
    #[arg(long, value_name = "N", requires = "http")]
    requests_per_minute: Option<std::num::NonZeroU32>,
}

impl HttpArgs {
    /// The front end's options, with the credentials loaded and the session
    /// limits of `gateway`; refuses to expose an unauthenticated server
    /// beyond loopback.
    fn options(
        &self,
        addr: std::net::SocketAddr,
        gateway: &toolrag_gateway::GatewayConfig,
    ) -> anyhow::Result<HttpOptions> {
        let tokens = match &self.auth_tokens {
            Some(path) => {
                let t = StaticTokens::load(path)?;
                if t.is_empty() {
                    anyhow::bail!("{}: no token in the file", path.display());
                }
                Some(t)
            }
            None => None,
        };
        let public_url = self
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}{}", toolrag_mcp::streamable_http::ENDPOINT));
        let oauth = match &self.oauth_issuer {
            Some(issuer) => {
                let mut c = OAuthConfig::new(issuer.clone(), public_url.clone());
                c.required_scopes = self.oauth_scopes.clone();
                c.group_claim = self.oauth_group_claim.clone();
                c.validate()?;
                Some(OAuthVerifier::new(c)?)
            }
            None => None,
        };
        let auth = Authenticator::new(tokens, oauth);
        if !auth.is_configured() && !addr.ip().is_loopback() {
            anyhow::bail!(
                "--http {addr} is not a loopback address, and no authentication is set: anyone \
                 who can reach it could call your tools. Add --auth-tokens FILE or \
                 --oauth-issuer URL, or bind 127.0.0.1"
            );
        }
        let mut opts = HttpOptions::default();
        opts.auth = Arc::new(auth);
        opts.public_url = self.public_url.clone();
        opts.allowed_origins = self.allow_origins.clone();
        opts.requests_per_minute = self.requests_per_minute;
        opts.sessions = gateway.session_limits();
        Ok(opts)
    }
}

/// Serves `factory`'s handlers over streamable HTTP on `addr` until Ctrl-C
/// or SIGTERM, with the session limits of `gateway`; `audit` is told of
/// requests on another principal's session.
async fn serve_http<S, F>(
    addr: std::net::SocketAddr,
    http: &HttpArgs,
    gateway: &toolrag_gateway::GatewayConfig,
    audit: Option<ForeignSessionHook>,
    shared: SharedState,
    factory: F,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    // The options after the bind, so that `--http 127.0.0.1:0` puts the port
    // it got, not 0, in the resource URL (the tokens' audience).
    let mut opts = http.options(bound, gateway)?;
    opts.on_foreign_session = audit;
    opts.shared = shared;
    eprintln!(
        "toolrag: MCP over streamable HTTP on http://{bound}{} ({})",
        toolrag_mcp::streamable_http::ENDPOINT,
        match (&opts.auth.tokens, &opts.auth.oauth) {
            (Some(_), Some(_)) => "static tokens and OAuth",
            (Some(_), None) => "static tokens",
            (None, Some(_)) => "OAuth",
            (None, None) => "no authentication: loopback only",
        }
    );
    let reloader = opts
        .auth
        .is_configured()
        .then(|| reloader(&opts.auth, opts.shared.clone()).spawn());
    let served = toolrag_mcp::streamable_http::serve(
        listener,
        factory,
        opts,
        super::serve::shutdown_signal(),
    )
    .await
    .context("the HTTP server failed");
    if let Some(r) = reloader {
        r.abort();
    }
    served
}

/// How long a token taken out of one replica's tokens file stays refused by
/// every replica that shares its state: long enough for every replica's copy
/// of the file (a Kubernetes Secret is updated within a minute or two) to
/// lose it too, short enough that a token put back on purpose works again
/// within the hour.
const REVOKED_FOR: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// Reads the tokens file again when it changes and on SIGHUP (and the OAuth
/// keys on SIGHUP), so that a token taken out of the file is refused from
/// the next request on; each removed token is logged, and revoked in the
/// shared state, so that replicas whose file still has it refuse it too.
fn reloader(auth: &Arc<Authenticator>, shared: SharedState) -> toolrag_auth::Reloader {
    toolrag_auth::Reloader::new(auth.clone()).on_removed(move |removed| {
        for t in removed {
            tracing::warn!(
                token = %t.name,
                sha256 = %t.sha256_hex(),
                "a token is no longer in the tokens file: it is refused from now on"
            );
            let (shared, hash, name) = (shared.clone(), t.sha256_hex(), t.name.clone());
            tokio::spawn(async move {
                if let Err(e) = shared.revoke(&hash, REVOKED_FOR).await {
                    tracing::error!(
                        token = %name,
                        "cannot revoke the token on the other replicas ({e}); each refuses it \
                         once its own tokens file no longer has it"
                    );
                }
            });
        }
    })
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
        args.lexical_only,
    )?);
    let rt = runtime()?;
    if let Some(addr) = args.http.http {
        let result = rt.block_on(async move {
            let watcher = live.clone().watch(RELOAD_POLL);
            let server = McpServer::new(live).with_pinned(config.pinned.clone());
            let shared = config.gateway.shared_state()?;
            let served = serve_http(addr, &args.http, &config.gateway, None, shared, move || {
                server.clone()
            })
            .await;
            drop(watcher);
            served
        });
        rt.shutdown_timeout(Duration::from_secs(2));
        return result.map(|()| ExitCode::SUCCESS);
    }
    let result = rt.block_on(async move {
        let watcher = live.clone().watch(RELOAD_POLL);
        let service = McpServer::new(live)
            .with_pinned(config.pinned.clone())
            .serve(toolrag_mcp::jsonrpc::stdio())
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

/// `--check`: lints every upstream tool, prints the quarantined ones and the
/// servers that failed; exit 1 when there is any.
async fn check(gw: &Gateway) -> anyhow::Result<ExitCode> {
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
    Ok(if quarantined.is_empty() && failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--accept ID...`: pins the current definitions of the named tools.
async fn accept(gw: &Gateway, ids: &[String]) -> anyhow::Result<ExitCode> {
    let accepted = gw.accept(ids).await;
    gw.shutdown().await;
    let accepted = accepted?;
    if accepted.is_empty() {
        eprintln!("toolrag: nothing to accept: the definitions are already the pinned ones");
    }
    for id in accepted {
        println!("accepted {id}");
    }
    Ok(ExitCode::SUCCESS)
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
    let settings = config.gateway.clone();
    let mut opts = GatewayOptions::new(args.index.clone(), config.gateway.clone());
    let shared_settings = config.gateway.clone();
    opts.search = config.search;
    opts.pinned = config.pinned.clone();
    opts.boosts = config.index.boosts.unwrap_or_default();
    opts.thresholds = config.lint.thresholds.clone();
    opts.connect_timeout = Duration::from_secs_f64(args.mcp_timeout);
    let only_lock = args.check || !args.accept.is_empty();
    let embedder: Option<Arc<dyn toolrag::embed::Embedder>> = if only_lock {
        None
    } else {
        super::serve::serving_embedder(
            &args.index,
            &args.model,
            args.lexical_only,
            "indexing and serving BM25 only",
        )?
    };
    let rt = runtime()?;
    let result = rt.block_on(async move {
        // Lazy: a Redis that is down makes the gateway degraded, not unable
        // to start.
        let shared = shared_settings.shared_state()?;
        if let Err(e) = shared.ready().await {
            tracing::warn!(
                "the shared state is degraded (approvals are refused until it answers): {e}"
            );
        }
        opts.shared = shared.clone();
        let (gw, changes) = Gateway::connect(&mcp_config, opts, embedder).await?;
        if args.check {
            return check(&gw).await;
        }
        if !args.accept.is_empty() {
            return accept(&gw, &args.accept).await;
        }
        let report = gw.open_index().await?;
        match &report.build {
            Some(b) => tracing::info!("index {}: {b}", args.index.display()),
            None => tracing::info!("index {} is up to date", args.index.display()),
        }
        let background = tokio::spawn(gw.clone().run_background(changes));
        let watcher = gw.live().clone().watch(RELOAD_POLL);
        if let Some(addr) = args.http.http {
            gw.open_approval_states()?;
            let server = GatewayServer::new(gw.clone());
            let audit = gw.clone();
            let audit = ForeignSessionHook::new(move |e| audit.audit_foreign_session(e));
            let served = serve_http(
                addr,
                &args.http,
                &settings,
                Some(audit),
                shared,
                move || server.clone(),
            )
            .await;
            background.abort();
            drop(watcher);
            gw.shutdown().await;
            served?;
            return Ok(ExitCode::SUCCESS);
        }
        let service = GatewayServer::new(gw.clone())
            .serve(toolrag_mcp::jsonrpc::stdio())
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
