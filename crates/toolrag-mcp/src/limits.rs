//! Rate limits: token buckets per principal (the HTTP front end) and per
//! principal and tool (`[gateway.tool-calls-per-minute]`), on `governor`.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use globset::GlobMatcher;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use toolrag_core::error::Result;
use toolrag_core::settings::invalid;

/// A bucket per key that holds `per_minute` tokens and refills them over a
/// minute; over it, the wait until the next token.
pub struct Buckets {
    per_minute: u32,
    limiter: DefaultKeyedRateLimiter<String>,
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
        }
    }

    /// The limit, calls a minute.
    pub fn limit(&self) -> u32 {
        self.per_minute
    }

    /// Takes a token from `key`'s bucket, or says how long until one is
    /// there.
    pub fn take(&self, key: &str) -> std::result::Result<(), Duration> {
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

    /// Takes a token for a call of `tool` by `principal` from every bucket
    /// that applies; when one is empty, the message to give and the wait.
    pub fn take(&self, principal: &str, tool: &str) -> std::result::Result<(), (String, Duration)> {
        for (pattern, matcher, buckets) in &self.entries {
            if !matcher.is_match(tool) {
                continue;
            }
            if let Err(wait) = buckets.take(&format!("{principal}\u{0}{tool}")) {
                let secs = wait.as_secs_f64().ceil().max(1.0);
                return Err((
                    format!(
                        "rate limit: at most {} calls a minute of `{tool}` per caller \
                         ([gateway.tool-calls-per-minute] \"{pattern}\"); the call was not made. \
                         Try again in {secs} s.",
                        buckets.limit()
                    ),
                    wait,
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_per_principal_and_tool() {
        let table = BTreeMap::from([("shop/refund".to_string(), 2)]);
        let l = ToolLimits::compile(&table).unwrap();
        assert!(l.take("bob", "shop/refund").is_ok());
        assert!(l.take("bob", "shop/refund").is_ok());
        let (message, wait) = l.take("bob", "shop/refund").unwrap_err();
        assert!(message.contains("at most 2 calls a minute"), "{message}");
        assert!(wait > Duration::from_secs(1) && wait <= Duration::from_secs(30));
        assert!(
            l.take("alice", "shop/refund").is_ok(),
            "alice has her own bucket"
        );
        assert!(
            l.take("bob", "shop/list").is_ok(),
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
