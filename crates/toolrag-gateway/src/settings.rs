//! The gateway's settings: the `[gateway]` table of `toolrag.toml`.

use std::path::PathBuf;

use toolrag_core::error::Result;
use toolrag_core::settings::invalid;

pub use toolrag_mcp::shared::StateUrl;
use toolrag_mcp::shared::{SharedError, SharedState};

/// What the gateway does with a tool result that addresses the model
/// (instructions to it, invisible Unicode, URLs to send data to).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OutputGuard {
    /// Pass it on with a mark that tells the model the content is data, not
    /// instructions (the default).
    #[default]
    Mark,
    /// Withhold it: the model gets an error naming the findings instead.
    Block,
    /// Pass results on unscanned.
    Off,
}

/// The gateway's settings: the `[gateway]` table, read by
/// `toolrag mcp --upstream`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct GatewayConfig {
    /// Tools (`server/tool`) and whole servers (`server`) that may act
    /// without asking a person, even when their annotations say they need
    /// approval. Every such call is still written to the audit log.
    pub allow: Vec<String>,
    /// What to do with a tool result that addresses the model.
    pub output_guard: OutputGuard,
    /// Every upstream server is listed again this often, in seconds, for
    /// servers that do not send `notifications/tools/list_changed`; 0 never.
    pub relist_seconds: f64,
    /// How long a forwarded `tools/call` may take, in seconds.
    pub call_timeout_seconds: f64,
    /// The lock file of pinned tool definitions (default: `<index>.lock.json`
    /// beside the index folder); relative to the configuration file's folder.
    pub lock_file: Option<PathBuf>,
    /// The audit log, JSON Lines (default: `<index>.audit.jsonl` beside the
    /// index folder); relative to the configuration file's folder.
    pub audit_log: Option<PathBuf>,
    /// The key that seals approval states (`requestState` of protocol
    /// 2026-07-28), created on first start with mode 0600 (default:
    /// `<index>.key` beside the index folder). Replicas that share it can
    /// finish each other's approvals.
    pub key_file: Option<PathBuf>,
    /// The SQLite file that remembers which approval states were used, so
    /// that none is used twice (default: `<index>.approvals.sqlite` beside
    /// the index folder). Replicas must share it.
    pub approvals_db: Option<PathBuf>,
    /// How long a person's approval may take, and a sealed approval state
    /// stays valid, in seconds.
    pub approval_ttl_seconds: f64,
    /// Who may see and call what (`[[gateway.policy]]`). None: every
    /// authenticated principal sees everything. Once there is one, a
    /// principal that no entry names sees nothing.
    pub policy: Vec<crate::policy::PolicyRule>,
    /// Rate limits of `call_tool` (`[gateway.tool-calls-per-minute]`): a
    /// glob over `<server>/<tool>` (or a bare server) → how many calls a
    /// minute each principal may make of each matching tool (a token
    /// bucket that holds a minute's worth). Every matching entry applies.
    pub tool_calls_per_minute: std::collections::BTreeMap<String, u32>,
    /// Whether to record, for `toolrag learn`, each call that follows a
    /// search: the request, the handle set, the tool called and how the call
    /// ended (never its arguments or result).
    pub record_usage: bool,
    /// The usage log, JSON Lines (default: `usage.jsonl` in the index
    /// folder); relative to the configuration file's folder.
    pub usage_log: Option<PathBuf>,
    /// Past this size, in MiB, the usage log is cut to half of it, newest
    /// records kept.
    pub usage_max_mb: f64,
    /// Usage records older than this many days are dropped, and never
    /// learnt from.
    pub usage_max_age_days: f64,
    /// Who may teach (`toolrag learn` counts only their calls): token names,
    /// subjects, client ids or `group:<value>`, as in a policy. Empty: only
    /// the local principal (stdio, or HTTP without authentication).
    pub teachers: Vec<String>,
    /// Over streamable HTTP (`--http`, with or without `--upstream`): how
    /// many sessions of protocol 2025-11-25 and before may be open at once,
    /// all principals together; past it, a new one gets `503`.
    pub max_sessions: usize,
    /// How many such sessions each principal may have open at once; past
    /// it, a new one gets `429`.
    pub max_sessions_per_principal: usize,
    /// A session with no request in flight (and no stream open) for this
    /// many seconds is closed.
    pub session_idle_seconds: f64,
    /// Where replicas share their state (used approval states, rate-limit
    /// budgets, revoked tokens): `redis://[user:password@]HOST:PORT/DB`, or
    /// `rediss://` for TLS. None (the default): the SQLite file
    /// `approvals-db` and each process's own buckets, for one host.
    pub state: Option<StateUrl>,
    /// The environment variable that holds the Redis password, so that it
    /// need not be written in the file (not with a password in `state`).
    pub state_password_env: Option<String>,
    /// The prefix of every Redis key, so that deployments sharing a Redis
    /// do not collide.
    pub state_prefix: String,
    /// How long a Redis call may take, in seconds; past it, Redis counts
    /// as unreachable for that call.
    pub state_timeout_seconds: f64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            allow: Vec::new(),
            output_guard: OutputGuard::Mark,
            relist_seconds: 300.0,
            call_timeout_seconds: 120.0,
            lock_file: None,
            audit_log: None,
            key_file: None,
            approvals_db: None,
            approval_ttl_seconds: 600.0,
            policy: Vec::new(),
            tool_calls_per_minute: Default::default(),
            record_usage: true,
            usage_log: None,
            usage_max_mb: 16.0,
            usage_max_age_days: 90.0,
            teachers: Vec::new(),
            max_sessions: toolrag_mcp::sessions::SessionLimits::DEFAULT_MAX_TOTAL,
            max_sessions_per_principal:
                toolrag_mcp::sessions::SessionLimits::DEFAULT_MAX_PER_PRINCIPAL,
            session_idle_seconds: toolrag_mcp::sessions::SessionLimits::DEFAULT_IDLE.as_secs_f64(),
            state: None,
            state_password_env: None,
            state_prefix: "toolrag:".into(),
            state_timeout_seconds: 1.0,
        }
    }
}

impl GatewayConfig {
    /// Checks the numbers: both durations finite, `relist-seconds` at least
    /// 0 and `call-timeout-seconds` above 0, each at most a day.
    pub fn validate(&self) -> Result<()> {
        let day = 86_400.0;
        if !(self.relist_seconds.is_finite() && (0.0..=day).contains(&self.relist_seconds)) {
            return Err(invalid(
                "gateway.relist-seconds",
                format!(
                    "`gateway.relist-seconds` must be 0 (never) to 86400, not {}",
                    self.relist_seconds
                ),
            ));
        }
        if !(self.call_timeout_seconds.is_finite()
            && self.call_timeout_seconds > 0.0
            && self.call_timeout_seconds <= day)
        {
            return Err(invalid(
                "gateway.call-timeout-seconds",
                format!(
                    "`gateway.call-timeout-seconds` must be above 0 and at most 86400, not {}",
                    self.call_timeout_seconds
                ),
            ));
        }
        if !(self.approval_ttl_seconds.is_finite()
            && self.approval_ttl_seconds >= 1.0
            && self.approval_ttl_seconds <= day)
        {
            return Err(invalid(
                "gateway.approval-ttl-seconds",
                format!(
                    "`gateway.approval-ttl-seconds` must be 1 to 86400, not {}",
                    self.approval_ttl_seconds
                ),
            ));
        }
        if !(self.usage_max_mb.is_finite() && (0.01..=1_048_576.0).contains(&self.usage_max_mb)) {
            return Err(invalid(
                "gateway.usage-max-mb",
                format!(
                    "`gateway.usage-max-mb` must be 0.01 to 1048576 (MiB), not {}",
                    self.usage_max_mb
                ),
            ));
        }
        if !(self.usage_max_age_days.is_finite()
            && self.usage_max_age_days > 0.0
            && self.usage_max_age_days <= 36_500.0)
        {
            return Err(invalid(
                "gateway.usage-max-age-days",
                format!(
                    "`gateway.usage-max-age-days` must be above 0 and at most 36500, not {}",
                    self.usage_max_age_days
                ),
            ));
        }
        if let Some(t) = self
            .teachers
            .iter()
            .find(|t| t.trim().is_empty() || *t == "group:")
        {
            return Err(invalid(
                "gateway.teachers",
                format!("`gateway.teachers` has an empty entry `{t}`"),
            ));
        }
        self.validate_sessions()?;
        self.validate_state()?;
        crate::policy::Policy::compile(&self.policy)?;
        crate::limits::ToolLimits::compile(&self.tool_calls_per_minute)?;
        Ok(())
    }

    fn validate_sessions(&self) -> Result<()> {
        for (key, n) in [
            ("max-sessions", self.max_sessions),
            (
                "max-sessions-per-principal",
                self.max_sessions_per_principal,
            ),
        ] {
            if !(1..=1_000_000).contains(&n) {
                return Err(invalid(
                    &format!("gateway.{key}"),
                    format!("`gateway.{key}` must be 1 to 1000000, not {n}"),
                ));
            }
        }
        if !(self.session_idle_seconds.is_finite()
            && (1.0..=86_400.0).contains(&self.session_idle_seconds))
        {
            return Err(invalid(
                "gateway.session-idle-seconds",
                format!(
                    "`gateway.session-idle-seconds` must be 1 to 86400, not {}",
                    self.session_idle_seconds
                ),
            ));
        }
        Ok(())
    }

    fn validate_state(&self) -> Result<()> {
        if let Some(url) = &self.state {
            let text = url.as_str();
            let scheme_ok = text.starts_with("redis://") || text.starts_with("rediss://");
            let host = text
                .split_once("://")
                .map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or(""))
                .map(|a| a.rsplit_once('@').map_or(a, |(_, h)| h))
                .unwrap_or("");
            if !scheme_ok || host.is_empty() {
                return Err(invalid(
                    "gateway.state",
                    format!(
                        "`gateway.state` must be a Redis URL, `redis://HOST:PORT/DB` or \
                         `rediss://HOST:PORT/DB` (TLS), not `{}`",
                        url.redacted()
                    ),
                ));
            }
            if let Err(e) = redis::IntoConnectionInfo::into_connection_info(text) {
                return Err(invalid(
                    "gateway.state",
                    format!(
                        "`gateway.state` `{}` is not a Redis URL: {e}",
                        url.redacted()
                    ),
                ));
            }
        }
        if let Some(name) = &self.state_password_env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(invalid(
                    "gateway.state-password-env",
                    format!("`gateway.state-password-env` must name an environment variable, not `{name}`"),
                ));
            }
        }
        let p = &self.state_prefix;
        if p.is_empty() || p.len() > 64 || p.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                "gateway.state-prefix",
                format!(
                    "`gateway.state-prefix` must be 1 to 64 characters without spaces, not `{p}`"
                ),
            ));
        }
        let t = self.state_timeout_seconds;
        if !(t.is_finite() && (0.01..=60.0).contains(&t)) {
            return Err(invalid(
                "gateway.state-timeout-seconds",
                format!("`gateway.state-timeout-seconds` must be 0.01 to 60, not {t}"),
            ));
        }
        Ok(())
    }

    /// The shared state these settings ask for: on Redis when `state` is
    /// set (connected lazily, so a Redis that is down makes the gateway
    /// degraded, not unable to start), local otherwise. Must run inside a
    /// Tokio runtime.
    pub fn shared_state(&self) -> std::result::Result<SharedState, SharedError> {
        match &self.state {
            None => Ok(SharedState::local()),
            Some(url) => SharedState::connect(
                url,
                self.state_password_env.as_deref(),
                &self.state_prefix,
                std::time::Duration::from_secs_f64(self.state_timeout_seconds),
            ),
        }
    }

    /// The caps and idle time of streamable-HTTP sessions.
    pub fn session_limits(&self) -> toolrag_mcp::sessions::SessionLimits {
        toolrag_mcp::sessions::SessionLimits::new(
            self.max_sessions,
            self.max_sessions_per_principal,
            std::time::Duration::from_secs_f64(self.session_idle_seconds),
        )
    }

    /// The `allow` entry that lets `tool_id` (`server/tool`) act without
    /// asking: the tool itself or its server; `None` when none does.
    pub fn allow_entry(&self, tool_id: &str) -> Option<&str> {
        allow_entry(&self.allow, tool_id)
    }
}

/// The entry of the allow-list `allow` that names `tool_id` or its server.
pub(crate) fn allow_entry<'a>(allow: &'a [String], tool_id: &str) -> Option<&'a str> {
    let server = tool_id.split_once('/').map_or(tool_id, |(s, _)| s);
    allow
        .iter()
        .map(String::as_str)
        .find(|a| *a == tool_id || *a == server)
}
