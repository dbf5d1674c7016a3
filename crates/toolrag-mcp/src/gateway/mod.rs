//! The gateway: one MCP server in front of the configured ones
//! (`toolrag mcp --upstream FILE`).
//!
//! It keeps a client session open to every upstream server of an MCP
//! configuration ([`super::upstream`]), lists their tools and indexes them in
//! an index folder as `toolrag index --mcp-config` would, and offers three
//! tools: `search_tools` (the candidate set), `get_tool` (a tool's card) and
//! `call_tool` (forward a call to the server that owns the tool).
//!
//! Between the model and the servers it keeps the guards of the design
//! notes' "guard sandwich":
//! - **input guardrail**: every listed tool is linted with
//!   `hidden-instructions` (TR010); a poisoned one is quarantined: not
//!   indexed, not callable, and listed by [`Gateway::quarantined`];
//! - **definition pinning** ([`pins`]): a definition that changed since it was
//!   first seen is quarantined until a person accepts it
//!   ([`Gateway::accept`]);
//! - **approval** before an act that needs it (the gate's rule,
//!   [`toolrag_gate::approval_reasons`]): the person is asked through MCP
//!   elicitation; a client that cannot ask gets a refusal that says how to
//!   allow the tool in `[gateway] allow`. Every decision goes to the audit log
//!   ([`audit`]) before the call goes out;
//! - **arguments** are checked against the tool's input schema, so the model
//!   gets a clear error rather than the server's failure;
//! - **output guard** ([`guard`]): results are scanned with the
//!   `hidden-instructions` detectors and, by policy, marked as data or
//!   withheld.
//!
//! Freshness: a `notifications/tools/list_changed` from a server, a restart
//! of a server that died, and the re-listing interval all lead to
//! [`Gateway::resync`], which lists again, rebuilds the index incrementally
//! (only new texts are embedded) and swaps the new generation in; searches
//! and calls meanwhile go on against the old one.

pub mod audit;
pub mod guard;
pub mod pins;
mod server;

pub use server::{CallToolArgs, GatewayServer};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, EnumSchema, Implementation, JsonObject,
};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleClient, RoleServer};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use self::audit::{AuditLog, AuditRecord, DecidedBy, Decision, Outcome};
use self::pins::{PinCheck, PinLock};
use super::upstream::{
    McpConfig, ServerConfig, ServerFailure, ServerTools, StderrTail, UpstreamError, UpstreamSession,
};
use crate::settings::GatewayConfig;
use toolrag_core::error::Location;
use toolrag_core::registry::{Registry, ToolDef, HANDLE_SCHEME};
use toolrag_embed::Embedder;
use toolrag_engine::build::{BuildModel, BuildOptions, BuildReport};
use toolrag_engine::index::lexical::FieldBoosts;
use toolrag_engine::search::SearchConfig;
use toolrag_engine::serve::LiveIndex;
use toolrag_lint::{LintConfig, LintContext, Thresholds};

/// How long the gateway waits for another process's build of its index
/// folder before giving up.
const LOCKED_WAIT: Duration = Duration::from_secs(300);

/// How long a person has to answer an approval question.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

/// Notifications that arrive this close together are one resync.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// How often the gateway looks for upstream servers that died.
const HEALTH_EVERY: Duration = Duration::from_secs(1);

/// The longest wait between two attempts to restart a server that keeps
/// failing.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// An error of the gateway.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A file (the lock file, the audit log) cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock file is not one.
    #[error("{location}: {message}")]
    LockFile {
        /// Where.
        location: Location,
        /// What is wrong, and what to do.
        message: String,
    },
    /// Building or opening the index failed.
    #[error(transparent)]
    Index(#[from] toolrag_core::Error),
    /// No upstream server could be listed, so there is nothing to serve.
    #[error("no upstream server could be listed (see above); nothing to serve")]
    NothingToServe,
    /// `--accept` named a tool the servers do not list.
    #[error("no upstream tool `{0}`: name a tool as <server>/<tool>, or a whole server")]
    UnknownTool(String),
}

/// Where the gateway keeps its state, and how it behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// The index folder of the upstream tools.
    pub index: PathBuf,
    /// The lock file of pinned definitions.
    pub lock_file: PathBuf,
    /// The audit log.
    pub audit_log: PathBuf,
    /// The `[gateway]` settings: allow-list, output guard, intervals.
    pub settings: GatewayConfig,
    /// Query-time search settings.
    pub search: SearchConfig,
    /// Tools pinned into every search.
    pub pinned: Vec<String>,
    /// BM25 field boosts of the builds.
    pub boosts: FieldBoosts,
    /// The lint thresholds (TR010's base64 length).
    pub thresholds: Thresholds,
    /// How long a server may take to start, initialise and list its tools.
    pub connect_timeout: Duration,
}

impl GatewayOptions {
    /// The defaults for the index folder `index`: the lock file and the
    /// audit log beside it (`<index>.lock.json`, `<index>.audit.jsonl`)
    /// unless `settings` names them.
    pub fn new(index: PathBuf, settings: GatewayConfig) -> GatewayOptions {
        let beside = |ext: &str| {
            let name = index
                .file_name()
                .map_or_else(|| "index".into(), |n| n.to_string_lossy().into_owned());
            index.with_file_name(format!("{name}.{ext}"))
        };
        GatewayOptions {
            lock_file: settings
                .lock_file
                .clone()
                .unwrap_or_else(|| beside("lock.json")),
            audit_log: settings
                .audit_log
                .clone()
                .unwrap_or_else(|| beside("audit.jsonl")),
            index,
            settings,
            search: SearchConfig::default(),
            pinned: Vec::new(),
            boosts: FieldBoosts::default(),
            thresholds: Thresholds::default(),
            connect_timeout: super::upstream::DEFAULT_TIMEOUT,
        }
    }
}

/// Why a tool is quarantined.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum Quarantine {
    /// Its texts address the model (`hidden-instructions` findings).
    Poisoned {
        /// The findings, "pointer: message".
        findings: Vec<String>,
    },
    /// Its definition changed since it was pinned.
    Changed {
        /// When the trusted definition was pinned.
        pinned_at: String,
        /// What changed (`description`, `inputSchema`, ...).
        fields: Vec<String>,
    },
}

impl std::fmt::Display for Quarantine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quarantine::Poisoned { findings } => write!(
                f,
                "tool poisoning: hidden-instructions (TR010): {}",
                findings.join("; ")
            ),
            Quarantine::Changed { pinned_at, fields } => write!(
                f,
                "its definition changed since it was pinned on {pinned_at} ({} changed): a person \
                 must accept the change",
                fields.join(", ")
            ),
        }
    }
}

/// One upstream tool as the gateway knows it.
#[derive(Debug, Clone)]
struct Entry {
    def: ToolDef,
    /// The MCP `Tool` JSON as listed.
    raw: Value,
    quarantine: Vec<Quarantine>,
    /// The input schema, compiled at the tool's first call and kept for the
    /// next ones (`None` inside: it does not compile).
    validator: std::sync::OnceLock<Option<Arc<jsonschema::Validator>>>,
}

/// Every listed upstream tool, quarantined or not, by id.
#[derive(Debug, Default)]
struct Catalog {
    entries: BTreeMap<String, Entry>,
}

/// What a server last listed.
#[derive(Debug, Clone)]
struct Listing {
    tools: Vec<Value>,
    server_info: Option<Implementation>,
}

/// One configured upstream server.
struct Upstream {
    config: ServerConfig,
    session: tokio::sync::Mutex<Option<UpstreamSession>>,
    listing: std::sync::Mutex<Option<Listing>>,
    /// When to try starting it again after a failure, and the wait after that.
    retry: std::sync::Mutex<(Instant, Duration)>,
}

impl Upstream {
    fn listing(&self) -> Option<Listing> {
        self.listing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A tool that is quarantined, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuarantinedTool {
    /// Its id, `<server>/<tool>`.
    pub id: String,
    /// Why.
    pub reasons: Vec<Quarantine>,
}

/// What one [`Gateway::resync`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools that are gone.
    pub removed: Vec<String>,
    /// Tools whose definition changed.
    pub changed: Vec<String>,
    /// Tools quarantined now that were not before.
    pub quarantined: Vec<String>,
    /// Tools pinned for the first time.
    pub pinned: Vec<String>,
    /// The index build, when one was needed.
    pub build: Option<BuildReport>,
}

impl SyncReport {
    fn is_quiet(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.quarantined.is_empty()
            && self.build.is_none()
    }
}

/// The gateway's state, shared by the MCP handlers and the background task.
pub struct Gateway {
    opts: GatewayOptions,
    embedder: Option<Arc<dyn Embedder>>,
    upstreams: BTreeMap<String, Arc<Upstream>>,
    catalog: ArcSwap<Catalog>,
    live: std::sync::OnceLock<Arc<LiveIndex>>,
    pins: tokio::sync::Mutex<PinLock>,
    audit: AuditLog,
    changes: mpsc::UnboundedSender<String>,
    sync_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("index", &self.opts.index)
            .field("servers", &self.upstreams.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The receiving end of the servers' change notifications; give it to
/// [`Gateway::run_background`].
#[derive(Debug)]
pub struct Changes(mpsc::UnboundedReceiver<String>);

impl Gateway {
    /// Connects to every server of `config`, lists their tools and checks
    /// them against the lock file. A server that fails is reported (by
    /// name, with its stderr) and retried later; it is an error only when
    /// every server fails. Nothing is indexed yet: [`Gateway::open_index`]
    /// does that. Needs a Tokio runtime.
    pub async fn connect(
        config: &McpConfig,
        opts: GatewayOptions,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<(Arc<Gateway>, Changes), GatewayError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let pins = PinLock::open(&opts.lock_file)?;
        let audit = AuditLog::open(&opts.audit_log)?;
        let upstreams = config
            .servers
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    Arc::new(Upstream {
                        config: s.clone(),
                        session: tokio::sync::Mutex::new(None),
                        listing: std::sync::Mutex::new(None),
                        retry: std::sync::Mutex::new((Instant::now(), Duration::from_secs(1))),
                    }),
                )
            })
            .collect();
        let gateway = Arc::new(Gateway {
            opts,
            embedder,
            upstreams,
            catalog: ArcSwap::from_pointee(Catalog::default()),
            live: std::sync::OnceLock::new(),
            pins: tokio::sync::Mutex::new(pins),
            audit,
            changes: tx,
            sync_lock: tokio::sync::Mutex::new(()),
        });
        let names: Vec<String> = gateway.upstreams.keys().cloned().collect();
        let listed = futures::future::join_all(names.iter().map(|n| gateway.list_server(n))).await;
        if !listed.iter().any(|ok| *ok) {
            return Err(GatewayError::NothingToServe);
        }
        Ok((gateway, Changes(rx)))
    }

    /// Builds the index from what the servers listed (unless it is already
    /// up to date), pins new definitions, and opens the index for search.
    /// Call it once after [`Gateway::connect`].
    pub async fn open_index(self: &Arc<Self>) -> Result<SyncReport, GatewayError> {
        let report = self.ingest_and_build(true).await?;
        if self.live.get().is_none() {
            let dir = self.opts.index.clone();
            let embedder = self.embedder.clone();
            let search = self.opts.search;
            let live = tokio::task::spawn_blocking(move || LiveIndex::open(&dir, embedder, search))
                .await
                .expect("opening the index does not panic")?;
            let _ = self.live.set(Arc::new(live));
        }
        Ok(report)
    }

    /// The live index of the upstream tools.
    ///
    /// # Panics
    /// Before [`Gateway::open_index`] has succeeded.
    pub fn live(&self) -> &Arc<LiveIndex> {
        self.live.get().expect("open_index was called")
    }

    /// The tools pinned into every search.
    pub fn pinned(&self) -> &[String] {
        &self.opts.pinned
    }

    /// The servers that could not be listed (by name), each reported in
    /// the log when it failed.
    pub fn failed_servers(&self) -> Vec<String> {
        self.upstreams
            .values()
            .filter(|u| u.listing().is_none())
            .map(|u| u.config.name.clone())
            .collect()
    }

    /// Every tool listed now, quarantined or not, checked against the lock
    /// file without pinning anything (for `--check`).
    pub async fn check(&self) -> Vec<QuarantinedTool> {
        let pins = self.pins.lock().await;
        let (catalog, _) = self.catalog_of(&pins);
        catalog
            .entries
            .into_values()
            .filter(|e| !e.quarantine.is_empty())
            .map(|e| QuarantinedTool {
                id: e.def.id,
                reasons: e.quarantine,
            })
            .collect()
    }

    /// Accepts the current definitions of `names` (tool ids, or server names
    /// for all their tools): pins them in the lock file. Returns the tool ids
    /// whose pin changed. A poisoned tool stays quarantined whatever is
    /// accepted.
    pub async fn accept(&self, names: &[String]) -> Result<Vec<String>, GatewayError> {
        let mut pins = self.pins.lock().await;
        let (catalog, _) = self.catalog_of(&pins);
        let mut accepted = Vec::new();
        for name in names {
            let name = name.strip_prefix(HANDLE_SCHEME).unwrap_or(name);
            let matching: Vec<&Entry> = catalog
                .entries
                .values()
                .filter(|e| e.def.id == name || e.def.namespace == name)
                .collect();
            if matching.is_empty() {
                return Err(GatewayError::UnknownTool(name.to_string()));
            }
            for e in matching {
                if pins.check(&e.def.id, &e.raw) != PinCheck::Same {
                    pins.pin(&e.def.id, &e.raw);
                    accepted.push(e.def.id.clone());
                }
            }
        }
        pins.save()?;
        Ok(accepted)
    }

    /// Lists `name` again over its session (starting it if needed) and keeps
    /// the listing; `false`, logged with the server's stderr, when it fails.
    async fn list_server(&self, name: &str) -> bool {
        let Some(up) = self.upstreams.get(name) else {
            return false;
        };
        let timeout = self.opts.connect_timeout;
        let work = async {
            let peer = self.peer_of(up).await?;
            match super::upstream::list_tools_of(&peer).await {
                Ok(tools) => Ok((tools, peer.peer_info().and_then(|i| i.server_info.clone()))),
                Err(e) => Err(Box::new(self.failure(up, e).await)),
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok((tools, server_info))) => {
                *up.listing.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Listing { tools, server_info });
                true
            }
            Ok(Err(failure)) => {
                tracing::error!("{failure}");
                false
            }
            Err(_) => {
                let failure = self.failure(up, UpstreamError::Timeout(timeout)).await;
                tracing::error!("{failure}");
                // A server that hangs is dropped, so the next use restarts it.
                if let Some(s) = up.session.lock().await.take() {
                    s.close().await;
                }
                false
            }
        }
    }

    /// `error` of `up`, with the end of its current session's stderr.
    async fn failure(&self, up: &Upstream, error: UpstreamError) -> ServerFailure {
        let stderr = match up.session.lock().await.as_ref() {
            Some(s) => s.stderr_tail(),
            None => String::new(),
        };
        ServerFailure {
            server: up.config.clone(),
            error,
            stderr,
        }
    }

    /// The session's peer of `up`, starting the server (again) when it has
    /// no session or its session ended.
    /// A server that cannot be started is a [`ServerFailure`] with the end of
    /// the new process's stderr.
    async fn peer_of(&self, up: &Upstream) -> Result<Peer<RoleClient>, Box<ServerFailure>> {
        let mut session = up.session.lock().await;
        if let Some(s) = session.as_ref() {
            if !s.is_closed() {
                return Ok(s.peer().clone());
            }
            let tail = s.stderr_tail();
            tracing::warn!(
                server = %up.config.name,
                "the server stopped; restarting it{}",
                if tail.is_empty() { String::new() } else { format!(" (its stderr ended with: {})", tail.lines().last().unwrap_or("")) }
            );
        }
        let was_running = session.is_some();
        if let Some(old) = session.take() {
            old.close().await;
        }
        let stderr = StderrTail::new();
        let started = tokio::time::timeout(
            self.opts.connect_timeout,
            UpstreamSession::connect_watched(&up.config, &stderr, Some(self.changes.clone())),
        )
        .await
        .unwrap_or(Err(UpstreamError::Timeout(self.opts.connect_timeout)));
        match started {
            Ok(s) => {
                *up.retry.lock().unwrap_or_else(|p| p.into_inner()) =
                    (Instant::now(), Duration::from_secs(1));
                let peer = s.peer().clone();
                *session = Some(s);
                if was_running {
                    // A restarted server may list other tools.
                    let _ = self.changes.send(up.config.name.clone());
                }
                Ok(peer)
            }
            Err(e) => {
                {
                    let mut retry = up.retry.lock().unwrap_or_else(|p| p.into_inner());
                    let wait = retry.1;
                    *retry = (Instant::now() + wait, (wait * 2).min(MAX_BACKOFF));
                }
                Err(Box::new(ServerFailure {
                    server: up.config.clone(),
                    error: e,
                    stderr: stderr.settle(Duration::from_millis(300)).await,
                }))
            }
        }
    }

    /// The catalog of what the servers listed last, checked against `pins`,
    /// and the new tools to pin (neither poisoned nor pinned yet).
    fn catalog_of(&self, pins: &PinLock) -> (Catalog, Vec<String>) {
        let mut defs: Vec<(ToolDef, Value)> = Vec::new();
        for up in self.upstreams.values() {
            let Some(listing) = up.listing() else {
                continue;
            };
            let tools = ServerTools {
                server: up.config.clone(),
                server_info: listing.server_info.clone(),
                tools: listing.tools.clone(),
            };
            let (normalised, errors) = tools.normalise();
            for e in errors {
                tracing::warn!(
                    server = %up.config.name,
                    "the server listed an invalid tool, left out: {}",
                    e.message
                );
            }
            let by_name: HashMap<&str, &Value> = listing
                .tools
                .iter()
                .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
                .collect();
            for mut def in normalised {
                let raw = by_name
                    .get(def.name.as_str())
                    .map_or(Value::Null, |t| (*t).clone());
                // Cards show no path of the machine serving them.
                def.source.location.file = PathBuf::from(format!("{}.json", up.config.name));
                defs.push((def, raw));
            }
        }
        let poisoned = self.poisoning(defs.iter().map(|(d, _)| d.clone()).collect());
        let mut catalog = Catalog::default();
        let mut new = Vec::new();
        for (def, raw) in defs {
            let mut quarantine = Vec::new();
            if let Some(findings) = poisoned.get(&def.id) {
                quarantine.push(Quarantine::Poisoned {
                    findings: findings.clone(),
                });
            }
            match pins.check(&def.id, &raw) {
                PinCheck::Same => {}
                PinCheck::New if quarantine.is_empty() => new.push(def.id.clone()),
                PinCheck::New => {}
                PinCheck::Changed { pinned_at, fields } => {
                    quarantine.push(Quarantine::Changed { pinned_at, fields })
                }
            }
            catalog.entries.entry(def.id.clone()).or_insert(Entry {
                def,
                raw,
                quarantine,
                validator: std::sync::OnceLock::new(),
            });
        }
        (catalog, new)
    }

    /// The `hidden-instructions` findings of each tool, by id.
    fn poisoning(&self, defs: Vec<ToolDef>) -> BTreeMap<String, Vec<String>> {
        let registry = match Registry::from_tools(defs) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("the upstream tools do not form a registry: {e}");
                return BTreeMap::new();
            }
        };
        let config = LintConfig {
            select: Some(vec!["TR010"]),
            thresholds: self.opts.thresholds.clone(),
            ..LintConfig::default()
        };
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in toolrag_lint::lint(&registry, &LintContext::new(config)) {
            out.entry(d.tool_id)
                .or_default()
                .push(format!("{}: {}", d.pointer, d.message));
        }
        out
    }

    /// Lists the servers in `servers` (every server when `None`) again, then
    /// rebuilds the index if the tools changed and swaps the new generation
    /// in. Concurrent calls run one after the other. Searches and calls go
    /// on against the current generation meanwhile.
    pub async fn resync(
        self: &Arc<Self>,
        servers: Option<&BTreeSet<String>>,
    ) -> Result<SyncReport, GatewayError> {
        let _one = self.sync_lock.lock().await;
        let names: Vec<String> = self
            .upstreams
            .keys()
            .filter(|n| servers.is_none_or(|s| s.contains(*n)))
            .cloned()
            .collect();
        futures::future::join_all(names.iter().map(|n| self.list_server(n))).await;
        let report = self.ingest_and_build(false).await?;
        if let Some(live) = self.live.get() {
            if report.build.is_some() {
                let live = live.clone();
                let reload = tokio::task::spawn_blocking(move || live.reload_if_changed())
                    .await
                    .expect("a reload does not panic");
                if let toolrag_engine::serve::Reload::Refused(e) = reload {
                    tracing::error!("the rebuilt index does not open, the old one stays: {e}");
                }
            }
        }
        if !report.is_quiet() {
            tracing::info!(
                added = ?report.added,
                removed = ?report.removed,
                changed = ?report.changed,
                quarantined = ?report.quarantined,
                "upstream tools changed{}",
                report
                    .build
                    .as_ref()
                    .map(|b| format!("; {b}"))
                    .unwrap_or_default()
            );
        }
        Ok(report)
    }

    /// Checks what the servers listed, pins new definitions, swaps the new
    /// catalog in and builds the index of the tools that are not
    /// quarantined, unless the index already holds exactly them. `first`:
    /// log every quarantined tool, not only the newly quarantined.
    async fn ingest_and_build(&self, first: bool) -> Result<SyncReport, GatewayError> {
        let mut pins = self.pins.lock().await;
        let (catalog, new) = self.catalog_of(&pins);
        for id in &new {
            pins.pin(id, &catalog.entries[id].raw);
        }
        pins.save()?;
        drop(pins);

        let old = self.catalog.load_full();
        let mut report = SyncReport {
            pinned: new,
            ..SyncReport::default()
        };
        for (id, e) in &catalog.entries {
            match old.entries.get(id) {
                None => report.added.push(id.clone()),
                Some(o) if o.raw != e.raw => report.changed.push(id.clone()),
                Some(_) => {}
            }
            let was = old
                .entries
                .get(id)
                .is_some_and(|o| !o.quarantine.is_empty());
            if !e.quarantine.is_empty() && (first || !was) {
                report.quarantined.push(id.clone());
                for q in &e.quarantine {
                    tracing::warn!(tool = %id, "quarantined: {q}");
                }
            }
        }
        report.removed = old
            .entries
            .keys()
            .filter(|id| !catalog.entries.contains_key(*id))
            .cloned()
            .collect();
        if first {
            report.added.clear();
        }

        let active: Vec<ToolDef> = catalog
            .entries
            .values()
            .filter(|e| e.quarantine.is_empty())
            .map(|e| e.def.clone())
            .collect();
        self.catalog.store(Arc::new(catalog));
        let registry = Registry::from_tools(active).map_err(GatewayError::Index)?;
        // Another gateway on the same index folder (two clients started one
        // each) may be building: wait for it, then build only if its
        // generation is not already this one.
        let waited_since = Instant::now();
        while !self.index_is_current(&registry) {
            let mut opts = BuildOptions::new(self.opts.index.clone());
            opts.boosts = self.opts.boosts;
            let embedder = self.embedder.clone();
            let tools = registry.clone();
            let build = tokio::task::spawn_blocking(move || {
                let model = embedder.as_deref().map(BuildModel::Loaded);
                toolrag_engine::build::build(tools, model, &opts, &|_| {})
            })
            .await
            .expect("a build does not panic");
            match build {
                Ok(b) => {
                    report.build = Some(b);
                    break;
                }
                Err(toolrag_core::Error::Locked { .. }) if waited_since.elapsed() < LOCKED_WAIT => {
                    tracing::info!("another build holds the index folder; waiting for it");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(report)
    }

    /// Whether the live generation of the index folder holds exactly the
    /// tools of `registry`, built with the gateway's model.
    fn index_is_current(&self, registry: &Registry) -> bool {
        let Ok(gen) = toolrag_engine::index::current_generation(&self.opts.index) else {
            return false;
        };
        let Ok(manifest) = toolrag_engine::index::Manifest::read_unverified(&gen) else {
            return false;
        };
        let model = self
            .embedder
            .as_deref()
            .map(toolrag_engine::index::ModelInfo::of);
        manifest.model == model
            && manifest.boosts == self.opts.boosts
            && manifest.tools.len() == registry.len()
            && manifest
                .tools
                .iter()
                .zip(registry.tools())
                .all(|(e, t)| e.id == t.id && e.hash == toolrag_engine::build::content_hash(t))
    }

    /// Runs until `changes` closes: resyncs a server after it sends
    /// `list_changed` (notifications within 50 ms are one resync), resyncs
    /// every server each `relist-seconds`, and restarts a server that died.
    pub async fn run_background(self: Arc<Self>, Changes(mut changes): Changes) {
        let relist = self.opts.settings.relist_seconds;
        let mut relist_tick = (relist > 0.0).then(|| {
            let every = Duration::from_secs_f64(relist);
            tokio::time::interval_at(tokio::time::Instant::now() + every, every)
        });
        let mut health = tokio::time::interval(HEALTH_EVERY);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let relist_due = async {
                match relist_tick.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                first = changes.recv() => {
                    let Some(first) = first else { return };
                    let mut servers = BTreeSet::from([first]);
                    tokio::time::sleep(DEBOUNCE).await;
                    while let Ok(more) = changes.try_recv() {
                        servers.insert(more);
                    }
                    if let Err(e) = self.resync(Some(&servers)).await {
                        tracing::error!("resync after list_changed failed, the old tools stay: {e}");
                    }
                }
                () = relist_due => {
                    if let Err(e) = self.resync(None).await {
                        tracing::error!("re-listing failed, the old tools stay: {e}");
                    }
                }
                _ = health.tick() => self.restart_dead().await,
            }
        }
    }

    /// Restarts every server whose session ended, when its retry time has come.
    async fn restart_dead(&self) {
        for up in self.upstreams.values() {
            let due = up.retry.lock().unwrap_or_else(|p| p.into_inner()).0 <= Instant::now();
            let dead = match up.session.try_lock() {
                Ok(s) => s.as_ref().is_none_or(|s| s.is_closed()),
                Err(_) => false, // in use: whoever holds it restarts it if needed
            };
            if due && dead {
                if let Err(failure) = self.peer_of(up).await {
                    tracing::error!("{failure}");
                }
            }
        }
    }

    /// Closes every upstream session (stdio servers see their stdin close).
    pub async fn shutdown(&self) {
        for up in self.upstreams.values() {
            if let Some(s) = up.session.lock().await.take() {
                s.close().await;
            }
        }
    }

    /// The card of a tool for `get_tool`: a quarantined tool's is refused
    /// with its reasons.
    pub fn card(&self, handle: &str) -> Result<Value, String> {
        let id = handle.trim();
        let id = id.strip_prefix(HANDLE_SCHEME).unwrap_or(id);
        if let Some(e) = self.catalog.load().entries.get(id) {
            if !e.quarantine.is_empty() {
                return Err(quarantine_message(id, &e.quarantine, self.lock_hint(id)));
            }
        }
        super::card_of(self.live(), handle)
    }

    fn lock_hint(&self, id: &str) -> String {
        format!(
            "a person who has checked the new definition accepts it with `toolrag mcp --upstream \
             <config> --accept {id}` (lock file {})",
            self.opts.lock_file.display()
        )
    }

    /// `call_tool`: checks, asks, forwards and guards one call. Errors the
    /// model can act on are tool results with `isError`.
    pub async fn call(
        &self,
        handle: &str,
        arguments: Option<JsonObject>,
        client: &Peer<RoleServer>,
    ) -> CallToolResult {
        let id = handle.trim();
        let id = id.strip_prefix(HANDLE_SCHEME).unwrap_or(id).to_string();
        let catalog = self.catalog.load_full();
        let Some(entry) = catalog.entries.get(&id) else {
            return tool_error(format!(
                "no tool `{handle}`; use a handle returned by search_tools"
            ));
        };
        let args = Value::Object(arguments.unwrap_or_default());
        if !entry.quarantine.is_empty() {
            let message = quarantine_message(&id, &entry.quarantine, self.lock_hint(&id));
            return self.refuse(
                &id,
                &args,
                Decision::Refused,
                DecidedBy::Quarantine,
                message,
            );
        }
        let validator = entry
            .validator
            .get_or_init(|| guard::compile(&id, &entry.def.input_schema).map(Arc::new));
        if let Some(Err(errors)) = validator
            .as_deref()
            .map(|v| guard::check_arguments(v, &args))
        {
            let message = format!(
                "the arguments do not match the input schema of `{id}`: {}. Read the schema with \
                 get_tool and call again.",
                errors.join("; ")
            );
            return self.refuse(
                &id,
                &args,
                Decision::InvalidArguments,
                DecidedBy::InputSchema,
                message,
            );
        }

        // Approval.
        let Ruling {
            decision,
            by,
            reason,
        } = self.rule(client, &entry.def, &args).await;
        let mut record = AuditRecord::new(&id, &args, decision, by);
        if let Some(r) = &reason {
            record = record.because(r.clone());
        }
        if let Err(e) = self.audit.write(&record) {
            tracing::error!("cannot write the audit log, the call is refused: {e}");
            return tool_error(format!(
                "toolrag cannot record the decision in its audit log, so `{id}` was not called: {e}"
            ));
        }
        if !decision.lets_call() {
            return tool_error(reason.unwrap_or_else(|| format!("`{id}` was not called")));
        }

        // Forward.
        let up = &self.upstreams[&entry.def.namespace];
        let result = match self.forward(up, &entry.def.name, &args).await {
            Ok(r) => r,
            Err(e) => {
                let message = e.to_string();
                let _ = self.audit.write(
                    &AuditRecord::new(&id, &args, Outcome::Failed, DecidedBy::Upstream)
                        .because(message.clone()),
                );
                return tool_error(message);
            }
        };

        // Output guard.
        let policy = self.opts.settings.output_guard;
        let findings = if policy == crate::settings::OutputGuard::Off {
            Vec::new()
        } else {
            guard::scan_result(&result)
        };
        let (result, outcome) = if findings.is_empty() {
            (result, Outcome::Passed)
        } else {
            tracing::warn!(tool = %id, ?findings, "the result addresses the model");
            guard::apply(policy, &id, &findings, result)
        };
        let mut record = AuditRecord::new(&id, &args, outcome, DecidedBy::OutputGuard);
        if !findings.is_empty() {
            record = record.because(findings.join("; "));
        }
        if let Err(e) = self.audit.write(&record) {
            tracing::error!("cannot write the audit log: {e}");
        }
        result
    }

    /// Records `decision` (one that stops the call) and tells the model
    /// `message`.
    fn refuse(
        &self,
        id: &str,
        args: &Value,
        decision: Decision,
        by: DecidedBy,
        message: String,
    ) -> CallToolResult {
        let record = AuditRecord::new(id, args, decision, by).because(message.clone());
        if let Err(e) = self.audit.write(&record) {
            tracing::error!("cannot write the audit log: {e}");
        }
        tool_error(message)
    }

    /// Whether `tool` may run with `args`: without asking when its
    /// annotations need no approval or `[gateway] allow` names it, otherwise
    /// as the person answers.
    async fn rule(&self, client: &Peer<RoleServer>, tool: &ToolDef, args: &Value) -> Ruling {
        let reasons = toolrag_gate::approval_reasons(tool);
        if reasons.is_empty() {
            return Ruling::allowed(DecidedBy::Annotations);
        }
        if let Some(a) = self.opts.settings.allow_entry(&tool.id) {
            return Ruling::allowed(DecidedBy::AllowList(a.to_string()));
        }
        let why = reasons
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join(", ");
        self.ask(client, tool, args, &why).await
    }

    /// Asks the person, through the client, whether `tool` may run with
    /// `args`, because it needs approval for `why`.
    async fn ask(
        &self,
        client: &Peer<RoleServer>,
        tool: &ToolDef,
        args: &Value,
        why: &str,
    ) -> Ruling {
        let id = &tool.id;
        if !client
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            let message = format!(
                "`{id}` needs a person's approval ({why}), and this MCP client cannot ask one \
                 (it does not support elicitation), so the call was not made. A person can allow \
                 it in the [gateway] table of toolrag.toml: `allow = [\"{id}\"]` for this tool, \
                 or `allow = [\"{}\"]` for every tool of the server; or use a client that \
                 supports elicitation.",
                tool.namespace
            );
            return Ruling::stopped(Decision::Refused, DecidedBy::NoElicitation, message);
        }
        let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        let message = format!(
            "Allow the tool `{}` of the MCP server `{}` to run?\nIt needs approval: {why}.\n{}\nArguments:\n{pretty}",
            tool.name,
            tool.namespace,
            first_line(&tool.summary),
        );
        let schema = match ElicitationSchema::builder()
            .required_enum_schema(
                Choice::FIELD,
                EnumSchema::builder(Choice::ALL.map(|c| c.as_str().into()).to_vec())
                    .description("approve runs the tool with these arguments; reject does not")
                    .build(),
            )
            .build()
        {
            Ok(s) => s,
            Err(e) => {
                return Ruling::stopped(
                    Decision::Refused,
                    DecidedBy::Gateway,
                    format!("cannot ask: {e}"),
                )
            }
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        match client
            .create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT))
            .await
        {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => {
                    let choice = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get(Choice::FIELD))
                        .and_then(Value::as_str)
                        .and_then(Choice::parse);
                    if choice == Some(Choice::Approve) {
                        Ruling {
                            decision: Decision::Approved,
                            by: DecidedBy::Person,
                            reason: None,
                        }
                    } else {
                        Ruling::stopped(
                            Decision::Rejected,
                            DecidedBy::Person,
                            format!(
                                "the person rejected this call of `{id}`; it was not made. Do not \
                                 retry it; ask the user what to do instead."
                            ),
                        )
                    }
                }
                ElicitationAction::Decline => Ruling::stopped(
                    Decision::Rejected,
                    DecidedBy::PersonDeclined,
                    format!(
                        "the person declined to approve this call of `{id}`; it was not made. Do \
                         not retry it; ask the user what to do instead."
                    ),
                ),
                ElicitationAction::Cancel | _ => Ruling::stopped(
                    Decision::Cancelled,
                    DecidedBy::PersonCancelled,
                    format!(
                        "the approval of `{id}` was cancelled, so the call was not made; ask the \
                         user before trying again."
                    ),
                ),
            },
            Err(e) => Ruling::stopped(
                Decision::Refused,
                DecidedBy::AskFailed,
                format!(
                    "`{id}` needs a person's approval ({why}), and asking failed ({e}), so the \
                     call was not made."
                ),
            ),
        }
    }

    /// Sends `tools/call` to `up`, restarting it first if it died.
    async fn forward(
        &self,
        up: &Upstream,
        name: &str,
        args: &Value,
    ) -> Result<CallToolResult, ForwardError> {
        let server = up.config.name.clone();
        let peer = match self.peer_of(up).await {
            Ok(peer) => peer,
            Err(failure) => {
                tracing::error!("{failure}");
                return Err(ForwardError::NotRunning {
                    server,
                    error: failure.error,
                });
            }
        };
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = args.as_object().cloned();
        let timeout = Duration::from_secs_f64(self.opts.settings.call_timeout_seconds);
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) if peer.is_transport_closed() => {
                Err(ForwardError::Stopped { server, error })
            }
            Ok(Err(error)) => Err(ForwardError::Answered { server, error }),
            Err(_) => Err(ForwardError::Timeout { server, timeout }),
        }
    }
}

/// A decision about one call, who or what took it, and, when it stops the
/// call, what the model is told.
struct Ruling {
    decision: Decision,
    by: DecidedBy,
    reason: Option<String>,
}

impl Ruling {
    /// The call may go ahead without asking anyone.
    fn allowed(by: DecidedBy) -> Ruling {
        Ruling {
            decision: Decision::Allowed,
            by,
            reason: None,
        }
    }

    /// The call does not go ahead, and the model is told `reason`.
    fn stopped(decision: Decision, by: DecidedBy, reason: String) -> Ruling {
        Ruling {
            decision,
            by,
            reason: Some(reason),
        }
    }
}

/// The answers the approval form offers, in its field `decision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// Run the tool with these arguments.
    Approve,
    /// Do not.
    Reject,
}

impl Choice {
    /// The form's field.
    const FIELD: &'static str = "decision";

    /// Every answer, in the order the form lists them.
    const ALL: [Choice; 2] = [Choice::Approve, Choice::Reject];

    /// The answer as the form offers it.
    fn as_str(self) -> &'static str {
        match self {
            Choice::Approve => "approve",
            Choice::Reject => "reject",
        }
    }

    /// The answer the client sent back, if it is one of the form's.
    fn parse(s: &str) -> Option<Choice> {
        Choice::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Why a forwarded call brought back no result; the model reads the message.
#[derive(Debug, thiserror::Error)]
enum ForwardError {
    /// The server is down and does not start.
    #[error("the server `{server}` is not running and cannot be started: {error}")]
    NotRunning {
        server: String,
        error: UpstreamError,
    },
    /// The server went away while the call was out.
    #[error(
        "the server `{server}` stopped during the call ({error}); it is being restarted. The \
         call may or may not have taken effect: check before calling again."
    )]
    Stopped {
        server: String,
        error: rmcp::ServiceError,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server `{server}` answered with an error: {error}")]
    Answered {
        server: String,
        error: rmcp::ServiceError,
    },
    /// The server did not answer in time.
    #[error(
        "the server `{server}` did not answer within {} s; the call may still take effect",
        timeout.as_secs_f64()
    )]
    Timeout { server: String, timeout: Duration },
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn quarantine_message(id: &str, reasons: &[Quarantine], hint: String) -> String {
    let mut text = format!("`{id}` is quarantined and cannot be used: ");
    text.push_str(
        &reasons
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    );
    if reasons
        .iter()
        .any(|r| matches!(r, Quarantine::Changed { .. }))
    {
        text.push_str("; ");
        text.push_str(&hint);
    }
    text
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
