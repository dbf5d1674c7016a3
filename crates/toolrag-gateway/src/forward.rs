//! Forwarding: a call goes to the server that owns the tool, over its
//! session (restarted first if it died), with the trace context and the
//! call timeout; what comes back is a result, or why there is none.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::Value;
use tracing::Instrument;

use super::upstream::UpstreamError;
use super::upstreams::{Upstream, Upstreams};

impl Upstreams {
    /// Sends `tools/call` to `up`, restarting it first if it died.
    pub(super) async fn forward(
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
        let timeout = self.call_timeout;
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
pub(super) enum ForwardError {
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
