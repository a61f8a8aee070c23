//! Recoverable offloading: large tool outputs go to the session store; the model sees a compact
//! reference with a preview and the locator that restores them (`read_result`).

use std::time::Duration;

use async_trait::async_trait;
use tackle_store::{NewBlob, Store};
use tackle_tools::{Offloaded, OutputOffloader, ToolContext, ToolFailure};

/// Default size above which outputs are offloaded.
pub const DEFAULT_OFFLOAD_BYTES: usize = 4 * 1024;
/// Default time to live of offloaded outputs.
pub const DEFAULT_OFFLOAD_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

const HEAD_LINES: usize = 15;
const TAIL_LINES: usize = 8;
const PREVIEW_LINE_CHARS: usize = 200;

/// Offloads outputs to a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOffloader {
    store: Store,
    threshold: usize,
    ttl: Duration,
}

impl StoreOffloader {
    /// Offloads outputs over `threshold` bytes, kept for `ttl`.
    pub fn new(store: Store, threshold: usize, ttl: Duration) -> Self {
        Self { store, threshold, ttl }
    }
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(PREVIEW_LINE_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// The text the model sees instead of an offloaded output.
pub fn offload_reference(tool: &str, output: &str, locator: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let mut out = format!(
        "[{tool} output stored outside the context: {} bytes, {} lines]\n",
        output.len(),
        lines.len()
    );
    if lines.len() <= HEAD_LINES + TAIL_LINES {
        out.push_str("--- preview ---\n");
        for l in &lines {
            out.push_str(&clip(l));
            out.push('\n');
        }
    } else {
        out.push_str(&format!("--- first {HEAD_LINES} lines ---\n"));
        for l in &lines[..HEAD_LINES] {
            out.push_str(&clip(l));
            out.push('\n');
        }
        out.push_str(&format!("--- last {TAIL_LINES} lines ---\n"));
        for l in &lines[lines.len() - TAIL_LINES..] {
            out.push_str(&clip(l));
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "locator: {locator}\nTo read more, call read_result with {{\"locator\": \"{locator}\", \"offset\": {}, \"limit\": 200}}; \
         add \"pattern\" (a regex) to keep only matching lines.",
        HEAD_LINES + 1
    ));
    out
}

#[async_trait]
impl OutputOffloader for StoreOffloader {
    fn threshold_bytes(&self, tool: &str) -> Option<usize> {
        // read_result pages through stored outputs; storing its pages again would never end.
        (tool != "read_result").then_some(self.threshold)
    }

    async fn offload(&self, ctx: &ToolContext, tool: &str, output: &str) -> Result<Offloaded, ToolFailure> {
        let meta = self
            .store
            .put_blob(
                &ctx.session_id,
                NewBlob { tool, call_id: &ctx.call_id, bytes: output.as_bytes(), ttl: self.ttl },
            )
            .await
            .map_err(|e| ToolFailure::internal(format!("could not store the output: {e}")))?;
        Ok(Offloaded { reference: offload_reference(tool, output, &meta.locator), locator: meta.locator })
    }
}
