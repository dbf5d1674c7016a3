//! Learning from use: which tool an agent called after a search, turned into
//! learnt example requests of that tool.
//!
//! The MCP gateway appends a [`UsageRecord`] to the index folder's usage log
//! ([`UsageLog`], `usage.jsonl`) for every call that follows a search: the
//! request, the handle set, the tool called and how the call ended; never
//! its arguments or result. [`learn`] turns the log into [`Learnt`]
//! (`learnt.json`, beside the generations), and every build of the folder
//! gives each tool its learnt requests ([`attach`]), which are embedded as
//! dense points of the tool, like its documented example requests (the
//! multi-vector path), of their own kind (`PointKind::Learnt`): a later
//! request like a learnt one finds the tool through that point.
//!
//! What is learnt is what a request asks, not what it names: the call's
//! argument values (by the gateway, before the record is written) and words
//! that read as values (by [`mask_request`]) become a placeholder, and a
//! request left with fewer than two words teaches nothing. And a learnt
//! point counts together with its tool's own texts, never alone: the dense
//! retriever scores the tool the mean of its best learnt similarity and its
//! own, when that is more. Without these two, learnt requests that shared a
//! name or a path with later requests of other tools took their places
//! (research/LOG.md, "Learning from use").
//!
//! The guards against a poisoned stream:
//! - only successful calls count, and only of principals allowed to teach;
//! - a request that was followed by calls of several tools counts only for
//!   the tool called most often after it;
//! - one principal gives a tool at most [`LearnOptions::per_principal`]
//!   requests, and a tool keeps at most [`LearnOptions::per_tool`], those
//!   asked by the most principals and most often first;
//! - everything is reversible: [`Learnt::forget`] a tool, [`Learnt::reset`]
//!   it all.

mod learnt;
mod mask;
mod usage;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use chrono::{DateTime, Utc};
use toolrag_core::error::Result;
use toolrag_core::registry::{LearntRequest, Registry, ToolDef};

pub use learnt::{Learnt, LearntExample, LEARNT_FILE, USAGE_FILE};
pub use mask::{mask_request, mask_values, PLACEHOLDER};
pub use usage::{read_usage, SkippedLine, UsageLimits, UsageLog, UsageOutcome, UsageRecord};

/// How much [`learn`] keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LearnOptions {
    /// The most learnt requests a tool keeps.
    pub per_tool: usize,
    /// The most learnt requests one principal gives a tool.
    pub per_principal: usize,
    /// Records older than this many days are not learnt from.
    pub max_age_days: f64,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            per_tool: 16,
            per_principal: 8,
            max_age_days: UsageLimits::default().max_age_days,
        }
    }
}

/// What [`learn`] did with the records.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LearnReport {
    /// Records read.
    pub records: usize,
    /// Records that counted: a successful call, by a teacher, of a tool in
    /// the index, not older than the age limit nor forgotten.
    pub counted: usize,
    /// Calls that failed or reported an error.
    pub unsuccessful: usize,
    /// Calls by principals not allowed to teach.
    pub not_teachers: usize,
    /// Records older than the age limit, or before a reset or a forget.
    pub old_or_forgotten: usize,
    /// Calls of tools the index does not have (any more).
    pub unknown_tools: usize,
    /// Requests with fewer than two words once their particulars (names,
    /// paths, numbers) are taken out.
    pub too_short: usize,
    /// Calls of a tool after a request that was followed more often by
    /// another tool.
    pub outvoted: usize,
    /// Distinct requests left out by a cap (per tool or per principal).
    pub capped: usize,
    /// Distinct requests that are already a documented example of the tool.
    pub documented: usize,
    /// Tools with learnt requests.
    pub tools: usize,
    /// Learnt requests in all.
    pub learnt: usize,
}

impl std::fmt::Display for LearnReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "learnt {} requests for {} tools from {} of {} records",
            self.learnt, self.tools, self.counted, self.records
        )?;
        let left = [
            (self.unsuccessful, "unsuccessful"),
            (self.not_teachers, "by principals who may not teach"),
            (self.old_or_forgotten, "too old or forgotten"),
            (self.unknown_tools, "of tools not in the index"),
            (
                self.too_short,
                "with under two words besides names and values",
            ),
            (self.outvoted, "outvoted by another tool"),
        ];
        let left: Vec<String> = left
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, why)| format!("{n} {why}"))
            .collect();
        if !left.is_empty() {
            write!(f, " (left out: {})", left.join(", "))?;
        }
        if self.capped > 0 {
            write!(f, "; {} requests over a cap", self.capped)?;
        }
        Ok(())
    }
}

/// The tally of one request for one tool.
struct Tally<'a> {
    text: String,
    calls: u32,
    principals: BTreeSet<&'a str>,
    last: DateTime<Utc>,
}

/// A request as it is learnt: trimmed, whitespace collapsed.
fn collapse(request: &str) -> String {
    request.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Learns from `records` for the tools of an index, keeping `previous`'s
/// reset and forgotten marks (its learnt requests are learnt afresh from the
/// records, which hold them too).
pub fn learn(
    records: &[UsageRecord],
    tools: &[ToolDef],
    previous: &Learnt,
    opts: &LearnOptions,
) -> (Learnt, LearnReport) {
    let known: HashMap<&str, &ToolDef> = tools.iter().map(|t| (t.id.as_str(), t)).collect();
    let oldest = usage::oldest_kept(opts.max_age_days);
    let mut report = LearnReport {
        records: records.len(),
        ..LearnReport::default()
    };
    let mut by_request: HashMap<String, HashMap<&str, Tally<'_>>> = HashMap::new();
    for r in records {
        if r.outcome != UsageOutcome::Succeeded {
            report.unsuccessful += 1;
            continue;
        }
        if !r.teach {
            report.not_teachers += 1;
            continue;
        }
        let forgotten = previous.forgotten.get(&r.tool).is_some_and(|t| r.at <= *t);
        if r.at < oldest || previous.reset_at.is_some_and(|t| r.at <= t) || forgotten {
            report.old_or_forgotten += 1;
            continue;
        }
        let Some(tool) = known.get(r.tool.as_str()) else {
            report.unknown_tools += 1;
            continue;
        };
        let text = mask_request(&collapse(&r.request), &[]);
        let words = text
            .split_whitespace()
            .filter(|w| !w.starts_with(PLACEHOLDER))
            .count();
        if words < 2 {
            report.too_short += 1;
            continue;
        }
        report.counted += 1;
        let tally = by_request
            .entry(text.to_lowercase())
            .or_default()
            .entry(tool.id.as_str())
            .or_insert_with(|| Tally {
                text: text.clone(),
                calls: 0,
                principals: BTreeSet::new(),
                last: r.at,
            });
        tally.calls += 1;
        tally.principals.insert(r.principal.as_str());
        if r.at >= tally.last {
            tally.last = r.at;
            tally.text = text;
        }
    }

    // Each request counts for the tool called most often after it.
    let mut per_tool: HashMap<&str, Vec<(String, Tally<'_>)>> = HashMap::new();
    for (key, tallies) in by_request {
        let most = tallies.values().map(|t| t.calls).max().unwrap_or(0);
        for (tool, tally) in tallies {
            if tally.calls < most {
                report.outvoted += tally.calls as usize;
            } else {
                per_tool.entry(tool).or_default().push((key.clone(), tally));
            }
        }
    }

    let mut out = Learnt {
        reset_at: previous.reset_at,
        forgotten: previous.forgotten.clone(),
        ..Learnt::default()
    };
    for (id, mut candidates) in per_tool {
        let documented = documented(known[id]);
        let before = candidates.len();
        candidates.retain(|(key, _)| !documented.contains(key));
        report.documented += before - candidates.len();
        candidates.sort_by(|(ka, a), (kb, b)| {
            (b.principals.len(), b.calls, b.last)
                .cmp(&(a.principals.len(), a.calls, a.last))
                .then_with(|| ka.cmp(kb))
        });
        let mut given: HashMap<&str, usize> = HashMap::new();
        let mut kept = Vec::new();
        for (_, t) in candidates {
            let room: Vec<&str> = t
                .principals
                .iter()
                .copied()
                .filter(|p| given.get(p).copied().unwrap_or(0) < opts.per_principal)
                .collect();
            if kept.len() >= opts.per_tool || room.is_empty() {
                report.capped += 1;
                continue;
            }
            for p in room {
                *given.entry(p).or_default() += 1;
            }
            kept.push(LearntExample {
                request: t.text,
                calls: t.calls,
                principals: t.principals.len() as u32,
                last: t.last,
            });
        }
        if !kept.is_empty() {
            report.learnt += kept.len();
            report.tools += 1;
            out.tools.insert(id.to_string(), kept);
        }
    }
    (out, report)
}

/// `registry` with each tool's learnt requests from `learnt` (and none for
/// a tool that has none, so that a forgotten tool loses them), leaving out a
/// request that is already one of the tool's documented examples.
pub fn attach(registry: Registry, learnt: &Learnt) -> Result<Registry> {
    if learnt.is_empty() && registry.tools().iter().all(|t| t.learnt.is_empty()) {
        return Ok(registry);
    }
    let mut tools = registry.into_tools();
    for t in &mut tools {
        t.learnt = learnt.requests_for(t);
    }
    Registry::from_tools(tools)
}

impl Learnt {
    /// The learnt requests of `tool`, best first, without those that are
    /// already among its documented examples.
    pub fn requests_for(&self, tool: &ToolDef) -> Vec<LearntRequest> {
        let Some(examples) = self.tools.get(&tool.id) else {
            return Vec::new();
        };
        let documented = documented(tool);
        examples
            .iter()
            .filter(|e| !documented.contains(&e.request.to_lowercase()))
            .map(|e| LearntRequest {
                request: e.request.clone(),
                calls: e.calls,
            })
            .collect()
    }
}

/// The documented example requests of `tool`, as requests are compared:
/// whitespace collapsed, lowercase.
fn documented(tool: &ToolDef) -> HashSet<String> {
    tool.examples
        .iter()
        .map(|e| collapse(&e.request).to_lowercase())
        .collect()
}

/// `registry` with the learnt requests of the index folder `index` (see
/// [`attach`]). A `learnt.json` that cannot be read is reported as a warning
/// and ignored, so that learning can never stop an index from being built.
pub fn attach_from(registry: Registry, index: &Path) -> Result<Registry> {
    let learnt = Learnt::read(index).unwrap_or_else(|e| {
        tracing::warn!("learnt requests ignored: {e}");
        Learnt::default()
    });
    attach(registry, &learnt)
}

#[cfg(test)]
mod tests;
