//! The gateway's rate limits: the compiled
//! `[gateway.tool-calls-per-minute]` table, a bucket per principal and tool
//! ([`toolrag_mcp::limits::Buckets`]), shared by the replicas when
//! `[gateway] state` is on Redis.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use globset::GlobMatcher;

use toolrag_core::error::Result;
use toolrag_core::settings::invalid;
use toolrag_mcp::limits::{Buckets, OnOutage, Refusal};
use toolrag_mcp::shared::SharedState;

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
