//! `call_tool`: a call goes through the quarantine, the input schema and
//! the approval ([`super::approval`]), each decision to the audit log
//! ([`super::audit`]) before anything goes out, then to the server that owns
//! the tool, and its result through the output guard ([`super::guard`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
};
use serde_json::Value;
use tracing::Instrument;

use super::approval::{Rule, Ruling};
use super::audit::{AuditRecord, CallDecision, DecidedBy, Outcome, UpstreamStatus};
use super::catalog::{id_of, quarantine_message, Catalog, Entry};
use super::upstream::UpstreamError;
use super::upstreams::Upstream;
use super::{guard, Caller, Gateway};
use toolrag_engine::learn::UsageOutcome;

impl Gateway {
    /// `call_tool`: checks, asks, forwards and guards one call by `caller`.
    /// Errors the model can act on are tool results with `isError`; on
    /// protocol 2026-07-28 a call that needs approval is first answered
    /// `input_required`.
    pub async fn call(
        &self,
        handle: &str,
        arguments: Option<JsonObject>,
        caller: &Caller,
    ) -> CallToolResponse {
        let started = Instant::now();
        let who = caller.principal.name.as_str();
        let id = id_of(handle).to_string();
        let catalog = self.catalog.load_full();
        let args = Value::Object(arguments.unwrap_or_default());
        let stamp = |record| AuditRecord::by(record, who, started.elapsed());
        let entry = match self.lookup(&catalog, handle, &args, caller, started).await {
            Ok(entry) => entry,
            Err(answer) => return answer,
        };
        // A refusal's line is queued, not waited for: refusing acts on
        // nothing, and the answer does not wait on the disk.
        let refuse = |decision: CallDecision, by: DecidedBy, message: String| {
            let record = stamp(AuditRecord::new(&id, &args, decision, by).because(message.clone()));
            async move {
                self.audit.record(&record).await;
                CallToolResponse::from(tool_error(message))
            }
        };
        if let Err((message, _)) = self.limits.take(&caller.principal.key(), &id).await {
            return refuse(CallDecision::Denied, DecidedBy::RateLimit, message).await;
        }
        if !entry.quarantine.is_empty() {
            let message = quarantine_message(&id, &entry.quarantine, self.lock_hint(&id));
            return refuse(CallDecision::Refused, DecidedBy::Quarantine, message).await;
        }
        let validator = entry
            .validator
            .get_or_init(|| guard::compile(&id, &entry.def.input_schema).map(Arc::new));
        if let Some(Err(errors)) = validator
            .as_deref()
            .map(|v| guard::check_arguments(v, &args))
        {
            let message = format!(
                "the arguments do not match the input schema of `{id}`: {}. Read the schema with \
                 get_tool and call again.",
                errors.join("; ")
            );
            return refuse(
                CallDecision::InvalidArguments,
                DecidedBy::InputSchema,
                message,
            )
            .await;
        }

        // Approval.
        let Ruling {
            decision,
            by,
            reason,
        } = match self.rule(caller, &entry.def, &entry.raw, &args).await {
            Rule::Decided(r) => r,
            Rule::Ask(question) => {
                let record = AuditRecord::new(&id, &args, CallDecision::Asked, DecidedBy::Gateway)
                    .because("a person is asked (input_required)");
                if let Err(e) = self.audit.write(&stamp(record)).await {
                    tracing::error!("cannot write the audit log, the call is refused: {e}");
                    return tool_error(format!(
                        "toolrag cannot record the decision in its audit log, so `{id}` was not \
                         called: {e}"
                    ))
                    .into();
                }
                return CallToolResponse::InputRequired(question);
            }
        };
        let mut record = AuditRecord::new(&id, &args, decision, by);
        if let Some(r) = &reason {
            record = record.because(r.clone());
        }
        if let Err(e) = self.audit.write(&stamp(record)).await {
            tracing::error!("cannot write the audit log, the call is refused: {e}");
            return tool_error(format!(
                "toolrag cannot record the decision in its audit log, so `{id}` was not called: {e}"
            ))
            .into();
        }
        if !decision.lets_call() {
            return tool_error(reason.unwrap_or_else(|| format!("`{id}` was not called"))).into();
        }

        // Forward.
        let up = &self.upstreams[&entry.def.namespace];
        let result = match self.forward(up, &entry.def.name, &args).await {
            Ok(r) => r,
            Err(e) => {
                self.usage
                    .called(&caller.principal, &id, &args, UsageOutcome::Failed);
                let message = e.to_string();
                let record = AuditRecord::new(&id, &args, Outcome::Failed, DecidedBy::Upstream)
                    .upstream(UpstreamStatus::Failed)
                    .because(message.clone());
                let _ = self.audit.write(&stamp(record)).await;
                return tool_error(message).into();
            }
        };
        let (result, used, record) = self.guard_result(&id, &args, result);
        // Written before the result goes back: a result the client has
        // seen always has its line.
        if let Err(e) = self.audit.write(&stamp(record)).await {
            tracing::error!("cannot write the audit log: {e}");
        }
        self.usage.called(&caller.principal, &id, &args, used);
        result.into()
    }

    /// The output guard on the result of a forwarded call of `id`: the
    /// result to send back, what the usage log records, and the audit
    /// record to write before the result goes back.
    fn guard_result<'a>(
        &self,
        id: &'a str,
        args: &Value,
        result: CallToolResult,
    ) -> (CallToolResult, UsageOutcome, AuditRecord<'a>) {
        let status = if result.is_error == Some(true) {
            UpstreamStatus::ToolError
        } else {
            UpstreamStatus::Ok
        };
        let policy = self.opts.settings.output_guard;
        let findings = if policy == crate::settings::OutputGuard::Off {
            Vec::new()
        } else {
            guard::scan_result(&result)
        };
        let (mut result, outcome) = if findings.is_empty() {
            (result, Outcome::Passed)
        } else {
            tracing::warn!(tool = %id, ?findings, "the result addresses the model");
            guard::apply(policy, id, &findings, result)
        };
        let mut record =
            AuditRecord::new(id, args, outcome, DecidedBy::OutputGuard).upstream(status);
        if !findings.is_empty() {
            record = record.because(findings.join("; "));
        }
        let used = if status == UpstreamStatus::Ok && outcome != Outcome::Blocked {
            UsageOutcome::Succeeded
        } else {
            UsageOutcome::ToolError
        };
        // An upstream on an older protocol sends no `resultType`; 2026-07-28
        // requires it (rmcp strips it again for older clients).
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        (result, used, record)
    }

    /// The entry of the tool `id` (asked for as `handle`), when the caller
    /// may see it. A tool the caller may not see is answered as one that
    /// does not exist, word for word and with the same work: both look the
    /// tool up, ask the policy, and queue one audit line (the operator's
    /// log shows the probing) without waiting for it to reach the disk, so
    /// that neither the text nor the time tells them apart.
    async fn lookup<'c>(
        &self,
        catalog: &'c Catalog,
        handle: &str,
        args: &Value,
        caller: &Caller,
        started: Instant,
    ) -> Result<&'c Entry, CallToolResponse> {
        let id = id_of(handle);
        let found = catalog.entries.get(id);
        let visible = self.may_see(&caller.principal, id);
        if let (Some(entry), true) = (found, visible) {
            return Ok(entry);
        }
        let record = match found {
            Some(_) => AuditRecord::new(id, args, CallDecision::Denied, DecidedBy::Policy)
                .because("the caller's policy does not give them this tool"),
            None => AuditRecord::new(id, args, CallDecision::Refused, DecidedBy::Gateway)
                .because("there is no tool of this name in the catalog"),
        };
        let record = record.by(&caller.principal.name, started.elapsed());
        self.audit.record(&record).await;
        Err(tool_error(format!(
            "no tool `{handle}`; use a handle returned by search_tools"
        ))
        .into())
    }

    /// Sends `tools/call` to `up`, restarting it first if it died.
    async fn forward(
        &self,
        up: &Upstream,
        name: &str,
        args: &Value,
    ) -> Result<CallToolResult, ForwardError> {
        let server = up.config.name.clone();
        let peer = match self.peer_of(up).await {
            Ok(peer) => peer,
            Err(failure) => {
                tracing::error!("{failure}");
                return Err(ForwardError::NotRunning {
                    server,
                    error: failure.error,
                });
            }
        };
        let span = toolrag_mcp::telemetry::upstream_span(&server, name);
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = args.as_object().cloned();
        toolrag_mcp::telemetry::inject(&span, &mut params);
        let timeout = Duration::from_secs_f64(self.opts.settings.call_timeout_seconds);
        let answer = tokio::time::timeout(timeout, peer.call_tool(params))
            .instrument(span.clone())
            .await;
        let outcome = match answer {
            Ok(Ok(result)) => Ok(result),
            // Over stdio the transport reads as closed; over HTTP the peer
            // stays open and the send fails: both mean the server went away.
            Ok(Err(error))
                if peer.is_transport_closed()
                    || matches!(
                        error,
                        rmcp::ServiceError::TransportSend(_) | rmcp::ServiceError::TransportClosed
                    ) =>
            {
                tracing::warn!(server = %server, "the upstream went away during a call: {error}");
                Err(ForwardError::Stopped { server, error })
            }
            Ok(Err(error)) => Err(ForwardError::Answered { server, error }),
            Err(_) => Err(ForwardError::Timeout { server, timeout }),
        };
        if !matches!(&outcome, Ok(r) if r.is_error != Some(true)) {
            toolrag_mcp::telemetry::mark_error(&span);
        }
        outcome
    }
}

/// Why a forwarded call brought back no result; the model reads the message.
#[derive(Debug, thiserror::Error)]
enum ForwardError {
    /// The server is down and does not start.
    #[error("the server `{server}` is not running and cannot be started: {error}")]
    NotRunning {
        server: String,
        error: UpstreamError,
    },
    /// The server went away while the call was out.
    #[error(
        "the server `{server}` stopped during the call (its connection closed); it is being \
         restarted or reconnected. The call may or may not have taken effect: check before \
         calling again."
    )]
    Stopped {
        server: String,
        error: rmcp::ServiceError,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server `{server}` answered with an error: {error}")]
    Answered {
        server: String,
        error: rmcp::ServiceError,
    },
    /// The server did not answer in time.
    #[error(
        "the server `{server}` did not answer within {} s; the call may still take effect",
        timeout.as_secs_f64()
    )]
    Timeout { server: String, timeout: Duration },
}

/// A tool result with `isError` that tells the model `message`.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
