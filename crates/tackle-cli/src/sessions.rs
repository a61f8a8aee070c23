//! `tackle sessions list|show|rm`.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;
use tackle_protocol::{ContentBlock, Role};
use tackle_store::{MessageFilter, SessionFilter};

use crate::UsageError;
use crate::cli::SessionsCommand;
use crate::render::summarize_args;
use crate::runtime::{Approvals, ModelProvider, build_agent, open_store, provider_for, workspace_dir};
use tackle_tools::ApprovalMode;

pub async fn run(command: SessionsCommand) -> Result<ExitCode> {
    let workspace = workspace_dir(None)?;
    let settings =
        crate::settings::Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let store = open_store(&settings).await?;
    match command {
        SessionsCommand::List { json, limit } => {
            let sessions =
                store.list_sessions(SessionFilter { limit: Some(limit), ..SessionFilter::default() }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                eprintln!("no sessions yet; try `tackle demo` or `tackle run \"...\"`");
            } else {
                println!("{:<36}  {:<9}  {:>5}  {:<20}  title", "id", "status", "msgs", "model");
                for s in sessions {
                    println!(
                        "{:<36}  {:<8}  {:>5}  {:<20}  {}",
                        s.id, s.status, s.message_count, s.model, s.title
                    );
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let record = store.find_session_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            let messages = store.load_messages(&record.id, MessageFilter { include_hidden: true }).await?;
            let calls = store.list_tool_calls(&record.id).await?;
            let steps = store.list_steps(&record.id).await?;
            if json {
                let value =
                    json!({ "session": record, "messages": messages, "tool_calls": calls, "steps": steps });
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                println!(
                    "session   {}\ntitle     {}\nstatus    {}\nmodel     {} ({})\nworkspace {}\nmessages  {}\ntool calls {}",
                    record.id,
                    record.title,
                    record.status,
                    record.model,
                    record.provider,
                    record.workspace,
                    messages.len(),
                    calls.len()
                );
                println!();
                if !steps.is_empty() {
                    println!(
                        "{:>4} {:>4}  {:<11} {:>8} {:>8} {:>8} {:>7}  {:<13} cache break",
                        "turn", "step", "stop", "input", "cached", "written", "prefix", "tools"
                    );
                    for st in &steps {
                        let ratio = st
                            .prefix_ratio
                            .map(|r| format!("{:.1}%", r * 100.0))
                            .unwrap_or_else(|| "-".into());
                        println!(
                            "{:>4} {:>4}  {:<11} {:>8} {:>8} {:>8} {:>7}  {:<13} {}",
                            st.turn,
                            st.step,
                            st.stop_reason,
                            st.input_tokens,
                            st.cache_read_tokens,
                            st.cache_write_tokens,
                            ratio,
                            st.strategy.as_deref().unwrap_or("-"),
                            st.cache_break.as_deref().unwrap_or("")
                        );
                    }
                    println!();
                }
                for m in &messages {
                    let who = match m.message.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::Tool => "tool",
                    };
                    for block in &m.message.content {
                        let line = match block {
                            ContentBlock::Text { text } => text.replace('\n', "\n          "),
                            ContentBlock::ToolUse(u) => format!(
                                "→ {} {}",
                                u.name,
                                summarize_args(&u.input.as_json().cloned().unwrap_or_default())
                            ),
                            ContentBlock::ToolResult(r) => {
                                let first = r.content.lines().next().unwrap_or("");
                                format!(
                                    "{} {}",
                                    if r.is_error { "✗" } else { "✓" },
                                    first.chars().take(100).collect::<String>()
                                )
                            }
                            ContentBlock::Reasoning(_) => "(reasoning)".to_owned(),
                        };
                        println!("{:>4} {:<9} {line}", m.seq, who);
                    }
                }
            }
        }
        SessionsCommand::Compact { id, json } => {
            let record = store.find_session_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            let workspace = std::path::PathBuf::from(&record.workspace);
            let ModelProvider { provider, kind, .. } =
                provider_for(&settings, &workspace, &Approvals::Deny, ApprovalMode::Headless)?;
            let agent = build_agent(
                &settings,
                &workspace,
                provider,
                kind,
                store.clone(),
                Approvals::Deny,
                ApprovalMode::Headless,
            )
            .await?;
            let mut session = agent.open_session(&record.id).await?;
            let report = session.compact_now(&tackle_tools::EventSink::discard()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else if report.strategies.is_empty() {
                eprintln!("nothing to compact in session {}", record.id);
            } else {
                eprintln!(
                    "compacted session {}: {} → {} tokens, {} → {} messages ({})",
                    record.id,
                    report.tokens_before,
                    report.tokens_after,
                    report.messages_before,
                    report.messages_after,
                    report.strategies.join(", ")
                );
            }
        }
        SessionsCommand::Rm { id, json } => {
            let record = store.find_session_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            store.delete_session(&record.id).await?;
            if json {
                println!("{}", json!({ "deleted": record.id }));
            } else {
                eprintln!("deleted session {}", record.id);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
