//! `tackle rewind` (a session's turns, or going back to before one) and `tackle sessions fork`.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;
use tackle_agent::{ForkOptions, RewindOptions, RewindReport};
use tackle_checkpoint::{Change, Checkpoints};
use tackle_store::Store;

use crate::UsageError;
use crate::cli::{ForkArgs, RewindArgs};
use crate::runtime::{checkpoints_for, open_store, workspace_dir};
use crate::settings::Settings;
use crate::style::{Style, sanitize};

async fn open() -> Result<(Settings, Store)> {
    let workspace = workspace_dir(None)?;
    let settings = Settings::load(&workspace).map_err(|e| UsageError(e.to_string()))?.settings;
    let store = open_store(&settings).await?;
    Ok((settings, store))
}

/// `tackle rewind SESSION [TURN]`.
pub async fn rewind(args: RewindArgs) -> Result<ExitCode> {
    let (settings, store) = open().await?;
    let record =
        store.sessions().find_by_prefix(&args.session).await.map_err(|e| UsageError(e.to_string()))?;
    let checkpoints = checkpoints_for(&settings, &store, std::path::Path::new(&record.workspace));
    let outcome = run_rewind(&args, &store, checkpoints.as_ref(), &record.id).await;
    store.close().await;
    outcome
}

async fn run_rewind(
    args: &RewindArgs,
    store: &Store,
    checkpoints: Option<&Checkpoints>,
    id: &str,
) -> Result<ExitCode> {
    let style = Style::stderr();
    let Some(turn) = args.turn else {
        return list_turns(store, checkpoints, id, args.json).await;
    };
    let options = RewindOptions { files: !args.conversation_only, conversation: !args.files_only };
    if args.files_only && args.conversation_only {
        return Err(UsageError("--files-only and --conversation-only exclude each other".into()).into());
    }
    let preview = tackle_agent::rewind_preview(store, checkpoints, id, turn, options).await.map_err(usage)?;
    if args.dry_run {
        print_report(&preview, args.json, style);
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            print_report(&preview, args.json, style);
            return Err(UsageError("rewinding changes files and the conversation: pass --yes to do it, or --dry-run to only see what changes".into()).into());
        }
        print_report(&preview, false, style);
        eprint!("rewind to before turn {turn}? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            eprintln!("nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    tackle_agent::ensure_idle(store, id).await.map_err(usage)?;
    let done = tackle_agent::rewind(store, checkpoints, id, turn, options).await.map_err(usage)?;
    print_report(&done, args.json, style);
    Ok(if done.leftovers.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn usage(e: tackle_agent::AgentError) -> anyhow::Error {
    match e {
        tackle_agent::AgentError::Rewind(_)
        | tackle_agent::AgentError::Checkpoint(tackle_checkpoint::CheckpointError::NoCheckpoint { .. }) => {
            UsageError(e.to_string()).into()
        }
        other => anyhow::Error::new(other),
    }
}

/// The turns of a session: which have a checkpoint, what the user asked.
async fn list_turns(
    store: &Store,
    checkpoints: Option<&Checkpoints>,
    id: &str,
    json: bool,
) -> Result<ExitCode> {
    let turns = store.sessions().turns(id).await?;
    let recorded: Vec<i64> = match checkpoints {
        Some(c) => c.list(id).await?.into_iter().map(|c| c.turn).collect(),
        None => store.checkpoints().list(id).await?.into_iter().map(|c| c.turn).collect(),
    };
    if json {
        let rows: Vec<serde_json::Value> = turns
            .iter()
            .filter(|t| t.turn > 0)
            .map(|t| {
                serde_json::json!({
                    "turn": t.turn, "prompt": t.prompt, "in_conversation": !t.hidden,
                    "checkpoint": recorded.contains(&t.turn), "created_at": t.created_at,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if turns.iter().all(|t| t.turn == 0) {
        eprintln!("session {id} has no turns yet");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:>5}  {:<10}  {:<11}  prompt", "turn", "files", "conversation");
    for t in turns.iter().filter(|t| t.turn > 0) {
        let files = if recorded.contains(&t.turn) { "checkpoint" } else { "-" };
        let conv = if t.hidden { "rewound" } else { "current" };
        let prompt = sanitize(t.prompt.lines().next().unwrap_or(""));
        let prompt: String = prompt.chars().take(70).collect();
        println!("{:>5}  {files:<10}  {conv:<11}  {prompt}", t.turn);
    }
    eprintln!("`tackle rewind {id} TURN` goes back to before TURN (--dry-run shows what changes)");
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &RewindReport, json: bool, style: Style) {
    if json {
        println!("{}", serde_json::to_string_pretty(report).unwrap_or_default());
        return;
    }
    let verb = if report.applied { "rewound" } else { "would rewind" };
    eprintln!(
        "{verb} to before turn {}: {}",
        report.turn,
        sanitize(report.prompt.lines().next().unwrap_or(""))
    );
    if let Some(plan) = &report.files {
        let (created, modified, deleted, modes, lost) = plan.counts();
        if plan.is_empty() {
            eprintln!("  files: nothing to change");
        } else {
            eprintln!(
                "  files: {created} restored, {modified} changed back, {deleted} removed, {modes} modes{}",
                if lost > 0 { format!(", {lost} cannot be restored") } else { String::new() }
            );
        }
        for change in plan.changes.iter().take(40) {
            let (mark, line) = match change.change {
                Change::Create => ("+", style.green(&format!("restore {}", sanitize(&change.path)))),
                Change::Modify => ("~", style.yellow(&format!("change back {}", sanitize(&change.path)))),
                Change::Delete => ("-", style.red(&format!("remove {}", sanitize(&change.path)))),
                Change::Mode => ("~", format!("mode of {}", sanitize(&change.path))),
                Change::Unrestorable => (
                    "!",
                    style.red(&format!(
                        "cannot restore {} (not recorded: too large or unreadable)",
                        sanitize(&change.path)
                    )),
                ),
            };
            eprintln!("    {mark} {line}");
        }
        if plan.changes.len() > 40 {
            eprintln!("    … and {} more (--json lists them all)", plan.changes.len() - 40);
        }
    }
    if let Some((now, after)) = report.messages {
        eprintln!("  conversation: {now} → {after} messages (later ones stay stored, hidden)");
    }
    for (path, why) in &report.leftovers {
        eprintln!("  {} {}: {}", style.red("not restored"), sanitize(path), sanitize(why));
    }
}

/// `tackle sessions fork ID [--turn N] [--files DIR]`.
pub async fn fork(settings: &Settings, store: &Store, args: ForkArgs) -> Result<ExitCode> {
    let record = store.sessions().find_by_prefix(&args.id).await.map_err(|e| UsageError(e.to_string()))?;
    let checkpoints = checkpoints_for(settings, store, std::path::Path::new(&record.workspace));
    let options = ForkOptions { turn: args.turn, files: args.files.clone(), title: args.title.clone() };
    let done = tackle_agent::fork(store, checkpoints.as_ref(), &record.id, options).await.map_err(usage)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        println!("{}", done.session_id);
        let files = match done.files {
            Some(n) => format!(", with its own copy of the workspace in {} ({n} paths)", done.workspace),
            None => format!(", in the same workspace {}", done.workspace),
        };
        eprintln!(
            "forked {} after turn {}{files}; continue it with `tackle chat --session {}`",
            record.id, done.turn, done.session_id
        );
    }
    Ok(ExitCode::SUCCESS)
}
