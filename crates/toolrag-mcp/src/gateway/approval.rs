//! Approval of a call that needs it (the gate's rule,
//! [`toolrag_gate::approval_reasons`]): allowed without asking when the
//! annotations need none or `[gateway] allow` names the tool, otherwise
//! the person is asked through MCP elicitation. A client that cannot ask
//! gets a refusal that says how to allow the tool.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::audit::{DecidedBy, Decision};
use super::Gateway;
use toolrag_core::registry::ToolDef;

/// How long a person has to answer an approval question.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

impl Gateway {
    /// Whether `tool` may run with `args`: without asking when its
    /// annotations need no approval or `[gateway] allow` names it, otherwise
    /// as the person answers.
    pub(super) async fn rule(
        &self,
        client: &Peer<RoleServer>,
        tool: &ToolDef,
        args: &Value,
    ) -> Ruling {
        let reasons = toolrag_gate::approval_reasons(tool);
        if reasons.is_empty() {
            return Ruling::allowed(DecidedBy::Annotations);
        }
        if let Some(a) = self.opts.settings.allow_entry(&tool.id) {
            return Ruling::allowed(DecidedBy::AllowList(a.to_string()));
        }
        let why = reasons
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join(", ");
        self.ask(client, tool, args, &why).await
    }

    /// Asks the person, through the client, whether `tool` may run with
    /// `args`, because it needs approval for `why`.
    async fn ask(
        &self,
        client: &Peer<RoleServer>,
        tool: &ToolDef,
        args: &Value,
        why: &str,
    ) -> Ruling {
        let id = &tool.id;
        if !client
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            let message = format!(
                "`{id}` needs a person's approval ({why}), and this MCP client cannot ask one \
                 (it does not support elicitation), so the call was not made. A person can allow \
                 it in the [gateway] table of toolrag.toml: `allow = [\"{id}\"]` for this tool, \
                 or `allow = [\"{}\"]` for every tool of the server; or use a client that \
                 supports elicitation.",
                tool.namespace
            );
            return Ruling::stopped(Decision::Refused, DecidedBy::NoElicitation, message);
        }
        let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        let message = format!(
            "Allow the tool `{}` of the MCP server `{}` to run?\nIt needs approval: {why}.\n{}\nArguments:\n{pretty}",
            tool.name,
            tool.namespace,
            first_line(&tool.summary),
        );
        let schema = match ElicitationSchema::builder()
            .required_enum_schema(
                Choice::FIELD,
                EnumSchema::builder(Choice::ALL.map(|c| c.as_str().into()).to_vec())
                    .description("approve runs the tool with these arguments; reject does not")
                    .build(),
            )
            .build()
        {
            Ok(s) => s,
            Err(e) => {
                return Ruling::stopped(
                    Decision::Refused,
                    DecidedBy::Gateway,
                    format!("cannot ask: {e}"),
                )
            }
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        match client
            .create_elicitation_with_timeout(params, Some(APPROVAL_TIMEOUT))
            .await
        {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => {
                    let choice = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get(Choice::FIELD))
                        .and_then(Value::as_str)
                        .and_then(Choice::parse);
                    if choice == Some(Choice::Approve) {
                        Ruling {
                            decision: Decision::Approved,
                            by: DecidedBy::Person,
                            reason: None,
                        }
                    } else {
                        Ruling::stopped(
                            Decision::Rejected,
                            DecidedBy::Person,
                            format!(
                                "the person rejected this call of `{id}`; it was not made. Do not \
                                 retry it; ask the user what to do instead."
                            ),
                        )
                    }
                }
                ElicitationAction::Decline => Ruling::stopped(
                    Decision::Rejected,
                    DecidedBy::PersonDeclined,
                    format!(
                        "the person declined to approve this call of `{id}`; it was not made. Do \
                         not retry it; ask the user what to do instead."
                    ),
                ),
                ElicitationAction::Cancel | _ => Ruling::stopped(
                    Decision::Cancelled,
                    DecidedBy::PersonCancelled,
                    format!(
                        "the approval of `{id}` was cancelled, so the call was not made; ask the \
                         user before trying again."
                    ),
                ),
            },
            Err(e) => Ruling::stopped(
                Decision::Refused,
                DecidedBy::AskFailed,
                format!(
                    "`{id}` needs a person's approval ({why}), and asking failed ({e}), so the \
                     call was not made."
                ),
            ),
        }
    }
}

/// A decision about one call, who or what took it, and, when it stops the
/// call, what the model is told.
pub(super) struct Ruling {
    pub(super) decision: Decision,
    pub(super) by: DecidedBy,
    pub(super) reason: Option<String>,
}

impl Ruling {
    /// The call may go ahead without asking anyone.
    fn allowed(by: DecidedBy) -> Ruling {
        Ruling {
            decision: Decision::Allowed,
            by,
            reason: None,
        }
    }

    /// The call does not go ahead, and the model is told `reason`.
    fn stopped(decision: Decision, by: DecidedBy, reason: String) -> Ruling {
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
