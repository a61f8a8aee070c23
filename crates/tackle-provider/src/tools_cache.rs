//! Renders a session's tool definitions once per wire format and reuses the exact bytes.

use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tackle_protocol::ToolSpec;

use crate::ProviderError;

/// Cache of rendered tool definitions keyed by the identity of the tool list.
///
/// A session's tool catalog is one `Arc<[ToolSpec]>` for its whole life, so comparing pointers is
/// both cheap and exact; the cache holds a clone of the `Arc`, so a pointer cannot be reused by
/// another list while its entry exists.
#[derive(Default)]
pub(crate) struct ToolsCache {
    entries: Mutex<Vec<Entry>>,
}

/// The tool list, the rendering variant, and the rendered bytes.
type Entry = (Arc<[ToolSpec]>, u8, Arc<RawValue>);

/// Entries kept: a few live sessions sharing one client.
const CAPACITY: usize = 8;

impl ToolsCache {
    /// Like [`ToolsCache::get`], but `None` for an empty list: a request without tools sends no
    /// tool fields at all.
    pub(crate) fn rendered(
        &self,
        tools: &Arc<[ToolSpec]>,
        variant: u8,
        render: impl FnOnce(&[ToolSpec]) -> serde_json::Result<String>,
    ) -> Result<Option<Arc<RawValue>>, ProviderError> {
        if tools.is_empty() { Ok(None) } else { self.get(tools, variant, render).map(Some) }
    }

    /// The rendering of `tools` in `variant` (e.g. with or without a cache marker), rendering it
    /// with `render` (to JSON text) on first use.
    pub(crate) fn get(
        &self,
        tools: &Arc<[ToolSpec]>,
        variant: u8,
        render: impl FnOnce(&[ToolSpec]) -> serde_json::Result<String>,
    ) -> Result<Arc<RawValue>, ProviderError> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pos) = entries.iter().position(|(t, v, _)| Arc::ptr_eq(t, tools) && *v == variant) {
            let entry = entries.remove(pos);
            let raw = entry.2.clone();
            entries.push(entry); // most recently used last
            return Ok(raw);
        }
        let json = render(tools)
            .map_err(|e| ProviderError::protocol(format!("cannot serialize tool definitions: {e}")))?;
        let raw: Arc<RawValue> = Arc::from(
            RawValue::from_string(json)
                .map_err(|e| ProviderError::protocol(format!("cannot serialize tool definitions: {e}")))?,
        );
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        entries.push((tools.clone(), variant, raw.clone()));
        Ok(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_once_per_list_and_variant() {
        let cache = ToolsCache::default();
        let tools: Arc<[ToolSpec]> = Arc::from(vec![ToolSpec::new("a", "d", serde_json::json!({}))]);
        let mut renders = 0;
        let mut render = |t: &[ToolSpec]| {
            renders += 1;
            serde_json::to_string(&t.len())
        };
        let a = cache.get(&tools, 0, &mut render).unwrap();
        let b = cache.get(&tools, 0, &mut render).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        cache.get(&tools, 1, &mut render).unwrap();
        let other: Arc<[ToolSpec]> = Arc::from(tools.to_vec());
        cache.get(&other, 0, &mut render).unwrap();
        assert_eq!(renders, 3);
    }
}
