//! The merged catalog: every tool the upstream servers list, under
//! `<server>/<tool>`, with why it is quarantined (poisoned, or changed since
//! it was pinned); the checks and the acceptance of definitions against the
//! lock file ([`super::pins`]); and the cards `get_tool` shows.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use serde_json::Value;
use tokio::sync::watch;

use super::pins::{PinCheck, PinLock};
use super::upstream::ServerTools;
use super::{Gateway, GatewayError, Quarantine, QuarantinedTool};
use toolrag_core::registry::{Registry, ToolDef, HANDLE_SCHEME};
use toolrag_embed::Embedder;
use toolrag_engine::live::LiveIndex;
use toolrag_lint::{LintConfig, LintContext};

/// One upstream tool as the gateway knows it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) def: ToolDef,
    /// The MCP `Tool` JSON as listed.
    pub(super) raw: Value,
    pub(super) quarantine: Vec<Quarantine>,
    /// The input schema, compiled at the tool's first call and kept for the
    /// next ones (`None` inside: it does not compile).
    pub(super) validator: std::sync::OnceLock<Option<Arc<jsonschema::Validator>>>,
}

/// Every listed upstream tool, quarantined or not, by id.
#[derive(Debug, Default)]
pub(super) struct Catalog {
    pub(super) entries: BTreeMap<String, Entry>,
}

/// The tools the gateway serves: the catalog now, the pins it is checked
/// against, the index searches run on, and who hears that it changed.
pub(super) struct Tools {
    pub(super) catalog: ArcSwap<Catalog>,
    pub(super) pins: tokio::sync::Mutex<PinLock>,
    /// The index of the catalog's callable tools, once opened.
    pub(super) live: OnceLock<Arc<LiveIndex>>,
    /// Embeds the new texts of a rebuild.
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    /// One re-listing and rebuild at a time.
    pub(super) sync_lock: tokio::sync::Mutex<()>,
    /// Counts the changes of the catalog, for the clients listening.
    pub(super) changes: watch::Sender<u64>,
}

impl Tools {
    /// An empty catalog checked against `pins`, not indexed yet.
    pub(super) fn new(pins: PinLock, embedder: Option<Arc<dyn Embedder>>) -> Tools {
        Tools {
            catalog: ArcSwap::from_pointee(Catalog::default()),
            pins: tokio::sync::Mutex::new(pins),
            live: OnceLock::new(),
            embedder,
            sync_lock: tokio::sync::Mutex::new(()),
            changes: watch::Sender::new(0),
        }
    }
}

impl Gateway {
    /// Every tool listed now, quarantined or not, checked against the lock
    /// file without pinning anything (for `--check`).
    pub async fn check(&self) -> Vec<QuarantinedTool> {
        let pins = self.tools.pins.lock().await;
        let (catalog, _) = self.catalog_of(&pins);
        catalog
            .entries
            .into_values()
            .filter(|e| !e.quarantine.is_empty())
            .map(|e| QuarantinedTool {
                id: e.def.id,
                reasons: e.quarantine,
            })
            .collect()
    }

    /// Accepts the current definitions of `names` (tool ids, or server names
    /// for all their tools): pins them in the lock file. Returns the tool ids
    /// whose pin changed. A poisoned tool stays quarantined whatever is
    /// accepted.
    pub async fn accept(&self, names: &[String]) -> Result<Vec<String>, GatewayError> {
        let mut pins = self.tools.pins.lock().await;
        let (catalog, _) = self.catalog_of(&pins);
        let mut accepted = Vec::new();
        for name in names {
            let name = name.strip_prefix(HANDLE_SCHEME).unwrap_or(name);
            let matching: Vec<&Entry> = catalog
                .entries
                .values()
                .filter(|e| e.def.id == name || e.def.namespace == name)
                .collect();
            if matching.is_empty() {
                return Err(GatewayError::UnknownTool(name.to_string()));
            }
            for e in matching {
                if pins.check(&e.def.id, &e.raw) != PinCheck::Same {
                    pins.pin(&e.def.id, &e.raw);
                    accepted.push(e.def.id.clone());
                }
            }
        }
        pins.save()?;
        Ok(accepted)
    }

    /// The card of a tool for `get_tool`: a quarantined tool's is refused
    /// with its reasons.
    pub fn card(&self, handle: &str, who: &toolrag_auth::Principal) -> Result<Value, String> {
        let id = id_of(handle);
        // The tool is looked up (in the catalog and in the index) whether or
        // not the caller may see it, so that a hidden tool costs what an
        // unknown one costs.
        let catalog = self.tools.catalog.load();
        let entry = catalog.entries.get(id);
        let indexed = self.live().snapshot().tool(handle.trim()).is_some();
        if !self.access.may_see(who, id) || (entry.is_none() && !indexed) {
            // Word for word what an unknown tool gets: nothing tells a
            // principal that a tool they may not see exists.
            return Err(format!(
                "no tool `{handle}` in the index; use a handle returned by search_tools"
            ));
        }
        if let Some(e) = entry {
            if !e.quarantine.is_empty() {
                return Err(quarantine_message(id, &e.quarantine, self.lock_hint(id)));
            }
        }
        toolrag_mcp::card_of(self.live(), handle)
    }

    pub(super) fn lock_hint(&self, id: &str) -> String {
        format!(
            "a person who has checked the new definition accepts it with `toolrag mcp --upstream \
             <config> --index {} --accept {id}` (lock file {})",
            self.opts.index.display(),
            self.opts.lock_file.display()
        )
    }

    /// The catalog of what the servers listed last, checked against `pins`,
    /// and the new tools to pin (neither poisoned nor pinned yet).
    pub(super) fn catalog_of(&self, pins: &PinLock) -> (Catalog, Vec<String>) {
        let mut defs: Vec<(ToolDef, Value)> = Vec::new();
        for up in self.upstreams.all() {
            let Some(listing) = up.listing() else {
                continue;
            };
            let tools = ServerTools {
                server: up.config.clone(),
                server_info: listing.server_info.clone(),
                tools: listing.tools.clone(),
            };
            let (normalised, errors) = tools.normalise();
            for e in errors {
                tracing::warn!(
                    server = %up.config.name,
                    "the server listed an invalid tool, left out: {}",
                    e.message
                );
            }
            let by_name: HashMap<&str, &Value> = listing
                .tools
                .iter()
                .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
                .collect();
            for mut def in normalised {
                let raw = by_name
                    .get(def.name.as_str())
                    .map_or(Value::Null, |t| (*t).clone());
                // Cards show no path of the machine serving them.
                def.source.location.file = PathBuf::from(format!("{}.json", up.config.name));
                defs.push((def, raw));
            }
        }
        let poisoned = self.poisoning(defs.iter().map(|(d, _)| d.clone()).collect());
        let mut catalog = Catalog::default();
        let mut new = Vec::new();
        for (def, raw) in defs {
            let mut quarantine = Vec::new();
            if let Some(findings) = poisoned.get(&def.id) {
                quarantine.push(Quarantine::Poisoned {
                    findings: findings.clone(),
                });
            }
            match pins.check(&def.id, &raw) {
                PinCheck::Same => {}
                PinCheck::New if quarantine.is_empty() => new.push(def.id.clone()),
                PinCheck::New => {}
                PinCheck::Changed { pinned_at, fields } => {
                    quarantine.push(Quarantine::Changed { pinned_at, fields })
                }
            }
            catalog.entries.entry(def.id.clone()).or_insert(Entry {
                def,
                raw,
                quarantine,
                validator: std::sync::OnceLock::new(),
            });
        }
        (catalog, new)
    }

    /// The `hidden-instructions` findings of each tool, by id.
    fn poisoning(&self, defs: Vec<ToolDef>) -> BTreeMap<String, Vec<String>> {
        let registry = match Registry::from_tools(defs) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("the upstream tools do not form a registry: {e}");
                return BTreeMap::new();
            }
        };
        let config = LintConfig {
            select: Some(vec!["TR010"]),
            thresholds: self.opts.thresholds.clone(),
            ..LintConfig::default()
        };
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in toolrag_lint::lint(&registry, &LintContext::new(config)) {
            out.entry(d.tool_id)
                .or_default()
                .push(format!("{}: {}", d.pointer, d.message));
        }
        out
    }
}

/// The tool id that `handle` names: `tool://<server>/<tool>` or the bare id.
pub(super) fn id_of(handle: &str) -> &str {
    let id = handle.trim();
    id.strip_prefix(HANDLE_SCHEME).unwrap_or(id)
}

/// What the model is told about a quarantined tool: every reason, and for
/// a changed definition how a person accepts it (`hint`).
pub(super) fn quarantine_message(id: &str, reasons: &[Quarantine], hint: String) -> String {
    let mut text = format!("`{id}` is quarantined and cannot be used: ");
    text.push_str(
        &reasons
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    );
    if reasons
        .iter()
        .any(|r| matches!(r, Quarantine::Changed { .. }))
    {
        text.push_str("; ");
        text.push_str(&hint);
    }
    text
}
