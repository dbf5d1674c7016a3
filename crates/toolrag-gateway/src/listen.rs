//! `notifications/tools/list_changed` for the gateway's clients, whenever
//! the catalog of upstream tools changes (a server added, removed or
//! changed a tool, or one was quarantined): on the streams of
//! `subscriptions/listen` (protocol 2026-07-28, [`listen`]), and on the
//! standalone stream (GET) of a 2025-11-25 session ([`notify_session`]).
//!
//! The gateway's own `tools/list` (its meta-tools) does not change then; what
//! changed is what `search_tools` finds and `get_tool` describes, so a client
//! that caches those knows to drop them (see [`toolrag_mcp::lists`]).

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{Peer, SubscriptionContext};
use rmcp::{ErrorData, RoleServer};
use tokio::sync::watch;

use super::Gateway;

/// How often a 2025-11-25 session's notifier looks whether its session has
/// ended, when no change comes.
const SESSION_CHECK: Duration = Duration::from_secs(30);

impl Gateway {
    /// Told (the count goes up) each time the catalog of upstream tools
    /// changes.
    pub fn tool_changes(&self) -> watch::Receiver<u64> {
        self.tools.changes.subscribe()
    }

    /// Tells the listeners that the catalog changed.
    pub(super) fn tools_changed(&self) {
        self.tools.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Serves one `subscriptions/listen` stream: `list_changed` at each change
/// of the catalog, until the client cancels it (or goes away), or the
/// gateway stops; returning ends the stream gracefully (rmcp sends the
/// final result).
pub async fn listen(gateway: &Gateway, ctx: SubscriptionContext) -> Result<(), ErrorData> {
    let mut changes = gateway.tool_changes();
    changes.mark_unchanged();
    loop {
        tokio::select! {
            () = ctx.cancelled() => return Ok(()),
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                if let Err(e) = ctx.sink().notify_tool_list_changed().await {
                    tracing::debug!("a listen stream ended: {e}");
                    return Ok(());
                }
            }
        }
    }
}

/// Sends `list_changed` to a 2025-11-25 session at each change of the
/// catalog, until the session ends. rmcp has no `listen` for these
/// sessions: its peer is all there is, hence a task per session, which
/// looks every [`SESSION_CHECK`] whether the session is gone.
pub fn notify_session(gateway: &Arc<Gateway>, peer: Peer<RoleServer>) {
    let mut changes = gateway.tool_changes();
    changes.mark_unchanged();
    tokio::spawn(async move {
        loop {
            let changed = tokio::select! {
                c = changes.changed() => match c {
                    Ok(()) => true,
                    // The gateway is gone.
                    Err(_) => return,
                },
                () = tokio::time::sleep(SESSION_CHECK) => false,
            };
            if peer.is_transport_closed() {
                return;
            }
            if changed {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("a session's list_changed was not sent: {e}");
                    return;
                }
            }
        }
    });
}
