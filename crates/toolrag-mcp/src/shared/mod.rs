//! The state that the gateway's replicas share: which approval states were
//! used (the replay store), the rate-limit budgets, and revoked tokens.
//!
//! Two kinds ([`SharedState`]):
//! - **local** (the default, one host): approval states in the SQLite file
//!   `[gateway] approvals-db`, budgets in each process's `governor`
//!   buckets, revocations in the process's memory;
//! - **Redis** (`[gateway] state = "redis://HOST:PORT/DB"`, or `rediss://`
//!   for TLS): all three in one Redis, so N replicas behind a load balancer
//!   are one gateway. Every key has a TTL, so nothing grows forever:
//!   - `<prefix>used:<nonce>` until the approval state expires
//!     (`SET NX EXAT`, atomic: a state is used once across replicas), and
//!     `<prefix>since`, when this Redis began remembering them: a state
//!     issued before (Redis restarted empty since) is refused;
//!   - `<prefix>rl:<hash>` a GCRA bucket (a Lua script, run atomically on
//!     Redis's clock), until it would be full again;
//!   - `<prefix>revoked:<sha256 of the token>` for the TTL given to
//!     [`SharedState::revoke`].
//!
//! Every Redis call has a deadline (`[gateway] state-timeout-seconds`), so a
//! dead Redis never hangs a request. When Redis cannot be reached the
//! gateway fails closed where it matters: completing an approval is
//! refused, and so is a call under `[gateway.tool-calls-per-minute]`; the
//! per-principal request limit of the HTTP front end falls back to the
//! replica's own bucket, and revocation to what the replica already knows,
//! so that search and read-only calls keep working. [`SharedState::ready`]
//! says whether Redis answers (`/readyz`); the connection comes back by
//! itself when Redis does.

mod store;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use store::RedisState;

/// Why the shared state cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SharedError {
    /// The settings are wrong: the message names the setting.
    #[error("{0}")]
    Config(String),
    /// Redis did not answer in time, or answered with an error.
    #[error("redis unreachable: {0}")]
    Unreachable(String),
}

/// What recording the use of an approval state found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redeemed {
    /// Its first use: the call may run.
    First,
    /// It was used before.
    Replayed,
    /// It was issued before Redis began remembering used states (Redis
    /// restarted empty since): whether it was used cannot be told.
    Forgotten,
}

/// How many revocations a replica remembers by itself.
const LOCAL_REVOCATIONS: usize = 100_000;

/// The gateway's shared state: local to the process, or on Redis. Cheap to
/// clone: the clones are one state.
#[derive(Clone, Default)]
pub struct SharedState {
    redis: Option<Arc<RedisState>>,
    revoked: Arc<Mutex<HashMap<String, Instant>>>,
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedState")
            .field("redis", &self.redis)
            .finish_non_exhaustive()
    }
}

impl SharedState {
    /// The state of one process: SQLite and in-process buckets.
    pub fn local() -> SharedState {
        SharedState::default()
    }

    /// The state on the Redis at `url` (its password, or the one in the
    /// environment variable `password_env`), keys under `prefix`, each
    /// call given `timeout`. The connection is made lazily, so the gateway
    /// starts (degraded) when Redis is down. Must run inside a Tokio
    /// runtime.
    pub fn connect(
        url: &StateUrl,
        password_env: Option<&str>,
        prefix: &str,
        timeout: Duration,
    ) -> Result<SharedState, SharedError> {
        let redis = RedisState::connect(url, password_env, prefix, timeout)?;
        Ok(SharedState {
            redis: Some(Arc::new(redis)),
            ..SharedState::default()
        })
    }

    /// The Redis state, when there is one.
    pub fn redis(&self) -> Option<&Arc<RedisState>> {
        self.redis.as_ref()
    }

    /// Whether the state is shared (on Redis).
    pub fn is_shared(&self) -> bool {
        self.redis.is_some()
    }

    /// Whether the shared state can be used now: always for a local one;
    /// for Redis, whether it answers `PING` in time.
    pub async fn ready(&self) -> Result<(), SharedError> {
        match &self.redis {
            Some(r) => r.ping().await,
            None => Ok(()),
        }
    }

    /// Revokes the token whose SHA-256 (hex) is `token_sha256` for `ttl`:
    /// every replica refuses it from now on, even when it is still in the
    /// replica's token file. Remembered by this replica in any case; an
    /// error means the other replicas were not told.
    pub async fn revoke(&self, token_sha256: &str, ttl: Duration) -> Result<(), SharedError> {
        let hash = token_sha256.to_ascii_lowercase();
        self.remember_revoked(&hash, ttl);
        match &self.redis {
            Some(r) => r.revoke(&hash, ttl).await,
            None => Ok(()),
        }
    }

    /// Whether the token whose SHA-256 (hex) is `token_sha256` is revoked.
    /// When Redis cannot be reached, what this replica already knows (it
    /// remembers the revocations it made or saw): the token files stay the
    /// first line, and search keeps working.
    pub async fn is_revoked(&self, token_sha256: &str) -> bool {
        let lower = token_sha256.to_ascii_lowercase();
        let token_sha256 = lower.as_str();
        if self.known_revoked(token_sha256) {
            return true;
        }
        let Some(r) = &self.redis else {
            return false;
        };
        match r.revoked_for(token_sha256).await {
            Ok(Some(ttl)) => {
                self.remember_revoked(token_sha256, ttl);
                true
            }
            Ok(None) => false,
            Err(e) => {
                warn_outage(&format!(
                    "cannot check revoked tokens, using this replica's own list: {e}"
                ));
                false
            }
        }
    }

    /// Whether this process needs to check tokens at all: it is on Redis,
    /// or it was told of a revocation.
    pub fn checks_revocation(&self) -> bool {
        self.redis.is_some() || !self.lock_revoked().is_empty()
    }

    /// Records that the approval state `nonce`, issued at `issued_ms` (Unix
    /// milliseconds) and valid until `expires` (Unix seconds), is used.
    /// Only on Redis (the local store is the SQLite file).
    pub async fn mark_used(
        &self,
        nonce: &str,
        issued_ms: u64,
        expires: u64,
    ) -> Result<Redeemed, SharedError> {
        match &self.redis {
            Some(r) => r.mark_used(nonce, issued_ms, expires).await,
            None => Err(SharedError::Config(
                "no shared state: used approval states are in the SQLite file".into(),
            )),
        }
    }

    /// Takes a token from the shared bucket `key` of `per_minute` calls a
    /// minute: `Ok(Ok(()))`, or `Ok(Err(wait))` when it is empty. Only on
    /// Redis.
    pub(crate) async fn take(
        &self,
        key: &str,
        per_minute: NonZeroU32,
    ) -> Result<Result<(), Duration>, SharedError> {
        match &self.redis {
            Some(r) => r.take(key, per_minute).await,
            None => Ok(Ok(())),
        }
    }

    fn lock_revoked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.revoked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn known_revoked(&self, hash: &str) -> bool {
        let map = self.lock_revoked();
        map.get(hash).is_some_and(|until| *until > Instant::now())
    }

    fn remember_revoked(&self, hash: &str, ttl: Duration) {
        let now = Instant::now();
        let mut map = self.lock_revoked();
        if map.len() >= LOCAL_REVOCATIONS {
            map.retain(|_, until| *until > now);
        }
        if map.len() < LOCAL_REVOCATIONS {
            map.insert(hash.to_string(), now + ttl);
        }
    }
}

/// The URL of the shared state (`[gateway] state`). It may hold a password,
/// so its `Debug` and [`StateUrl::redacted`] hide it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct StateUrl(String);

impl StateUrl {
    /// The URL as written.
    pub fn new(url: impl Into<String>) -> StateUrl {
        StateUrl(url.into())
    }

    /// The URL as written, password included: for the client only.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it asks for TLS (`rediss://`).
    pub fn is_tls(&self) -> bool {
        self.0.starts_with("rediss://")
    }

    /// The URL with any password replaced by `***`, for messages and logs.
    pub fn redacted(&self) -> String {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return "<not a URL>".into();
        };
        let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split_once(':').map_or("", |(u, _)| u);
                format!("{scheme}://{user}:***@{host}{path}")
            }
            None => self.0.clone(),
        }
    }
}

impl std::fmt::Debug for StateUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Logs `message` as a warning, at most once every 10 s, so that an outage
/// under load does not flood the log.
pub(crate) fn warn_outage(message: &str) {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(std::sync::atomic::Ordering::Relaxed);
    if now >= last + 10
        && LAST
            .compare_exchange(
                last,
                now,
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_ok()
    {
        tracing::warn!("{message} (repeats are not logged for 10 s)");
    }
}

/// The hex SHA-256 of a bearer token, as token files write it
/// (`name:sha256:<hex>`) and as [`SharedState::revoke`] takes it.
pub fn token_sha256(token: &str) -> String {
    hex::encode(toolrag_auth::token_digest(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_state_remembers_revocations_until_their_ttl() {
        let s = SharedState::local();
        let hash = token_sha256("alice-token");
        assert!(!s.checks_revocation());
        assert!(!s.is_revoked(&hash).await);
        s.revoke(&hash.to_uppercase(), Duration::from_millis(300))
            .await
            .unwrap();
        assert!(s.checks_revocation());
        assert!(s.is_revoked(&hash).await);
        assert!(s.is_revoked(&hash.to_uppercase()).await);
        assert!(!s.is_revoked(&token_sha256("bob-token")).await);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!s.is_revoked(&hash).await, "past its TTL");
        assert!(s.ready().await.is_ok());
        assert!(!s.is_shared());
    }
}
