//! `tackle chat`: a REPL over one session at a time.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tackle_agent::{Agent, Session, TurnInput};
use tackle_store::SessionFilter;
use tackle_tools::{ApprovalMode, EventSink};
use tokio_util::sync::CancellationToken;

use crate::approver::TerminalApprover;
use crate::cli::ChatArgs;
use crate::render::{TerminalRenderer, TextOutput, sink};
use crate::runtime::{
    Approvals, build_agent, open_or_create, open_store, provider_for, settings_for, workspace_dir,
};
use crate::terminal::{Input, Terminal};

const HELP: &str = "\
Commands:
  /help          this help
  /tools         the tools the model can call
  /session       the current session
  /sessions      recent sessions
  /resume ID     switch to a stored session (id or unique prefix)
  /new           start a new session
  /quit          leave (Ctrl-D too)
Anything else is sent to the model. Ctrl-C cancels a running turn, not the program.";

pub async fn run(args: ChatArgs) -> Result<ExitCode> {
    let workspace = workspace_dir(args.model.workspace.as_ref())?;
    let settings = settings_for(&workspace, &args.model)?;
    let (provider, kind) = provider_for(&settings)?;
    let store = open_store(&settings).await?;
    let history = settings.data_dir().ok().map(|d| d.join("repl_history"));
    let terminal = Terminal::start(history);
    let approvals = if args.model.yes {
        Approvals::Auto
    } else {
        Approvals::Ask(Arc::new(TerminalApprover::new(terminal.clone())))
    };
    let agent = build_agent(&settings, provider, kind, store, approvals, ApprovalMode::Interactive).await?;
    let mut session = open_or_create(&agent, args.model.session.as_deref(), &workspace).await?;
    let (events, _) = sink(Some(TerminalRenderer::new(TextOutput::Stdout)), None);
    eprintln!(
        "tackle chat · {} · session {} · /help for commands, Ctrl-D to leave",
        agent.config().model,
        short(session.id())
    );
    let mut max_steps = args.model.max_steps;

    loop {
        let line = match terminal.read_line("you> ", true).await {
            Input::Line(l) => l,
            Input::Interrupted => {
                eprintln!("(Ctrl-D or /quit to leave)");
                continue;
            }
            Input::Eof => break,
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            match slash(command, &agent, &mut session, &workspace, &mut max_steps).await {
                Ok(Flow::Continue) => continue,
                Ok(Flow::Quit) => break,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    continue;
                }
            }
        }
        run_turn(&mut session, line, max_steps, &events).await;
    }
    Ok(ExitCode::SUCCESS)
}

enum Flow {
    Continue,
    Quit,
}

async fn run_turn(session: &mut Session, line: &str, max_steps: Option<u32>, events: &EventSink) {
    let cancel = CancellationToken::new();
    let mut input = TurnInput::new(line);
    input.max_steps = max_steps;
    let turn = session.run_turn(input, events, &cancel);
    tokio::pin!(turn);
    let result = loop {
        tokio::select! {
            r = &mut turn => break r,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("\n(cancelling the turn…)");
                cancel.cancel();
            }
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
    }
}

async fn slash(
    command: &str,
    agent: &Agent,
    session: &mut Session,
    workspace: &std::path::Path,
    max_steps: &mut Option<u32>,
) -> Result<Flow> {
    let (name, arg) =
        command.split_once(char::is_whitespace).map(|(a, b)| (a, b.trim())).unwrap_or((command, ""));
    match name {
        "help" | "?" => eprintln!("{HELP}"),
        "quit" | "exit" | "q" => return Ok(Flow::Quit),
        "tools" => {
            for spec in agent.tool_specs() {
                let first = spec.description.lines().next().unwrap_or("");
                eprintln!("  {:<14} {first}", spec.name);
            }
        }
        "session" => {
            let r = session.record();
            eprintln!(
                "  id        {}\n  title     {}\n  model     {} ({})\n  workspace {}\n  messages  {}",
                r.id,
                r.title,
                r.model,
                r.provider,
                r.workspace,
                session.history().len()
            );
        }
        "sessions" => {
            let list = agent
                .store()
                .list_sessions(SessionFilter { limit: Some(20), ..SessionFilter::default() })
                .await?;
            for s in list {
                eprintln!("  {}  {:<40}  {} messages", short(&s.id), s.title, s.message_count);
            }
        }
        "resume" => {
            if arg.is_empty() {
                eprintln!("usage: /resume ID (see /sessions)");
            } else {
                let record = agent.store().find_session_by_prefix(arg).await?;
                *session = agent.open_session(&record.id).await?;
                eprintln!("resumed {} ({} messages)", short(session.id()), session.history().len());
            }
        }
        "new" => {
            *session = open_or_create(agent, None, workspace).await?;
            eprintln!("new session {}", short(session.id()));
        }
        "steps" => match arg.parse::<u32>() {
            Ok(n) if n > 0 => *max_steps = Some(n),
            _ => eprintln!("usage: /steps N (N >= 1)"),
        },
        other => eprintln!("unknown command /{other}; /help lists them"),
    }
    Ok(Flow::Continue)
}

fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}
