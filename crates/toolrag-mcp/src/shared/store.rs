//! The Redis side of [`super::SharedState`]: one reconnecting connection
//! (the `redis` crate's `ConnectionManager`, multiplexed), a deadline on
//! every call, and the three kinds of keys.

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, IntoConnectionInfo, RedisResult, Script};
use sha2::{Digest, Sha256};

use super::{SharedError, StateUrl};

/// A GCRA bucket (the algorithm of `governor`, so that a shared budget
/// behaves as a local one): `KEYS[1]` holds the theoretical arrival time,
/// microseconds on Redis's clock; `ARGV[1]` is the interval between two
/// calls, `ARGV[2]` the burst (the calls a minute). Answers 0 when a call
/// may go, else the wait in microseconds. The key expires when the bucket
/// would be full again.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  tat = math.max(tonumber(stored), now)
end
local next_tat = tat + interval
local allow_at = next_tat - interval * burst
if now < allow_at then
  return math.max(1, allow_at - now)
end
redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', math.ceil((next_tat - now) / 1000) + 1)
return 0
";

/// Records a used approval state: `KEYS[1]` the state's key, `KEYS[2]` the
/// time (Redis's, Unix milliseconds) since which this Redis remembers used
/// states; `ARGV[1]` when the state expires (Unix seconds), `ARGV[2]` when
/// it was issued (Unix milliseconds). Answers 1 for a first use, 0 for a
/// replay, -1 for a state issued before this Redis began remembering (it
/// restarted empty, say): whether it was used before cannot be told.
const MARK_USED: &str = r"
local since = redis.call('GET', KEYS[2])
if not since then
  local t = redis.call('TIME')
  since = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  redis.call('SET', KEYS[2], since)
end
if tonumber(ARGV[2]) < tonumber(since) then
  return -1
end
if redis.call('SET', KEYS[1], '1', 'NX', 'EXAT', ARGV[1]) then
  return 1
end
return 0
";

/// `PING`, that also marks when this Redis began remembering used states
/// (the first contact after it started empty), Unix milliseconds.
const PING: &str = r"
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('SET', KEYS[1], now, 'NX')
return redis.call('PING')['ok']
";

/// After a failed call, how long the next ones fail at once instead of
/// waiting for their deadline: a Redis whose packets are dropped must not
/// add a second to every search (the revocation check and the request
/// limit ask it on every request).
const BREAK: Duration = Duration::from_millis(500);

/// The shared state on one Redis.
pub struct RedisState {
    conn: ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// The URL without its password, for messages.
    shown: String,
    gcra: Script,
    mark_used: Script,
    ping: Script,
    /// The clock of `broken_until`.
    started: Instant,
    /// Until when (ms since `started`) calls fail at once, and why.
    broken_until: AtomicU64,
    broken: Mutex<String>,
}

impl std::fmt::Debug for RedisState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisState")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisState {
    /// A lazy connection to `url` (its password, or the one in the
    /// environment variable `password_env`), keys under `prefix`, each call
    /// given `timeout`. Nothing is sent yet: a Redis that is down makes the
    /// gateway degraded, not unable to start. Must run inside a Tokio
    /// runtime.
    pub(super) fn connect(
        url: &StateUrl,
        password_env: Option<&str>,
        prefix: &str,
        timeout: Duration,
    ) -> Result<RedisState, SharedError> {
        let mut info = url.as_str().into_connection_info().map_err(|e| {
            SharedError::Config(format!("[gateway] state: {}: {e}", url.redacted()))
        })?;
        if let Some(name) = password_env {
            if info.redis_settings().password().is_some() {
                return Err(SharedError::Config(format!(
                    "[gateway] state has a password and [gateway] state-password-env names \
                     `{name}` too: give it in one place"
                )));
            }
            let password = std::env::var(name).map_err(|_| {
                SharedError::Config(format!(
                    "[gateway] state-password-env: the environment variable `{name}` is not set \
                     (or not UTF-8)"
                ))
            })?;
            let redis = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis);
        }
        if url.is_tls() {
            // rustls's process-wide provider: ring, as for the other clients.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = Client::open(info).map_err(|e| {
            SharedError::Config(format!("[gateway] state: {}: {e}", url.redacted()))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| SharedError::Config(format!("[gateway] state: {e}")))?;
        tracing::info!(
            "shared state on {} (keys `{prefix}*`, {} ms a call)",
            url.redacted(),
            timeout.as_millis()
        );
        Ok(RedisState {
            conn,
            prefix: prefix.to_string(),
            timeout,
            shown: url.redacted(),
            gcra: Script::new(GCRA),
            mark_used: Script::new(MARK_USED),
            ping: Script::new(PING),
            started: Instant::now(),
            broken_until: AtomicU64::new(0),
            broken: Mutex::new(String::new()),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `op` with the deadline; a late or failed answer is
    /// [`SharedError::Unreachable`], and so is any call for [`BREAK`] after
    /// one, without asking Redis.
    async fn call<T>(&self, op: impl Future<Output = RedisResult<T>>) -> Result<T, SharedError> {
        if self.now_ms() < self.broken_until.load(Ordering::Relaxed) {
            let why = self.broken.lock().map(|w| w.clone()).unwrap_or_default();
            return Err(SharedError::Unreachable(why));
        }
        self.probe(op).await
    }

    /// Runs `op` with the deadline, whether or not the last call failed;
    /// a failure makes the next calls fail at once for [`BREAK`].
    async fn probe<T>(&self, op: impl Future<Output = RedisResult<T>>) -> Result<T, SharedError> {
        let why = match tokio::time::timeout(self.timeout, op).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} ms", self.timeout.as_millis()),
        };
        if let Ok(mut w) = self.broken.lock() {
            w.clone_from(&why);
        }
        let until = self.now_ms().saturating_add(BREAK.as_millis() as u64);
        self.broken_until.store(until, Ordering::Relaxed);
        Err(SharedError::Unreachable(why))
    }

    /// `PING` (a script that also marks the start of the memory of used
    /// states, when there is none).
    pub(super) async fn ping(&self) -> Result<(), SharedError> {
        let mut conn = self.conn.clone();
        let invocation = self.ping.key(format!("{}since", self.prefix));
        // A probe: readiness asks Redis itself, even right after a failure.
        let pong: String = self.probe(invocation.invoke_async(&mut conn)).await?;
        self.broken_until.store(0, Ordering::Relaxed);
        if pong == "PONG" {
            Ok(())
        } else {
            Err(SharedError::Unreachable(format!("PING answered {pong}")))
        }
    }

    /// Records the use of the approval state `nonce`, issued at `issued_ms`
    /// (Unix milliseconds) and valid until `expires` (Unix seconds), as a
    /// key that expires with it (`SET NX EXAT`, in a script that first
    /// checks that this Redis remembers back to `issued_ms`).
    pub(super) async fn mark_used(
        &self,
        nonce: &str,
        issued_ms: u64,
        expires: u64,
    ) -> Result<super::Redeemed, SharedError> {
        let mut conn = self.conn.clone();
        let mut invocation = self.mark_used.key(format!("{}used:{nonce}", self.prefix));
        invocation
            .key(format!("{}since", self.prefix))
            .arg(expires.saturating_add(1))
            .arg(issued_ms);
        let answer: i64 = self.call(invocation.invoke_async(&mut conn)).await?;
        Ok(match answer {
            1 => super::Redeemed::First,
            0 => super::Redeemed::Replayed,
            _ => super::Redeemed::Forgotten,
        })
    }

    /// One call from the bucket `key` (hashed into the key's name) of
    /// `per_minute` calls a minute: `Ok(())`, or the wait.
    pub(super) async fn take(
        &self,
        key: &str,
        per_minute: NonZeroU32,
    ) -> Result<Result<(), Duration>, SharedError> {
        let mut conn = self.conn.clone();
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        let name = format!("{}rl:{}", self.prefix, &digest[..32]);
        let interval = 60_000_000 / u64::from(per_minute.get());
        let mut invocation = self.gcra.key(name);
        invocation.arg(interval).arg(per_minute.get());
        let wait: u64 = self.call(invocation.invoke_async(&mut conn)).await?;
        Ok(if wait == 0 {
            Ok(())
        } else {
            Err(Duration::from_micros(wait))
        })
    }

    /// `SET <prefix>revoked:<hash> 1 EX <ttl>`.
    pub(super) async fn revoke(&self, hash: &str, ttl: Duration) -> Result<(), SharedError> {
        let mut conn = self.conn.clone();
        let key = format!("{}revoked:{hash}", self.prefix);
        let secs = ttl.as_secs().max(1);
        self.call(
            redis::cmd("SET")
                .arg(&key)
                .arg(1)
                .arg("EX")
                .arg(secs)
                .query_async::<()>(&mut conn),
        )
        .await
    }

    /// How much longer the token `hash` stays revoked, or `None` when it
    /// is not (`PTTL`).
    pub(super) async fn revoked_for(&self, hash: &str) -> Result<Option<Duration>, SharedError> {
        let mut conn = self.conn.clone();
        let key = format!("{}revoked:{hash}", self.prefix);
        let ms: i64 = self
            .call(redis::cmd("PTTL").arg(&key).query_async(&mut conn))
            .await?;
        Ok(match ms {
            // -2: no such key; -1: no TTL (not one we wrote; honour it for a
            // minute at a time).
            -2 => None,
            -1 => Some(Duration::from_secs(60)),
            ms => Some(Duration::from_millis(ms.unsigned_abs())),
        })
    }
}
