//! Approval of a call that needs it (the gate's rule,
//! [`toolrag_gate::approval_reasons`]): allowed without asking when the
//! annotations need none, `[gateway] allow` names the tool or a policy
//! entry of the caller allows it; otherwise the person is asked:
//! - on 2025-11-25 and before, through MCP elicitation during the call;
//! - on 2026-07-28, in a multi-round-trip request: the call is answered
//!   `input_required` with the question and a sealed `requestState`
//!   ([`super::states`]), and the retry that carries the answer runs the
//!   call, once.
//!
//! A client that cannot ask gets a refusal that says how to allow the tool.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    EnumSchema, InputRequest, InputRequests, InputRequiredResult,
};
use serde_json::Value;

use super::audit::{CallDecision, DecidedBy};
use super::policy::Policy;
use super::states::{ApprovalStates, Binding};
use super::{Caller, GatewayError, GatewayOptions, MrtrRound};
use toolrag_core::registry::ToolDef;
use toolrag_mcp::shared::SharedState;

/// How long a person has to answer an approval question.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The key of the approval question in `inputRequests`.
const APPROVAL_KEY: &str = "approval";

/// What the gateway does about a call's approval: decided, or a question
/// the client must put to the person first (2026-07-28).
pub(super) enum Rule {
    /// Decided now.
    Decided(Ruling),
    /// Ask the person: answer the call with this, and wait for the retry.
    Ask(InputRequiredResult),
}

/// Approval of the calls that need it: the allow-lists (`[gateway] allow`
/// and the policy's `allow`), the person's answer, and the sealed states of
/// 2026-07-28's rounds.
pub(super) struct Approvals {
    /// `[gateway] allow`.
    allow: Vec<String>,
    /// The policy, whose entries may allow a tool to their principals.
    policy: Arc<Policy>,
    /// Where the states' key and the memory of used states are.
    key_file: PathBuf,
    approvals_db: PathBuf,
    shared: SharedState,
    /// How long a state is good for.
    ttl: Duration,
    /// The states, opened at the first approval of protocol 2026-07-28.
    states: OnceLock<ApprovalStates>,
}

impl Approvals {
    /// The approvals of `opts`, with the allow entries of `policy`; the
    /// states are opened when first needed ([`Approvals::states`]).
    pub(super) fn new(opts: &GatewayOptions, policy: Arc<Policy>) -> Approvals {
        Approvals {
            allow: opts.settings.allow.clone(),
            policy,
            key_file: opts.key_file.clone(),
            approvals_db: opts.approvals_db.clone(),
            shared: opts.shared.clone(),
            ttl: Duration::from_secs_f64(opts.settings.approval_ttl_seconds),
            states: OnceLock::new(),
        }
    }

    /// The approval states (key and memory of used ones), opened at the
    /// first approval of protocol 2026-07-28.
    pub(super) fn states(&self) -> Result<&ApprovalStates, GatewayError> {
        if let Some(s) = self.states.get() {
            return Ok(s);
        }
        let opened =
            ApprovalStates::open(&self.key_file, &self.approvals_db, self.ttl, &self.shared)?;
        Ok(self.states.get_or_init(|| opened))
    }

    /// Whether `tool` (listed upstream as `raw`) may run
    /// with `args` for `caller`: without asking when its annotations need
    /// no approval or an allow-list names it, otherwise as the person
    /// answers.
    pub(super) async fn rule(
        &self,
        caller: &Caller,
        tool: &ToolDef,
        raw: &Value,
        args: &Value,
    ) -> Rule {
        let reasons = toolrag_gate::approval_reasons(tool);
        if reasons.is_empty() {
            return Rule::Decided(Ruling::allowed(DecidedBy::Annotations));
        }
        if let Some(a) = crate::settings::allow_entry(&self.allow, &tool.id) {
            return Rule::Decided(Ruling::allowed(DecidedBy::AllowList(a.to_string())));
        }
        if let Some(a) = self.policy.allow_entry(&caller.principal, &tool.id) {
            return Rule::Decided(Ruling::allowed(DecidedBy::AllowList(a)));
        }
        let why = reasons
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join(", ");
        if !caller.can_elicit {
            return Rule::Decided(no_elicitation(tool, &why));
        }
        match &caller.mrtr {
            Some(round) => self.ask_mrtr(caller, round, tool, raw, args, &why).await,
            None => Rule::Decided(self.ask(caller, tool, args, &why).await),
        }
    }

    /// 2026-07-28: the first round asks (a sealed state bound to this
    /// call); the retry redeems the state, once, and reads the answer.
    async fn ask_mrtr(
        &self,
        caller: &Caller,
        round: &MrtrRound,
        tool: &ToolDef,
        raw: &Value,
        args: &Value,
        why: &str,
    ) -> Rule {
        let states = match self.states() {
            Ok(s) => s,
            Err(e) => {
                return Rule::Decided(Ruling::stopped(
                    CallDecision::Refused,
                    DecidedBy::Gateway,
                    format!(
                        "`{}` needs a person's approval ({why}), and the gateway cannot keep                          approvals ({e}), so the call was not made.",
                        tool.id
                    ),
                ))
            }
        };
        let binding = Binding {
            principal: caller.principal.key(),
            tool: tool.id.clone(),
            // The hash the lock file pins (the tool is callable, so its
            // listing matches its pin).
            definition: super::pins::hash(&super::pins::pinned_definition(raw)),
            arguments: super::pins::hash(args),
        };
        let Some(state) = &round.request_state else {
            let form = match approval_form(tool, args, why) {
                Ok(f) => f,
                Err(r) => return Rule::Decided(r),
            };
            let mut requests = InputRequests::new();
            requests.insert(
                APPROVAL_KEY.to_string(),
                InputRequest::Elicitation(ElicitRequest::new(form)),
            );
            return Rule::Ask(InputRequiredResult::new(
                Some(requests),
                Some(states.seal(&binding)),
            ));
        };
        if let Err(refusal) = states.redeem(state, &binding).await {
            return Rule::Decided(Ruling::stopped(
                CallDecision::Refused,
                DecidedBy::ApprovalState,
                refusal.to_string(),
            ));
        }
        let answer = round
            .input_responses
            .as_ref()
            .and_then(|r| r.get(APPROVAL_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        match answer {
            Some(answer) => Rule::Decided(ruling_of(&answer, &tool.id)),
            None => Rule::Decided(Ruling::stopped(
                CallDecision::Cancelled,
                DecidedBy::PersonCancelled,
                format!(
                    "the retry of `{}` carried no answer to the approval question                      (inputResponses.{APPROVAL_KEY}), so the call was not made; call it again                      to be asked anew.",
                    tool.id
                ),
            )),
        }
    }

    /// 2025-11-25 and before: asks the person, through the client, whether
    /// `tool` may run with `args`, because it needs approval for `why`.
    async fn ask(&self, caller: &Caller, tool: &ToolDef, args: &Value, why: &str) -> Ruling {
        let id = &tool.id;
        let Some(client) = &caller.peer else {
            return no_elicitation(tool, why);
        };
        let params = match approval_form(tool, args, why) {
            Ok(p) => p,
            Err(r) => return r,
        };
        match client
            .create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT))
            .await
        {
            Ok(answer) => ruling_of(&answer, id),
            Err(e) => Ruling::stopped(
                CallDecision::Refused,
                DecidedBy::AskFailed,
                format!(
                    "`{id}` needs a person's approval ({why}), and asking failed ({e}), so the \
                     call was not made."
                ),
            ),
        }
    }
}

/// The refusal for a client that cannot ask a person.
fn no_elicitation(tool: &ToolDef, why: &str) -> Ruling {
    let id = &tool.id;
    let message = format!(
        "`{id}` needs a person's approval ({why}), and this MCP client cannot ask one \
         (it does not support elicitation), so the call was not made. A person can allow \
         it in the [gateway] table of toolrag.toml: `allow = [\"{id}\"]` for this tool, \
         or `allow = [\"{}\"]` for every tool of the server; or use a client that \
         supports elicitation.",
        tool.namespace
    );
    Ruling::stopped(CallDecision::Refused, DecidedBy::NoElicitation, message)
}

/// The question put to the person: the tool, why it needs approval, and
/// the exact arguments, with a choice of approve or reject.
fn approval_form(tool: &ToolDef, args: &Value, why: &str) -> Result<ElicitRequestParams, Ruling> {
    let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    let message = format!(
        "Allow the tool `{}` of the MCP server `{}` to run?\nIt needs approval: {why}.\n{}\nArguments:\n{pretty}",
        tool.name,
        tool.namespace,
        first_line(&tool.summary),
    );
    let schema = ElicitationSchema::builder()
        .required_enum_schema(
            Choice::FIELD,
            EnumSchema::builder(Choice::ALL.map(|c| c.as_str().into()).to_vec())
                .description("approve runs the tool with these arguments; reject does not")
                .build(),
        )
        .build()
        .map_err(|e| {
            Ruling::stopped(
                CallDecision::Refused,
                DecidedBy::Gateway,
                format!("cannot ask: {e}"),
            )
        })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    })
}

/// The decision a person's answer makes about a call of `id`.
fn ruling_of(answer: &ElicitResult, id: &str) -> Ruling {
    match answer.action {
        ElicitationAction::Accept => {
            let choice = answer
                .content
                .as_ref()
                .and_then(|c| c.get(Choice::FIELD))
                .and_then(Value::as_str)
                .and_then(Choice::parse);
            if choice == Some(Choice::Approve) {
                Ruling {
                    decision: CallDecision::Approved,
                    by: DecidedBy::Person,
                    reason: None,
                }
            } else {
                Ruling::stopped(
                    CallDecision::Rejected,
                    DecidedBy::Person,
                    format!(
                        "the person rejected this call of `{id}`; it was not made. Do not \
                         retry it; ask the user what to do instead."
                    ),
                )
            }
        }
        ElicitationAction::Decline => Ruling::stopped(
            CallDecision::Rejected,
            DecidedBy::PersonDeclined,
            format!(
                "the person declined to approve this call of `{id}`; it was not made. Do \
                 not retry it; ask the user what to do instead."
            ),
        ),
        ElicitationAction::Cancel | _ => Ruling::stopped(
            CallDecision::Cancelled,
            DecidedBy::PersonCancelled,
            format!(
                "the approval of `{id}` was cancelled, so the call was not made; ask the \
                 user before trying again."
            ),
        ),
    }
}

/// A decision about one call, who or what took it, and, when it stops the
/// call, what the model is told.
pub(super) struct Ruling {
    pub(super) decision: CallDecision,
    pub(super) by: DecidedBy,
    pub(super) reason: Option<String>,
}

impl Ruling {
    /// The call may go ahead without asking anyone.
    fn allowed(by: DecidedBy) -> Ruling {
        Ruling {
            decision: CallDecision::Allowed,
            by,
            reason: None,
        }
    }

    /// The call does not go ahead, and the model is told `reason`.
    fn stopped(decision: CallDecision, by: DecidedBy, reason: String) -> Ruling {
        Ruling {
            decision,
            by,
            reason: Some(reason),
        }
    }
}

/// The answers the approval form offers, in its field `decision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// Run the tool with these arguments.
    Approve,
    /// Do not.
    Reject,
}

impl Choice {
    /// The form's field.
    const FIELD: &'static str = "decision";

    /// Every answer, in the order the form lists them.
    const ALL: [Choice; 2] = [Choice::Approve, Choice::Reject];

    /// The answer as the form offers it.
    fn as_str(self) -> &'static str {
        match self {
            Choice::Approve => "approve",
            Choice::Reject => "reject",
        }
    }

    /// The answer the client sent back, if it is one of the form's.
    fn parse(s: &str) -> Option<Choice> {
        Choice::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// The first line of `s` (a tool's summary, for the approval question).
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
