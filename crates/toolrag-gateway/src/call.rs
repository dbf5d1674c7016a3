//! `call_tool` as a chain of checks, each a step with one job, in this
//! order: **visibility** (a tool the caller may not see is answered as a
//! missing one), **rate** (`[gateway.tool-calls-per-minute]`),
//! **quarantine** (poisoned, or changed since pinned), **schema** (the
//! arguments against the tool's input schema), **approval**
//! ([`super::approval`]), then **forward** to the server that owns the tool
//! ([`super::forward`]) and **guard** its result ([`super::guard`]). Every
//! decision goes to the audit log ([`super::audit`]) before anything goes
//! out; a step that stops the chain gives the call's answer.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use super::approval::{Rule, Ruling};
use super::audit::{AuditRecord, CallDecision, DecidedBy, Outcome, UpstreamStatus};
use super::catalog::{id_of, quarantine_message, Catalog, Entry};
use super::{guard, Caller, Gateway};
use toolrag_engine::learn::UsageOutcome;

/// One call on its way through the chain: what was asked, by whom, since
/// when.
struct Call<'c> {
    /// The handle as the caller wrote it.
    handle: &'c str,
    /// The tool id it names, `<server>/<tool>`.
    id: String,
    /// The arguments, an object.
    args: Value,
    caller: &'c Caller,
    started: Instant,
}

impl Call<'_> {
    /// `record`, signed with the caller and the time since the call came in.
    fn stamp<'r>(&self, record: AuditRecord<'r>) -> AuditRecord<'r> {
        record.by(&self.caller.principal.name, self.started.elapsed())
    }
}

/// What the chain answers: `Err` when a step stopped it.
type Step<T> = Result<T, CallToolResponse>;

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
        let call = Call {
            started: Instant::now(),
            handle,
            id: id_of(handle).to_string(),
            args: Value::Object(arguments.unwrap_or_default()),
            caller,
        };
        let catalog = self.tools.catalog.load_full();
        match self.chain(&call, &catalog).await {
            Ok(answer) | Err(answer) => answer,
        }
    }

    /// The checks, top to bottom, then the call and its guard.
    async fn chain(&self, call: &Call<'_>, catalog: &Catalog) -> Step<CallToolResponse> {
        let entry = self.check_visibility(call, catalog).await?;
        self.check_rate(call).await?;
        self.check_quarantine(call, entry).await?;
        self.check_schema(call, entry).await?;
        self.check_approval(call, entry).await?;
        let result = self.forward(call, entry).await?;
        Ok(self.guard(call, result).await)
    }

    /// Visibility: the entry of the tool the call names, when the caller
    /// may see it. A tool the caller may not see is answered as one that
    /// does not exist, word for word and with the same work: both look the
    /// tool up, ask the policy, and queue one audit line (the operator's
    /// log shows the probing) without waiting for it to reach the disk, so
    /// that neither the text nor the time tells them apart.
    async fn check_visibility<'k>(&self, call: &Call<'_>, catalog: &'k Catalog) -> Step<&'k Entry> {
        let (id, args) = (call.id.as_str(), &call.args);
        let found = catalog.entries.get(id);
        let visible = self.access.may_see(&call.caller.principal, id);
        if let (Some(entry), true) = (found, visible) {
            return Ok(entry);
        }
        let record = match found {
            Some(_) => AuditRecord::new(id, args, CallDecision::Denied, DecidedBy::Policy)
                .because("the caller's policy does not give them this tool"),
            None => AuditRecord::new(id, args, CallDecision::Refused, DecidedBy::Gateway)
                .because("there is no tool of this name in the catalog"),
        };
        self.audit.record(&call.stamp(record)).await;
        Err(tool_error(format!(
            "no tool `{}`; use a handle returned by search_tools",
            call.handle
        ))
        .into())
    }

    /// Rate: a token from every `[gateway.tool-calls-per-minute]` bucket
    /// of the caller and the tool.
    async fn check_rate(&self, call: &Call<'_>) -> Step<()> {
        match self
            .limits
            .take(&call.caller.principal.key(), &call.id)
            .await
        {
            Ok(()) => Ok(()),
            Err((message, _)) => Err(self
                .refuse(call, CallDecision::Denied, DecidedBy::RateLimit, message)
                .await),
        }
    }

    /// Quarantine: a poisoned tool, or one changed since it was pinned, is
    /// not called.
    async fn check_quarantine(&self, call: &Call<'_>, entry: &Entry) -> Step<()> {
        if entry.quarantine.is_empty() {
            return Ok(());
        }
        let message = quarantine_message(&call.id, &entry.quarantine, self.lock_hint(&call.id));
        Err(self
            .refuse(call, CallDecision::Refused, DecidedBy::Quarantine, message)
            .await)
    }

    /// Schema: the arguments match the tool's input schema (compiled at
    /// its first call; one that does not compile checks nothing).
    async fn check_schema(&self, call: &Call<'_>, entry: &Entry) -> Step<()> {
        let id = &call.id;
        let validator = entry
            .validator
            .get_or_init(|| guard::compile(id, &entry.def.input_schema).map(Arc::new));
        let Some(Err(errors)) = validator
            .as_deref()
            .map(|v| guard::check_arguments(v, &call.args))
        else {
            return Ok(());
        };
        let message = format!(
            "the arguments do not match the input schema of `{id}`: {}. Read the schema with \
             get_tool and call again.",
            errors.join("; ")
        );
        Err(self
            .refuse(
                call,
                CallDecision::InvalidArguments,
                DecidedBy::InputSchema,
                message,
            )
            .await)
    }

    /// Approval: decided now (its line on disk before the call goes on), or
    /// a question for the person (2026-07-28: answered `input_required`).
    async fn check_approval(&self, call: &Call<'_>, entry: &Entry) -> Step<()> {
        let rule = self
            .approvals
            .rule(call.caller, &entry.def, &entry.raw, &call.args)
            .await;
        let Ruling {
            decision,
            by,
            reason,
        } = match rule {
            Rule::Decided(r) => r,
            Rule::Ask(question) => {
                let record = AuditRecord::new(
                    &call.id,
                    &call.args,
                    CallDecision::Asked,
                    DecidedBy::Gateway,
                )
                .because("a person is asked (input_required)");
                self.write_decision(call, record).await?;
                return Err(CallToolResponse::InputRequired(question));
            }
        };
        let mut record = AuditRecord::new(&call.id, &call.args, decision, by);
        if let Some(r) = &reason {
            record = record.because(r.clone());
        }
        self.write_decision(call, record).await?;
        if !decision.lets_call() {
            let message = reason.unwrap_or_else(|| format!("`{}` was not called", call.id));
            return Err(tool_error(message).into());
        }
        Ok(())
    }

    /// Forward: the call to the server that owns the tool; a failure is
    /// recorded (audit and usage) and told to the model.
    async fn forward(&self, call: &Call<'_>, entry: &Entry) -> Step<CallToolResult> {
        let up = self.upstreams.get(&entry.def.namespace);
        let error = match self
            .upstreams
            .forward(up, &entry.def.name, &call.args)
            .await
        {
            Ok(result) => return Ok(result),
            Err(e) => e,
        };
        let (who, id, args) = (&call.caller.principal, call.id.as_str(), &call.args);
        self.usage.called(who, id, args, UsageOutcome::Failed);
        let message = error.to_string();
        let record = AuditRecord::new(id, args, Outcome::Failed, DecidedBy::Upstream)
            .upstream(UpstreamStatus::Failed)
            .because(message.clone());
        let _ = self.audit.write(&call.stamp(record)).await;
        Err(tool_error(message).into())
    }

    /// Guard: the output guard on the result, its line written before the
    /// result goes back (a result the client has seen always has its
    /// line), and the call recorded for `toolrag learn`.
    async fn guard(&self, call: &Call<'_>, result: CallToolResult) -> CallToolResponse {
        let (result, used, record) = self.guard_result(&call.id, &call.args, result);
        if let Err(e) = self.audit.write(&call.stamp(record)).await {
            tracing::error!("cannot write the audit log: {e}");
        }
        self.usage
            .called(&call.caller.principal, &call.id, &call.args, used);
        result.into()
    }

    /// Stops the chain with `message`. A refusal's line is queued, not
    /// waited for: refusing acts on nothing, and the answer does not wait on
    /// the disk.
    async fn refuse(
        &self,
        call: &Call<'_>,
        decision: CallDecision,
        by: DecidedBy,
        message: String,
    ) -> CallToolResponse {
        let record = AuditRecord::new(&call.id, &call.args, decision, by).because(message.clone());
        self.audit.record(&call.stamp(record)).await;
        CallToolResponse::from(tool_error(message))
    }

    /// Writes a decision's line and waits until it is on disk; when it
    /// cannot be, the call stops there.
    async fn write_decision(&self, call: &Call<'_>, record: AuditRecord<'_>) -> Step<()> {
        if let Err(e) = self.audit.write(&call.stamp(record)).await {
            tracing::error!("cannot write the audit log, the call is refused: {e}");
            return Err(tool_error(format!(
                "toolrag cannot record the decision in its audit log, so `{}` was not called: {e}",
                call.id
            ))
            .into());
        }
        Ok(())
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
}

/// A tool result with `isError` that tells the model `message`.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
