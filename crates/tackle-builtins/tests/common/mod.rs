//! Helpers shared by the builtin tests.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;
use tackle_protocol::{ToolError, ToolUse};
use tackle_tools::{
    ApprovalMode, AutoApprove, CallOptions, CallReport, ExecLimits, HookPolicy, ToolContext, ToolExecutor,
    ToolRegistry,
};

pub fn executor(config: &tackle_builtins::BuiltinConfig) -> ToolExecutor {
    let mut registry = ToolRegistry::new();
    for tool in tackle_builtins::builtin_tools(config) {
        registry.register(tool).unwrap();
    }
    let limits = ExecLimits { max_output_bytes: 1 << 20, max_output_lines: 100_000, ..ExecLimits::default() };
    ToolExecutor::new(
        std::sync::Arc::new(registry),
        HookPolicy::defaults(ApprovalMode::Headless),
        std::sync::Arc::new(AutoApprove),
        limits,
    )
}

pub async fn call(ex: &ToolExecutor, workspace: &Path, name: &str, args: Value) -> CallReport {
    let ctx = ToolContext::new("s", "c", workspace.to_path_buf());
    ex.execute(
        &ToolUse { id: "c".into(), name: name.into(), input: args.into() },
        ctx,
        &CallOptions::default(),
    )
    .await
}

pub fn ok(report: &CallReport) -> &str {
    assert!(report.outcome.is_ok(), "expected success, got {:?}", report.outcome);
    &report.result.content
}

pub fn err(report: &CallReport) -> &ToolError {
    report.outcome.as_ref().expect_err("expected a failure")
}
