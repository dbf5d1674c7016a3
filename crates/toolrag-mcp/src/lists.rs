//! The caching hints (SEP-2549, protocol 2026-07-28) of `tools/list` and
//! `server/discover`, the same for both, for the index's server and the
//! gateway alike.
//!
//! **Why `public`, and why 5 minutes.** Both servers list a fixed set of
//! meta-tools (`search_tools`, `get_tool`, and the gateway's `call_tool`):
//! the list is written in the binary, not read from the index or the
//! upstream servers, and it is the same for every principal, since a policy
//! (`[[gateway.policy]]`) filters what `search_tools` finds and what
//! `call_tool` runs, never the list itself. `discover` says the versions,
//! the capabilities and the instructions, also the same for everyone. So a
//! cache may share them across authorization contexts (`public`: the
//! request was authenticated before it reached them, and nothing in them
//! depends on who asked), and they change only with a new release of the
//! server, hence a real TTL: 5 minutes, short enough for a rolling upgrade.
//! Were the list ever made per principal, the scope would have to become
//! `private`. rmcp's defaults disagree (its `tools/list` says `public` with
//! `ttlMs: 0`, its `discover` `private` with `ttlMs: 0`), which is why both
//! are set here.

use rmcp::model::{
    CacheScope, DiscoverResult, ListToolsResult, ProtocolVersion, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

/// How long a client may keep the tool list and the discovery result (ms).
pub const TTL_MS: u64 = 5 * 60 * 1000;

/// Who may share a cached tool list or discovery result.
pub const SCOPE: CacheScope = CacheScope::Public;

/// The `tools/list` result of a fixed list of tools, with the caching hints
/// on protocols that have them (2026-07-28 and later).
pub fn tools(tools: Vec<Tool>, ctx: &RequestContext<RoleServer>) -> ListToolsResult {
    let result = ListToolsResult::with_all_items(tools);
    let hints = ctx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    if hints {
        result.with_ttl_ms(TTL_MS).with_cache_scope(SCOPE)
    } else {
        result
    }
}

/// The `server/discover` result, with the same hints as [`tools`].
pub fn discover(versions: Vec<ProtocolVersion>, config: ServerConfig) -> DiscoverResult {
    DiscoverResult::from_server_info(versions, config)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(SCOPE)
}
