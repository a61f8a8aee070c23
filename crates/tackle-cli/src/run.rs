//! `tackle run`: one prompt, to completion.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::TurnInput;
use tackle_protocol::TurnEnd;
use tackle_tools::ApprovalMode;
use tokio_util::sync::CancellationToken;

use crate::approver::TerminalApprover;
use crate::cli::RunArgs;
use crate::render::{JsonSink, TerminalRenderer, TextOutput, events_target, json_lines, sink};
use crate::runtime::{
    Approvals, build_agent, open_or_create, open_store, provider_for, settings_for, tool_mask, workspace_dir,
};
use crate::terminal::Terminal;

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let (provider, kind) = provider_for(&settings)?;
    let store = open_store(&settings).await?;
    let approvals = if args.model.yes {
        Approvals::Auto
    } else if std::io::stdin().is_terminal() {
        Approvals::Ask(Arc::new(TerminalApprover::new(Terminal::start(None))))
    } else {
        Approvals::Deny
    };
    let agent =
        build_agent(&settings, &workspace, provider, kind, store, approvals, ApprovalMode::Headless).await?;
    let mut session = open_or_create(&agent, args.model.session.as_deref(), &workspace).await?;

    let events_to_stdout = args.events.as_deref() == Some("-");
    let text = if args.json || events_to_stdout { TextOutput::Hidden } else { TextOutput::Stdout };
    let json = match &args.events {
        Some(spec) => Some(Box::new(json_lines(events_target(spec)?)) as JsonSink),
        None => None,
    };
    let renderer = (!events_to_stdout).then(|| TerminalRenderer::new(text));
    let (sink, _) = sink(renderer, json);

    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let mut input = TurnInput::new(args.prompt).with_mask(tool_mask(args.model.tool_mask.as_deref())?);
    input.max_steps = args.model.max_steps;
    let outcome = session.run_turn(input, &sink, &cancel).await;
    // Closing lets SQLite checkpoint and remove the WAL, which the next start would otherwise
    // have to read back whole before its first request (up to 16 MB).
    agent.store().close().await;
    let outcome = outcome?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    }
    if !args.json && !events_to_stdout {
        eprintln!("session {}", outcome.session_id);
    }
    Ok(match outcome.end {
        TurnEnd::Completed | TurnEnd::MaxSteps => ExitCode::SUCCESS,
        TurnEnd::Cancelled | TurnEnd::Failed => ExitCode::from(1),
    })
}
