//! Learning from use, the gateway's half: each principal's recent searches,
//! and a usage record for every call that one of them offered.
//!
//! A call is tied to the latest search by the same principal, within
//! [`WINDOW`], whose handle set holds the called tool; a call no such search
//! offered (the agent knew the handle) is not recorded. `toolrag learn`
//! reads the log.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolrag_auth::{AuthMethod, Principal};
use toolrag_engine::learn::{mask_values, UsageLimits, UsageLog, UsageOutcome, UsageRecord};

use super::{GatewayError, GatewayOptions};

/// How long after a search a call still counts as following it.
pub(super) const WINDOW: Duration = Duration::from_secs(30 * 60);

/// The searches remembered per principal.
const RECENT: usize = 16;

/// The most principals remembered at once; past it the memory starts over.
const PRINCIPALS: usize = 10_000;

struct Search {
    at: Instant,
    request: String,
    handles: Vec<String>,
}

/// The recorder; off when `[gateway] record-usage = false`.
pub(super) struct Usage {
    log: Option<UsageLog>,
    teachers: Vec<String>,
    recent: Mutex<HashMap<String, VecDeque<Search>>>,
}

impl Usage {
    /// Opens the usage log of `opts` (created when missing), or none when
    /// recording is off.
    pub(super) fn open(opts: &GatewayOptions) -> Result<Usage, GatewayError> {
        let s = &opts.settings;
        let log = if s.record_usage {
            let max_bytes = (s.usage_max_mb * 1_048_576.0) as u64;
            let limits = UsageLimits::new(max_bytes, s.usage_max_age_days);
            Some(UsageLog::open(&opts.usage_log, limits).map_err(GatewayError::Index)?)
        } else {
            None
        };
        Ok(Usage {
            log,
            teachers: s.teachers.clone(),
            recent: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `who` may teach: a principal `[gateway] teachers` names; with
    /// no list, the one local principal (stdio, or HTTP without auth).
    fn may_teach(&self, who: &Principal) -> bool {
        if self.teachers.is_empty() {
            who.method == AuthMethod::Local
        } else {
            self.teachers.iter().any(|t| who.matches(t))
        }
    }

    /// Remembers that `who` searched for `request` and was offered `handles`
    /// (tool ids, best first).
    pub(super) fn searched(&self, who: &Principal, request: &str, handles: Vec<String>) {
        if self.log.is_none() || handles.is_empty() {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() >= PRINCIPALS && !recent.contains_key(&who.key()) {
            recent.clear();
        }
        let searches = recent.entry(who.key()).or_default();
        if searches.len() == RECENT {
            searches.pop_front();
        }
        searches.push_back(Search {
            at: Instant::now(),
            request: request.to_string(),
            handles,
        });
    }

    /// Records that `who` called `tool` with `arguments` and `outcome`, when
    /// a recent search of theirs offered it. The arguments are not recorded,
    /// and their values are taken out of the recorded request too
    /// ([`mask_values`]). A log that cannot be written is reported and
    /// otherwise ignored: learning never stops a call.
    pub(super) fn called(
        &self,
        who: &Principal,
        tool: &str,
        arguments: &Value,
        outcome: UsageOutcome,
    ) {
        let Some(log) = &self.log else {
            return;
        };
        let found = {
            let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            recent.get(&who.key()).and_then(|searches| {
                searches
                    .iter()
                    .rev()
                    .take_while(|s| s.at.elapsed() <= WINDOW)
                    .find(|s| s.handles.iter().any(|h| h == tool))
                    .map(|s| (s.request.clone(), s.handles.clone()))
            })
        };
        let Some((request, handles)) = found else {
            return;
        };
        let record = UsageRecord::new(
            who.name.clone(),
            self.may_teach(who),
            mask_values(&request, &values_of(arguments)),
            handles,
            tool,
            outcome,
        );
        if let Err(e) = log.append(&record) {
            tracing::error!("cannot write the usage log: {e}");
        }
    }
}

/// The string and number values in `arguments`, at any depth (at most 64).
fn values_of(arguments: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        if out.len() >= 64 {
            return;
        }
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(arguments, &mut out);
    out
}
