//! Keeping the gateway fresh: re-listing the servers (after
//! `notifications/tools/list_changed`, on the re-listing interval, after a
//! restart), pinning new definitions, swapping the new catalog in and
//! rebuilding the index of the tools that are not quarantined.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Changes, Gateway, GatewayError, SyncReport};
use toolrag_core::registry::{Registry, ToolDef};
use toolrag_engine::build::{BuildModel, BuildOptions};

/// How long the gateway waits for another process's build of its index
/// folder before giving up.
const LOCKED_WAIT: Duration = Duration::from_secs(300);

/// Notifications that arrive this close together are one resync.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// How often the gateway looks for upstream servers that died.
const HEALTH_EVERY: Duration = Duration::from_secs(1);

impl Gateway {
    /// Runs until `changes` closes: resyncs a server after it sends
    /// `list_changed` (notifications within 50 ms are one resync), resyncs
    /// every server each `relist-seconds`, and restarts a server that died.
    pub async fn run_background(self: Arc<Self>, Changes(mut changes): Changes) {
        let relist = self.opts.settings.relist_seconds;
        let mut relist_tick = (relist > 0.0).then(|| {
            let every = Duration::from_secs_f64(relist);
            tokio::time::interval_at(tokio::time::Instant::now() + every, every)
        });
        let mut health = tokio::time::interval(HEALTH_EVERY);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let relist_due = async {
                match relist_tick.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                first = changes.recv() => {
                    let Some(first) = first else { return };
                    let mut servers = BTreeSet::from([first]);
                    tokio::time::sleep(DEBOUNCE).await;
                    while let Ok(more) = changes.try_recv() {
                        servers.insert(more);
                    }
                    if let Err(e) = self.resync(Some(&servers)).await {
                        tracing::error!("resync after list_changed failed, the old tools stay: {e}");
                    }
                }
                () = relist_due => {
                    if let Err(e) = self.resync(None).await {
                        tracing::error!("re-listing failed, the old tools stay: {e}");
                    }
                }
                _ = health.tick() => self.upstreams.restart_dead().await,
            }
        }
    }

    /// Lists the servers in `servers` (every server when `None`) again, then
    /// rebuilds the index if the tools changed and swaps the new generation
    /// in. Concurrent calls run one after the other. Searches and calls go
    /// on against the current generation meanwhile.
    pub async fn resync(
        self: &Arc<Self>,
        servers: Option<&BTreeSet<String>>,
    ) -> Result<SyncReport, GatewayError> {
        let _one = self.tools.sync_lock.lock().await;
        let names: Vec<String> = self
            .upstreams
            .names()
            .into_iter()
            .filter(|n| servers.is_none_or(|s| s.contains(n)))
            .collect();
        futures::future::join_all(names.iter().map(|n| self.upstreams.list_server(n))).await;
        let report = self.ingest_and_build(false).await?;
        if let Some(live) = self.tools.live.get() {
            if report.build.is_some() {
                let live = live.clone();
                let reload = tokio::task::spawn_blocking(move || live.reload_if_changed())
                    .await
                    .expect("a reload does not panic");
                if let toolrag_engine::live::Reload::Refused(e) = reload {
                    tracing::error!("the rebuilt index does not open, the old one stays: {e}");
                }
            }
        }
        if report.changes_tools() {
            self.tools_changed();
        }
        if !report.is_quiet() {
            tracing::info!(
                added = ?report.added,
                removed = ?report.removed,
                changed = ?report.changed,
                quarantined = ?report.quarantined,
                "upstream tools changed{}",
                report
                    .build
                    .as_ref()
                    .map(|b| format!("; {b}"))
                    .unwrap_or_default()
            );
        }
        Ok(report)
    }

    /// Checks what the servers listed, pins new definitions, swaps the new
    /// catalog in and builds the index of the tools that are not
    /// quarantined, unless the index already holds exactly them. `first`:
    /// log every quarantined tool, not only the newly quarantined.
    pub(super) async fn ingest_and_build(&self, first: bool) -> Result<SyncReport, GatewayError> {
        let mut pins = self.tools.pins.lock().await;
        let (catalog, new) = self.catalog_of(&pins);
        for id in &new {
            pins.pin(id, &catalog.entries[id].raw);
        }
        pins.save()?;
        drop(pins);

        let old = self.tools.catalog.load_full();
        let mut report = SyncReport {
            pinned: new,
            ..SyncReport::default()
        };
        for (id, e) in &catalog.entries {
            match old.entries.get(id) {
                None => report.added.push(id.clone()),
                Some(o) if o.raw != e.raw => report.changed.push(id.clone()),
                Some(_) => {}
            }
            let was = old
                .entries
                .get(id)
                .is_some_and(|o| !o.quarantine.is_empty());
            if !e.quarantine.is_empty() && (first || !was) {
                report.quarantined.push(id.clone());
                for q in &e.quarantine {
                    tracing::warn!(tool = %id, "quarantined: {q}");
                }
            }
        }
        report.removed = old
            .entries
            .keys()
            .filter(|id| !catalog.entries.contains_key(*id))
            .cloned()
            .collect();
        if first {
            report.added.clear();
        }

        let active: Vec<ToolDef> = catalog
            .entries
            .values()
            .filter(|e| e.quarantine.is_empty())
            .map(|e| e.def.clone())
            .collect();
        self.tools.catalog.store(Arc::new(catalog));
        let registry = Registry::from_tools(active).map_err(GatewayError::Index)?;
        // With the requests `toolrag learn` learnt, as the build will give
        // them, so that an index that has them counts as current.
        let registry = toolrag_engine::learn::attach_from(registry, &self.opts.index)
            .map_err(GatewayError::Index)?;
        // Another gateway on the same index folder (two clients started one
        // each) may be building: wait for it, then build only if its
        // generation is not already this one.
        let waited_since = Instant::now();
        while !self.index_is_current(&registry) {
            let mut opts = BuildOptions::new(self.opts.index.clone());
            opts.boosts = self.opts.boosts;
            let embedder = self.tools.embedder.clone();
            let tools = registry.clone();
            let build = tokio::task::spawn_blocking(move || {
                let model = embedder.as_deref().map(BuildModel::Loaded);
                toolrag_engine::build::build(tools, model, &opts, &|_| {})
            })
            .await
            .expect("a build does not panic");
            match build {
                Ok(b) => {
                    report.build = Some(b);
                    break;
                }
                Err(toolrag_core::Error::Locked { .. }) if waited_since.elapsed() < LOCKED_WAIT => {
                    tracing::info!("another build holds the index folder; waiting for it");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(report)
    }

    /// Whether the live generation of the index folder holds exactly the
    /// tools of `registry`, built with the gateway's model.
    fn index_is_current(&self, registry: &Registry) -> bool {
        let Ok(gen) = toolrag_engine::index::current_generation(&self.opts.index) else {
            return false;
        };
        let Ok(manifest) = toolrag_engine::index::Manifest::read_unverified(&gen) else {
            return false;
        };
        let model = self
            .tools
            .embedder
            .as_deref()
            .map(toolrag_engine::index::ModelInfo::of);
        manifest.model == model
            && manifest.boosts == self.opts.boosts
            && manifest.tools.len() == registry.len()
            && manifest
                .tools
                .iter()
                .zip(registry.tools())
                .all(|(e, t)| e.id == t.id && e.hash == toolrag_engine::build::content_hash(t))
    }
}

impl SyncReport {
    /// Whether what the clients can find changed: a tool added, removed,
    /// changed or newly quarantined.
    fn changes_tools(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.quarantined.is_empty())
    }

    fn is_quiet(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.quarantined.is_empty()
            && self.build.is_none()
    }
}
