//! The audit log: one JSON line per decision the gateway takes about a
//! `call_tool`, appended and synced before the gateway acts on it, so that a
//! crash cannot lose a decision that was acted on; refusals are queued and
//! synced with the next batch, so that they never wait on the disk
//! ([`AuditLog`]).
//!
//! ```json
//! {"time":"2026-12-02T15:04:05.123Z","event":"decision","tool":"fs/write_file","server":"fs",
//!  "argumentsSha256":"5d41…","decision":"approved","decidedBy":"person (elicitation)"}
//! {"time":"2026-12-02T15:04:05.160Z","event":"result","tool":"fs/write_file","server":"fs",
//!  "argumentsSha256":"5d41…","decision":"passed","decidedBy":"output guard"}
//! ```

use serde::Serialize;
use serde_json::Value;

mod writer;

pub use writer::AuditLog;

/// What the upstream server answered a forwarded call, as the audit log
/// writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum UpstreamStatus {
    /// A result (`ok`).
    Ok,
    /// A result with `isError` (`tool-error`).
    ToolError,
    /// No result: the server failed the call or did not answer (`failed`).
    Failed,
}

/// What a `decision` record says about a call: whether it may go to the
/// server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CallDecision {
    /// It needs no approval, or the allow-list allows it.
    Allowed,
    /// A person approved it.
    Approved,
    /// A person rejected or declined it.
    Rejected,
    /// A person cancelled the question.
    Cancelled,
    /// The gateway refused it: quarantined, no way to ask, asking failed.
    Refused,
    /// Its arguments do not match the tool's input schema.
    InvalidArguments,
    /// A person is being asked (protocol 2026-07-28): the call waits for
    /// the client's retry with the answer.
    Asked,
    /// The caller may not use the tool, or sent too many calls.
    Denied,
}

impl CallDecision {
    /// Whether the call goes to the server.
    pub fn lets_call(self) -> bool {
        matches!(self, CallDecision::Allowed | CallDecision::Approved)
    }

    /// The word the audit log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            CallDecision::Allowed => "allowed",
            CallDecision::Approved => "approved",
            CallDecision::Rejected => "rejected",
            CallDecision::Cancelled => "cancelled",
            CallDecision::Refused => "refused",
            CallDecision::InvalidArguments => "invalid-arguments",
            CallDecision::Asked => "asked",
            CallDecision::Denied => "denied",
        }
    }
}

impl std::fmt::Display for CallDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a `result` record says about a call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Outcome {
    /// The output guard found nothing (or is off): passed on as is.
    Passed,
    /// Passed on with a note that it is data, not instructions.
    Marked,
    /// Withheld from the model.
    Blocked,
    /// The server failed, stopped or did not answer.
    Failed,
}

impl Outcome {
    /// The word the audit log (and the output guard's `_meta` `action`) writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Marked => "marked",
            Outcome::Blocked => "blocked",
            Outcome::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a record: `decision` (whether the call may go to the server)
/// or `result` (what became of its result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A [`CallDecision`] about a call.
    Decision,
    /// An [`Outcome`] of a call's result.
    Result,
    /// A request on a session another principal opened ([`SessionRecord`]).
    Session,
}

/// What a record's `decision` field holds: a [`CallDecision`] in a `decision`
/// record, an [`Outcome`] in a `result` record. Written as the bare word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Verdict {
    /// Of a `decision` record.
    Decision(CallDecision),
    /// Of a `result` record.
    Outcome(Outcome),
}

impl Verdict {
    /// The kind of record it goes in.
    pub fn event(self) -> AuditEvent {
        match self {
            Verdict::Decision(_) => AuditEvent::Decision,
            Verdict::Outcome(_) => AuditEvent::Result,
        }
    }
}

impl From<CallDecision> for Verdict {
    fn from(d: CallDecision) -> Verdict {
        Verdict::Decision(d)
    }
}

impl From<Outcome> for Verdict {
    fn from(o: Outcome) -> Verdict {
        Verdict::Outcome(o)
    }
}

/// Who or what took a decision, as the audit log's `decidedBy` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecidedBy {
    /// `annotations: no approval needed`: the tool's annotations ask for none.
    Annotations,
    /// `allow-list: <entry>`: an entry of `[gateway] allow`.
    AllowList(String),
    /// `person (elicitation)`: a person answered the question.
    Person,
    /// `person (elicitation: declined)`.
    PersonDeclined,
    /// `person (elicitation: cancelled)`.
    PersonCancelled,
    /// `gateway: the client cannot ask a person (no elicitation)`.
    NoElicitation,
    /// `gateway: the approval request failed`.
    AskFailed,
    /// `gateway`: the question could not even be put.
    Gateway,
    /// `gateway: quarantine`.
    Quarantine,
    /// `gateway: input schema`.
    InputSchema,
    /// `upstream`: the server failed the call.
    Upstream,
    /// `output guard`.
    OutputGuard,
    /// `gateway: approval state`: the `requestState` of a retried call was
    /// refused (replayed, expired, altered or for another call).
    ApprovalState,
    /// `policy`: the caller's policy does not give them the tool.
    Policy,
    /// `rate limit`.
    RateLimit,
    /// `gateway: session owner`: the request named a session (2025-11-25's
    /// `Mcp-Session-Id`) that another principal opened.
    SessionOwner,
}

impl std::fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecidedBy::Annotations => f.write_str("annotations: no approval needed"),
            DecidedBy::AllowList(entry) => write!(f, "allow-list: {entry}"),
            DecidedBy::Person => f.write_str("person (elicitation)"),
            DecidedBy::PersonDeclined => f.write_str("person (elicitation: declined)"),
            DecidedBy::PersonCancelled => f.write_str("person (elicitation: cancelled)"),
            DecidedBy::NoElicitation => {
                f.write_str("gateway: the client cannot ask a person (no elicitation)")
            }
            DecidedBy::AskFailed => f.write_str("gateway: the approval request failed"),
            DecidedBy::Gateway => f.write_str("gateway"),
            DecidedBy::Quarantine => f.write_str("gateway: quarantine"),
            DecidedBy::InputSchema => f.write_str("gateway: input schema"),
            DecidedBy::Upstream => f.write_str("upstream"),
            DecidedBy::OutputGuard => f.write_str("output guard"),
            DecidedBy::ApprovalState => f.write_str("gateway: approval state"),
            DecidedBy::Policy => f.write_str("policy"),
            DecidedBy::RateLimit => f.write_str("rate limit"),
            DecidedBy::SessionOwner => f.write_str("gateway: session owner"),
        }
    }
}

impl Serialize for DecidedBy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord<'a> {
    /// When (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// `decision` (whether the call may go to the server) or `result` (what
    /// the output guard did with its result); follows from `decision`.
    pub event: AuditEvent,
    /// The tool's id, `<server>/<tool>`.
    pub tool: &'a str,
    /// The server it belongs to.
    pub server: &'a str,
    /// sha256 (hex) of the arguments' canonical JSON: the log says which
    /// arguments were decided on without keeping them.
    pub arguments_sha256: String,
    /// `allowed`, `approved`, `rejected`, `cancelled`, `refused`,
    /// `invalid-arguments`; for a result, `passed`, `marked`, `blocked` or
    /// `failed`.
    pub decision: Verdict,
    /// Who or what decided: `person (elicitation)`, `allow-list: <entry>`,
    /// `annotations: no approval needed`, `gateway: ...`.
    pub decided_by: DecidedBy,
    /// Why, when there is more to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who asked for the call: a token name, a JWT subject, or `local`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Milliseconds from the call's arrival to this record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// What the upstream server answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamStatus>,
}

impl<'a> AuditRecord<'a> {
    /// A record of `verdict` (a [`CallDecision`] or a result's [`Outcome`], which
    /// sets the event) about a call of `tool` (`<server>/<tool>`) with
    /// `arguments`, stamped now.
    pub fn new(
        tool: &'a str,
        arguments: &Value,
        verdict: impl Into<Verdict>,
        decided_by: DecidedBy,
    ) -> AuditRecord<'a> {
        let decision = verdict.into();
        AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            event: decision.event(),
            tool,
            server: tool.split_once('/').map_or(tool, |(s, _)| s),
            arguments_sha256: super::pins::hash(arguments),
            decision,
            decided_by,
            reason: None,
            principal: None,
            latency_ms: None,
            upstream: None,
        }
    }

    /// The record of a call by `principal`, `elapsed` after it arrived.
    pub fn by(mut self, principal: &str, elapsed: std::time::Duration) -> AuditRecord<'a> {
        self.principal = Some(principal.to_string());
        self.latency_ms = Some((elapsed.as_secs_f64() * 1e6).round() / 1e3);
        self
    }

    /// The record with what the upstream server answered.
    pub fn upstream(mut self, status: UpstreamStatus) -> AuditRecord<'a> {
        self.upstream = Some(status);
        self
    }

    /// The record with a reason.
    pub fn because(mut self, reason: impl Into<String>) -> AuditRecord<'a> {
        self.reason = Some(reason.into());
        self
    }
}

/// A line of the audit log about a request on a session (protocol
/// 2025-11-25's `Mcp-Session-Id`) that another principal opened: it was
/// refused, and answered as one on an unknown session.
///
/// ```json
/// {"time":"2026-12-07T01:02:03.456Z","event":"session","decision":"denied",
///  "decidedBy":"gateway: session owner","reason":"POST on a session that alice opened",
///  "principal":"bob"}
/// ```
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord<'a> {
    /// When (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// `session`.
    pub event: AuditEvent,
    /// `denied`.
    pub decision: CallDecision,
    /// `gateway: session owner`.
    pub decided_by: DecidedBy,
    /// The method, and whose session it was.
    pub reason: String,
    /// Who sent the request.
    pub principal: &'a str,
}

impl<'a> SessionRecord<'a> {
    /// The record of a `method` request by `principal` on a session that
    /// `owner` opened, stamped now.
    pub fn foreign(principal: &'a str, owner: &str, method: &str) -> SessionRecord<'a> {
        SessionRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            event: AuditEvent::Session,
            decision: CallDecision::Denied,
            decided_by: DecidedBy::SessionOwner,
            reason: format!("{method} on a session that {owner} opened"),
            principal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_are_appended_one_json_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit").join("log.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let args = serde_json::json!({"path": "/tmp/x", "content": "secret"});
        log.write(&AuditRecord::new(
            "fs/write_file",
            &args,
            CallDecision::Approved,
            DecidedBy::Person,
        ))
        .await
        .unwrap();
        log.write(
            &AuditRecord::new(
                "fs/write_file",
                &args,
                CallDecision::Rejected,
                DecidedBy::Person,
            )
            .because("no"),
        )
        .await
        .unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["server"], "fs");
        assert_eq!(lines[0]["decision"], "approved");
        assert_eq!(lines[1]["reason"], "no");
        assert_eq!(lines[0]["argumentsSha256"], lines[1]["argumentsSha256"]);
        assert!(!text.contains("secret"), "arguments are hashed, not logged");
    }

    #[test]
    fn verdicts_and_deciders_are_written_as_the_words_the_log_always_had() {
        let word = |v: Verdict| serde_json::to_string(&v).unwrap();
        let decisions = [
            (CallDecision::Allowed, "allowed"),
            (CallDecision::Approved, "approved"),
            (CallDecision::Rejected, "rejected"),
            (CallDecision::Cancelled, "cancelled"),
            (CallDecision::Refused, "refused"),
            (CallDecision::InvalidArguments, "invalid-arguments"),
        ];
        for (d, w) in decisions {
            assert_eq!(word(d.into()), format!("\"{w}\""));
            assert_eq!(d.to_string(), w);
            assert_eq!(d.lets_call(), matches!(w, "allowed" | "approved"));
        }
        let outcomes = [
            (Outcome::Passed, "passed"),
            (Outcome::Marked, "marked"),
            (Outcome::Blocked, "blocked"),
            (Outcome::Failed, "failed"),
        ];
        for (o, w) in outcomes {
            assert_eq!(word(o.into()), format!("\"{w}\""));
            assert_eq!(o.to_string(), w);
        }
        let deciders = [
            (DecidedBy::Annotations, "annotations: no approval needed"),
            (DecidedBy::AllowList("fs".into()), "allow-list: fs"),
            (DecidedBy::Person, "person (elicitation)"),
            (DecidedBy::PersonDeclined, "person (elicitation: declined)"),
            (
                DecidedBy::PersonCancelled,
                "person (elicitation: cancelled)",
            ),
            (
                DecidedBy::NoElicitation,
                "gateway: the client cannot ask a person (no elicitation)",
            ),
            (DecidedBy::AskFailed, "gateway: the approval request failed"),
            (DecidedBy::Gateway, "gateway"),
            (DecidedBy::Quarantine, "gateway: quarantine"),
            (DecidedBy::InputSchema, "gateway: input schema"),
            (DecidedBy::Upstream, "upstream"),
            (DecidedBy::OutputGuard, "output guard"),
        ];
        for (by, w) in deciders {
            assert_eq!(serde_json::to_value(&by).unwrap(), w);
        }

        let args = serde_json::json!({});
        let line = serde_json::to_string(&AuditRecord::new(
            "fs/write_file",
            &args,
            Outcome::Passed,
            DecidedBy::OutputGuard,
        ))
        .unwrap();
        let hash = super::super::pins::hash(&args);
        let rest = line.split_once(",\"event\"").unwrap().1;
        assert_eq!(
            rest,
            format!(
                ":\"result\",\"tool\":\"fs/write_file\",\"server\":\"fs\",\"argumentsSha256\":\"{hash}\",\
                 \"decision\":\"passed\",\"decidedBy\":\"output guard\"}}"
            )
        );
        let line = serde_json::to_string(&AuditRecord::new(
            "fs/write_file",
            &args,
            CallDecision::InvalidArguments,
            DecidedBy::InputSchema,
        ))
        .unwrap();
        assert!(line.contains(",\"event\":\"decision\","), "{line}");
        assert!(
            line.ends_with(
                "\"decision\":\"invalid-arguments\",\"decidedBy\":\"gateway: input schema\"}"
            ),
            "{line}"
        );
    }
}
