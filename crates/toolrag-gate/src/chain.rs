//! The prompt-chain seam: propose, check, feed the violations back, propose
//! again, up to a retry budget, then abort. The proposer (a model, usually) is
//! a closure the caller supplies; the gate between proposals is code.

use serde_json::Value;

use super::{repair_feedback, Gate, Verdict};

/// What a proposer hands back: the plan as parsed JSON, or the raw text a
/// model wrote (which the gate parses, and rejects with `invalid-json` when
/// it is not JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// An already-parsed plan.
    Json(Value),
    /// Raw model output, expected to be one JSON object.
    Text(String),
}

impl From<Value> for Proposal {
    fn from(v: Value) -> Self {
        Proposal::Json(v)
    }
}

impl From<String> for Proposal {
    fn from(s: String) -> Self {
        Proposal::Text(s)
    }
}

impl From<&str> for Proposal {
    fn from(s: &str) -> Self {
        Proposal::Text(s.to_string())
    }
}

/// What the proposer is told on each call.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// 1 for the first proposal, 2 for the first repair, and so on.
    pub number: usize,
    /// The repair instruction ([`repair_feedback`]) for the previous
    /// proposal; `None` on the first attempt.
    pub feedback: Option<&'a str>,
    /// The verdict on the previous proposal; `None` on the first attempt.
    pub previous: Option<&'a Verdict>,
}

/// A plan the gate passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The plan, parsed.
    pub plan: Value,
    /// Its verdict: valid, with the approvals it needs.
    pub verdict: Verdict,
    /// How many proposals it took, the accepted one included.
    pub attempts: usize,
}

/// Why the chain stopped without a valid plan.
#[derive(Debug, thiserror::Error)]
pub enum Abort<E> {
    /// Every proposal was rejected; the retry budget is spent.
    #[error(
        "the plan gate rejected {} proposal(s); the last had {} violation(s)",
        .0.attempts,
        .0.verdict.violations.len()
    )]
    Rejected(Box<Rejection>),
    /// The proposer itself failed (a model call that errored); the chain
    /// stops at once rather than spend retries on a broken proposer.
    #[error("the proposer failed on attempt {attempt}")]
    Proposer {
        /// The attempt that failed, from 1.
        attempt: usize,
        /// The proposer's error.
        #[source]
        error: E,
    },
}

/// The last proposal of a chain that ran out of retries, and its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The last proposal.
    pub proposal: Proposal,
    /// Its verdict: the violations a caller would report or log.
    pub verdict: Verdict,
    /// How many proposals were made.
    pub attempts: usize,
}

impl<E> Abort<E> {
    /// The last verdict, when the chain stopped on a rejection.
    pub fn verdict(&self) -> Option<&Verdict> {
        match self {
            Abort::Rejected(r) => Some(&r.verdict),
            Abort::Proposer { .. } => None,
        }
    }
}

impl Gate<'_> {
    /// Runs propose → check → [`repair_feedback`] → propose again, until a
    /// proposal passes or `max_retry` repairs were spent: at most
    /// `1 + max_retry` calls to `propose`. `max_retry = 0` checks a single
    /// proposal.
    pub fn run_with_repair<P, E, F>(
        &self,
        mut propose: F,
        max_retry: usize,
    ) -> Result<Accepted, Abort<E>>
    where
        F: FnMut(Attempt<'_>) -> Result<P, E>,
        P: Into<Proposal>,
    {
        let mut last: Option<(Verdict, String)> = None;
        let mut retries = 0usize;
        loop {
            let number = retries.saturating_add(1);
            let attempt = Attempt {
                number,
                feedback: last.as_ref().map(|(_, f)| f.as_str()),
                previous: last.as_ref().map(|(v, _)| v),
            };
            let proposal: Proposal = propose(attempt)
                .map_err(|error| Abort::Proposer {
                    attempt: number,
                    error,
                })?
                .into();
            let (plan, verdict) = self.judge(&proposal);
            match plan {
                Some(plan) if verdict.valid => {
                    return Ok(Accepted {
                        plan,
                        verdict,
                        attempts: number,
                    })
                }
                _ if retries >= max_retry => {
                    return Err(Abort::Rejected(Box::new(Rejection {
                        proposal,
                        verdict,
                        attempts: number,
                    })))
                }
                _ => {
                    let feedback = repair_feedback(&verdict);
                    last = Some((verdict, feedback));
                    retries += 1;
                }
            }
        }
    }

    /// The parsed plan (when it parses) and its verdict.
    fn judge(&self, proposal: &Proposal) -> (Option<Value>, Verdict) {
        match proposal {
            Proposal::Json(v) => (Some(v.clone()), self.check(v)),
            Proposal::Text(t) => match serde_json::from_str::<Value>(t) {
                Ok(v) => {
                    let verdict = self.check(&v);
                    (Some(v), verdict)
                }
                Err(e) => (None, super::not_json(&e)),
            },
        }
    }
}

/// [`Gate::run_with_repair`] with an offered set and no tool resolver.
///
/// ```
/// use serde_json::json;
/// use toolrag_gate::{self as gate, Abort};
///
/// // A proposer that never learns: the chain gives up after 1 + 2 attempts.
/// let mut calls = 0;
/// let result = gate::run_with_repair(
///     |_attempt| {
///         calls += 1;
///         Ok::<_, std::convert::Infallible>("not a plan")
///     },
///     None,
///     2,
/// );
/// assert!(matches!(result, Err(Abort::Rejected(r)) if r.attempts == 3));
/// assert_eq!(calls, 3);
/// ```
pub fn run_with_repair<P, E, F>(
    propose: F,
    offered: Option<&[toolrag_core::khipu::Candidate]>,
    max_retry: usize,
) -> Result<Accepted, Abort<E>>
where
    F: FnMut(Attempt<'_>) -> Result<P, E>,
    P: Into<Proposal>,
{
    Gate {
        offered,
        tools: None,
    }
    .run_with_repair(propose, max_retry)
}
