//! Finding a tool by its handle.

use super::{Registry, ToolDef, HANDLE_SCHEME};

/// Finds the tool behind a candidate handle, so the gate can read its
/// side-effect annotations. Implemented for a loaded [`Registry`], a plain slice of tools and,
/// in the engine, an opened index (`Searcher`).
pub trait ToolResolver {
    /// The tool a handle (`tool://<id>`, or a bare id) names, if any. A handle
    /// that resolves to nothing (such as `node://...`) needs no approval.
    fn resolve(&self, node_id: &str) -> Option<&ToolDef>;
}

impl ToolResolver for Registry {
    fn resolve(&self, node_id: &str) -> Option<&ToolDef> {
        self.get(node_id)
    }
}

impl ToolResolver for [ToolDef] {
    fn resolve(&self, node_id: &str) -> Option<&ToolDef> {
        let id = node_id.strip_prefix(HANDLE_SCHEME).unwrap_or(node_id);
        self.iter().find(|t| t.id == id)
    }
}
