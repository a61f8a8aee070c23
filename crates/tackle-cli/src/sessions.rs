//! `tackle sessions list|show|compact|export|import|rm`, and `tackle results show`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use tackle_protocol::{ContentBlock, Role};
use tackle_store::{MessageFilter, SessionFilter};

use crate::UsageError;
use crate::cli::{ExportFormat, SessionsCommand};
use crate::runtime::{Approvals, ModelProvider, build_agent, open_store, provider_for, workspace_dir};
use crate::tool_view::summarize_args;
use tackle_tools::ApprovalMode;

pub async fn run(command: SessionsCommand) -> Result<ExitCode> {
    let workspace = workspace_dir(None)?;
    let settings =
        crate::settings::Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let store = open_store(&settings).await?;
    match command {
        SessionsCommand::List { json, limit } => {
            let sessions = store
                .sessions()
                .list(SessionFilter { limit: Some(limit), ..SessionFilter::default() })
                .await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                eprintln!("no sessions yet; try `tackle demo` or `tackle run \"...\"`");
            } else {
                let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
                let rows: Vec<[String; 7]> = sessions
                    .iter()
                    .map(|s| {
                        [
                            s.id.clone(),
                            s.status.to_string(),
                            s.message_count.to_string(),
                            s.model.clone(),
                            age(s.updated_at),
                            crate::style::sanitize(&short_path(&s.workspace, home.as_deref())),
                            crate::style::sanitize(&s.title).replace('\n', " "),
                        ]
                    })
                    .collect();
                out!(
                    "{}",
                    table(["id", "status", "msgs", "model", "updated", "workspace", "title"], &rows, &[2])
                );
            }
        }
        SessionsCommand::Show { id, json } => {
            let record = store.sessions().find_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            let messages = store.messages().load(&record.id, MessageFilter { include_hidden: true }).await?;
            let calls = store.calls().list(&record.id).await?;
            let steps = store.steps().list(&record.id).await?;
            let parent = store.sessions().parent(&record.id).await?;
            let children = subagent_tree(&store, &record.id).await?;
            if json {
                let value = json!({
                    "session": record, "messages": messages, "tool_calls": calls, "steps": steps,
                    "parent": parent, "children": children,
                });
                outln!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                outln!(
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
                if let Some(link) = &parent {
                    outln!("parent    {} (call {})", link.session_id, link.call_id);
                }
                if !children.is_empty() {
                    outln!("sub-agents");
                    print_tree(&children, 1);
                }
                outln!();
                if !steps.is_empty() {
                    outln!(
                        "{:>4} {:>4}  {:<11} {:>8} {:>8} {:>8} {:>7}  {:<13} cache break",
                        "turn",
                        "step",
                        "stop",
                        "input",
                        "cached",
                        "written",
                        "prefix",
                        "tools"
                    );
                    for st in &steps {
                        let ratio = st
                            .prefix_ratio
                            .map(|r| format!("{:.1}%", r * 100.0))
                            .unwrap_or_else(|| "-".into());
                        outln!(
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
                    outln!();
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
                        outln!("{:>4} {:<9} {line}", m.seq, who);
                    }
                }
            }
        }
        SessionsCommand::Compact { id, json } => {
            let record = store.sessions().find_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
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
                outln!("{}", serde_json::to_string_pretty(&report)?);
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
        SessionsCommand::Export { id, format, output } => {
            let record = store.sessions().find_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            let export = crate::export::export(&store, &record).await?;
            let text = match format {
                ExportFormat::Md => crate::export::markdown(&export),
                ExportFormat::Json => serde_json::to_string_pretty(&export)? + "\n",
            };
            match output {
                Some(path) => {
                    std::fs::write(&path, text)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    eprintln!("wrote session {} to {}", record.id, path.display());
                }
                None => out!("{text}"),
            }
        }
        SessionsCommand::Import { file, duplicate, json } => {
            let text = if file == "-" {
                std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?
            } else {
                std::fs::read_to_string(&file).map_err(|e| UsageError(format!("cannot read {file}: {e}")))?
            };
            let record = crate::export::import(&store, &text, duplicate).await?;
            if json {
                outln!("{}", json!({ "imported": record.id }));
            } else {
                eprintln!(
                    "imported as session {} (resume it: tackle chat --session {})",
                    record.id, record.id
                );
            }
        }
        SessionsCommand::Fork(args) => return crate::rewind_cmd::fork(&settings, &store, args).await,
        SessionsCommand::Rm { id, json } => {
            let record = store.sessions().find_by_prefix(&id).await.map_err(|e| UsageError(e.to_string()))?;
            store.sessions().delete(&record.id).await?;
            // Workspace content only this session's checkpoints referred to goes too.
            let checkpoints =
                tackle_checkpoint::Checkpoints::new(store.clone(), settings.checkpoints.clone());
            match checkpoints.collect_garbage().await {
                Ok(n) if n > 0 => {
                    tracing::info!(objects = n, "checkpoint content no session refers to removed")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot collect unreferenced checkpoint content"),
            }
            if json {
                outln!("{}", json!({ "deleted": record.id }));
            } else {
                eprintln!("deleted session {}", record.id);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tackle results show LOCATOR`: the full, byte-exact output on stdout.
pub async fn show_result(locator: &str) -> Result<ExitCode> {
    let workspace = workspace_dir(None)?;
    let settings =
        crate::settings::Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let store = open_store(&settings).await?;
    let not_found = |e: tackle_store::StoreError| {
        match e {
        tackle_store::StoreError::NotFound { .. } => UsageError(format!(
            "no stored output {locator} in {}; locators look like out_… and are shown by tool results",
            settings.store_display()
        ))
        .into(),
        tackle_store::StoreError::Expired { .. } => UsageError(format!(
            "{locator} has expired (outputs are kept [context] offload_ttl_days); its call is still in `tackle sessions show`"
        ))
        .into(),
        other => anyhow::Error::from(other),
    }
    };
    let session = store.blobs().session_of(locator).await.map_err(not_found)?;
    let blob = store.blobs().get(&session, locator).await.map_err(not_found)?;
    eprintln!(
        "{locator}: {} output of session {}, {} bytes, {} lines",
        blob.meta.tool, session, blob.meta.raw_bytes, blob.meta.lines
    );
    crate::output::write_all(&blob.data);
    Ok(ExitCode::SUCCESS)
}

/// A session's sub-agents and theirs, as `tackle sessions show` prints them.
#[derive(Debug, serde::Serialize)]
struct SubAgentNode {
    #[serde(flatten)]
    session: tackle_store::ChildSession,
    children: Vec<SubAgentNode>,
}

/// The tree of sessions under `id` (sub-agents nest a few levels; ten are read at most).
async fn subagent_tree(store: &tackle_store::Store, id: &str) -> Result<Vec<SubAgentNode>> {
    // Breadth first, iteratively: (index of the parent in `all`, node).
    let mut all: Vec<(Option<usize>, tackle_store::ChildSession)> = Vec::new();
    let mut frontier: Vec<(Option<usize>, String)> = vec![(None, id.to_owned())];
    for _ in 0..10 {
        let mut next = Vec::new();
        for (parent, sid) in frontier {
            for child in store.sessions().children(&sid).await? {
                all.push((parent, child.clone()));
                next.push((Some(all.len() - 1), child.id));
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    fn build(
        all: &[(Option<usize>, tackle_store::ChildSession)],
        parent: Option<usize>,
    ) -> Vec<SubAgentNode> {
        all.iter()
            .enumerate()
            .filter(|(_, (p, _))| *p == parent)
            .map(|(i, (_, s))| SubAgentNode { session: s.clone(), children: build(all, Some(i)) })
            .collect()
    }
    Ok(build(&all, None))
}

fn print_tree(nodes: &[SubAgentNode], depth: usize) {
    for node in nodes {
        let s = &node.session;
        outln!(
            "{}└ {} {:<8} {} (call {})",
            "  ".repeat(depth),
            s.id,
            s.status.to_string(),
            crate::style::sanitize(&s.title).replace('\n', " "),
            s.parent_call_id
        );
        print_tree(&node.children, depth + 1);
    }
}

/// A workspace path as a person reads it: under the home directory as `~/…`.
fn short_path(path: &str, home: Option<&std::path::Path>) -> String {
    let rest = home.and_then(|h| std::path::Path::new(path).strip_prefix(h).ok());
    match rest {
        Some(r) if r.as_os_str().is_empty() => "~".to_owned(),
        Some(r) => format!("~/{}", r.display()),
        None => path.to_owned(),
    }
}

/// `3m ago`, `2h ago`, `5d ago` from a Unix-millisecond time.
fn age(ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(ms);
    let secs = (now - ms).max(0) / 1000;
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// Rows under a header, each column as wide as its widest cell (by characters); the columns
/// listed in `right` are right-aligned; the last column is not padded.
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]], right: &[usize]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i + 1 == N {
                out.push_str(cell);
            } else if right.contains(&i) {
                out.push_str(&format!("{}{cell}  ", " ".repeat(pad)));
            } else {
                out.push_str(&format!("{cell}{}  ", " ".repeat(pad)));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_under_home_are_shown_from_tilde() {
        let home = std::path::Path::new("/home/ann");
        assert_eq!(short_path("/home/ann/src/app", Some(home)), "~/src/app");
        assert_eq!(short_path("/home/ann", Some(home)), "~");
        assert_eq!(short_path("/home/anna/x", Some(home)), "/home/anna/x");
        assert_eq!(short_path("/srv/x", None), "/srv/x");
    }

    #[test]
    fn table_columns_line_up_whatever_the_widths() {
        let rows = [
            ["a".to_owned(), "idle".to_owned(), "5".to_owned(), "très long titre".to_owned()],
            ["bbbb".to_owned(), "running".to_owned(), "120".to_owned(), "x".to_owned()],
        ];
        let t = table(["id", "status", "msgs", "title"], &rows, &[2]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "id    status   msgs  title");
        assert_eq!(lines[1], "a     idle        5  très long titre");
        assert_eq!(lines[2], "bbbb  running   120  x");
        let col = |l: &str, w: &str| l[..l.find(w).unwrap()].chars().count();
        assert_eq!(col(lines[0], "title"), col(lines[1], "très"));
        assert_eq!(col(lines[0], "title"), col(lines[2], "x"));
    }
}
