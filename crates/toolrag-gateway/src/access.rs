//! Visibility: which upstream tools a principal may see, by the compiled
//! `[[gateway.policy]]` ([`crate::policy`]). A search is narrowed to them,
//! and a tool the caller may not see is answered as one that does not
//! exist.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::catalog::Catalog;
use crate::policy::Policy;
use toolrag_auth::Principal;

/// Who may see which tool: the policy, and the sets it gives per principal.
pub(crate) struct Access {
    policy: Arc<Policy>,
    visible: Mutex<VisibleCache>,
}

/// The tools each principal may see, per catalog: computed once per
/// principal and catalog, since a search must not pay for the globs.
#[derive(Default)]
struct VisibleCache {
    catalog: Option<Arc<Catalog>>,
    sets: HashMap<String, Arc<HashSet<String>>>,
}

impl Access {
    /// Visibility by `policy`.
    pub(crate) fn new(policy: Arc<Policy>) -> Access {
        Access {
            policy,
            visible: Mutex::new(VisibleCache::default()),
        }
    }

    /// The compiled `[[gateway.policy]]`.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether `who` may see the tool `id`.
    pub(crate) fn may_see(&self, who: &Principal, id: &str) -> bool {
        self.policy.may_see(who, id)
    }

    /// The ids of the tools of `catalog` that `who` may see, or `None` when
    /// there is no policy (everything). Cached per principal until the
    /// catalog changes.
    pub(crate) fn visible_to(
        &self,
        who: &Principal,
        catalog: &ArcSwap<Catalog>,
    ) -> Option<Arc<HashSet<String>>> {
        if self.policy.is_open() {
            return None;
        }
        let catalog = catalog.load_full();
        let key = format!(
            "{:?}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
            who.method,
            who.name,
            who.subject,
            who.client_id,
            who.groups.join("\u{0}")
        );
        let mut cache = self.visible.lock().unwrap_or_else(|e| e.into_inner());
        if !cache
            .catalog
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &catalog))
        {
            cache.catalog = Some(catalog.clone());
            cache.sets.clear();
        }
        if cache.sets.len() > 10_000 {
            cache.sets.clear();
        }
        let set = cache
            .sets
            .entry(key)
            .or_insert_with(|| {
                Arc::new(
                    catalog
                        .entries
                        .keys()
                        .filter(|id| self.policy.may_see(who, id))
                        .cloned()
                        .collect(),
                )
            })
            .clone();
        Some(set)
    }
}
