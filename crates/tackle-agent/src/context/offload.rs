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
    // Outputs here are large (megabytes): walk only the lines shown, from both ends, and count
    // the rest without collecting them.
    let count = output.lines().count();
    let mut out =
        format!("[{tool} output stored outside the context: {} bytes, {count} lines]\n", output.len());
    let mut push = |lines: &mut dyn Iterator<Item = &str>| {
        for l in lines {
            out.push_str(&clip(l));
            out.push('\n');
        }
    };
    if count <= HEAD_LINES + TAIL_LINES {
        push(&mut "--- preview ---".lines().chain(output.lines()));
    } else {
        push(
            &mut std::iter::once(format!("--- first {HEAD_LINES} lines ---").as_str())
                .chain(output.lines().take(HEAD_LINES)),
        );
        let tail: Vec<&str> = output.lines().rev().take(TAIL_LINES).collect();
        push(
            &mut std::iter::once(format!("--- last {TAIL_LINES} lines ---").as_str())
                .chain(tail.into_iter().rev()),
        );
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
        // tool_search answers within their own token budget, and an answer the model cannot
        // see would defeat deferral.
        (!matches!(tool, "read_result" | crate::tools::TOOL_SEARCH)).then_some(self.threshold)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_shows_head_and_tail_and_how_to_restore() {
        let long: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let r = offload_reference("shell", &long, "out_x");
        assert!(r.starts_with("[shell output stored outside the context: 792 bytes, 100 lines]\n"), "{r}");
        assert!(
            r.contains("--- first 15 lines ---\nline 1\n") && r.contains("line 15\n--- last 8 lines ---\n")
        );
        assert!(
            r.contains("line 93\n") && r.contains("line 100\nlocator: out_x\n") && !r.contains("line 16\n")
        );
        assert!(r.contains(r#"{"locator": "out_x", "offset": 16, "limit": 200}"#));

        let short = "a\nb";
        let r = offload_reference("t", short, "out_y");
        assert!(r.contains("3 bytes, 2 lines]\n--- preview ---\na\nb\nlocator: out_y"), "{r}");
        let wide = "x".repeat(500);
        assert!(offload_reference("t", &wide, "l").contains(&format!("{}…\n", "x".repeat(200))));
    }
}
