//! `compact_context`: lets the model ask for compaction before its next step.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::ToolAnnotations;
use tackle_tools::{ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

use crate::tools::LoopRequests;

/// Arguments of `compact_context`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactContextArgs {
    /// Why, for the record. Example: "finished exploring; keep only conclusions".
    #[serde(default)]
    pub reason: Option<String>,
}

/// The `compact_context` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompactContext;

#[async_trait]
impl TypedTool for CompactContext {
    type Args = CompactContextArgs;

    fn name(&self) -> &str {
        "compact_context"
    }

    fn description(&self) -> String {
        ToolDoc::new("Compact the conversation before your next step: clear old tool outputs and summarize the oldest part.")
            .use_when("you finished a phase of work and the details of earlier steps are no longer needed")
            .use_when("the context is getting long and later steps need room")
            .does_not("lose anything: cleared outputs stay readable with read_result, originals stay in the session store")
            .does_not("touch the current turn's messages")
            .arg("reason", "Why, for the record. Example: \"exploration done\"")
            .returns("A confirmation; the compaction itself runs right after this step and is reported as an event.")
            .example(r#"{"reason": "tests pass; earlier failures no longer matter"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { idempotent: true, ..ToolAnnotations::session_only() }
    }

    async fn run(&self, args: CompactContextArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        LoopRequests::ask(&ctx, |r| r.compact = true);
        let why = args.reason.map(|r| format!(" ({r})")).unwrap_or_default();
        Ok(ToolOutput::text(format!("Compaction will run before the next step{why}.")))
    }
}
