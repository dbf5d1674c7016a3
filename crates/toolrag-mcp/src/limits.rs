//! Rate limits: token buckets by key, on `governor`, or, with
//! `[gateway] state` on Redis, one budget across the replicas
//! ([`crate::shared`]). The HTTP front end keeps one per principal; the
//! gateway (`toolrag-gateway`) one per principal and tool.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::shared::SharedState;

/// What shared buckets do when the shared state cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnOutage {
    /// Count in this replica's own bucket (N replicas then allow up to N
    /// times the budget while the outage lasts).
    Local,
    /// Refuse the call (fail closed).
    Refuse,
}

/// Why a bucket let a call not go (a closed set: the gateway words each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The bucket is empty: the wait until the next token.
    Wait(Duration),
    /// The shared state cannot be reached, and the buckets fail closed.
    Unavailable(String),
}

/// A bucket per key that holds `per_minute` tokens and refills them over a
/// minute; over it, the wait until the next token.
pub struct Buckets {
    per_minute: u32,
    limiter: DefaultKeyedRateLimiter<String>,
    shared: Option<(SharedState, String, OnOutage)>,
}

impl std::fmt::Debug for Buckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buckets")
            .field("per_minute", &self.per_minute)
            .finish_non_exhaustive()
    }
}

impl Buckets {
    /// Buckets of `per_minute` calls a minute each.
    pub fn per_minute(per_minute: NonZeroU32) -> Buckets {
        Buckets {
            per_minute: per_minute.get(),
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            shared: None,
        }
    }

    /// The same buckets counted in `shared` (when it is on Redis) under
    /// the name `name`, doing `outage` when it cannot be reached.
    pub fn shared(mut self, shared: &SharedState, name: &str, outage: OnOutage) -> Buckets {
        if shared.is_shared() {
            self.shared = Some((shared.clone(), name.to_string(), outage));
        }
        self
    }

    /// The limit, calls a minute.
    pub fn limit(&self) -> u32 {
        self.per_minute
    }

    /// Takes a token from `key`'s bucket (the shared one, when there is
    /// one), or says why not.
    pub async fn take(&self, key: &str) -> std::result::Result<(), Refusal> {
        let Some((shared, name, outage)) = &self.shared else {
            return self.take_local(key).map_err(Refusal::Wait);
        };
        let per_minute = NonZeroU32::new(self.per_minute).unwrap_or(NonZeroU32::MIN);
        match shared.take(&format!("{name}\u{0}{key}"), per_minute).await {
            Ok(taken) => taken.map_err(Refusal::Wait),
            Err(e) => match outage {
                OnOutage::Local => {
                    crate::shared::warn_outage(&format!(
                        "a rate limit is counted on this replica only: {e}"
                    ));
                    self.take_local(key).map_err(Refusal::Wait)
                }
                OnOutage::Refuse => Err(Refusal::Unavailable(e.to_string())),
            },
        }
    }

    /// Takes a token from this process's bucket of `key`.
    fn take_local(&self, key: &str) -> std::result::Result<(), Duration> {
        // Forget idle buckets now and then, so that many principals cannot
        // grow the map without bound.
        if self.limiter.len() > 10_000 {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key.to_string())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}
