//! `read_result`: restore an offloaded or cleared output by its locator, in pages.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::{ErrorCategory, ToolAnnotations};
use tackle_store::{Store, StoreError};
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

/// Most lines or bytes returned by one call.
const MAX_LINES: u64 = 2000;
const MAX_BYTES: u64 = 64 * 1024;

/// Unit of `offset` and `limit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadUnit {
    /// Lines, counted from 1.
    #[default]
    Lines,
    /// Bytes, counted from 0.
    Bytes,
}

/// Arguments of `read_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadResultArgs {
    /// The locator shown in the stored output's reference. Example: "out_3f2a…".
    pub locator: String,
    /// Where to start: a line number from 1 (lines) or a byte offset from 0 (bytes). Defaults to the start.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines or bytes to return. Defaults to 200 lines or 16384 bytes.
    #[serde(default)]
    pub limit: Option<u64>,
    /// "lines" (default) or "bytes".
    #[serde(default)]
    pub unit: Option<ReadUnit>,
    /// A regex: keep only matching lines (offset and limit then count matching lines). Example: "error|panic".
    #[serde(default)]
    pub pattern: Option<String>,
}

/// The `read_result` tool.
#[derive(Debug, Clone)]
pub struct ReadResult {
    store: Store,
}

impl ReadResult {
    /// A reader of outputs stored in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

/// Reads a page of a stored output: what `read_result` returns and what the server's restore
/// route serves.
pub async fn read_page(
    store: &Store,
    session_id: &str,
    args: &ReadResultArgs,
) -> Result<String, ToolFailure> {
    let blob = store.blobs().get(session_id, &args.locator).await.map_err(|e| match e {
        StoreError::NotFound { .. } => ToolFailure::not_found(format!(
            "no stored output {} in this session",
            args.locator
        ))
        .with_hint(
            "use a locator shown in this session's tool results; locators of other sessions are not valid",
        ),
        StoreError::Expired { .. } => ToolFailure::new(ErrorCategory::Expired, e.to_string()),
        other => ToolFailure::internal(other.to_string()),
    })?;
    let text = String::from_utf8_lossy(&blob.data);
    let unit = args.unit.unwrap_or_default();
    if unit == ReadUnit::Bytes {
        if args.pattern.is_some() {
            return Err(ToolFailure::invalid_args("pattern works with unit \"lines\" only"));
        }
        let start = args.offset.unwrap_or(0).min(blob.data.len() as u64) as usize;
        let len = args.limit.unwrap_or(16 * 1024).clamp(1, MAX_BYTES) as usize;
        let end = (start + len).min(blob.data.len());
        let chunk = String::from_utf8_lossy(&blob.data[start..end]);
        let more =
            if end < blob.data.len() { format!("; read more with offset {end}") } else { String::new() };
        return Ok(format!("[{}: bytes {start}-{end} of {}{more}]\n{chunk}", args.locator, blob.data.len()));
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(200).clamp(1, MAX_LINES);
    let regex = match &args.pattern {
        Some(p) => Some(
            regex::Regex::new(p)
                .map_err(|e| ToolFailure::invalid_args(format!("invalid pattern {p:?}: {e}")))?,
        ),
        None => None,
    };
    let selected: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| regex.as_ref().is_none_or(|r| r.is_match(l)))
        .map(|(i, l)| (i + 1, l))
        .collect();
    let total = selected.len() as u64;
    let page: Vec<&(usize, &str)> =
        selected.iter().skip((offset - 1) as usize).take(limit as usize).collect();
    let mut out = String::new();
    let what = if regex.is_some() { "matching lines" } else { "lines" };
    match (page.first(), page.last()) {
        (Some(_), Some(_)) => {
            let last = offset + page.len() as u64 - 1;
            out.push_str(&format!("[{}: {what} {offset}-{last} of {total}", args.locator));
            if last < total {
                out.push_str(&format!("; read more with offset {}", last + 1));
            }
            out.push_str("]\n");
            for (n, line) in page {
                if regex.is_some() {
                    out.push_str(&format!("{n:>6}: {line}\n"));
                } else {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        _ => out.push_str(&format!("[{}: no {what} at offset {offset}; there are {total}]", args.locator)),
    }
    Ok(out)
}

#[async_trait]
impl TypedTool for ReadResult {
    type Args = ReadResultArgs;

    fn name(&self) -> &str {
        "read_result"
    }

    fn description(&self) -> String {
        ToolDoc::new("Read a tool output that was stored outside the context, by its locator, in pages.")
            .prerequisite("a tool result that shows a `locator:` line")
            .use_when("a result was shortened or cleared and you need more of it")
            .use_when("you need only some lines of a long output: pass a regex pattern")
            .does_not("run the tool again or read files (use read_file); locators of other sessions do not work")
            .arg("locator", "The locator from the stored output's reference. Example: \"out_9f1c…\"")
            .arg("offset", "First line (from 1) or byte (from 0). Example: 201")
            .arg("limit", "Lines (default 200) or bytes (default 16384). Example: 100")
            .arg("unit", "\"lines\" or \"bytes\". Default \"lines\"")
            .arg("pattern", "Regex keeping only matching lines. Example: \"error|warning\"")
            .returns("A header saying which part of how much was returned, then the text; with a pattern, matching lines with their line numbers.")
            .example(r#"{"locator": "out_9f1c2d", "offset": 16, "limit": 200}"#)
            .example(r#"{"locator": "out_9f1c2d", "pattern": "FAILED"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        // Its pages are sized for the context: storing them again would never end.
        ToolAnnotations { sized_output: true, ..ToolAnnotations::read_only() }
    }

    async fn run(&self, args: ReadResultArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(read_page(&self.store, &ctx.session_id, &args).await?))
    }
}
