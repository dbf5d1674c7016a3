//! The plan model in the loop: request → candidates → plan → gate → repair.
//!
//! toolrag retrieves a small candidate handle set for a request; a plan model
//! proposes a Khipu plan over it; the gate (deterministic code,
//! [`toolrag_gate`]) checks the plan, and on a violation its repair feedback
//! goes back to the model as the next user message, up to a retry budget.
//!
//! This crate is the client of that plan model: any server that speaks the
//! OpenAI-compatible chat API (`POST {url}/chat/completions`), such as
//! llama.cpp's server, llama-cpp-python, vLLM, Ollama, LM Studio, TGI or a
//! hosted API.
//!
//! - **It asks only for what needs judgment**: `decision`, `steps`,
//!   `citedNodeIds` and `abstainReason`. toolrag fills the rest of the plan
//!   from what it offered, and gates the whole assembled plan.
//! - **Poka-yoke for the model**: the request carries a JSON Schema made for
//!   this offered set ([`answer_schema`]), in which every handle is an `enum`
//!   of the offered handles and NAVIGATE and ABSTAIN are two branches. Where
//!   the server enforces it, a citation of a handle that was not offered
//!   cannot be written. The gate stays the backstop.
//! - **Errors are not violations**: a planner that cannot be reached, times
//!   out or answers an HTTP error stops the loop at once ([`PlannerError`]),
//!   with no retries spent.
//!
//! ```no_run
//! use toolrag_core::khipu::{Candidate, Label, NodeKind};
//! use toolrag_planner::{Planner, PlannerOptions};
//!
//! let offered = vec![Candidate {
//!     node_id: "tool://git/git_status".into(),
//!     node_kind: NodeKind::Artifact,
//!     label: Label::Declared,
//!     note: "git: Show the working tree status.".into(),
//! }];
//! let planner = Planner::new(PlannerOptions::new("http://127.0.0.1:8080/v1"));
//! match planner.plan("what did I change?", &offered, None) {
//!     Ok(planned) => println!("{} after {} attempt(s)", planned.plan, planned.attempts),
//!     Err(e) => eprintln!("{e}"),
//! }
//! ```
#![warn(missing_docs)]

mod assemble;
mod client;
mod prompt;
mod schema;

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use toolrag_core::khipu::Candidate;
use toolrag_gate::{Abort, Gate, Proposal, ToolResolver, Verdict};

pub use assemble::JUDGMENT_FIELDS;
pub use client::Constraint;
pub use prompt::DEFAULT_PROMPT;
pub use schema::answer_schema;

/// The repairs a plan gets by default after its first proposal.
pub const DEFAULT_MAX_RETRY: usize = 2;

/// How long one call to the planner may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The environment variable the API key is read from by the front ends.
pub const API_KEY_VAR: &str = "TOOLRAG_PLANNER_API_KEY";

/// How to reach and ask the plan model.
///
/// Built with [`PlannerOptions::new`] and changed field by field. Its `Debug`
/// never shows the key.
#[derive(Clone)]
#[non_exhaustive]
pub struct PlannerOptions {
    /// The API's base URL, such as `http://127.0.0.1:8080/v1`; the client
    /// posts to `{url}/chat/completions`.
    pub url: String,
    /// The `model` field of the request; `None` leaves it out (a local
    /// server serves its one model).
    pub model: Option<String>,
    /// Sent as `Authorization: Bearer …`. Never printed, logged or traced.
    pub api_key: Option<String>,
    /// Repairs after the first proposal: at most `1 + max_retry` calls.
    pub max_retry: usize,
    /// How long one call may take.
    pub timeout: Duration,
    /// The system prompt; `None` is [`DEFAULT_PROMPT`].
    pub prompt: Option<String>,
    /// Ask the server to enforce [`answer_schema`]; `false` leaves
    /// `response_format` out.
    pub constrain: bool,
}

impl PlannerOptions {
    /// The defaults for the planner at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        PlannerOptions {
            url: url.into(),
            model: None,
            api_key: None,
            max_retry: DEFAULT_MAX_RETRY,
            timeout: DEFAULT_TIMEOUT,
            prompt: None,
            constrain: true,
        }
    }
}

impl std::fmt::Debug for PlannerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannerOptions")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("max_retry", &self.max_retry)
            .field("timeout", &self.timeout)
            .field("prompt", &self.prompt.as_ref().map(String::len))
            .field("constrain", &self.constrain)
            .finish()
    }
}

/// The planner could not be asked: the loop stops at once, with no retries
/// spent. Messages name the URL and never the key.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PlannerError {
    /// No connection (refused, no such host, TLS failed).
    #[error("cannot reach the planner at {url}: {reason}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// What the connection said.
        reason: String,
    },
    /// The call took longer than the timeout.
    #[error("the planner at {url} did not answer within {secs} s")]
    Timeout {
        /// The endpoint.
        url: String,
        /// The timeout, seconds.
        secs: f64,
    },
    /// The server answered an HTTP error.
    #[error("the planner at {url} answered HTTP {status}: {body}")]
    Http {
        /// The endpoint.
        url: String,
        /// The status.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// The server answered, but not with an OpenAI chat completion.
    #[error("the planner at {url} answered something that is not a chat completion: {reason}")]
    BadResponse {
        /// The endpoint.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// One proposal of the loop and what the gate said of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRecord {
    /// 1 for the first proposal.
    pub attempt: usize,
    /// The model's answer, as it wrote it.
    pub answer: String,
    /// The gate's verdict on the assembled plan.
    pub verdict: Verdict,
    /// Seconds the planner took to answer.
    pub seconds: f64,
}

/// A plan the gate passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Planned {
    /// The whole plan, as the gate passed it.
    pub plan: Value,
    /// How many proposals it took, the accepted one included.
    pub attempts: usize,
    /// The gate's verdict: valid, with the approvals the cited tools need.
    pub verdict: Verdict,
    /// Every proposal, the accepted one last.
    #[serde(skip)]
    pub history: Vec<AttemptRecord>,
    /// The `response_format` form the last call used.
    #[serde(skip)]
    pub constraint: Constraint,
}

/// The retry budget is spent: no proposal passed the gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aborted {
    /// How many proposals were made.
    pub attempts: usize,
    /// The verdict on the last one.
    pub verdict: Verdict,
    /// Every proposal with its verdict, in order.
    pub history: Vec<AttemptRecord>,
}

/// Why [`Planner::plan`] returned no plan.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanFailure {
    /// The planner could not be asked.
    #[error(transparent)]
    Planner(#[from] PlannerError),
    /// Every proposal was rejected.
    #[error(
        "no plan passed the gate in {} attempt(s); the last had {} violation(s)",
        .0.attempts,
        .0.verdict.violations.len()
    )]
    Aborted(Box<Aborted>),
}

/// A plan model and how to ask it. Cheap to share: one [`Planner`] serves
/// concurrent plans (a server's requests), and a `response_format` step down
/// learnt by one serves them all.
pub struct Planner {
    chat: client::Chat,
    prompt: String,
    max_retry: usize,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("endpoint", &self.chat.endpoint)
            .field("max_retry", &self.max_retry)
            .finish()
    }
}

impl Planner {
    /// A planner for `opts`. Nothing is sent until [`Planner::plan`].
    pub fn new(opts: PlannerOptions) -> Planner {
        let constraint = if opts.constrain {
            Constraint::JsonSchema
        } else {
            Constraint::None
        };
        Planner {
            chat: client::Chat::new(
                &opts.url,
                opts.api_key,
                opts.model,
                opts.timeout,
                constraint,
            ),
            prompt: opts.prompt.unwrap_or_else(|| DEFAULT_PROMPT.to_string()),
            max_retry: opts.max_retry,
        }
    }

    /// The endpoint it posts to.
    pub fn endpoint(&self) -> &str {
        &self.chat.endpoint
    }

    /// The repairs a plan gets after its first proposal.
    pub fn max_retry(&self) -> usize {
        self.max_retry
    }

    /// Asks for a plan over `offered` for `query`, gates every proposal
    /// (with `tools` for the approval check), and feeds the gate's repair
    /// feedback back until a plan passes or the budget is spent.
    pub fn plan(
        &self,
        query: &str,
        offered: &[Candidate],
        tools: Option<&dyn ToolResolver>,
    ) -> Result<Planned, PlanFailure> {
        self.plan_with_retry(query, offered, tools, self.max_retry)
    }

    /// [`Planner::plan`] with a budget of `max_retry` repairs for this plan
    /// only: a server lets a client ask for fewer repairs than its own.
    pub fn plan_with_retry(
        &self,
        query: &str,
        offered: &[Candidate],
        tools: Option<&dyn ToolResolver>,
        max_retry: usize,
    ) -> Result<Planned, PlanFailure> {
        let gate = Gate {
            offered: Some(offered),
            tools,
        };
        let schema = answer_schema(offered);
        let plan_id = assemble::plan_id();
        let mut messages = prompt::opening(&self.prompt, query, offered);
        let mut history: Vec<AttemptRecord> = Vec::new();
        let outcome = gate.run_with_repair(
            |attempt| {
                if let (Some(feedback), Some(last)) = (attempt.feedback, history.last_mut()) {
                    if let Some(previous) = attempt.previous {
                        last.verdict = previous.clone();
                    }
                    messages.push(prompt::message("assistant", &last.answer));
                    messages.push(prompt::message("user", feedback));
                }
                let started = Instant::now();
                let answer = self.chat.complete(&messages, &schema)?;
                let proposal = assemble::proposal(&answer, &plan_id, query, offered);
                history.push(AttemptRecord {
                    attempt: attempt.number,
                    answer,
                    verdict: Verdict::default(),
                    seconds: started.elapsed().as_secs_f64(),
                });
                Ok::<Proposal, PlannerError>(proposal)
            },
            max_retry,
        );
        match outcome {
            Ok(accepted) => {
                if let Some(last) = history.last_mut() {
                    last.verdict = accepted.verdict.clone();
                }
                Ok(Planned {
                    plan: accepted.plan,
                    attempts: accepted.attempts,
                    verdict: accepted.verdict,
                    history,
                    constraint: self.chat.constraint(),
                })
            }
            Err(Abort::Rejected(r)) => {
                if let Some(last) = history.last_mut() {
                    last.verdict = r.verdict.clone();
                }
                Err(PlanFailure::Aborted(Box::new(Aborted {
                    attempts: r.attempts,
                    verdict: r.verdict,
                    history,
                })))
            }
            Err(Abort::Proposer { error, .. }) => Err(PlanFailure::Planner(error)),
        }
    }
}
