//! The OpenAI-compatible chat client: `POST {url}/chat/completions`, the
//! answer read from `choices[0].message.content`.
//!
//! Servers differ on `response_format`. The client starts with the strictest
//! form it was asked for and steps down when a server answers an error that
//! names it: `json_schema`, then `json_object` with the schema (the form
//! llama-cpp-python's server takes), then no constraint. It says so once, and
//! remembers the form that worked for every later call.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::PlannerError;

/// How the answer's shape is asked of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// `response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`:
    /// the OpenAI form, which llama.cpp's server, vLLM, Ollama and LM Studio take.
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": …}`: llama-cpp-python's form.
    JsonObject,
    /// No `response_format`: the prompt alone asks for JSON.
    None,
}

impl Constraint {
    fn from_u8(v: u8) -> Constraint {
        match v {
            0 => Constraint::JsonSchema,
            1 => Constraint::JsonObject,
            _ => Constraint::None,
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            Constraint::JsonSchema => 0,
            Constraint::JsonObject => 1,
            Constraint::None => 2,
        }
    }

    /// The next, looser form; `None` stays `None`.
    fn looser(self) -> Constraint {
        Constraint::from_u8(self.as_u8() + 1)
    }

    /// The `response_format` value for `schema`, if any.
    fn response_format(self, schema: &Value) -> Option<Value> {
        match self {
            Constraint::JsonSchema => Some(json!({
                "type": "json_schema",
                "json_schema": { "name": "khipu_plan_judgment", "schema": schema },
            })),
            Constraint::JsonObject => Some(json!({ "type": "json_object", "schema": schema })),
            Constraint::None => None,
        }
    }
}

/// The most a plan answer may hold, in tokens: a judgment with a few steps
/// takes about 150; a model that rambles is cut (its answer is then not
/// JSON) and repaired, instead of spending minutes of a CPU-bound server.
const MAX_TOKENS: u32 = 400;

/// The most of an answer's body that is read.
const MAX_BODY_BYTES: u64 = 8 * 1024 * 1024;

/// How much of an error body a message quotes.
const MAX_QUOTED_BODY: usize = 300;

/// One plan model behind an OpenAI-compatible endpoint.
pub(crate) struct Chat {
    pub endpoint: String,
    agent: ureq::Agent,
    key: Option<String>,
    model: Option<String>,
    timeout: Duration,
    /// The [`Constraint`] in force, as `u8`: shared by concurrent plans, so
    /// one step down serves them all.
    constraint: Arc<AtomicU8>,
}

impl Chat {
    pub fn new(
        base_url: &str,
        key: Option<String>,
        model: Option<String>,
        timeout: Duration,
        constraint: Constraint,
    ) -> Chat {
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .unversioned_rustls_crypto_provider(provider)
            .build();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            // An unreachable planner answers at once, or within this.
            .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
            .tls_config(tls)
            .user_agent(concat!("toolrag/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Chat {
            endpoint,
            agent,
            key,
            model,
            timeout,
            constraint: Arc::new(AtomicU8::new(constraint.as_u8())),
        }
    }

    /// The constraint in force now.
    pub fn constraint(&self) -> Constraint {
        Constraint::from_u8(self.constraint.load(Ordering::Relaxed))
    }

    /// One completion: the text of `choices[0].message.content`.
    pub fn complete(&self, messages: &[Value], schema: &Value) -> Result<String, PlannerError> {
        loop {
            let constraint = self.constraint();
            let mut body = json!({
                "messages": messages,
                "temperature": 0,
                "max_tokens": MAX_TOKENS,
                "stream": false,
            });
            if let Some(model) = &self.model {
                body["model"] = Value::String(model.clone());
            }
            if let Some(rf) = constraint.response_format(schema) {
                body["response_format"] = rf;
            }
            let (status, text) = self.post(&body)?;
            if (200..300).contains(&status) {
                return content_of(&self.endpoint, &text);
            }
            if constraint != Constraint::None && names_response_format(&text) {
                let next = constraint.looser();
                // Only the first plan to see the refusal says so.
                if self
                    .constraint
                    .compare_exchange(
                        constraint.as_u8(),
                        next.as_u8(),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    tracing::warn!(
                        "the planner at {} refused response_format {:?} (HTTP {status}); asking with {:?} instead",
                        self.endpoint,
                        constraint,
                        next
                    );
                }
                continue;
            }
            return Err(PlannerError::Http {
                url: self.endpoint.clone(),
                status,
                body: quote_body(&text),
            });
        }
    }

    fn post(&self, body: &Value) -> Result<(u16, String), PlannerError> {
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.key {
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut res = req
            .send(body.to_string())
            .map_err(|e| self.transport_error(e))?;
        let status = res.status().as_u16();
        let text = res
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_string()
            .map_err(|e| self.transport_error(e))?;
        Ok((status, text))
    }

    fn transport_error(&self, e: ureq::Error) -> PlannerError {
        let url = self.endpoint.clone();
        match e {
            ureq::Error::Timeout(_) => PlannerError::Timeout {
                url,
                secs: self.timeout.as_secs_f64(),
            },
            other => PlannerError::Unreachable {
                url,
                reason: other.to_string(),
            },
        }
    }
}

/// Whether an error body is about `response_format` (the server's way of
/// saying it does not take that form).
fn names_response_format(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "response_format",
        "response format",
        "json_schema",
        "json schema",
    ]
    .iter()
    .any(|k| b.contains(k))
}

/// The start of an error body, on one line, for a message.
fn quote_body(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_QUOTED_BODY) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

/// `choices[0].message.content` of a completion.
fn content_of(url: &str, text: &str) -> Result<String, PlannerError> {
    let bad = |reason: String| PlannerError::BadResponse {
        url: url.to_string(),
        reason,
    };
    let completion: Completion = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not an OpenAI chat completion ({e}): {}",
            quote_body(text)
        ))
    })?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| bad("the completion has no choices".into()))?;
    choice
        .message
        .content
        .ok_or_else(|| bad("choices[0].message.content is null".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constraint_steps_down_to_none_and_stays() {
        assert_eq!(Constraint::JsonSchema.looser(), Constraint::JsonObject);
        assert_eq!(Constraint::JsonObject.looser(), Constraint::None);
        assert_eq!(Constraint::None.looser(), Constraint::None);
        assert!(Constraint::None.response_format(&json!({})).is_none());
        assert_eq!(
            Constraint::JsonObject
                .response_format(&json!({"a": 1}))
                .unwrap()["schema"]["a"],
            1
        );
    }

    #[test]
    fn error_bodies_that_name_the_format_are_recognised() {
        assert!(names_response_format(
            r#"{"error":{"message":"Unsupported response_format type"}}"#
        ));
        assert!(!names_response_format("model not found"));
    }

    #[test]
    fn content_is_read_from_the_first_choice() {
        let ok = r#"{"choices":[{"message":{"role":"assistant","content":"{}"}}]}"#;
        assert_eq!(content_of("u", ok).unwrap(), "{}");
        assert!(matches!(
            content_of("u", r#"{"choices":[]}"#),
            Err(PlannerError::BadResponse { .. })
        ));
        assert!(matches!(
            content_of("u", "<html>"),
            Err(PlannerError::BadResponse { .. })
        ));
    }
}
