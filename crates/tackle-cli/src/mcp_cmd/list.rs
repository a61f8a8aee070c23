//! `tackle mcp list`: configured MCP servers, their state, the protocol revision spoken, tools
//! and what their definitions cost.

use std::process::ExitCode;

use anyhow::Result;
use tackle_mcp::{McpManager, McpServerStatus};

use crate::cli::McpListArgs;
use crate::runtime::{settings_for, workspace_dir};

pub async fn list(args: McpListArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    if settings.mcp.servers.is_empty() {
        if args.json {
            outln!("[]");
        } else {
            eprintln!(
                "no MCP servers configured: add [mcp.servers.<name>] with `command` or `url` to tackle.toml"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let manager =
        McpManager::connect_with(&settings.mcp.servers, &crate::mcp_sign_in::mcp_options(&settings, false))
            .await;
    let counter = tackle_context::TokenCounter::for_model(&settings.model.clone().unwrap_or_default());
    let tools = manager.tools();
    let statuses = manager.statuses();
    let tokens: Vec<u64> = statuses
        .iter()
        .map(|s| {
            let prefix = format!("{}{}", s.name, tackle_mcp::NAMESPACE_SEPARATOR);
            let specs: Vec<tackle_protocol::ToolSpec> =
                tools.iter().map(|t| t.spec().clone()).filter(|t| t.name.starts_with(&prefix)).collect();
            counter.count_tools(&specs)
        })
        .collect();
    if args.json {
        let rows: Vec<serde_json::Value> = statuses
            .iter()
            .zip(&tokens)
            .map(|(s, n)| {
                let mut row = serde_json::to_value(s).unwrap_or_default();
                row["definition_tokens"] = (*n).into();
                row
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        outln!(
            "{:<20} {:<6} {:<14} {:<10} {:>6} {:>8}  target",
            "server",
            "kind",
            "status",
            "protocol",
            "tools",
            "tokens"
        );
        for (info, n) in statuses.iter().zip(&tokens) {
            let status = match &info.status {
                McpServerStatus::Connected { .. } => "connected".to_owned(),
                McpServerStatus::Unavailable { error, .. } => format!("unavailable: {error}"),
                McpServerStatus::Failed { error } => format!("failed: {error}"),
                McpServerStatus::Disabled => "disabled".to_owned(),
            };
            outln!(
                "{:<20} {:<6} {:<14} {:<10} {:>6} {:>8}  {}",
                info.name,
                info.transport,
                status,
                info.protocol.as_deref().unwrap_or("-"),
                info.tool_count,
                n,
                info.target
            );
        }
    }
    manager.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
