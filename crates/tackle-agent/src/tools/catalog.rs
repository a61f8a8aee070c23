//! [`ToolCatalog`]: the tool definitions of a session, frozen at session start.
//!
//! Providers cache prompts from the top, and tools come first: any change to the definitions
//! invalidates everything after them. So the catalog is built once, in a deterministic order,
//! shared as one `Arc` (providers render it once and reuse the exact bytes), and changes only
//! as an explicit event at a turn boundary. Per-step availability is a [`crate::ToolMask`],
//! never a different list.

use std::collections::HashMap;
use std::sync::Arc;

use tackle_protocol::ToolSpec;

/// The frozen, ordered tool definitions of a session.
///
/// ```
/// use serde_json::json;
/// use tackle_agent::ToolCatalog;
/// use tackle_protocol::ToolSpec;
/// let spec = |n: &str| ToolSpec::new(n, "d", json!({"type": "object"}));
/// let catalog = ToolCatalog::freeze(vec![spec("shell"), spec("read_file")], vec![spec("z__b"), spec("a__c")]);
/// assert_eq!(catalog.names(), ["shell", "read_file", "a__c", "z__b"]);
/// ```
#[derive(Debug, Clone)]
pub struct ToolCatalog {
    specs: Arc<[ToolSpec]>,
    index: Arc<HashMap<String, usize>>,
    core: usize,
    fingerprint: String,
}

impl ToolCatalog {
    /// Freezes `core` tools in the given (registry) order, then `extra` tools (MCP and other
    /// sources) sorted by name. Later duplicates of a name are dropped.
    pub fn freeze(core: Vec<ToolSpec>, mut extra: Vec<ToolSpec>) -> Self {
        extra.sort_by(|a, b| a.name.cmp(&b.name));
        let mut index = HashMap::new();
        let mut specs = Vec::with_capacity(core.len() + extra.len());
        let mut core_count = 0;
        for (is_core, spec) in
            core.into_iter().map(|s| (true, s)).chain(extra.into_iter().map(|s| (false, s)))
        {
            if index.contains_key(&spec.name) {
                tracing::warn!(tool = %spec.name, "duplicate tool name left out of the catalog");
                continue;
            }
            index.insert(spec.name.clone(), specs.len());
            core_count += usize::from(is_core);
            specs.push(spec);
        }
        let fingerprint = fingerprint(&specs);
        Self { specs: Arc::from(specs), index: Arc::new(index), core: core_count, fingerprint }
    }

    /// The definitions, shared: every request of the session sends this same allocation.
    pub fn specs(&self) -> &Arc<[ToolSpec]> {
        &self.specs
    }

    /// Tool names in catalog order.
    pub fn names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }

    /// The definition of `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.index.get(name).map(|i| &self.specs[*i])
    }

    /// Whether `name` is in the catalog.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Whether `name` is a core tool (as opposed to one from an extra source).
    pub fn is_core(&self, name: &str) -> bool {
        self.index.get(name).is_some_and(|i| *i < self.core)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// A digest of the definitions: equal catalogs have equal fingerprints.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

fn fingerprint(specs: &[ToolSpec]) -> String {
    let bytes = serde_json::to_vec(specs).unwrap_or_default();
    blake3::hash(&bytes).to_hex()[..16].to_owned()
}
