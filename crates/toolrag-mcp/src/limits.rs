//! Rate limits: token buckets per principal (the HTTP front end) and per
//! principal and tool (`[gateway.tool-calls-per-minute]`), on `governor`,
//! or, with `[gateway] state` on Redis, one budget across the replicas
//! ([`crate::shared`]).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use globset::GlobMatcher;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::shared::SharedState;
use toolrag_core::error::Result;
use toolrag_core::settings::invalid;

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

/// Why a bucket let a call not go.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// The compiled `[gateway.tool-calls-per-minute]` table.
#[derive(Debug, Default)]
pub struct ToolLimits {
    entries: Vec<(String, GlobMatcher, Buckets)>,
}

impl ToolLimits {
    /// Compiles the table; a limit of 0 or a glob that does not parse is an
    /// error naming the entry.
    pub fn compile(table: &BTreeMap<String, u32>) -> Result<ToolLimits> {
        let key = "gateway.tool-calls-per-minute";
        let mut entries = Vec::new();
        for (pattern, &n) in table {
            let Some(n) = NonZeroU32::new(n) else {
                return Err(invalid(
                    key,
                    format!("`{key}.\"{pattern}\"` must be at least 1 call a minute, not 0"),
                ));
            };
            let matcher = crate::policy::tool_glob(key, pattern)?.compile_matcher();
            entries.push((pattern.clone(), matcher, Buckets::per_minute(n)));
        }
        Ok(ToolLimits { entries })
    }

    /// The same table counted in `shared` when it is on Redis: one budget
    /// across the replicas, and calls refused when Redis cannot be reached
    /// (a budget on acts is not lifted by an outage).
    pub fn shared(mut self, shared: &SharedState) -> ToolLimits {
        self.entries = self
            .entries
            .into_iter()
            .map(|(pattern, matcher, buckets)| {
                let name = format!("tool\u{0}{pattern}");
                let buckets = buckets.shared(shared, &name, OnOutage::Refuse);
                (pattern, matcher, buckets)
            })
            .collect();
        self
    }

    /// Takes a token for a call of `tool` by `principal` from every bucket
    /// that applies; when one is empty, or cannot be counted, the message
    /// to give and the wait.
    pub async fn take(
        &self,
        principal: &str,
        tool: &str,
    ) -> std::result::Result<(), (String, Duration)> {
        for (pattern, matcher, buckets) in &self.entries {
            if !matcher.is_match(tool) {
                continue;
            }
            let limit = buckets.limit();
            match buckets.take(&format!("{principal}\u{0}{tool}")).await {
                Ok(()) => {}
                Err(Refusal::Wait(wait)) => {
                    let secs = wait.as_secs_f64().ceil().max(1.0);
                    return Err((
                        format!(
                            "rate limit: at most {limit} calls a minute of `{tool}` per caller \
                             ([gateway.tool-calls-per-minute] \"{pattern}\"); the call was not \
                             made. Try again in {secs} s."
                        ),
                        wait,
                    ));
                }
                Err(Refusal::Unavailable(why)) => {
                    return Err((
                        format!(
                            "`{tool}` has a rate limit ([gateway.tool-calls-per-minute] \
                             \"{pattern}\") that the gateway cannot count now ({why}), so the \
                             call was not made. Try again shortly."
                        ),
                        Duration::from_secs(1),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bucket_per_principal_and_tool() {
        let table = BTreeMap::from([("shop/refund".to_string(), 2)]);
        let l = ToolLimits::compile(&table)
            .unwrap()
            .shared(&SharedState::local());
        assert!(l.take("bob", "shop/refund").await.is_ok());
        assert!(l.take("bob", "shop/refund").await.is_ok());
        let (message, wait) = l.take("bob", "shop/refund").await.unwrap_err();
        assert!(message.contains("at most 2 calls a minute"), "{message}");
        assert!(wait > Duration::from_secs(1) && wait <= Duration::from_secs(30));
        assert!(
            l.take("alice", "shop/refund").await.is_ok(),
            "alice has her own bucket"
        );
        assert!(
            l.take("bob", "shop/list").await.is_ok(),
            "another tool is not limited"
        );
    }

    #[test]
    fn zero_and_bad_globs_are_named() {
        let e = ToolLimits::compile(&BTreeMap::from([("x".to_string(), 0)])).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = ToolLimits::compile(&BTreeMap::from([("x/[".to_string(), 1)])).unwrap_err();
        assert!(e.to_string().contains("not a glob"), "{e}");
    }
}
