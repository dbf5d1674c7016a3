//! The gateway: one MCP server in front of the configured ones
//! (`toolrag mcp --upstream FILE`).
//!
//! It keeps a client session open to every upstream server of an MCP
//! configuration ([`toolrag_mcp::upstream`]), lists their tools and indexes them in
//! an index folder as `toolrag index --mcp-config` would, and offers three
//! tools: `search_tools` (the candidate set), `get_tool` (a tool's card) and
//! `call_tool` (forward a call to the server that owns the tool).
//!
//! Between the model and the servers it keeps the guards of the design
//! notes' "guard sandwich":
//! - **input guardrail**: every listed tool is linted with
//!   `hidden-instructions` (TR010); a poisoned one is quarantined: not
//!   indexed, not callable, and listed by [`Gateway::check`];
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
//!
//! [`Gateway`] is a thin holder of parts with one job each: `catalog`'s
//! `Tools` (the merged tool list checked against the pins, and its index;
//! `sync` re-lists and rebuilds it), `access` (which tools a principal may
//! see, by [`policy`]), [`limits`] (the per-tool rate limits), `approval`
//! (allow-lists, the person's answer, and `states`, the sealed states of
//! 2026-07-28's rounds), `upstreams` (the sessions to the servers;
//! `forward` sends a call over one), [`audit`] and `usage` (the logs).
//! `call` runs `call_tool` through them as a chain of checks: visibility,
//! rate, quarantine, schema, approval, forward, guard ([`guard`]). `server`
//! is the MCP surface, `listen` tells clients that the tools changed, and
//! [`settings`] is the `[gateway]` table.

#![warn(missing_docs)]

mod access;
mod approval;
pub mod audit;
mod call;
mod catalog;
mod forward;
pub mod guard;
pub mod limits;
mod listen;
pub mod pins;
pub mod policy;
mod server;
pub mod settings;
mod states;
mod sync;
mod upstreams;
mod usage;

pub use policy::PolicyRule;
pub use server::{CallToolArgs, GatewayServer};
pub use settings::{GatewayConfig, OutputGuard};

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::{Peer, RoleServer};
use serde::Serialize;
use tokio::sync::mpsc;

use self::access::Access;
use self::approval::Approvals;
use self::audit::AuditLog;
use self::catalog::Tools;
use self::limits::ToolLimits;
use self::pins::PinLock;
use self::upstreams::Upstreams;
use crate::policy::Policy;
use toolrag_auth::Principal;
use toolrag_core::error::Location;
use toolrag_embed::Embedder;
use toolrag_engine::build::BuildReport;
use toolrag_engine::index::lexical::FieldBoosts;
use toolrag_engine::live::LiveIndex;
use toolrag_engine::search::SearchConfig;
use toolrag_lint::Thresholds;
use toolrag_mcp::upstream::{self, McpConfig};

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
    /// The key that seals approval states (created when missing, 0600).
    pub key_file: PathBuf,
    /// The SQLite file of used approval states, shared by replicas on one
    /// host (unused when `shared` is on Redis).
    pub approvals_db: PathBuf,
    /// Where replicas share used approval states and rate-limit budgets
    /// (`[gateway] state`); local by default.
    pub shared: toolrag_mcp::shared::SharedState,
    /// The usage log that `toolrag learn` reads (unless `record-usage` is
    /// off).
    pub usage_log: PathBuf,
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
    /// audit log beside it (`<index>.lock.json`, `<index>.audit.jsonl`) and
    /// the usage log in it (`<index>/usage.jsonl`), unless `settings` names
    /// them.
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
            key_file: settings.key_file.clone().unwrap_or_else(|| beside("key")),
            approvals_db: settings
                .approvals_db
                .clone()
                .unwrap_or_else(|| beside("approvals.sqlite")),
            usage_log: settings
                .usage_log
                .clone()
                .unwrap_or_else(|| index.join(toolrag_engine::learn::USAGE_FILE)),
            index,
            settings,
            shared: toolrag_mcp::shared::SharedState::local(),
            search: SearchConfig::default(),
            pinned: Vec::new(),
            boosts: FieldBoosts::default(),
            thresholds: Thresholds::default(),
            connect_timeout: upstream::DEFAULT_TIMEOUT,
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

/// The gateway: a thin holder of its parts, each with one job. The MCP
/// handlers and the background task share it.
pub struct Gateway {
    opts: GatewayOptions,
    /// The tools the servers list: the catalog, its pins, its index.
    tools: Tools,
    /// Who may see which tool.
    access: Access,
    /// The per-tool rate limits.
    limits: ToolLimits,
    /// Approval of the calls that need it.
    approvals: Approvals,
    /// The sessions to the servers, and the calls forwarded over them.
    upstreams: Upstreams,
    /// Every decision and result, one line each.
    audit: AuditLog,
    /// The searches and calls `toolrag learn` reads.
    usage: usage::Usage,
}

/// Who is calling the gateway, and how they can be asked for approval.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Caller {
    /// Who (from the HTTP front end; `local` over stdio).
    pub principal: Principal,
    /// The client, for elicitation on the handshake-era protocols.
    pub peer: Option<Peer<RoleServer>>,
    /// Whether the client can put a form to a person.
    pub can_elicit: bool,
    /// On 2026-07-28 and later, this call's multi-round-trip state: approval
    /// is then an `input_required` round, not an elicitation.
    pub mrtr: Option<MrtrRound>,
}

/// What a 2026-07-28 client sends back in a retried call.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MrtrRound {
    /// The `requestState` of the previous round, as the client echoed it.
    pub request_state: Option<String>,
    /// The client's answers, by the keys of the previous `inputRequests`.
    pub input_responses: Option<rmcp::model::InputResponses>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("index", &self.opts.index)
            .field("servers", &self.upstreams.names())
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
        let policy = Arc::new(Policy::compile(&opts.settings.policy)?);
        let limits =
            ToolLimits::compile(&opts.settings.tool_calls_per_minute)?.shared(&opts.shared);
        let usage = usage::Usage::open(&opts)?;
        let call_timeout = Duration::from_secs_f64(opts.settings.call_timeout_seconds);
        let upstreams = Upstreams::new(config, tx, opts.connect_timeout, call_timeout);
        let gateway = Arc::new(Gateway {
            tools: Tools::new(pins, embedder),
            access: Access::new(policy.clone()),
            limits,
            approvals: Approvals::new(&opts, policy),
            upstreams,
            audit,
            usage,
            opts,
        });
        let names = gateway.upstreams.names();
        let listed =
            futures::future::join_all(names.iter().map(|n| gateway.upstreams.list_server(n))).await;
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
        if self.tools.live.get().is_none() {
            let dir = self.opts.index.clone();
            let embedder = self.tools.embedder.clone();
            let search = self.opts.search;
            let live = tokio::task::spawn_blocking(move || LiveIndex::open(&dir, embedder, search))
                .await
                .expect("opening the index does not panic")?;
            let _ = self.tools.live.set(Arc::new(live));
        }
        Ok(report)
    }

    /// Writes to the audit log that `e.principal` sent a request on a
    /// session another principal opened (and was answered as on an unknown
    /// session); a failure to write is logged.
    pub fn audit_foreign_session(&self, e: &toolrag_mcp::sessions::ForeignSession) {
        let record = audit::SessionRecord::foreign(&e.principal.name, &e.owner, &e.method);
        self.audit.record_now(&record);
    }

    /// The live index of the upstream tools.
    ///
    /// # Panics
    /// Before [`Gateway::open_index`] has succeeded.
    pub fn live(&self) -> &Arc<LiveIndex> {
        self.tools.live.get().expect("open_index was called")
    }

    /// The tools pinned into every search.
    pub fn pinned(&self) -> &[String] {
        &self.opts.pinned
    }

    /// The compiled `[[gateway.policy]]`.
    pub fn policy(&self) -> &Policy {
        self.access.policy()
    }

    /// The ids of the tools `who` may see, or `None` when there is no
    /// policy (everything). Cached per principal until the catalog changes.
    pub fn visible_to(&self, who: &Principal) -> Option<Arc<HashSet<String>>> {
        self.access.visible_to(who, &self.tools.catalog)
    }

    /// Remembers that `who` searched for `request` and was offered
    /// `handles` (tool ids, best first), so that a call of one of them is
    /// recorded for `toolrag learn` with this request.
    pub fn searched(&self, who: &Principal, request: &str, handles: Vec<String>) {
        self.usage.searched(who, request, handles);
    }

    /// Whether `who` may see the tool `id`.
    pub fn may_see(&self, who: &Principal, id: &str) -> bool {
        self.access.may_see(who, id)
    }

    /// The servers that could not be listed (by name), each reported in
    /// the log when it failed.
    pub fn failed_servers(&self) -> Vec<String> {
        self.upstreams.failed()
    }

    /// Closes every upstream session (stdio servers see their stdin close),
    /// and waits until every audit line queued so far is on disk.
    pub async fn shutdown(&self) {
        self.upstreams.close().await;
        if let Err(e) = self.audit.flush().await {
            tracing::error!("cannot write the last lines of the audit log: {e}");
        }
    }

    /// Opens the approval key and the store of used states now, so that a
    /// bad key file or an unwritable store is an error at start, not at the
    /// first approval.
    pub fn open_approval_states(&self) -> Result<(), GatewayError> {
        self.approvals.states().map(|_| ())
    }
}
