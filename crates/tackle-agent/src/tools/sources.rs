//! Tool sources whose lists change while the agent runs (MCP servers announcing
//! `notifications/tools/list_changed`), applied at turn boundaries.
//!
//! A refresh rebuilds the executor's registry with the source's new tools and, when deferral is
//! on, re-indexes the deferred set; the catalog then changes only if the source's tools are in
//! it. Every applied change bumps a generation number: each session compares it with the one it
//! saw at its next turn start and re-freezes its catalog only then, never between two steps.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tackle_tools::{ToolExecutor, ToolRegistry, ToolSource};

use crate::DeferredTools;

/// What a refresh of tool sources changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolChange {
    /// Sources whose lists changed (`mcp`).
    pub sources: Vec<String>,
    /// Tools that appeared, sorted.
    pub added: Vec<String>,
    /// Tools that went away, sorted.
    pub removed: Vec<String>,
}

struct SourceEntry {
    source: Arc<dyn ToolSource>,
    /// Names of the tools registered from this source.
    names: Mutex<Vec<String>>,
}

/// The agent's dynamic tool sources (shared by agents made with `with_model`).
#[derive(Default)]
pub(crate) struct ToolSources {
    entries: Vec<SourceEntry>,
    /// One refresh at a time: two sessions starting turns together must not both rebuild.
    applying: tokio::sync::Mutex<()>,
    /// Held while the registry and the deferred set are swapped, and while a catalog is read,
    /// so no catalog is built from a new registry and an old deferred set.
    swapping: Mutex<()>,
    generation: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ToolSources {
    /// The same sources plus `source`, whose current tools are already in the registry.
    pub(crate) fn with(&self, source: Arc<dyn ToolSource>) -> Self {
        let mut entries: Vec<SourceEntry> = self
            .entries
            .iter()
            .map(|e| SourceEntry { source: e.source.clone(), names: Mutex::new(lock(&e.names).clone()) })
            .collect();
        let names = source.tools().iter().map(|t| t.spec().name.clone()).collect();
        entries.push(SourceEntry { source, names: Mutex::new(names) });
        Self { entries, generation: AtomicU64::new(self.generation()), ..Self::default() }
    }

    /// Changes applied so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Keeps the registry and the deferred set from being swapped while the guard lives.
    pub(crate) fn read_guard(&self) -> MutexGuard<'_, ()> {
        lock(&self.swapping)
    }

    /// Pulls every source's pending changes and applies them to `executor` (and `deferred`).
    /// Returns the change when something changed.
    pub(crate) async fn refresh(
        &self,
        executor: &ToolExecutor,
        deferred: Option<&DeferredTools>,
    ) -> Option<ToolChange> {
        if self.entries.is_empty() {
            return None;
        }
        let _applying = self.applying.lock().await;
        let mut changed = Vec::new();
        for entry in &self.entries {
            if entry.source.refresh().await {
                changed.push(entry);
            }
        }
        if changed.is_empty() {
            return None;
        }
        let old = executor.registry();
        let stale: HashSet<String> = changed.iter().flat_map(|e| lock(&e.names).clone()).collect();
        let mut registry = ToolRegistry::new();
        for tool in old.iter().filter(|t| !stale.contains(&t.spec().name)) {
            if let Err(e) = registry.register(tool.clone()) {
                tracing::warn!(error = %e, "tool dropped while rebuilding the registry");
            }
        }
        let mut change = ToolChange::default();
        for entry in &changed {
            let before: BTreeSet<String> = lock(&entry.names).iter().cloned().collect();
            let mut now = Vec::new();
            for tool in entry.source.tools() {
                let name = tool.spec().name.clone();
                match registry.register(tool) {
                    Ok(()) => now.push(name),
                    Err(e) => tracing::warn!(source = entry.source.name(), error = %e, "tool skipped"),
                }
            }
            let after: BTreeSet<String> = now.iter().cloned().collect();
            change.added.extend(after.difference(&before).cloned());
            change.removed.extend(before.difference(&after).cloned());
            change.sources.push(entry.source.name().to_owned());
            *lock(&entry.names) = now;
        }
        change.added.sort();
        change.removed.sort();
        let deferred_specs: Option<Vec<_>> = deferred.map(|_| {
            let from_sources: HashSet<String> =
                self.entries.iter().flat_map(|e| lock(&e.names).clone()).collect();
            registry.iter().map(|t| t.spec()).filter(|s| from_sources.contains(&s.name)).cloned().collect()
        });
        {
            let _swapping = lock(&self.swapping);
            if let (Some(d), Some(specs)) = (deferred, deferred_specs) {
                d.replace(specs);
            }
            executor.replace_registry(registry);
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        tracing::info!(
            sources = ?change.sources,
            added = change.added.len(),
            removed = change.removed.len(),
            "tool sources changed; applied at this turn boundary"
        );
        Some(change)
    }
}
